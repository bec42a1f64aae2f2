"""hivelore: memory for AI coding agents, kept as plain Markdown files."""

__version__ = "0.1.0"
