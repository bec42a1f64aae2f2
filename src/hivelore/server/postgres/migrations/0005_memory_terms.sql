-- Faster search and writes on a large organisation (issue 13):
-- * `terms`: a row's tokens as bm25 reads them, its three columns (key, value, tags) separated by a
--   tab and their tokens by a space. A search scores its shortlist from them instead of decoding
--   each record and tokenizing it again; rows written before this migration have none (NULL) and
--   are tokenized from their record as before, until their next write.
-- * `body` and its trigram index go: nothing reads them, yet every write updated that GIN index,
--   and it was the largest part of what did not fit in shared_buffers.
-- * `memory_docs`: what search reads of a row, apart from its record: its space, scope, visibility
--   and tsvector (moved from `memories`, with the GIN index). A search counts the rows holding each
--   of its words over every row of the spaces read (bm25's document frequencies, which must be exact
--   to rank as FTS5 does), then ranks the matches to cut its shortlist: both passes read the whole
--   wide table, larger than shared_buffers, and now read this narrow one. Every write keeps it in the
--   same statement as the row.
-- * A request sent with an Idempotency-Key deletes its user's expired keys: by (user_id, created)
--   that reads the expired ones only, not every key the user sent in the last day.

ALTER TABLE memories ADD COLUMN terms text;
DROP INDEX memories_body_trgm;
ALTER TABLE memories DROP COLUMN body;

CREATE INDEX idempotent_requests_by_user_age ON idempotent_requests (user_id, created);
DROP INDEX idempotent_requests_by_age;

CREATE TABLE memory_docs (
    id          bigint PRIMARY KEY,  -- memories.id
    space       text NOT NULL,
    scope       text NOT NULL,
    archived    boolean NOT NULL,
    expires_ts  double precision,
    doc         tsvector NOT NULL
);
INSERT INTO memory_docs (id, space, scope, archived, expires_ts, doc)
    SELECT id, space, scope, archived, expires_ts, doc FROM memories;
CREATE INDEX memory_docs_doc ON memory_docs USING gin (doc);
CREATE INDEX memory_docs_by_space ON memory_docs (space);
DROP INDEX memories_doc;
ALTER TABLE memories DROP COLUMN doc;
