"""The team: its store (team.db), the coordination service over it, and test-run parsing."""
