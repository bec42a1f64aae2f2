"""`python -m hivelore.mcp`: `hivelore mcp` without the CLI's own start-up (typer, rich)."""

from hivelore.mcp.stdio import main

main()
