"""The server's routes: thin, like the CLI's commands; the rules are in the services and auth."""
