-- The dashboard's sessions on the team server (postgres/sessions.py): a browser logs in with a token
-- once and then holds only a random session id in a cookie. The row keeps the id's SHA-256, never the
-- id, and points at the token, so a revoked or expired token ends its sessions at their next request,
-- and every replica knows every session.
CREATE TABLE dashboard_sessions (
    hash        text PRIMARY KEY,
    token_id    bigint NOT NULL REFERENCES tokens (id) ON DELETE CASCADE,
    created     timestamptz NOT NULL DEFAULT now(),
    expires     timestamptz NOT NULL
);
CREATE INDEX dashboard_sessions_due ON dashboard_sessions (expires);
