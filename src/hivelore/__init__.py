"""hivelore: memory for AI coding agents, kept as plain Markdown files."""

# The one version source: pyproject.toml reads it (tool.setuptools.dynamic) and the hook path imports it,
# so this module stays free of imports.
__version__ = "0.1.0"
