-- The audit log of data-control actions (export, delete and restore one's data, an organisation's
-- switches): who did what to which target, when, under which request id. A user reads their own
-- lines, an organisation's admins the organisation's.

CREATE TABLE audit_log (
    id          bigserial PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    user_id     bigint REFERENCES users (id) ON DELETE SET NULL,
    actor       text NOT NULL,  -- the user's name when they acted
    org_id      bigint REFERENCES orgs (id) ON DELETE CASCADE,  -- NULL: the actor's own data
    action      text NOT NULL,
    target      text NOT NULL,
    request_id  text NOT NULL
);
CREATE INDEX audit_log_by_user ON audit_log (user_id, id);
CREATE INDEX audit_log_by_org ON audit_log (org_id, id) WHERE org_id IS NOT NULL;
