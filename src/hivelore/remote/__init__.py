"""The client side of the team server: transport (client.py) and what it needs to know (which server,
which token, which hosts the user approved: credentials.py). Standard library only."""
