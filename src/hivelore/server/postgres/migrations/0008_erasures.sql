-- A user's deleted data, kept for a recovery window (postgres/erasure.py). Deleting moves the rows of
-- the user's personal space ('user:<id>') to 'erased:<id>', a space no caller reads, so reads, search
-- and the change feed (through tombstones) lose them at once; a restore moves them back, and a purge
-- after `purge_after` deletes them, their search documents and their tombstones.
CREATE TABLE erasures (
    user_id      bigint PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    deleted      timestamptz NOT NULL DEFAULT now(),
    purge_after  timestamptz NOT NULL
);
CREATE INDEX erasures_due ON erasures (purge_after);

-- Erased rows count against no quota.
CREATE OR REPLACE FUNCTION memory_quota_used(p_owner bigint, p_now double precision)
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('quota' || E'\n' || p_owner::text, 0));
    RETURN (SELECT count(*) FROM memories m
        WHERE m.owner = p_owner AND NOT m.archived AND (m.expires_ts IS NULL OR m.expires_ts > p_now)
            AND m.space NOT LIKE 'erased:%');
END
$$;
