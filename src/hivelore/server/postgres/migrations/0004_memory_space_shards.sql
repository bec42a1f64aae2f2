-- A space's counters (its generation, rows and tokens) in several rows instead of one. Every write
-- to a space updated its one row, so every write to an organisation's space waited for the one
-- before it to commit (its fsync included): an organisation's writes went one at a time. A write
-- now updates the row of its connection's shard; readers already add up every row of a space.

ALTER TABLE memory_spaces ADD COLUMN shard smallint NOT NULL DEFAULT 0;
ALTER TABLE memory_spaces DROP CONSTRAINT memory_generations_pkey;
ALTER TABLE memory_spaces ADD PRIMARY KEY (space, shard);
