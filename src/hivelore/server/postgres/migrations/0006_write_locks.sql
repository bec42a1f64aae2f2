-- A write's lock and its read of what is locked, in one statement (issue 13): a write took the
-- advisory lock on its address, then read the row in a second round trip, and a write that makes a
-- row visible did the same for its owner's quota (lock, then count). Each round trip cost the
-- replica and PostgreSQL CPU of their own. A VOLATILE function takes a new snapshot for each of its
-- statements, so the read, run once the lock is held, sees what the writer before committed: the
-- rule the two statements kept. The lock keys are the ones the statements took, so replicas of the
-- previous version and of this one exclude each other while both serve.

CREATE FUNCTION memory_locked(p_space text, p_scope text, p_key text)
RETURNS TABLE (record jsonb, tokens integer)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_space || E'\n' || p_scope || '::' || p_key, 0));
    RETURN QUERY SELECT m.record, m.tokens FROM memories m
        WHERE m.space = p_space AND m.scope = p_scope AND m.key = p_key;
END
$$;

CREATE FUNCTION memory_quota_used(p_owner bigint, p_now double precision)
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('quota' || E'\n' || p_owner::text, 0));
    RETURN (SELECT count(*) FROM memories m
        WHERE m.owner = p_owner AND NOT m.archived AND (m.expires_ts IS NULL OR m.expires_ts > p_now));
END
$$;
