-- What the memory routes need beyond 0002:
-- * an owner per row: whose quota a visible row counts against (the user who first wrote it);
-- * the row's token count: its length for BM25, which the server computes as SQLite FTS5 does;
-- * a change number and time: a client's mirror asks for what changed since the last number it saw
--   (postgres/tier.py `changes`), and a deleted row leaves a tombstone so that mirrors drop it too;
-- * per space, its rows and tokens (BM25's corpus), kept by every write;
-- * the answers of requests sent with an Idempotency-Key, so a retried write is applied once.

CREATE SEQUENCE memory_changes;

ALTER TABLE memories
    ADD COLUMN owner bigint REFERENCES users (id) ON DELETE SET NULL,
    ADD COLUMN tokens integer NOT NULL DEFAULT 0,
    ADD COLUMN seq bigint NOT NULL DEFAULT nextval('memory_changes'),
    ADD COLUMN changed timestamptz NOT NULL DEFAULT clock_timestamp();
CREATE INDEX memories_by_owner ON memories (owner) WHERE NOT archived;
CREATE INDEX memories_by_seq ON memories (space, seq);

CREATE TABLE memory_tombstones (
    space       text NOT NULL,
    scope       text NOT NULL,
    key         text NOT NULL,
    seq         bigint NOT NULL DEFAULT nextval('memory_changes'),
    changed     timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (space, scope, key)
);
CREATE INDEX memory_tombstones_by_seq ON memory_tombstones (space, seq);

ALTER TABLE memory_generations RENAME TO memory_spaces;
ALTER TABLE memory_spaces
    ADD COLUMN rows bigint NOT NULL DEFAULT 0,
    ADD COLUMN tokens bigint NOT NULL DEFAULT 0;
UPDATE memory_spaces s SET rows = (SELECT count(*) FROM memories m WHERE m.space = s.space);

CREATE TABLE idempotent_requests (
    user_id     bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key         text NOT NULL,
    fingerprint text NOT NULL,  -- sha256 of the method, path and body: one key, one request
    body        jsonb NOT NULL,
    created     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, key)
);
CREATE INDEX idempotent_requests_by_age ON idempotent_requests (created);
