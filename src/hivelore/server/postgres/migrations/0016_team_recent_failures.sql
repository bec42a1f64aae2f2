-- The team's recent failed attempts per repository, latest first (issue 14): each hook server's replica
-- asks for them several times a second while it waits for a change (GET /v1/team/replica), so the
-- query reads the newest rows of one repository from this index instead of all its attempts.
CREATE INDEX team_attempts_recent_failures ON team_attempts (repo, last_ts DESC) WHERE outcome != 'passed';
