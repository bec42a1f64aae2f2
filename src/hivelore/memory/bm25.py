"""Relevance as SQLite FTS5 computes it, in Python: so a tier that is not SQLite (the team server's
PostgreSQL) gives a search the same relevance as the local index, and the same query gives the same
order locally and remotely.

Two parts, each pinned against FTS5 itself by tests/test_bm25.py:

- `tokens`: FTS5's `unicode61` tokenizer with `remove_diacritics 2`, the local index's: letters and
  digits make tokens, everything else separates them (the underscore too), case and diacritics are
  folded.
- `score`: FTS5's `bm25()` with the column weights the local index ranks with (key 3, value 1,
  tags 2), over a query of phrases that are all required (an every-word search) or any of them.

Stdlib only: the tier contract suite and the hook path may import it.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence

from hivelore.records import record

K1 = 1.2
B = 0.75
WEIGHTS = (3.0, 1.0, 2.0)  # key, value, tags: as the local index's bm25(memories_fts, 3.0, 1.0, 2.0)
PREFIX_FROM = 4  # a query word of this many characters or more also matches longer words
# The document-frequency tables (the local index's term_rows, the team server's memory_terms) keep a
# token's prefixes from PREFIX_FROM characters to this many.
TERM_PREFIX_UPTO = 16
_TOKEN = re.compile(r"[^\W_]+")
_ASCII_TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    """The tokens FTS5's unicode61 tokenizer (remove_diacritics 2) makes of `text`."""
    if text.isascii():
        # Most lessons are ASCII: no diacritic to fold, so NFKD and the per-character combining test
        # (most of a row's tokenizing time) change nothing.
        return _ASCII_TOKEN.findall(text.lower())
    folded = unicodedata.normalize("NFKD", text.lower())
    stripped = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return _TOKEN.findall(stripped)


def columns(key: str, value: str, tags: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """A memory's three indexed columns as tokens, the way the local index stores them."""
    return tokens(key.replace("-", " ").replace("_", " ")), tokens(value), tokens(" ".join(tags))


@record
class Phrase:
    """One query word as FTS5 reads `"word"*`: its tokens in a row, the last one a prefix when the
    word is long enough."""

    parts: tuple[str, ...]
    prefix: bool

    @classmethod
    def of(cls, word: str) -> Phrase:
        return cls(tuple(tokens(word)), len(word) >= PREFIX_FROM)

    def count(self, words: Sequence[str]) -> int:
        """How many times the phrase occurs in one column's tokens."""
        return self.occurrences(words, " " + " ".join(words))

    def occurrences(self, words: Sequence[str], spaced: str) -> int:
        """`count`, given also the column as one string, each token after a space (`spaced`): a row
        scored for several phrases joins its columns once, not once per phrase."""
        n = len(self.parts)
        if n == 0:
            return 0
        if n == 1:  # most query words: one token, counted without a slice per position
            part = self.parts[0]
            if not self.prefix:
                return words.count(part)
            # Tokens hold no space, so " part" occurs once at each token that begins with part, and
            # two occurrences never overlap: counted in C, three times as fast as a loop here.
            return spaced.count(" " + part)
        found = 0
        for start in range(len(words) - n + 1):
            head, last = words[start : start + n - 1], words[start + n - 1]
            if tuple(head) == self.parts[:-1] and (
                last.startswith(self.parts[-1]) if self.prefix else last == self.parts[-1]
            ):
                found += 1
        return found


def held_term(phrase: Phrase) -> str | None:
    """The term a document-frequency table counts the rows holding `phrase` under, or None when it
    keeps none for it: a phrase of several tokens, or a prefix outside the lengths kept. A token of
    under PREFIX_FROM characters is kept as `=token` (a word that short matches that token only)."""
    if len(phrase.parts) != 1:
        return None
    token = phrase.parts[0]
    if not phrase.prefix:
        return f"={token}" if len(token) < PREFIX_FROM else None
    return token if PREFIX_FROM <= len(token) <= TERM_PREFIX_UPTO else None


@record
class Corpus:
    """What FTS5's bm25 knows of the whole table: its rows, their tokens, and per phrase the rows
    that hold it."""

    rows: int
    total_tokens: int
    holding: tuple[int, ...]  # per phrase of the query, the rows that hold it

    def idf(self, i: int) -> float:
        n = self.holding[i]
        value = math.log((self.rows - n + 0.5) / (n + 0.5))
        return value if value > 0 else 1e-6


def score(phrases: Sequence[Phrase], row: tuple[list[str], list[str], list[str]], corpus: Corpus) -> float:
    """FTS5's bm25 of one row (as a relevance: higher is better; FTS5 gives its negative)."""
    return Scorer(phrases, corpus).joined(*(" ".join(column) for column in row))


class Scorer:
    """`score` for one query over many rows: the phrases' idf and the average length worked out once,
    and each row given as its columns' tokens joined by single spaces (as a tier stores them), so a
    row is scored without making a list of its tokens unless a phrase needs one."""

    def __init__(self, phrases: Sequence[Phrase], corpus: Corpus) -> None:
        # A one-token prefix (most query words) is counted as " token" in the joined string, in C.
        self.phrases = [
            (phrase, corpus.idf(i), " " + phrase.parts[0] if phrase.prefix and len(phrase.parts) == 1 else None)
            for i, phrase in enumerate(phrases)
        ]
        self.average = corpus.total_tokens / corpus.rows if corpus.rows else 1.0
        # Only a whole word (under PREFIX_FROM characters) or a phrase of several tokens counts tokens
        # one by one; a prefix is counted in the joined string.
        self.by_token = any(not phrase.prefix or len(phrase.parts) > 1 for phrase in phrases)

    def joined(self, key: str, value: str, tags: str) -> float:
        """The row's relevance, from its three columns' tokens, each column's joined by single spaces."""
        columns = []
        length = 0
        for weight, text in zip(WEIGHTS, (key, value, tags), strict=True):
            if text:
                words = text.split(" ") if self.by_token else _NO_WORDS
                length += len(words) if self.by_token else text.count(" ") + 1
                columns.append((weight, words, " " + text))
        norm = K1 * (1 - B + B * length / self.average)
        total = 0.0
        for phrase, idf, needle in self.phrases:
            frequency = 0.0
            for weight, words, spaced in columns:
                frequency += weight * (spaced.count(needle) if needle else phrase.occurrences(words, spaced))
            if frequency:
                total += idf * frequency * (K1 + 1) / (frequency + norm)
        return total


_NO_WORDS: list[str] = []  # what a row's tokens are when no phrase of the query counts them one by one
