-- Recall by meaning, a second vector per memory (issue 15): the vector of its symptoms (`when`) alone,
-- beside the vector of its whole text (migration 0015). A row is as near to a query as the nearer of
-- the two (server/postgres/vectors.py, as memory/vectors.py ranks on a machine). NULL: no symptoms.
-- The vectors of rows that have symptoms are dropped so the backfill every replica runs at start
-- computes both again (one batch through the model per 256 rows); until then such a row is found
-- by BM25 alone, as a row written while no model was loaded is.

ALTER TABLE memory_vectors ADD COLUMN symptoms bytea;

DELETE FROM memory_vectors v USING memories m
WHERE m.id = v.id AND coalesce(m.record ->> 'when', '') <> '';
