-- Accounts, organisations, roles, invitations, tokens and the rate-limit windows.
-- Everything a replica needs to agree on lives here, never in a process's memory.

CREATE TABLE users (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    email       text UNIQUE,
    github      text UNIQUE,
    created     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE orgs (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
    created     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE members (
    org_id      bigint NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    user_id     bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role        text NOT NULL CHECK (role IN ('viewer', 'member', 'admin', 'owner')),
    joined      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, user_id)
);
CREATE INDEX members_by_user ON members (user_id);

CREATE TABLE invitations (
    id          bigserial PRIMARY KEY,
    org_id      bigint NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    invitee     text NOT NULL,  -- an email address, or @handle on GitHub
    role        text NOT NULL CHECK (role IN ('viewer', 'member', 'admin')),
    hash        text NOT NULL UNIQUE,  -- sha256 of the invitation token, shown once
    invited_by  bigint REFERENCES users (id) ON DELETE SET NULL,
    created     timestamptz NOT NULL DEFAULT now(),
    expires     timestamptz NOT NULL,
    accepted_by bigint REFERENCES users (id) ON DELETE SET NULL,
    accepted    timestamptz
);

CREATE TABLE tokens (
    id          bigserial PRIMARY KEY,
    user_id     bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('rw', 'ro', 'wo')),
    hash        text NOT NULL UNIQUE,  -- sha256 of the whole token; the token itself is shown once
    name        text NOT NULL DEFAULT '',
    scopes      text[] NOT NULL DEFAULT '{}',  -- allow-list of scope patterns; empty allows every scope
    created     timestamptz NOT NULL DEFAULT now(),
    expires     timestamptz,
    revoked     timestamptz
);
CREATE INDEX tokens_by_user ON tokens (user_id);

-- A scope an org shares: a member's write under it goes to the org's one shared copy.
CREATE TABLE shared_scopes (
    org_id      bigint NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    scope       text NOT NULL,
    bound_by    bigint REFERENCES users (id) ON DELETE SET NULL,
    bound       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, scope)
);
CREATE INDEX shared_scopes_by_scope ON shared_scopes (scope);

-- Requests per token per minute; every replica counts in the same row.
CREATE TABLE rate_windows (
    token_id    bigint NOT NULL REFERENCES tokens (id) ON DELETE CASCADE,
    started     timestamptz NOT NULL,
    count       integer NOT NULL,
    PRIMARY KEY (token_id, started)
);
