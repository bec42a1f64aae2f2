-- Memories on the server: the same record as a file's (`record`, Memory.to_dict), in a space — an
-- organisation's shared one or a user's own — with the columns reads filter and rank on.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE memories (
    id          bigserial PRIMARY KEY,
    space       text NOT NULL,  -- 'org:<id>' or 'user:<id>'
    scope       text NOT NULL,
    key         text NOT NULL,
    record      jsonb NOT NULL,
    archived    boolean NOT NULL,
    expires_ts  double precision,  -- seconds since the epoch; NULL: never
    updated_ts  double precision NOT NULL,
    seen_count  integer NOT NULL,
    body        text NOT NULL,  -- the key's words, the value and the tags: what search looks in
    doc         tsvector NOT NULL,
    UNIQUE (space, scope, key)
);
CREATE INDEX memories_doc ON memories USING gin (doc);
CREATE INDEX memories_body_trgm ON memories USING gin (body gin_trgm_ops);
CREATE INDEX memories_recent ON memories (space, scope, updated_ts DESC);
CREATE INDEX memories_seen ON memories (space, scope, seen_count DESC);

-- Moves with every change of a space's memories (what a reader's cache compares).
CREATE TABLE memory_generations (
    space       text PRIMARY KEY,
    generation  bigint NOT NULL
);
