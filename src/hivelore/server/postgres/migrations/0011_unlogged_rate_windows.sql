-- The rate-limit windows without the write-ahead log (issue 13). Every request counts itself in a row
-- of `rate_windows`, so a read was a logged write too: its commit waited for the log to be flushed to
-- disk. The counts are a minute's; after a crash PostgreSQL empties an unlogged table, which gives
-- every token a fresh minute, and nothing else is lost. Replicas still count in the same rows.
ALTER TABLE rate_windows SET UNLOGGED;
