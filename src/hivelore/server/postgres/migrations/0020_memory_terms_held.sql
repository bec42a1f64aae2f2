-- BM25's document frequencies kept by the writes (issue 26). A search needs, per query word, how many
-- rows of the spaces it reads hold that word (exactly: FTS5 counts them, and the same order as on one
-- machine needs the same counts). It counted them with a pass over every row of the spaces: at 100,000
-- rows about 70 ms of PostgreSQL's CPU per search, twice when the any-word search ran too.
--
-- `memory_terms` holds, per space, how many rows hold each term a query word can be looked up by:
-- * a token of at most three characters as `=token` (a query word that short matches that token only);
-- * every prefix of four to sixteen characters of a longer token as itself (a query word of four
--   characters or more also matches the longer tokens it begins, as FTS5's `"word"*`): a row holding
--   "connection" and "connected" counts once for "conn", "connect" and the rest.
-- A query word of two or more tokens (a phrase), or a prefix outside those lengths, is counted through
-- the GIN index instead (postgres/tier.py `_holding`).
--
-- The counts follow `memory_docs` by statement-level triggers, so every path that changes a row's
-- words or its space (a write, a delete, an erasure, its restore and its purge) keeps them without a
-- rule of its own. Like `memory_spaces`, a space's count of a term is spread over the shards of the
-- writers' connections (pg_backend_pid() % 16), so that the writes of common words do not wait on one
-- row; readers add the shards up. Each statement adds its changes in the order of (space, term), so
-- two writers of the same shard take the rows in one order.

CREATE TABLE memory_terms (
    space  text NOT NULL,
    term   text NOT NULL,
    shard  smallint NOT NULL,
    rows   integer NOT NULL,
    PRIMARY KEY (space, term, shard)
);

CREATE FUNCTION memory_terms_of(p_doc tsvector) RETURNS SETOF text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT DISTINCT t.term FROM unnest(p_doc) u(lexeme, positions, weights),
    LATERAL (
        SELECT '=' || u.lexeme WHERE length(u.lexeme) <= 3
        UNION ALL
        SELECT left(u.lexeme, k) FROM generate_series(4, least(length(u.lexeme), 16)) k
    ) t(term)
$$;

-- A statement's rows added (sign 1, its NEW TABLE) or removed (sign -1, its OLD TABLE), as `docs`.
CREATE FUNCTION memory_terms_added_or_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_terms AS c (space, term, shard, rows)
    SELECT d.space, t.term, pg_backend_pid() % 16, TG_ARGV[0]::integer * count(*)
    FROM docs d, memory_terms_of(d.doc) t(term)
    GROUP BY d.space, t.term ORDER BY d.space, t.term
    ON CONFLICT (space, term, shard) DO UPDATE SET rows = c.rows + excluded.rows;
    RETURN NULL;
END
$$;

-- An update: +1 per term of each row as it is now, -1 per term of it as it was; a row whose words
-- and space did not change (most updates: a lesson seen again, archived, restored) is left out.
CREATE FUNCTION memory_terms_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_terms AS c (space, term, shard, rows)
    SELECT space, term, pg_backend_pid() % 16, sum(change) FROM (
        SELECT n.space, t.term, 1 AS change
        FROM new_docs n JOIN old_docs o USING (id), memory_terms_of(n.doc) t(term)
        WHERE n.doc <> o.doc OR n.space <> o.space
        UNION ALL
        SELECT o.space, t.term, -1
        FROM old_docs o JOIN new_docs n USING (id), memory_terms_of(o.doc) t(term)
        WHERE n.doc <> o.doc OR n.space <> o.space
    ) changed
    GROUP BY space, term HAVING sum(change) <> 0 ORDER BY space, term
    ON CONFLICT (space, term, shard) DO UPDATE SET rows = c.rows + excluded.rows;
    RETURN NULL;
END
$$;

CREATE TRIGGER memory_docs_terms_inserted AFTER INSERT ON memory_docs
    REFERENCING NEW TABLE AS docs FOR EACH STATEMENT EXECUTE FUNCTION memory_terms_added_or_removed('1');
CREATE TRIGGER memory_docs_terms_deleted AFTER DELETE ON memory_docs
    REFERENCING OLD TABLE AS docs FOR EACH STATEMENT EXECUTE FUNCTION memory_terms_added_or_removed('-1');
CREATE TRIGGER memory_docs_terms_updated AFTER UPDATE ON memory_docs
    REFERENCING OLD TABLE AS old_docs NEW TABLE AS new_docs FOR EACH STATEMENT EXECUTE FUNCTION memory_terms_updated();

INSERT INTO memory_terms (space, term, shard, rows)
    SELECT d.space, t.term, 0, count(*) FROM memory_docs d, memory_terms_of(d.doc) t(term) GROUP BY d.space, t.term;
