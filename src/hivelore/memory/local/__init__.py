"""The default tier: Markdown files are the truth, the SQLite index is derived from them."""
