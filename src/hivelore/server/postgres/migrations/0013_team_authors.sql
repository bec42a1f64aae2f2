-- Who wrote each team row (migration 0012): the caller's account, so a user's export and data
-- deletion, and an organisation admin's listing, reach the team store too. `developer` is the
-- client's name for a person and proves nothing; `author` is the token's user. The default reads the
-- transaction-local setting PostgresTeam makes at the start of each write (`hivelore.user_id`); with
-- no setting it fails, so a write path that forgot it fails its tests rather than leaving rows
-- nobody owns. Rows written before this migration have none (NULL), as do a deleted account's.

ALTER TABLE team_intents ADD COLUMN author bigint REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE team_sessions ADD COLUMN author bigint REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE team_claims ADD COLUMN author bigint REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE team_changes ADD COLUMN author bigint REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE team_attempts ADD COLUMN author bigint REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE team_decisions ADD COLUMN author bigint REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE team_notes ADD COLUMN author bigint REFERENCES users (id) ON DELETE SET NULL;

-- set apart from ADD COLUMN: a volatile default there would be evaluated for the existing rows
ALTER TABLE team_intents ALTER COLUMN author SET DEFAULT current_setting('hivelore.user_id')::bigint;
ALTER TABLE team_sessions ALTER COLUMN author SET DEFAULT current_setting('hivelore.user_id')::bigint;
ALTER TABLE team_claims ALTER COLUMN author SET DEFAULT current_setting('hivelore.user_id')::bigint;
ALTER TABLE team_changes ALTER COLUMN author SET DEFAULT current_setting('hivelore.user_id')::bigint;
ALTER TABLE team_attempts ALTER COLUMN author SET DEFAULT current_setting('hivelore.user_id')::bigint;
ALTER TABLE team_decisions ALTER COLUMN author SET DEFAULT current_setting('hivelore.user_id')::bigint;
ALTER TABLE team_notes ALTER COLUMN author SET DEFAULT current_setting('hivelore.user_id')::bigint;

CREATE INDEX team_intents_author ON team_intents (author) WHERE author IS NOT NULL;
CREATE INDEX team_sessions_author ON team_sessions (author) WHERE author IS NOT NULL;
CREATE INDEX team_claims_author ON team_claims (author) WHERE author IS NOT NULL;
CREATE INDEX team_changes_author ON team_changes (author) WHERE author IS NOT NULL;
CREATE INDEX team_attempts_author ON team_attempts (author) WHERE author IS NOT NULL;
CREATE INDEX team_decisions_author ON team_decisions (author) WHERE author IS NOT NULL;
CREATE INDEX team_notes_author ON team_notes (author) WHERE author IS NOT NULL;
