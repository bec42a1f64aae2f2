"""Profile memory: USER.md, MEMORY.md, SOUL.md and deterministic promotion."""
