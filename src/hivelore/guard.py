"""The write guard: every lesson passes here before it is stored.

Stored lessons are pasted into the context of later agents, so a secret written once leaks into every
future session and an instruction written once can steer them. The guard therefore rejects secrets,
prompt-injection phrasing, invisible characters and oversized fields.

It is tuned against false positives as much as against misses: a guard that rejects ordinary lessons
("run docker compose up -d db first", a git sha, postgres://localhost:5432/app) teaches agents to route
around it.

Placeholder policy for `secret.password_assignment` and `secret.connection_string`: a value is NOT a
secret when it is
- empty, or a reference to where the secret lives: `$PGPASSWORD`, `${DB_PASS}`, `$(gh auth token)`,
  `%s`, `%DB_PASS%`, `<password>`, `{{ vault_token }}`, `${{ secrets.TOKEN }}`, `[REDACTED]`, an
  ENV_VAR_NAME, code such as `settings.API_KEY` or `os.getenv("TOKEN")`, a letters-only name of a
  credential such as `db_password` or `dbPassword`, or a file path (`/run/secrets/db`, `~/.config/gh/token`);
- a mask (`***`, `...`, `xxxx`) or a stock placeholder word (`changeme`, `changeit`, `password`, `pass`,
  `secret`, `token`, `redacted`, `none`, `null`, `true`, `false`, `todo`, `foo`, `bar`, type names such
  as `str`), or starts with your/my/some/example/sample/dummy/fake (`your-token-here`,
  `mysecretpassword`) or ends with `_here`;
- a well-known default that any attacker tries first (`postgres`, `mysql`, `root`, `admin`, `guest`), as
  in `docker run -e POSTGRES_PASSWORD=postgres`;
- in a connection string only: equal to the user name (`postgres:postgres@localhost`), because a
  password that can be guessed from the user name reveals nothing when stored.
A single letter is not a placeholder (`passwd: x` is rejected), except that `x` repeated 3+ times is.
After a colon or a spaced `=`, an unquoted value followed by more words is prose or code, not a
value ("token: expires after 30 days", "token = await getToken()"). The word "password" in prose never
matches: a separator (`=`, `:`, `:=`, `=>`) and a value must follow it.

Stdlib only and cheap to import: it runs inside a latency-critical hook process.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence

from hivelore.records import record


@record
class GuardViolation:
    rule: str
    field: str
    message: str


class GuardError(ValueError):
    violation: GuardViolation

    def __init__(self, violation: GuardViolation) -> None:
        # The violation (not the message) is the only arg, so the error survives pickling across processes.
        super().__init__(violation)
        self.violation = violation

    def __str__(self) -> str:
        return self.violation.message


@record
class Limits:
    max_value_chars: int = 4000
    max_key_chars: int = 120
    max_tags: int = 16
    max_tag_chars: int = 40


_DEFAULT_LIMITS = Limits()

_MOVE_SECRET = "remove the secret and describe where it lives instead (e.g. 'the token is in 1Password: CI/GitHub')."
_USE_PLACEHOLDER = (
    "replace the value with a placeholder such as $DB_PASSWORD or <password> and say where the real one "
    "lives (e.g. 'the password is in 1Password: Staging/Postgres')."
)

# A match is (start, end, hint); the hint is what the message may show, never the secret itself.
_Match = tuple[int, int, str]


def _prefixed(pattern: str) -> Callable[[str], Iterator[_Match]]:
    """A detector for secrets with a recognisable, non-secret prefix: group `p` is shown as the hint.

    The prefix must not continue an ASCII word ("disk-..." is not "sk-..."). That is checked here rather
    than with a leading lookbehind, which would stop the regex engine from skipping ahead by literal
    prefix (20x slower)."""
    compiled = re.compile(pattern)

    def detect(text: str) -> Iterator[_Match]:
        for m in compiled.finditer(text):
            before = text[m.start() - 1] if m.start() else " "
            if not (before.isascii() and before.isalnum()):
                yield m.start(), m.end(), m["p"] + "…"

    return detect


# Splits identifiers into words ("getUserByID2" -> get, User, By, ID, 2); used both to read key names and
# to tell identifiers and paths (long words) from random tokens (short fragments).
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")

_CONNECTION = re.compile(
    r"(?<![A-Za-z0-9+.-])(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{1,20})://"
    r"(?P<user>[^\s:/@]*):(?P<password>[^\s/@]+)@(?P<host>[^\s/?#@]+)"
)

# key and separator; the value is matched separately (_VALUE) so that finditer resumes right after the
# separator and a value is itself scanned for keys: --from-literal=password=... must not hide password=...
_ASSIGNMENT = re.compile(
    r"""(?<![\w.-])(?P<key>-{0,2}[A-Za-z_][\w.-]*)["']?[ \t]*"""
    r"""(?P<sep>:=|=>|=(?!=)|:(?![:/]))(?P<gap>[ \t]*)""",
    re.ASCII,
)
# Bounded, because it is tried after every separator: "a:a:a:..." must stay linear.
_VALUE = re.compile(r""""[^"\n]{0,256}"|'[^'\n]{0,256}'|`[^`\n]{0,256}`|[^\s"'`,;)\]}][^\s"`,;)\]}]{0,255}""")
_PROSE_TAIL = re.compile(r"[ \t]+[A-Za-z0-9]")
# `pass` and `pwd` only as whole words: as suffixes they match "bypass" or "cwd".
_SECRET_SUFFIXES = ("password", "passwd", "passphrase", "secret", "token", "apikey")
_SECRET_WORDS = frozenset({"pass", "pwd"})
_KEY_QUALIFIERS = frozenset({"api", "secret", "private", "signing", "encryption", "master"})
_NOT_A_SECRET = re.compile(
    r"""[$%<\[(].* | \{\{.*\}\}
      | [*•.…_\#?-]+ | x{3,}
      | (?:~|\.{1,2})?/.*
      | (?:your|my|some)[_-]?(?:[a-z]+[_-]?)* | (?:example|sample|dummy|fake|placeholder)[\w-]* | [\w-]*_here
      | changeme|change[_-]me|changeit|redacted|secret|password|passwd|pass|token|none|null|nil|undefined
      | true|false|todo|tbd|foo|bar|str|string|bytes|int|bool|secretstr|postgres|mysql|root|admin|guest
      | [A-Za-z_]\w*(?:\.\w+)+ | [A-Za-z_][\w.]*[(\[].*
      | (?-i:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)""",
    re.X | re.I,
)

# Letters only: "db_password" is a variable, "r3disPass" is a password.
_NAME = re.compile(r"[A-Za-z_]+")

_RUN = re.compile(r"[A-Za-z0-9+/=_-]{32,}")
# Random base64 of 32+ chars averages ~1.9 chars per _WORD fragment (99.9th percentile ~3.1); identifiers,
# paths and branch names average 3.5-5.5.
_MAX_RANDOM_WORD_LEN = 3.0
# Excludes long runs built from a handful of symbols ("Ab1Ab1Ab1...").
_MIN_ENTROPY_BITS = 3.5


def _names_secret(name: str) -> bool:
    """Whether an identifier names a credential: DB_PASSWORD, apiKey, PGPASSWORD, aws_secret_access_key."""
    parts = [part.lower() for part in _WORD.findall(name)]
    if not parts:
        return False
    last = parts[-1]
    return (
        last.endswith(_SECRET_SUFFIXES)
        or last in _SECRET_WORDS
        or (last == "key" and not _KEY_QUALIFIERS.isdisjoint(parts[:-1]))
    )


def _is_placeholder(value: str) -> bool:
    value = value.strip()
    return (
        not value
        or _NOT_A_SECRET.fullmatch(value) is not None
        or (_NAME.fullmatch(value) is not None and _names_secret(value))
    )


def _connection_strings(text: str) -> Iterator[_Match]:
    for m in _CONNECTION.finditer(text):
        password = m["password"]
        if _is_placeholder(password) or password == m["user"]:
            continue
        # The user is not shown either: in https://TOKEN:x-oauth-basic@github.com it is the secret.
        yield m.start(), m.end(), f"{m['scheme']}://***@{m['host']}"


def _assignments(text: str) -> Iterator[_Match]:
    for m in _ASSIGNMENT.finditer(text):
        key, sep = m["key"], m["sep"]
        value = _VALUE.match(text, m.end())
        if value is None or not _names_secret(key):
            continue
        raw = value.group()
        quoted = raw[0] in "\"'`"
        if _is_placeholder(raw[1:-1] if quoted else raw):
            continue
        # "token: expires after 30 days", "token = await getToken()": prose or code, not a literal. A bare
        # `password=hunter2 for the admin UI` (shell/.env style, no space) stays a value.
        if (sep == ":" or m["gap"]) and not quoted and _PROSE_TAIL.match(text, value.end()):
            continue
        yield value.start(), value.end(), f"{key.lstrip('-')[:40]}{sep}…"


def _entropy(text: str) -> float:
    n = len(text)
    return -sum(count / n * math.log2(count / n) for count in map(text.count, set(text)))


def _random_looking(run: str) -> bool:
    # Subresource-integrity hashes in lockfiles are public checksums, not credentials.
    if run.startswith(("sha256-", "sha384-", "sha512-")):
        return False
    # Requiring all three classes lets hex (git shas, sha256 digests, UUIDs) and CONSTANT_NAMES through.
    if run.lower() == run or run.upper() == run or not any(c.isdigit() for c in run):
        return False
    words = _WORD.findall(run)
    return sum(map(len, words)) / len(words) < _MAX_RANDOM_WORD_LEN and _entropy(run) >= _MIN_ENTROPY_BITS


def _high_entropy(text: str) -> Iterator[_Match]:
    for m in _RUN.finditer(text):
        if _random_looking(m.group()):
            yield m.start(), m.end(), f"{m.group()[:4]}… ({len(m.group())} characters)"


# Order matters: a span claimed by an earlier detector is skipped by later ones, so specific token
# formats come first (sk-ant- before sk-) and the generic heuristics last.
_SECRET_DETECTORS: tuple[tuple[str, str, str, Callable[[str], Iterator[_Match]]], ...] = (
    (
        "secret.private_key",
        "a PEM private key",
        _MOVE_SECRET,
        _prefixed(
            r"(?P<p>-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)(?:\s|\\[nr])*(?:[A-Za-z-]+:[^\n]*\n\s*)*"
            r"[A-Za-z0-9+/=]{16,}(?:[A-Za-z0-9+/=\s]|\\[nr])*(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)?"
        ),
    ),
    (
        "secret.aws_access_key",
        "an AWS access key id",
        _MOVE_SECRET,
        _prefixed(r"(?P<p>A[KS]IA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ),
    (
        "secret.aws_access_key",
        "an AWS secret access key",
        _MOVE_SECRET,
        _prefixed(
            r"(?P<p>[Aa]ws_?[Ss]ecret_?[Aa]ccess_?[Kk]ey|AWS_?SECRET_?ACCESS_?KEY)[\"']?[ \t]*[=:][ \t]*[\"']?"
            r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
        ),
    ),
    (
        "secret.github_token",
        "a GitHub token",
        _MOVE_SECRET,
        _prefixed(r"(?P<p>gh[pousr]_|github_pat_)[A-Za-z0-9_]{30,}"),
    ),
    (
        "secret.anthropic_key",
        "an Anthropic API key",
        _MOVE_SECRET,
        _prefixed(r"(?P<p>sk-ant-(?:[a-z]+\d\d-)?)[A-Za-z0-9_-]{20,}"),
    ),
    # The digit and capital lookaheads keep kebab-case words that happen to start with "sk-" out; they are
    # bounded so that a long run of "sk-sk-sk-..." stays linear.
    (
        "secret.openai_key",
        "an OpenAI API key",
        _MOVE_SECRET,
        _prefixed(
            r"(?P<p>sk-(?:proj-|svcacct-|admin-)?)"
            r"(?=[A-Za-z0-9_-]{0,80}[0-9])(?=[A-Za-z0-9_-]{0,80}[A-Z])[A-Za-z0-9_-]{20,}"
        ),
    ),
    ("secret.slack_token", "a Slack token", _MOVE_SECRET, _prefixed(r"(?P<p>xox[abposr]-|xapp-)[A-Za-z0-9-]{10,}")),
    (
        "secret.slack_token",
        "a Slack webhook URL",
        _MOVE_SECRET,
        _prefixed(r"(?P<p>hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_-]{20,}"),
    ),
    (
        "secret.stripe_key",
        "a Stripe secret key",
        _MOVE_SECRET,
        _prefixed(r"(?P<p>[sr]k_(?:live|test)_|whsec_)[A-Za-z0-9]{10,}"),
    ),
    (
        "secret.jwt",
        "a JSON Web Token",
        _MOVE_SECRET,
        _prefixed(r"(?P<p>eyJ)[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    ),
    ("secret.connection_string", "a connection string with a password", _USE_PLACEHOLDER, _connection_strings),
    ("secret.password_assignment", "a credential assigned in plain text", _USE_PLACEHOLDER, _assignments),
    ("secret.high_entropy", "a random-looking secret", _MOVE_SECRET, _high_entropy),
)

# Phrase-based on purpose: each alternative needs the imperative shape of an override ("ignore ... previous
# instructions", "you are now an unrestricted AI"), so lessons that merely mention instructions pass.
# Matched against lowercased text without re.I and without a leading \b: that lets the regex engine skip
# ahead by first character, about 5x faster; _injection_phrase checks the word boundary instead.
_INJECTION = re.compile(
    r"""(?:ignore|disregard|forget)\s+(?:(?:all|any|of|the|these|those|my|your)\s+)*
          (?:previous|prior|above|earlier|preceding|foregoing)\s+
          (?:instructions?|prompts?|directions|directives|rules|guidelines|context|messages)\b
      | (?:ignore|disregard|forget|override)\s+(?:(?:all|any|of)\s+)*
          (?:your\s+(?:(?:previous|prior|original|current|safety|system)\s+)?
                (?:instructions|prompt|rules|programming|guidelines|directives|training)
            | the\s+system\s+prompt)\b
      | you\s+are\s+now\s+(?:in\s+)?(?:(?:a|an|the|my|no\s+longer)\s+)?(?:[a-z-]+\s+){0,2}?
          (?:ai|assistant|chatbot|bot|model|llm|persona|character|jailbroken|unrestricted
            |unfiltered|uncensored|developer\s+mode|god\s+mode)\b
      | new\s+instructions\s*: | system\s+prompt\s*:
      | <\s*/?\s*system\s*> | <\|(?:im_start|im_end|system|endoftext)\|> | \[/?inst\] | <</?sys>>
      | (?:do\s+not|don['’]?t|never)\s+(?:tell|inform)\s+the\s+(?:user|human)\b
      | without\s+(?:telling|informing)\s+the\s+(?:user|human)\b
      | (?:reveal|show|print|output|repeat|display|leak|dump)\s+(?:me\s+)?
          (?:(?:your|the)\s+(?:(?:full|entire|original|hidden|initial|secret)\s+)?system\s+
                (?:prompt|message|instructions)
            | your\s+(?:(?:full|entire|original|hidden|initial|secret)\s+)?(?:prompt|instructions))\b
      | (?:act|behave|respond|pretend)\s+(?:as|like|to\s+be)\b[^.\n]{0,80}?\bwithout\s+(?:any\s+)?
          (?:restrictions|limits|limitations|filters|rules|guidelines|censorship|safety)\b
      | do\s+anything\s+now\b""",
    re.X,
)
# Case-sensitive on purpose: "Dan" is a colleague, "DAN" ("Do Anything Now") the jailbreak persona.
_DAN = re.compile(r"DAN\b")
_DAN_CONTEXT = re.compile(
    r"(?:you\s+are(?:\s+now)?|act\s+as|pretend\s+to\s+be|enable|activate)\s+dan\b|\bdan\s+(?:mode|prompt|jailbreak)\b"
)


def _injection_phrase(scan: str) -> str | None:
    lowered = scan.lower()
    for m in _INJECTION.finditer(lowered):
        if not (m.start() and m.group()[0].isalnum() and lowered[m.start() - 1].isalnum()):
            return m.group()
    for m in _DAN.finditer(scan):
        found = _DAN_CONTEXT.search(scan[max(0, m.start() - 24) : m.end() + 12].lower())
        if found:
            return found.group()
    return None


# Candidates only; unicodedata decides, so new Unicode versions are covered without a code point list.
_NOT_PRINTABLE_ASCII = re.compile(r"[^\t\n\r\x20-\x7e]")


def _is_hidden(char: str) -> bool:
    # Cs: a lone surrogate renders as nothing and cannot even be written to a UTF-8 file.
    return unicodedata.category(char) in ("Cf", "Cc", "Cs") or "\U000e0000" <= char <= "\U000e007f"


def _describe(char: str) -> str:
    # Every assigned Cf character has a name; what is left unnamed is a control, a surrogate or an
    # unassigned tag-block code point.
    name = unicodedata.name(char, "") or {"Cc": "control character", "Cs": "lone surrogate"}.get(
        unicodedata.category(char), "unassigned character"
    )
    return f"U+{ord(char):04X} {name}"


def _content_violation(field: str, rule: str, what: str, advice: str) -> GuardViolation:
    return GuardViolation(rule, field, f"{field} {what} (rule {rule}): {advice}")


def inspect(text: str, field: str = "value") -> list[GuardViolation]:
    """All content violations in `text`: at most one per rule, secrets first, then injection, then
    invisible characters. Never raises on any str."""
    hidden = [(m.start(), m.group()) for m in _NOT_PRINTABLE_ASCII.finditer(text) if _is_hidden(m.group())]
    scan = text
    if not text.isascii():
        # Scan what a model would read: zero-width characters must not split "ghp_…" or "ignore previous
        # instructions", and fullwidth or ligature look-alikes must fold to ASCII.
        if hidden:
            positions = {position for position, _ in hidden}
            scan = "".join(char for i, char in enumerate(text) if i not in positions)
        scan = unicodedata.normalize("NFKC", scan)

    found: list[tuple[int, GuardViolation]] = []
    # One flag per character: linear however many matches there are, unlike comparing span pairs.
    claimed = bytearray(len(scan))
    reported: set[str] = set()
    for rule, label, advice, detect in _SECRET_DETECTORS:
        for start, end, hint in detect(scan):
            if claimed.find(1, start, end) != -1:
                continue
            claimed[start:end] = b"\x01" * (end - start)
            if rule not in reported:
                reported.add(rule)
                what = f"looks like it contains {label} '{hint}'"
                found.append((start, _content_violation(field, rule, what, advice)))
    violations = [violation for _, violation in sorted(found, key=lambda item: item[0])]

    injection = _injection_phrase(scan)
    if injection:
        phrase = " ".join(injection.split())[:60]
        what = f"contains prompt-injection phrasing '{phrase}'"
        advice = (
            "state the lesson as a plain fact about the project; a memory must never address or "
            "instruct the agent that reads it."
        )
        violations.append(_content_violation(field, "injection", what, advice))

    if hidden:
        position, char = hidden[0]
        more = f" (and {len(hidden) - 1} more)" if len(hidden) > 1 else ""
        what = f"contains the invisible character {_describe(char)} at position {position}{more}"
        advice = "delete it; invisible and bidirectional control characters can hide text from reviewers."
        violations.append(_content_violation(field, "invisible_char", what, advice))
    return violations


def _size_violation(key: str, value: str, tags: Sequence[str], limits: Limits) -> GuardViolation | None:
    if len(key) > limits.max_key_chars:
        return GuardViolation(
            "size.key",
            "key",
            (
                f"key is {len(key):,} characters; the limit is {limits.max_key_chars:,} (rule size.key): use a "
                "short slug such as 'ci/flaky-db-tests' and put the detail in the value."
            ),
        )
    if len(tags) > limits.max_tags:
        return GuardViolation(
            "size.tags",
            "tags",
            (
                f"there are {len(tags):,} tags; the limit is {limits.max_tags:,} (rule size.tags): keep the few "
                "that help find this memory."
            ),
        )
    for number, tag in enumerate(tags, start=1):
        if len(tag) > limits.max_tag_chars:
            # The tag is not quoted: an over-long tag may well be a pasted secret.
            return GuardViolation(
                "size.tags",
                "tags",
                (
                    f"tag {number} is {len(tag):,} characters; the limit is {limits.max_tag_chars:,} "
                    "(rule size.tags): use a short keyword such as 'postgres'."
                ),
            )
    if len(value) > limits.max_value_chars:
        return GuardViolation(
            "size.value",
            "value",
            (
                f"value is {len(value):,} characters; the limit is {limits.max_value_chars:,} (rule size.value): "
                "split it into several memories or shorten it."
            ),
        )
    return None


def check_write(key: str, value: str, tags: Sequence[str] = (), limits: Limits = _DEFAULT_LIMITS) -> None:
    """Raise GuardError with the first violation: sizes first, then the content of key, tags and value."""
    violation = _size_violation(key, value, tags, limits)
    if violation is None:
        fields = ((key, "key"), *((tag, "tags") for tag in tags), (value, "value"))
        # A generator, so a rejected key spares scanning a 4,000-character value.
        violation = next((found[0] for text, field in fields if (found := inspect(text, field))), None)
    if violation is not None:
        raise GuardError(violation)
