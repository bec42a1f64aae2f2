-- An organisation's switch that turns memory off for one repository (issue 17): while a row is here,
-- the server keeps and serves nothing under the repository's scope (or a branch of it) for the
-- organisation's members, and their checkouts of it behave as `"mode": "off"` once their mirror has
-- synced (the change feed carries the switches). Deleting the row switches memory back on.
CREATE TABLE repo_switches (
    org_id      bigint NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    scope       text NOT NULL CHECK (scope LIKE 'repo::%'),
    switched_by bigint REFERENCES users (id) ON DELETE SET NULL,
    actor       text NOT NULL,  -- the user's name when they switched it off
    switched    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, scope)
);
