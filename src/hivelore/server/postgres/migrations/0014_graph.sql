-- A repository's code graph as a client pushed it (`hivelore graph push`), per organisation and
-- repository (`repo`, e.g. acme/shop), so the server's graph queries and the dashboard need no
-- checkout. Derived data: a client sends only the files whose `hash` changed (it covers the file's
-- code and the calls resolved from it) and the server replaces those files' rows. Calls are kept by
-- the caller's file; a call whose callee is not (or no longer) held is left out when the graph is
-- loaded. Ids compare and sort as bytes (COLLATE "C"), as SQLite and Python do.

CREATE TABLE graph_files (
    org_id      bigint NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    repo        text NOT NULL,
    path        text COLLATE "C" NOT NULL,
    language    text NOT NULL,
    hash        text NOT NULL,
    parser      text NOT NULL,
    pushed      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org_id, repo, path)
);

CREATE TABLE graph_symbols (
    org_id      bigint NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    repo        text NOT NULL,
    id          text COLLATE "C" NOT NULL,
    file        text COLLATE "C" NOT NULL,
    qualname    text NOT NULL,
    name        text NOT NULL,
    kind        text NOT NULL,
    line        integer NOT NULL,
    end_line    integer NOT NULL,
    hash        text NOT NULL,
    seq         bigint NOT NULL,  -- the pushing client's order (its graph.db key): ties break as there
    PRIMARY KEY (org_id, repo, id)
);
CREATE INDEX graph_symbols_file ON graph_symbols (org_id, repo, file);

CREATE TABLE graph_calls (
    org_id      bigint NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    repo        text NOT NULL,
    caller_file text COLLATE "C" NOT NULL,
    caller      text COLLATE "C" NOT NULL,
    callee      text COLLATE "C" NOT NULL,
    confidence  double precision NOT NULL,
    PRIMARY KEY (org_id, repo, caller, callee)
);
CREATE INDEX graph_calls_file ON graph_calls (org_id, repo, caller_file);
