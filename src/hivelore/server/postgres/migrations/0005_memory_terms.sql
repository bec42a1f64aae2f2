-- Faster search and writes on a large organisation (issue 13):
-- * `terms`: a row's tokens as bm25 reads them, its three columns (key, value, tags) separated by a
--   tab and their tokens by a space. A search scores its shortlist from them instead of decoding
--   each record and tokenizing it again; rows written before this migration have none (NULL) and
--   are tokenized from their record as before, until their next write.
-- * `body` and its trigram index go: nothing reads them, yet every write updated that GIN index,
--   and it was the largest part of what did not fit in shared_buffers.
-- * A request sent with an Idempotency-Key deletes its user's expired keys: by (user_id, created)
--   that reads the expired ones only, not every key the user sent in the last day.

ALTER TABLE memories ADD COLUMN terms text;
DROP INDEX memories_body_trgm;
ALTER TABLE memories DROP COLUMN body;

CREATE INDEX idempotent_requests_by_user_age ON idempotent_requests (user_id, created);
DROP INDEX idempotent_requests_by_age;
