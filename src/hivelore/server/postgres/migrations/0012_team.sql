-- The team model (team/model.py) on the server: each organisation's tasks, claims, attempts,
-- decisions and notes, per repository (`repo`, e.g. acme/shop). The same tables as a machine's
-- team.db, with the organisation added; symbols and test names compare and sort as bytes (COLLATE "C"),
-- as SQLite and Python do. Times are the client's (seconds since the epoch): a claim queued in a
-- client's outbox happened when the client saw it, not when it arrived.

CREATE TABLE team_intents (
    id          bigserial PRIMARY KEY,
    org_id      bigint NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    repo        text NOT NULL,
    title       text NOT NULL,
    owner       text NOT NULL,
    status      text NOT NULL CHECK (status IN ('active', 'handed_off', 'done')),
    created_ts  double precision NOT NULL,
    updated_ts  double precision NOT NULL
);
CREATE INDEX team_intents_repo ON team_intents (org_id, repo, status, updated_ts DESC);

CREATE TABLE team_sessions (
    org_id      bigint NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    agent       text NOT NULL,
    session_id  text NOT NULL,
    repo        text NOT NULL,
    developer   text NOT NULL,
    intent_id   bigint NOT NULL REFERENCES team_intents (id) ON DELETE CASCADE,
    started_ts  double precision NOT NULL,
    PRIMARY KEY (org_id, agent, session_id, repo)
);
CREATE INDEX team_sessions_intent ON team_sessions (intent_id);

CREATE TABLE team_claims (
    intent_id   bigint NOT NULL REFERENCES team_intents (id) ON DELETE CASCADE,
    symbol      text COLLATE "C" NOT NULL,
    developer   text NOT NULL,
    ts          double precision NOT NULL,
    PRIMARY KEY (intent_id, symbol)
);
CREATE INDEX team_claims_symbol ON team_claims (symbol);

-- symbols an edit touched since the intent's last test run; that run takes them
CREATE TABLE team_changes (
    intent_id   bigint NOT NULL REFERENCES team_intents (id) ON DELETE CASCADE,
    symbol      text COLLATE "C" NOT NULL,
    ts          double precision NOT NULL,
    PRIMARY KEY (intent_id, symbol)
);

-- failed and errors: the sorted names (the deduplication key with intent and outcome)
CREATE TABLE team_attempts (
    id          bigserial PRIMARY KEY,
    intent_id   bigint NOT NULL REFERENCES team_intents (id) ON DELETE CASCADE,
    repo        text NOT NULL,
    developer   text NOT NULL,
    command     text NOT NULL,
    command_key text NOT NULL,
    outcome     text NOT NULL,
    failed      text[] COLLATE "C" NOT NULL,
    errors      text[] COLLATE "C" NOT NULL,
    count       integer NOT NULL,
    first_ts    double precision NOT NULL,
    last_ts     double precision NOT NULL,
    resolved_by bigint,
    resolved_ts double precision
);
CREATE INDEX team_attempts_intent ON team_attempts (intent_id, outcome);
CREATE INDEX team_attempts_open ON team_attempts (repo) WHERE resolved_by IS NULL AND outcome != 'passed';
CREATE INDEX team_attempts_resolved_by ON team_attempts (resolved_by) WHERE resolved_by IS NOT NULL;

CREATE TABLE team_attempt_symbols (
    attempt_id  bigint NOT NULL REFERENCES team_attempts (id) ON DELETE CASCADE,
    symbol      text COLLATE "C" NOT NULL,
    PRIMARY KEY (attempt_id, symbol)
);
CREATE INDEX team_attempt_symbols_symbol ON team_attempt_symbols (symbol);

CREATE TABLE team_decisions (
    id          bigserial PRIMARY KEY,
    org_id      bigint NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    repo        text NOT NULL,
    intent_id   bigint REFERENCES team_intents (id) ON DELETE SET NULL,
    developer   text NOT NULL,
    text        text NOT NULL,
    ts          double precision NOT NULL
);
CREATE INDEX team_decisions_repo ON team_decisions (org_id, repo);
CREATE INDEX team_decisions_intent ON team_decisions (intent_id);

-- superseded_by: the later decision that replaced this one on this symbol
CREATE TABLE team_decision_symbols (
    decision_id   bigint NOT NULL REFERENCES team_decisions (id) ON DELETE CASCADE,
    symbol        text COLLATE "C" NOT NULL,
    superseded_by bigint,
    PRIMARY KEY (decision_id, symbol)
);
CREATE INDEX team_decision_symbols_symbol ON team_decision_symbols (symbol);

CREATE TABLE team_notes (
    id          bigserial PRIMARY KEY,
    intent_id   bigint NOT NULL REFERENCES team_intents (id) ON DELETE CASCADE,
    developer   text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('progress', 'handoff')),
    text        text NOT NULL,
    ts          double precision NOT NULL
);
CREATE INDEX team_notes_intent ON team_notes (intent_id, ts);

-- warnings a user's agent sessions were shown, once each (a session is the user's, in any org)
CREATE TABLE team_warnings (
    user_id     bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    agent       text NOT NULL,
    session_id  text NOT NULL,
    key         text NOT NULL,
    ts          double precision NOT NULL,
    PRIMARY KEY (user_id, agent, session_id, key)
);
