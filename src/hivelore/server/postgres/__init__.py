"""PostgreSQL under the team server: the connection pool, the versioned migrations, the stores."""
