"""What hooks capture that has no file: sessions, prompts, failure signatures (events.db)."""
