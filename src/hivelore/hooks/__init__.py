"""The hook path: agents' lifecycle hooks, normalised into one event model (stdlib only)."""
