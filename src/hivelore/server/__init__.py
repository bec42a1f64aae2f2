"""The team server: an HTTP API over PostgreSQL (the `hivelore[server]` extra: FastAPI, uvicorn,
psycopg 3). `app.create_app` is its composition root; docs/server.md says how to run it."""
