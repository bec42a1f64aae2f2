"""`python -m hivelore.mcp`: `hivelore mcp` without the CLI's own start-up (typer, rich)."""

import os

from hivelore.home import home_path
from hivelore.mcp.stdio import serve

serve(home_path(os.environ))
