"""The terms the local index counts rows by: BM25's document frequencies, kept by the index's writes
(the `term_rows` table) so that a search need not count them.

A query word is looked up by one term, as the team server's `memory_terms` (migration 0020) does:
- a token of at most three characters as `=token` (a query word that short matches that token only,
  as FTS5's `"word"`);
- every prefix of four to sixteen characters of a longer token as itself (a query word of four
  characters or more also matches the longer tokens it begins, as FTS5's `"word"*`).
A row counts once for a term however many of its tokens give it: "connection" and "connected" in one
row count once for "conn". A query word of several tokens, or a prefix outside those lengths, has no
term: the index counts its rows by matching (`Index.document_counts`).
"""

from __future__ import annotations

from collections.abc import Iterable

from hivelore.memory import bm25


def terms_of(columns: Iterable[str]) -> set[str]:
    """The terms one row holds, given the texts of its full-text columns (key, value, tags)."""
    held: set[str] = set()
    # No token spans a space, so the columns are tokenized as one text.
    for token in set(bm25.tokens(" ".join(columns))):
        terms = _OF_TOKEN.get(token)
        if terms is None:
            if len(_OF_TOKEN) >= _KEPT_TOKENS:
                _OF_TOKEN.clear()
            terms = _OF_TOKEN[token] = _token_terms(token)
        held.update(terms)
    return held


# The terms of each token seen: a rebuild meets most tokens thousands of times (at 60,000 memories,
# counting the terms took 6 s without this, on a busy machine). Bounded for a long-lived process.
_OF_TOKEN: dict[str, tuple[str, ...]] = {}
_KEPT_TOKENS = 100_000


def _token_terms(token: str) -> tuple[str, ...]:
    if len(token) < bm25.PREFIX_FROM:
        return ("=" + token,)
    return tuple(token[:n] for n in range(bm25.PREFIX_FROM, min(len(token), bm25.TERM_PREFIX_UPTO) + 1))


def term_for(word: str) -> str | None:
    """The term that counts the rows holding query word `word` (as `fts_query` matches it), or None
    when none is kept for it; '' for a word of no token, which no row holds."""
    phrase = bm25.Phrase.of(word)
    return bm25.held_term(phrase) if phrase.parts else ""
