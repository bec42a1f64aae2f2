"""The write guard: every lesson passes here before it is stored.

Stored lessons are pasted into the context of later agents, so a secret written once leaks into every
future session and an instruction written once can steer them. The guard therefore rejects secrets,
prompt-injection phrasing, invisible characters and oversized fields, in every stored field: each write
path makes one `check_record` call covering scope, key, kind, tags, value and provenance.

It reads what a model would read (invisible characters and blank fillers dropped, NFKC, Cyrillic and
Greek look-alikes mapped to Latin), joins a token broken by a line break or a space, and decodes hex and
base64 runs to scan what they hide. Injection phrasing beyond its own phrase list (intents said in other
words, the override in other languages, letter-spaced, leetspeak or ROT13) is in guard_phrasing.py. The
rules, and what each lets through, are tabulated in docs/format.md.

It is tuned against false positives as much as against misses: a guard that rejects ordinary lessons
("run docker compose up -d db first", a git sha, postgres://localhost:5432/app) teaches agents to route
around it.

Placeholder policy for `secret.password_assignment`, `secret.password_in_prose` and
`secret.connection_string`: a value is NOT a secret when it is
- empty, or a reference to where the secret lives: `$PGPASSWORD`, `${DB_PASS}`, `$(gh auth token)`,
  `%s`, `%DB_PASS%`, `<password>`, `{{ vault_token }}`, `${{ secrets.TOKEN }}`, `[REDACTED]`, an
  ENV_VAR_NAME, code such as `settings.API_KEY` or `os.getenv("TOKEN")`, a letters-only name of a
  credential such as `db_password` or `dbPassword`, or a file path (`/run/secrets/db`, `~/.config/gh/token`);
- a mask (`***`, `...`, `xxxx`), a masked prefix (`sk-ant-...`, `ghp_xxxx`), or a stock placeholder word
  (`changeme`, `changeit`, `password`, `pass`, `secret`, `token`, `redacted`, `none`, `null`, `true`,
  `false`, `yes`, `no`, `todo`, `foo`, `bar`, type names such as `str`), or starts with
  your/my/some/example/sample/dummy/fake (`your-token-here`, `mysecretpassword`) or ends with `_here`;
- a stock word with a number, as test fixtures have it (`password123`, `test1`, `admin2024`);
- a well-known default that any attacker tries first (`postgres`, `mysql`, `root`, `admin`, `guest`), as
  in `docker run -e POSTGRES_PASSWORD=postgres`;
- in a connection string only: equal to the user name (`postgres:postgres@localhost`), because a
  password that can be guessed from the user name reveals nothing when stored.
A single letter is not a placeholder (`passwd: x` is rejected), except that `x` repeated 3+ times is.
After a colon or a spaced `=`, an unquoted value followed by more words is prose or code, not a
value ("token: expires after 30 days", "token = await getToken()"). In prose ("the password is …",
`secret.password_in_prose`) the value must also be shaped like a password: digits, or letters mixed with
digits and symbols or with both cases (see `_password_shaped`). A vendor token whose body is a mask
(`AKIAXXXXXXXXXXXXXXXX`) or the vendor's documentation example (`AKIAIOSFODNN7EXAMPLE`) is not a secret.

Stdlib only and cheap to import: it runs inside a latency-critical hook process.
"""

from __future__ import annotations

import binascii
import math
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import lru_cache

from hivelore.errors import BadInput
from hivelore.memory import guard_phrasing
from hivelore.records import record


@record
class GuardViolation:
    rule: str
    field: str
    message: str


class GuardError(BadInput):
    code = "guard_refused"
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
            if not (before.isascii() and before.isalnum()) and not _placeholder_body(m.group()[len(m["p"]) :]):
                yield m.start(), m.end(), m["p"] + "…"

    return detect


def _placeholder_body(body: str) -> bool:
    """A token body written to show the shape, not to work: a mask (AKIAXXXXXXXXXXXXXXXX, ghp_****…) or a
    vendor's documentation example (AKIAIOSFODNN7EXAMPLE)."""
    return not body.strip("xX*•#.=:\"' \t") or "example" in body.lower()


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
      | \d{1,3}
      | yes|no|on|off|required|optional|n/a|empty|blank|unset|hidden|masked
      | (?:password|pass|test|admin|changeme|guest|demo|user|secret)\d{1,6}
      | [\w-]{0,16}(?:\.{3,}|…|[*•]{3,}|x{4,})[\w-]{0,6}
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
    value = value.strip().strip("\"'`")
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


# A password stated in prose: the word for it in the languages users write ("the staging db password is
# hunter2-Xy9", "Le mot de passe … est Zmfrz!96rb4", "密码是 Ntktx-68bta"), then the value at once or after
# the clause's first copula. It reads the skeleton, where Cyrillic а р о are Latin a p o. The value's
# shape decides (_password_shaped), since prose goes on "the password is stored in 1Password" and "the
# token is base64-encoded". A PIN is digits.
_PROSE_CREDENTIAL = re.compile(
    r"(?i)(?<![A-Za-z0-9_<{$%-])(?:(?P<pin>pins?|passcode)|passwords?|passwd|passphrase|pw|pwd|\.?htpasswd"
    r"|creds|credentials|logins?"
    r"|mot\s+de\s+passe|mdp|contraseña|senha|passwort|kennwort|wachtwoord|hasło|heslo|parola|şifre|sifre"
    r"|п[аa][рp][оo]л[ьяю]|كلمة\s+(?:السر|المرور)|رمز\s+عبور|گذرواژه|密码|密碼|口令|パスワード|暗証番号|비밀번호|암호"
    r"|mật\s+khẩu|kata\s+sandi|סיסמה|पासवर्ड)(?![A-Za-z0-9>}])"
)
_PROSE_TOKEN = re.compile(r"\"[^\"\n]{1,64}\"|'[^'\n]{1,64}'|`[^`\n]{1,64}`|[^\s\"'`]+")
_GLUED_COPULA = re.compile(r"[^\S\n]*(?:是|为|為|は|が|는|은|이|가|：|:|=)")
# What stands between the word and the value: a copula in the languages above, a colon or a dash, or the
# slash of a "user / password" pair.
_COPULAS = frozenset(
    [
        "is",
        "was",
        "are",
        "were",
        "=",
        ":",
        "-",
        "—",
        "–",
        "/",
        "equals",
        "est",
        "es",
        "è",
        "é",
        "ist",
        "jest",
        "je",
        "это",
        "является",
    ]
)
_SPECIAL = re.compile(r"[^\w\s.-]")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# A capitalised word with a short number is a product or a version (1Password, Auth0, Python3).
_BRAND = re.compile(r"\d{0,2}[A-Z][a-z]+\d{0,2}")
_COMPOUND_TAIL = re.compile(r"[-_][a-z]{3,}$")
_LABELLED_DIGEST = re.compile(r"(?i)(?:sha\d*|md5|h1|blake\w*)[:-]")


def _password_shaped(value: str, pin: bool) -> bool:
    """Whether a word after "password is" reads as a password: digits, or letters mixed with digits and
    symbols or both cases, and not a placeholder, an address, a product name, a labelled digest
    (SHA256:…) or a compound adjective ("OAuth2-compliant")."""
    value = value.strip("\"'`").lstrip("-_").rstrip(".,;:)")
    if value.isdigit():
        return (4 if pin else 6) <= len(value) <= 16
    if pin or not 6 <= len(value) <= 64 or _is_placeholder(value) or "://" in value or _EMAIL.fullmatch(value):
        return False
    upper, lower = value.lower() != value, value.upper() != value
    digit, special = any(c.isdigit() for c in value), _SPECIAL.search(value) is not None
    if _BRAND.fullmatch(value) or _LABELLED_DIGEST.match(value) or (not special and _COMPOUND_TAIL.search(value)):
        return False
    return (upper or lower) and ((digit and (special or (upper and lower))) or (special and upper and lower))


def _prose_passwords(text: str) -> Iterator[_Match]:
    for m in _PROSE_CREDENTIAL.finditer(text):
        rest = text[m.end() : m.end() + 120].split("\n", 1)[0]
        glued = _GLUED_COPULA.match(rest)
        offset = m.end() + (glued.end() if glued else 0)
        tokens = list(_PROSE_TOKEN.finditer(text, offset, m.end() + len(rest)))[:10]
        candidates = tokens[:1]
        for before, after in zip(tokens, tokens[1:], strict=False):
            word = before.group()
            if word.lower() in _COPULAS or word.endswith((":", "：")):
                candidates.append(after)
                break
            if word.endswith((".", ";", "!", "?")):
                break
        for candidate in candidates:
            if _password_shaped(candidate.group(), m["pin"] is not None):
                yield candidate.start(), candidate.end(), f"{' '.join(m.group().split())} …"
                break


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


# What precedes a run when it is a public value: an SSH fingerprint (SHA256:…), an SSH public key, a data:
# URI's payload (an image), a PEM certificate body.
_PUBLIC_BEFORE = re.compile(
    r"(?:SHA256|SHA1|SHA384|SHA512|MD5|sha256|sha1|\bh1|\bzh):$|(?:ssh-\w+|ecdsa-[\w-]+) $|;base64,$"
)
# A JSON Web Key's public members (RSA modulus and exponent, EC coordinates); the private ones (d, p, q …)
# stay secrets.
_JWK_PUBLIC_MEMBER = re.compile(r'"(?:n|e|x|y|x5t|x5t#S256)"\s*:\s*"$')


# PEM blocks that hold public material: a public key, a certificate, a certificate request or list.
_PUBLIC_PEM = re.compile(
    r"-----BEGIN (?:[A-Z0-9 ]*PUBLIC KEY(?: BLOCK)?|CERTIFICATE(?: REQUEST)?|NEW CERTIFICATE REQUEST|X509 CRL"
    r"|PKCS7)-----.*?(?:-----END [A-Z0-9 ]+-----|\Z)",
    re.S,
)


def _public_der(run: str) -> bool:
    """Whether a base64 run is DER whose outer SEQUENCE opens with another SEQUENCE: a certificate, a
    certificate request or a public key (SubjectPublicKeyInfo). A private key opens with its version,
    an INTEGER."""
    try:
        head = binascii.a2b_base64(run[:16])
    except binascii.Error:
        return False
    if len(head) < 6 or head[0] != 0x30:
        return False
    length_bytes = head[1] - 0x80 if head[1] > 0x80 else 0
    return head[2 + length_bytes] == 0x30


def _high_entropy(text: str) -> Iterator[_Match]:
    public = [m.span() for m in _PUBLIC_PEM.finditer(text)] if "-----BEGIN" in text else []
    for m in _RUN.finditer(text):
        if _PUBLIC_BEFORE.search(text, max(0, m.start() - 24), m.start()):
            continue
        if _JWK_PUBLIC_MEMBER.search(text, max(0, m.start() - 16), m.start()) and '"kty"' in text:
            continue
        if any(start <= m.start() < end for start, end in public) or _public_der(m.group()):
            continue
        if _random_looking(m.group()):
            yield m.start(), m.end(), f"{m.group()[:4]}… ({len(m.group())} characters)"


def _printable(data: bytes) -> str | None:
    """`data` as text when it is text (a decoded secret or instruction), None when it is binary (a hash)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(char.isprintable() or char in "\n\t" for char in text)
    return text if text and printable >= 0.95 * len(text) else None


def _decode_base64(run: str) -> str | None:
    run = run.rstrip("=").translate(_URLSAFE)
    try:
        return _printable(binascii.a2b_base64(run + "=" * (-len(run) % 4)))
    except binascii.Error:
        return None


_URLSAFE = str.maketrans("-_", "+/")


# Vendor tokens by shape: a prefix that only that vendor issues, then enough body characters. Whether the
# body looks random does not matter (a key is a key); the formats are those of gitleaks' and
# detect-secrets' rules. Fixed-length bodies end at a non-token character so longer words do not match.
_VENDOR_KEYS = (
    r"glpat-[\w-]{20,}|glptt-[0-9a-f]{40}|glrt-[\w-]{20,}|gldt-[\w-]{20,}|glsoat-[\w-]{20,}",
    r"AIza[\w-]{35}(?![\w-])|ya29\.[\w-]{30,}",
    r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])|pypi-AgEIcHlwaS5vcmc[\w-]{50,}",
    r"hf_[A-Za-z]{34}(?![A-Za-z0-9])|r8_[A-Za-z0-9]{37}(?![A-Za-z0-9])|gsk_[A-Za-z0-9]{48,}",
    r"pplx-[A-Za-z0-9]{40,}|xai-[A-Za-z0-9]{60,}",
    r"do[opr]_v1_[0-9a-f]{64}|shp(?:at|ss|ca|pa)_[0-9a-fA-F]{32}(?![0-9a-fA-F])",
    r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,}|hv[sb]\.[\w-]{24,}",
    r"SG\.[\w-]{22}\.[\w-]{43}|key-[0-9a-f]{32}(?![0-9a-f])|SK[0-9a-f]{32}(?![0-9a-f])",
    r"dapi[0-9a-f]{32}(?![0-9a-f])|lin_api_[A-Za-z0-9]{40}|PMAK-[0-9a-f]{24}-[0-9a-f]{34}",
    r"gl(?:sa|c)_[A-Za-z0-9_=+/]{32,}|sntr[ysu]s?_[A-Za-z0-9_=+/]{40,}|NRAK-[A-Z0-9]{27}",
    r"dckr_pat_[\w-]{27,}|pul-[0-9a-f]{40}|AGE-SECRET-KEY-1[0-9A-Z]{58}",
    r"tskey-(?:auth|api|client|webhook)-[\w-]{20,}|rubygems_[0-9a-f]{48}|pscale_(?:tok|pw|oauth)_[\w.-]{32,}",
    r"pnu_[A-Za-z0-9]{36}|rdme_[a-z0-9]{70}|xkeysib-[0-9a-f]{64}-[A-Za-z0-9]{16}|shippo_(?:live|test)_[0-9a-f]{40}",
    r"sq0(?:atp|csp)-[\w-]{22,}|EAAA[\w-]{60,}|LTAI[A-Za-z0-9]{20}(?![A-Za-z0-9])",
    r"sbp_[0-9a-f]{40}|ATATT3[\w=-]{50,}|ATBB[A-Za-z0-9_=.-]{32,}|ntn_[A-Za-z0-9]{40,}",
    r"CFPAT-[\w-]{43}|HRKU-[\w-]{60}|dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}|FLWSECK(?:_TEST)?-[0-9a-h]{32}",
    r"EZAK[0-9a-z]{54}|fo1_[\w-]{43}|CLOJARS_[a-z0-9]{60}|duffel_(?:test|live)_[\w=-]{43}|ops_eyJ[\w+/]{100,}",
    r"AccountKey=[A-Za-z0-9+/]{86}==|[0-9]{8,10}:AA[\w-]{33}(?![\w-])",
)
_VENDOR = re.compile("|".join(_VENDOR_KEYS))


def _vendor_keys(text: str) -> Iterator[_Match]:
    for m in _VENDOR.finditer(text):
        before = text[m.start() - 1] if m.start() else " "
        if not (before.isascii() and before.isalnum()) and not _placeholder_body(m.group()):
            token = m.group()
            cut = max((token.find(c, 0, 20) for c in "_-.:="), default=-1)
            yield m.start(), m.end(), (token[: cut + 1] if cut > 0 else token[:4]) + "…"


def _shell_value(name: str) -> str:
    return rf"""(?P<{name}>'[^'\n]+'|"[^"\n]+"|[^\s'"`|;&]+)"""


# Passwords a command takes as an argument: mysql's attached -pPASSWORD (a bare -p prompts), curl's
# -u user:password (user: alone prompts), sshpass -p, redis-cli -a, docker login -p, ldap* -w, htpasswd -b,
# and --password VALUE with a space (--password=VALUE is an assignment).
_COMMAND_LINE = re.compile(
    r"\b(?:mysql\w*|mariadb\w*)\b[^\n|;&]{0,200}?\s-p(?=[^\s-])"
    + _shell_value("v")
    + r"|\bcurl\b[^\n|;&]{0,200}?\s(?:-u|--user|-U|--proxy-user)(?:\s+|=)?['\"]?[^\s:'\"]+:(?P<cv>[^\s'\"]+)"
    + r"|\b(?:sshpass|(?:docker|podman|buildah|helm\s+registry|nerdctl)\s+login)\b[^\n|;&]{0,200}?\s-p\s+"
    + _shell_value("pv")
    + r"|\bredis-cli\b[^\n|;&]{0,200}?\s-a\s+"
    + _shell_value("rv")
    + r"|\bldap\w+\b[^\n|;&]{0,200}?\s-w\s+"
    + _shell_value("lv")
    + r"|\bhtpasswd\s+(?:-\w+\s+)*-\w*b\w*\s+(?:-\w+\s+)*\S+\s+\S+\s+"
    + _shell_value("hv")
    + r"|(?<![\w-])--(?:password|passwd|pass|token|api-key|apikey|secret|auth-token|access-token)[ \t]+"
    + _shell_value("sv")
)
_SYMBOL_OR_DIGIT = re.compile(r"[\d\W_]")


def _command_line(text: str) -> Iterator[_Match]:
    for m in _COMMAND_LINE.finditer(text):
        name = next(g for g in ("v", "cv", "pv", "rv", "lv", "hv", "sv") if m[g] is not None)
        value = m[name].strip("'\"")
        # After `--password ` prose is as likely as a value ("--password to be prompted"): only a value with a
        # digit or a symbol counts there.
        if _is_placeholder(value) or (name == "sv" and not _SYMBOL_OR_DIGIT.search(value)):
            continue
        yield m.start(name), m.end(name), m.group().split()[0][:20] + " …"


_AUTH_HEADER = re.compile(
    r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?P<scheme>basic|bearer|token|digest|apikey|key)\s+)?"
    r"(?P<cred>[^\s\"'`,;)]+)"
)
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")


def _auth_headers(text: str) -> Iterator[_Match]:
    for m in _AUTH_HEADER.finditer(text):
        cred, scheme = m["cred"], (m["scheme"] or "").lower()
        if _is_placeholder(cred):
            continue
        if scheme == "basic" and _BASE64.fullmatch(cred):
            decoded = _decode_base64(cred)
            user, colon, password = (decoded or "").partition(":")
            if not colon or _is_placeholder(password) or password == user:
                continue
        elif len(cred) < 8 or _NAME.fullmatch(cred):
            continue
        yield m.start("cred"), m.end("cred"), f"Authorization: {m['scheme'] or ''} …".replace("  ", " ")


# Order matters: a span claimed by an earlier detector is skipped by later ones, so specific token
# formats come first (sk-ant- before sk-) and the generic heuristics last.
_Detectors = tuple[tuple[str, str, str, Callable[[str], Iterator[_Match]]], ...]
_SECRET_DETECTORS: _Detectors = (
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
    # The body may look orderly (sk-abcdefghijklmnopqrstuvwxyz123456 is still a key); what keeps kebab-case
    # words out ("sk-learn-compatible-estimators") is the unbroken run of 16+ letters and digits it needs.
    (
        "secret.openai_key",
        "an OpenAI API key",
        _MOVE_SECRET,
        _prefixed(
            r"(?P<p>sk-(?:proj-|svcacct-|admin-|or-v1-)?)(?=[A-Za-z0-9_-]{0,80}?[A-Za-z0-9]{16})[A-Za-z0-9_-]{20,}"
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
    ("secret.vendor_key", "a vendor API key", _MOVE_SECRET, _vendor_keys),
    ("secret.auth_header", "a credential in an Authorization header", _USE_PLACEHOLDER, _auth_headers),
    ("secret.command_line", "a password on a command line", _USE_PLACEHOLDER, _command_line),
    ("secret.connection_string", "a connection string with a password", _USE_PLACEHOLDER, _connection_strings),
    ("secret.password_assignment", "a credential assigned in plain text", _USE_PLACEHOLDER, _assignments),
    ("secret.password_in_prose", "a password stated in prose", _USE_PLACEHOLDER, _prose_passwords),
    ("secret.high_entropy", "a random-looking secret", _MOVE_SECRET, _high_entropy),
)

# Phrase-based on purpose: each alternative needs the shape of an override ("ignore ... previous
# instructions", "you are now an unrestricted AI"), so lessons that merely mention instructions pass. The
# gerund counts too: "I prefer ignoring all previous instructions" is an override said as a preference.
# Matched against lowercased text without re.I and without a leading \b: that lets the regex engine skip
# ahead by first character, about 5x faster; _injection_phrase checks the word boundary instead.
_INJECTION = re.compile(
    r"""(?:ignor(?:e|ing)|disregard(?:ing)?|forget)\s+(?:(?:all|any|of|the|these|those|my|your)\s+)*
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


# The rules that know no vendor's prefix: a plain word joined onto a piece may complete their match by
# chance, while a prefix and part of a body (sk-0000…, ghp_ab…) followed by a word is a token broken in two.
_GENERIC_RULES = frozenset(
    (
        "secret.auth_header",
        "secret.command_line",
        "secret.connection_string",
        "secret.password_assignment",
        "secret.high_entropy",
    )
)

# What a token split in pieces or hidden in an encoded run may be; a password in prose is a sentence, and
# the pieces of one are not.
_TOKEN_DETECTORS = tuple(detector for detector in _SECRET_DETECTORS if detector[0] != "secret.password_in_prose")

_ADVICE = {rule: advice for rule, _label, advice, _detect in _SECRET_DETECTORS}

# Reworded injections: a lesson is advice for a human or an agent, so "always run the tests" passes; what
# does not is a line addressed to whoever reads the memory later ("from now on", "when you read this",
# "note to any AI", "Claude, …") that goes on to weaken a safeguard, act behind the user's back or move
# secrets; and, addressed or not, the unmistakable forms of those acts (approve everything, never ask for
# confirmation, skip every test, send ~/.ssh/id_rsa to a URL, `env | curl`).
_TO_THE_READER = (
    r"(?:from\s+(?:now|this\s+point|here)\s+on|going\s+forward|henceforth|hereafter"
    r"|when(?:ever)?\s+you\s+(?:read|see|load|find|open|process|start)\b(?:\s+(?:this|these))?"
    r"|when(?:ever)?\s+this\s+(?:memory|note|file|lesson)\s+(?:loads|is\s+(?:loaded|read))"
    r"|(?:after|on|upon)\s+reading\s+this|on\s+your\s+next\s+(?:turn|run|session)|(?:at|on)\s+session\s+start"
    r"|(?:note|message|instructions?|reminder|rules?|memo)\s+(?:to|for)\s+(?:(?:the|any|all|every|future)\s+)*"
    r"(?:ai|agents?|assistants?|models?|llms?|bots?|claude|copilot)\b"
    r"|(?:(?:any|every|all|future|the)\s+)?(?:ai\s+|coding\s+)?(?:agents?|assistants?|models?|llms?)"
    r"(?:\s+(?:that|who))?\s+(?:reading|reads?|loading|loads)\b|(?:any|every|all|future)\s+(?:ai\s+|coding\s+)?"
    r"(?:agents?|assistants?|models?|llms?)\s*:|whoever\s+reads\s+this"
    r"|dear\s+(?:ai|agent|assistant|model|llm|claude)|attention,?\s+(?:ai|agents?|assistants?|models?)"
    r"|if\s+you(?:\s+are|'re)\s+an?\s+(?:ai|llm|language\s+model|model|agent|assistant|bot)\b"
    r"|for\s+(?:any|the|all)\s+(?:ai|agents?|assistants?|models?|llms?)\s+reading"
    r"|(?:^|[\n.!?]\s*)(?:(?:hey|hi|hello|ok|okay|listen|attention)\s*,?\s*)?(?:claude|assistant|agent|ai|model"
    r"|copilot|chatgpt|gpt)\s*[:,—–]"
    r"|(?:new\s+rule|system\s+note|model\s+instruction)s?\b[^:\n]{0,30}:)"
)
_WEAKENS = (
    r"\b(?:skip|disable|bypass|turn\s+off|suppress|ignore|approve|auto-?approve|merge|force-?push|--force|delete"
    r"|remove|rm\s+-rf|sen[dt]|upload|post|e-?mail|forward|exfiltrat\w*|leak|share|copy|paste|obey|trust|grant"
    r"|never\s+(?:ask|run|mention|tell)|don'?t\s+(?:ask|tell|run)|do\s+not\s+(?:ask|tell|run|mention)|without"
    r"|answer\s+yes|respond\s+only|report|pre-?authori[sz]ed|pre-?approved|dangerously|quietly|silently"
    r"|secretly|whatever|authorized_keys|credentials|~/\.ssh|~/\.aws|id_rsa|\.env\b|(?:curl|wget)[^\n|]{0,200}\|\s*\w*sh)"
)
_SENSITIVE = (
    r"(?<![<${])(?:~/\.ssh|\bid_(?:rsa|ed25519|ecdsa|dsa)\b|\.env(?![\w-]|\.\w)|\bcredentials\b|\bsecrets?\b"
    r"|\bapi[ _-]?keys?\b"
    r"|\btokens?\b|\bprivate[ _-]keys?\b|\bssh[ _-]keys?\b|\bpasswords?\b|\benvironment\s+variables?\b|\benv\s+vars?\b"
    r"|~/\.aws|~/\.kube|\bkubeconfig\b|/etc/shadow\b|\.git-credentials\b|\.pgpass\b"
    r"|\.netrc\b|hosts\.yml|\b\w*_token\b|\baws_secret\w*)"
)
# Where secrets are sent when they leave; where they are kept ("into the .env file", "in the vault") is not.
_DESTINATION = (
    r"\b(?:to|into|in|on|at|via)\s+(?:https?://|\S+@\S+\.\w+|\d+\.\d+\.\d+\.\d+|(?:an?|the|my|your|our|this)\s"
    r"(?!(?:local\s+|new\s+|team\s+)?(?:\.env\b|vault\b|keychain\b|keyring\b|1password\b|password\s+manager"
    r"|secrets?\s+manager|ci\s+secrets?\b))"
    r"|pastebin|gist|slack|#|/tmp|issues?\b|(?:the\s+)?(?:pr|commit)\b)"
)
_NOT_NEGATED = r"(?<!never\s)(?<!not\s)(?<!n't\s)(?<!avoid\s)"
_REWORDED = re.compile(
    _TO_THE_READER
    + r"[^\n]{0,160}?"
    + _WEAKENS
    + r"|\b(?:always\s+|automatically\s+)?auto-?approve\b|\bapprove\s+(?:(?:all|every|any|each)\b|everything\b)"
    + r"|\b(?:never|don'?t|do\s+not)\s+ask\s+(?:the\s+user\s+|anyone\s+|them\s+)?(?:for\s+)?"
    r"(?:permission|confirmation|approval)|\bask\s+nothing\b"
    + r"|\b(?:skip|disable|bypass|turn\s+off|ignore)\s+(?:all|every|each|any)\s+(?:of\s+the\s+)?(?:[\w-]+\s+)?"
    r"(?:tests?|checks?|reviews?|hooks?|linters?|safety|security|guards?|ci|test\s+suites?)\b"
    + r"|(?:^|[.;:!?\n]\s*)(?:just\s+|always\s+|then\s+)?(?:report|say|claim|pretend)\w*\s+(?:that\s+)?"
    r"(?:the\s+|all\s+)?(?:tests?|checks?|they|it|ci|builds?)\s+(?:as\s+)?(?:\w+\s+)?(?:pass(?:ed|ing|es)?|green|succeeded)"
    + r"|(?:^|[.;:!?\n]\s*)(?:just\s+|always\s+|then\s+)?(?:merge|push|commit|deploy|approve)\w*\b[^.\n]{0,40}?"
    r"without\s+(?:any\s+)?(?:review\w*|reading|asking|telling|checking|confirmation|permission|approval)\b"
    + r"|\b(?:trust|obey|follow|prioriti[sz]e)\s+[^.\n]{0,60}?\b(?:over|above|instead\s+of|rather\s+than)\s+"
    r"(?:the\s+)?user"
    + r"|\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention|notify|alert)\s+(?:this\s+(?:note\s+)?)?(?:to\s+)?"
    r"(?:the\s+)?(?:user|human|anyone|reviewers?)\b|\bnever\s+mention\s+this\b"
    + r"|"
    + _NOT_NEGATED
    + r"\b(?:send|upload|post|e-?mail|forward|exfiltrate|leak|share|copy|paste|print|include"
    r"|put|commit|publish)\b[^.\n]{0,60}?"
    + _SENSITIVE
    + r"[^.\n]{0,40}?"
    + _DESTINATION
    + r"|\b(?:cat|tar|env|printenv|set|base64)\b[^\n|]{0,200}\|\s*(?:curl|nc|ncat|netcat|wget|socat)\b"
    + r"|\bcurl\b[^\n]{0,200}?(?:-d|--data\S*|-f|--form|-t|--upload-file)\s*\S*@\S*"
    r"(?:\.ssh|\.aws|\.env|credentials|\.netrc|id_rsa|id_ed25519)"
)


def _injection(readable: str, scan: str) -> str | None:
    """The injection phrasing in a text: the phrase list, the intents, the override in other languages
    (read in the text's own script, where Cyrillic is not folded to Latin), the override disguised, and
    whatever a hex or base64 run hides."""
    lowered = scan.lower()
    return (
        _injection_phrase(scan)
        or guard_phrasing.intent(lowered)
        or guard_phrasing.foreign_override(readable.lower())
        or (guard_phrasing.foreign_override(lowered) if readable != scan else None)
        or guard_phrasing.disguised_override(lowered, _override_phrase)
        or next(filter(None, map(_injection_phrase, _decoded(scan))), None)
    )


def _override_phrase(lowered: str) -> str | None:
    """The first of `_INJECTION`'s override phrases in lowercased text."""
    for m in _INJECTION.finditer(lowered):
        if not (m.start() and m.group()[0].isalnum() and lowered[m.start() - 1].isalnum()):
            return m.group()
    return None


def _injection_phrase(scan: str) -> str | None:
    lowered = scan.lower()
    override = _override_phrase(lowered)
    if override:
        return override
    found = _REWORDED.search(lowered)
    if found:
        return found.group()
    for m in _DAN.finditer(scan):
        found = _DAN_CONTEXT.search(scan[max(0, m.start() - 24) : m.end() + 12].lower())
        if found:
            return found.group()
    return None


# Candidates only; unicodedata decides, so new Unicode versions are covered without a code point list.
_NOT_PRINTABLE_ASCII = re.compile(r"[^\t\n\r\x20-\x7e]")


# Characters that render as nothing although Unicode does not class them as format characters: the
# combining grapheme joiner, the Hangul fillers, Khmer's inherent vowels, Mongolian's variation selectors
# and the braille pattern with no dots (U+2800), a favourite padding that looks like a space.
_BLANK = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u2800\u3164\uffa0")
_JOINERS = "\u200c\u200d"
# Scripts in which the zero-width (non-)joiner is spelling: Persian writes "کش‌ها" with a ZWNJ, Indic
# scripts pick conjunct forms with ZWJ and ZWNJ. Read off each neighbour's Unicode name.
_JOINING_SCRIPTS = frozenset(
    [
        "ARABIC",
        "SYRIAC",
        "NKO",
        "MANDAIC",
        "MONGOLIAN",
        "DEVANAGARI",
        "BENGALI",
        "GURMUKHI",
        "GUJARATI",
        "ORIYA",
        "TAMIL",
        "TELUGU",
        "KANNADA",
        "MALAYALAM",
        "SINHALA",
        "KHMER",
        "MYANMAR",
        "TIBETAN",
    ]
)


def _is_hidden(char: str) -> bool:
    # Cs: a lone surrogate renders as nothing and cannot even be written to a UTF-8 file.
    return (
        unicodedata.category(char) in ("Cf", "Cc", "Cs")
        or "\U000e0000" <= char <= "\U000e007f"
        or char in _BLANK
        or "\ufe00" <= char <= "\ufe0f"
        or "\U000e0100" <= char <= "\U000e01ef"
    )


def _script(char: str) -> str:
    return unicodedata.name(char, "").split(" ", 1)[0]


def _spells(text: str, i: int) -> bool:
    """Whether the joiner or variation selector at `i` is part of the writing rather than hidden: a
    joiner between two letters of a script that uses it, a ZWJ inside an emoji sequence (👩🏽‍💻), a
    variation selector after a symbol (❤️) or an ideograph."""
    char, before = text[i], text[i - 1] if i else " "
    after = text[i + 1] if i + 1 < len(text) else " "
    if char in _JOINERS:
        # After a letter of such a script, before another or at the word's end (a Malayalam chillu).
        if _script(before) in _JOINING_SCRIPTS and (_script(after) in _JOINING_SCRIPTS or not after.isalnum()):
            return True
        emoji_before = unicodedata.category(before) in ("So", "Sk") or before == "\ufe0f"
        return char == "\u200d" and emoji_before and unicodedata.category(after) == "So"
    if "\ufe00" <= char <= "\ufe0f":
        return unicodedata.category(before)[0] == "S" or before in "0123456789#*"
    if "\U000e0100" <= char <= "\U000e01ef":
        return unicodedata.name(before, "").startswith("CJK UNIFIED IDEOGRAPH")
    return False


def _hidden_characters(text: str) -> list[tuple[int, str]]:
    """(position, character) of each character a reader does not see."""
    return [
        (m.start(), m.group())
        for m in _NOT_PRINTABLE_ASCII.finditer(text)
        if _is_hidden(m.group()) and not _spells(text, m.start())
    ]


def _describe(char: str) -> str:
    # Every assigned Cf character has a name; what is left unnamed is a control, a surrogate or an
    # unassigned tag-block code point.
    name = unicodedata.name(char, "") or {"Cc": "control character", "Cs": "lone surrogate"}.get(
        unicodedata.category(char), "unassigned character"
    )
    return f"U+{ord(char):04X} {name}"


def _content_violation(field: str, rule: str, what: str, advice: str) -> GuardViolation:
    return GuardViolation(rule, field, f"{field} {what} (rule {rule}): {advice}")


# Letters of other scripts that render like Latin ones; NFKC leaves them alone, so "ignоre" with a
# Cyrillic о would read as "ignore" to a model and as something else to a regex. A skeleton in the sense
# of Unicode TR39, restricted to what matters for English phrasing and token prefixes: first the common
# Cyrillic and Greek look-alikes, by hand; then every other single code point that Unicode's
# confusables.txt (TR39, as packaged by confusable-homoglyphs 3.3.1) says looks like an ASCII letter, that
# NFKC leaves as it is, and whose script is Latin (ı, ɑ, ɪ, small capitals ᴏ ᴄ …), Cyrillic, Greek,
# Coptic, Armenian or Cherokee. Scripts users write prose in that look unlike Latin (Arabic, Hebrew …)
# are left out: folding them would only make false positives.
_SKELETON_BY_HAND = (
    "аАвВеЕёЁкКмМнНоОрРсСтТуУхХіІјЈѕЅԁһӏɡαΑβΒεΕηΗιΙκΚμΜνΝοΟρΡτΤυΥχΧζΖ",
    "aABBeEeEkKmMHHoOpPcCtTyYxXiIjJsSdhlgaABBeEnHiIkKuMvNoOpPtTuYxXzZ",
)
_SKELETON_TR39 = (
    "ıƄƍƖƦƽǀɑɣɩɪɯʋʏͿγσϜϳϺЬгѡѴѵҮүҽӀԌԛԜԝՍՏՕագզհոռսցքօᎠᎡᎢᎥᎩᎪᎫᎬᎳᎷᎻᎽᏀᏂᏃᏏᏒᏔᏕᏙᏚᏞᏟᏢᏦᏧᏳᏴᴄᴏᴑᴜᴠᴡᴢᴦᶃᶌẝỿⲅⲎⲒⲔⲘⲚⲞⲟⲢⲣⲤⲥⲦⲨⲬⳐꙇꜱꞘꞙꞟꞲꞳꞴꬲꬵꬽꭇꭈꭎꭒꭚꭵꮁꮃꮓꮩꮪꮯ𐋵𝈍𝈓𝈖𝈪",
    "ibglRslayiiwuyJyoFjMbrwVvYyelGqWwUSOwqqhnnugfoDRTiYAJEWMHYGhZbRWSVSLCPKdGBcoouvwzrgyfyrHlKMNOoPpCcTYXLisFfuJXBeforruuyirwzvscZVFRL",
)
_SKELETON = str.maketrans(_SKELETON_BY_HAND[0] + _SKELETON_TR39[0], _SKELETON_BY_HAND[1] + _SKELETON_TR39[1])


def _readable(text: str, hidden: Sequence[tuple[int, str]]) -> str:
    """What a model reads, in its own script: no invisible characters, fullwidth and ligature forms
    folded (NFKC)."""
    if text.isascii():
        return text
    if hidden:
        positions = {position for position, _ in hidden}
        text = "".join(char for i, char in enumerate(text) if i not in positions)
    return unicodedata.normalize("NFKC", text)


def _skeleton(readable: str) -> str:
    """`_readable`'s text with look-alike letters from other scripts mapped to the Latin letter they
    imitate."""
    return readable if readable.isascii() else readable.translate(_SKELETON)


# Pieces of one token broken by a line break or a space ("ghp_abc\ndef…"): runs of token characters of
# which each holds a digit, a capital after its first letter, `_` or `-` (prose words do not).
_PIECE = re.compile(r"[A-Za-z0-9_+/=.:-]{3,}")
_TOKEN_LIKE = re.compile(r".+[A-Z]|.*[0-9_-]")
# A public key's type word followed by its body is not a token broken in two.
_PUBLIC_PIECE = re.compile(r"ssh-\w+|ecdsa-[\w-]+|sk-ssh-\S+|SHA\d*:|MD5:")
_HEX_PIECE = re.compile(r"[0-9a-f]{7,}|[0-9a-f]{8}-[0-9a-f-]{27}")
_HEX_TAIL = re.compile(r"(?:^|[_.:-])[0-9a-f]+$")
_PIECE_GAP = re.compile(r"[ \t]*\n?[ \t]*")
_HEX_RUN = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){12,}(?![0-9A-Fa-f])")
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}")


def _mixed_case(piece: str) -> bool:
    return piece.lower() != piece and piece.upper() != piece


def _joined(text: str) -> Iterator[tuple[str, int, bool, bool]]:
    """Each pair or triple of adjacent pieces joined, the first one token-like, with the offset where the
    first gap was, whether every piece is mixed-case, and whether a piece after the first looks like a
    plain word (a token's tail can: "glpat-000000000 Aaaaaaaaaaa")."""
    pieces = list(_PIECE.finditer(text))
    for i, first in enumerate(pieces):
        if not _TOKEN_LIKE.match(first.group()) or _PUBLIC_PIECE.fullmatch(first.group()):
            continue
        joined, end, gap, mixed = first.group(), first.end(), first.end() - first.start(), _mixed_case(first.group())
        wordlike = False
        for following in pieces[i + 1 : i + 3]:
            between = text[end : following.start()]
            if not between or _PIECE_GAP.fullmatch(between) is None:
                break
            # A git sha or a digest after a word is a value of its own ("bump sk-learn 3f2a9c1…"); a hex
            # piece continues only a hex tail (a hex token such as glptt-… broken in two).
            if _HEX_PIECE.fullmatch(following.group()) and not _HEX_TAIL.search(joined):
                break
            joined += following.group()
            end = following.end()
            mixed = mixed and _mixed_case(following.group())
            wordlike = wordlike or not _TOKEN_LIKE.match(following.group())
            yield joined, gap, mixed, wordlike


def _decoded(text: str) -> Iterator[str]:
    """The text inside hex and base64 runs, when it is text (binary digests and hashes decode to noise)."""
    for m in _HEX_RUN.finditer(text):
        decoded = _printable(binascii.unhexlify(m.group()))
        if decoded:
            yield decoded
    for m in _BASE64_RUN.finditer(text):
        decoded = _decode_base64(m.group())
        if decoded and len(decoded) >= 8:
            yield decoded


def _secrets(scan: str, detectors: _Detectors = _SECRET_DETECTORS) -> list[tuple[int, str, str, str]]:
    """(position, rule, label, hint) of each secret rule's first match, in text order."""
    found: list[tuple[int, str, str, str]] = []
    # One flag per character: linear however many matches there are, unlike comparing span pairs.
    claimed = bytearray(len(scan))
    reported: set[str] = set()
    for rule, label, _advice, detect in detectors:
        for start, end, hint in detect(scan):
            if claimed.find(1, start, end) != -1:
                continue
            claimed[start:end] = b"\x01" * (end - start)
            if rule not in reported:
                reported.add(rule)
                found.append((start, rule, label, hint))
    return sorted(found)


def _body_begun(joined: str, start: int, gap: int, hint: str, rule: str) -> bool:
    """Whether the first piece holds a token-like start of a prefixed token's body (sk-0000…, ghp_a1…),
    so that a word-like piece after the break is its tail: the bare prefix ("xoxb- tokens expire") or a
    word after it ("sk-learn the docs") is prose."""
    body = joined[start + len(hint) - 1 : gap]
    return rule not in _GENERIC_RULES and _TOKEN_LIKE.match(body) is not None


def _hidden_secret(scan: str) -> tuple[str, str] | None:
    """(label, hint) of a secret that only shows once split pieces are joined or encoded runs decoded."""
    for joined, gap, mixed, wordlike in _joined(scan):
        for start, rule, label, hint in _secrets(joined, _TOKEN_DETECTORS):
            # The match must start in the first piece, so that it spans the break. Joining a CONSTANT to a
            # hex digest makes a mixed-case run, so the random-looking rule only counts when every piece
            # is mixed-case itself, as the pieces of a random token are. A word joined on only counts for
            # a vendor's prefix ("api_key=xxx and" joined is no password), see _body_begun.
            if (
                start < gap
                and (mixed or rule != "secret.high_entropy")
                and (not wordlike or rule == "secret.vendor_key" or _body_begun(joined, start, gap, hint, rule))
            ):
                return f"{label} split over a line break or a space", hint
    for decoded in _decoded(scan):
        for _start, _rule, label, _hint in _secrets(decoded, _TOKEN_DETECTORS):
            return f"{label} hidden in a hex or base64 run", "an encoded run"
    return None


def inspect(text: str, field: str = "value") -> list[GuardViolation]:
    """All content violations in `text`: at most one per rule, secrets first, then injection, then
    invisible characters. Never raises on any str."""
    hidden = _hidden_characters(text)
    readable = _readable(text, hidden)
    scan = _skeleton(readable)
    violations = [
        _content_violation(field, rule, f"looks like it contains {label} '{hint}'", _ADVICE[rule])
        for _start, rule, label, hint in _secrets(scan)
    ]
    if not violations:
        hidden_secret = _hidden_secret(scan)
        if hidden_secret:
            label, hint = hidden_secret
            what = f"looks like it contains {label} ('{hint}')"
            violations.append(_content_violation(field, "secret.obfuscated", what, _MOVE_SECRET))

    injection = _injection(readable, scan)
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


def check_record(
    *,
    scope: str,
    key: str,
    value: str,
    tags: Sequence[str] = (),
    kind: str = "",
    provenance: Mapping[str, str] | None = None,
    limits: Limits = _DEFAULT_LIMITS,
) -> None:
    """The one guard call of a write or an imported record: every field that is stored and served back.

    Raise GuardError with the first violation, sizes first, then the content of scope, key, kind,
    provenance (each name and value), tags and value; the message names the field
    (`provenance.agent looks like it contains …`)."""
    violation = _size_violation(key, value, tags, limits)
    if violation is None:
        carried = (provenance or {}).items()
        fields = (
            (scope, "scope"),
            (key, "key"),
            (kind, "kind"),
            *((name, "provenance") for name, _ in carried),
            *((text, f"provenance.{name[:40]}") for name, text in carried),
            *((tag, "tags") for tag in tags),
            (value, "value"),
        )
        violation = next((found[0] for text, field in fields if text and (found := _inspected(text, field))), None)
    if violation is not None:
        raise GuardError(violation)


def _inspected(text: str, field: str) -> Sequence[GuardViolation]:
    """`inspect`, remembered for short texts: a record's scope, provenance and tags are the same from
    one write to the next (a team server checks a dozen of them a write), and the answer depends on
    the text and the field alone."""
    return _inspected_short(text, field) if len(text) <= SHORT_CHARS else inspect(text, field)


SHORT_CHARS = 100  # what `_inspected` remembers; a value is longer, and checked each time


@lru_cache(maxsize=1024)
def _inspected_short(text: str, field: str) -> tuple[GuardViolation, ...]:
    return tuple(inspect(text, field))
