-- Recall by meaning on the team server (issue 15): per memory, the vector of its text as the local
-- store computes it (memory/vectors.py: all-MiniLM-L6-v2 int8, 384 dimensions, unit length), kept
-- as 384 little-endian float16 (768 bytes). pgvector is not packaged for every PostgreSQL a team
-- runs, so the column is plain bytea and the nearest rows are found in the server's process
-- (server/postgres/vectors.py), which reads each vector once and then only what changed since.
-- * `hash`: of the model and the text the vector was computed from; a write whose text did not
--   change keeps its vector.
-- * `seq`, `changed`: a change number and time, as memories' own (migration 0003), so a server's
--   copy of a space's vectors asks for the newer ones only.
-- A row without a vector (written before this migration, or by a replica without the model) gets
-- one from the backfill every replica with the model runs at start.

CREATE SEQUENCE memory_vector_changes;

CREATE TABLE memory_vectors (
    id      bigint PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
    hash    text NOT NULL,
    vector  bytea NOT NULL,
    seq     bigint NOT NULL DEFAULT nextval('memory_vector_changes'),
    changed timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX memory_vectors_by_seq ON memory_vectors (seq);
