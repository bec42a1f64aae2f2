-- A lock on a whole space that a deletion holds against its writes (issue 30). Every write of a
-- memory takes its address's lock first (`memory_locked`, migration 0006); it now takes a shared lock
-- on the address's space before it. Deleting an account, erasing a user's data and restoring it take
-- that space's lock exclusively (postgres/erasure.py): they wait for the writes under way in the space
-- to commit, and the writes that come meanwhile wait before they hold anything, so none of them is
-- half-seen by the deletion (a row left behind with no account; a restored row colliding with a new
-- one at its address), and none locks a row the deletion then waits for while it waits for the
-- deletion (a deadlock, which PostgreSQL ends by failing one of them).
-- Shared locks do not exclude one another: writes into one space go on side by side as before.

CREATE OR REPLACE FUNCTION memory_locked(p_space text, p_scope text, p_key text)
RETURNS TABLE (record jsonb, tokens integer)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('space' || E'\n' || p_space, 0));
    PERFORM pg_advisory_xact_lock(hashtextextended(p_space || E'\n' || p_scope || '::' || p_key, 0));
    RETURN QUERY SELECT m.record, m.tokens FROM memories m
        WHERE m.space = p_space AND m.scope = p_scope AND m.key = p_key;
END
$$;
