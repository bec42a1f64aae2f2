-- Tell the replicas when what a hook server's replica holds may have changed (issue 14): the intents,
-- claims and attempts. A held GET /v1/team/replica request then looks again at once instead of every
-- quarter second (server/postgres/teamwatch.py). Statement-level: PostgreSQL folds the identical
-- notifications of one transaction into one, sent when it commits; a rolled back change sends none.
CREATE FUNCTION hivelore_team_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('hivelore_team', '');
    RETURN NULL;
END;
$$;

CREATE TRIGGER team_intents_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON team_intents
    FOR EACH STATEMENT EXECUTE FUNCTION hivelore_team_changed();
CREATE TRIGGER team_claims_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON team_claims
    FOR EACH STATEMENT EXECUTE FUNCTION hivelore_team_changed();
CREATE TRIGGER team_attempts_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON team_attempts
    FOR EACH STATEMENT EXECUTE FUNCTION hivelore_team_changed();
CREATE TRIGGER team_attempt_symbols_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON team_attempt_symbols
    FOR EACH STATEMENT EXECUTE FUNCTION hivelore_team_changed();
