"""A seeded generator of realistic synthetic hivelore stores, written straight to files.

The store looks like what a team's coding agents accumulate over a year in one repository,
`acme/checkout` on branch `main`, whose chain is

    branch::acme/checkout::main → repo::acme/checkout → project::checkout → global

plus memories of scopes outside that chain (other repositories, another branch), which every
read must filter out. Values are developer lessons built from a vocabulary of errors, test
commands, package managers, services and file paths, so BM25 has real work to do; some are
near-duplicates of others, some keys are shadowed by the same key in a narrower scope, and a
few memories are archived, expired, staged or expire later.

Files are rendered with `hivelore.memory.local.frontmatter.render` and placed with `Vault.path_for`, exactly
as the CLI would write them, but without the CLI (a process per memory would take hours at
60,000). The same seed and the same `now` always give the same store.

Nothing generated looks like a secret: no credentials, no URLs with user info, no long hex or
base64 strings, no e-mail addresses (provenance has no commit hash for that reason).

Usage: python benchmarks/synth.py HOME_DIR --count 6000 [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from hivelore.memory.local.frontmatter import render
from hivelore.memory.local.vault import Vault
from hivelore.memory.model import Memory, iso_from_epoch
from hivelore.memory.scope import Scope, parse

DAY = 86400.0

# The chain of the benchmark repository, narrowest first, and each scope's share of the store.
CHAIN = ("branch::acme/checkout::main", "repo::acme/checkout", "project::checkout", "global")
SCOPE_SHARES = (
    ("branch::acme/checkout::main", 0.05),
    ("repo::acme/checkout", 0.60),
    ("project::checkout", 0.10),
    ("global", 0.15),
    ("other", 0.10),
)
# Scopes a read from the benchmark repository must leave out.
OTHER_SCOPES = (
    "repo::acme/billing",
    "repo::acme/infra",
    "repo::globex/storefront",
    "branch::acme/checkout::feature-refunds",
    "project::billing",
)

SERVICES = (
    "checkout-api",
    "payments",
    "refunds-worker",
    "webhook-relay",
    "cart",
    "inventory-sync",
    "admin-ui",
    "storefront",
    "notifications",
    "search-indexer",
    "pricing",
    "order-history",
    "tax-service",
    "gateway",
)
PATHS = (
    "src/checkout/payments/refund.py",
    "src/checkout/cart/totals.py",
    "src/checkout/api/orders.py",
    "services/api/handlers/orders.ts",
    "services/api/middleware/retry.ts",
    "web/src/components/CartDrawer.tsx",
    "web/src/hooks/useCheckout.ts",
    "migrations/0042_add_idempotency_key.sql",
    "migrations/0057_orders_index.sql",
    "docker-compose.yml",
    "docker-compose.test.yml",
    ".github/workflows/ci.yml",
    ".github/workflows/e2e.yml",
    "Makefile",
    "tests/conftest.py",
    "tests/integration/test_refunds.py",
    "tests/e2e/checkout.spec.ts",
    "config/settings/test.py",
    "package.json",
    "pnpm-lock.yaml",
    "pyproject.toml",
    "go.mod",
    "Cargo.toml",
    "scripts/seed_db.py",
    "infra/helm/values-staging.yaml",
    "jest.config.ts",
    "vite.config.ts",
    ".nvmrc",
    "internal/ledger/ledger.go",
    "crates/pricing/src/lib.rs",
    "src/checkout/tasks/reconcile.py",
)
TEST_COMMANDS = (
    "pytest -x -q tests/",
    "pytest tests/integration -k refunds",
    "pytest -n auto",
    "npm test -- --runInBand",
    "pnpm vitest run",
    "pnpm test:e2e",
    "yarn jest --watch=false",
    "go test ./...",
    "go test -race ./internal/...",
    "cargo test --workspace",
    "make test",
    "make test-integration",
    "tox -e py311",
    "npx playwright test",
    "uv run pytest",
    "poetry run pytest -q",
    "bundle exec rspec",
)
INSTALLS = (
    ("npm", "npm ci"),
    ("pnpm", "pnpm install --frozen-lockfile"),
    ("yarn", "yarn install --immutable"),
    ("pip", "pip install -e '.[test]'"),
    ("uv", "uv sync --extra test"),
    ("poetry", "poetry install --with dev"),
    ("cargo", "cargo fetch --locked"),
    ("go", "go mod download"),
    ("bundler", "bundle install --jobs 4"),
)
PLACES = (
    "on macOS 14",
    "on the Ubuntu 22.04 CI runners",
    "in the devcontainer",
    "on Apple Silicon",
    "under WSL2",
    "in the nightly e2e job",
    "on a fresh clone",
    "after a rebase onto main",
    "in the staging deploy",
    "when running tests in parallel",
    "on the 4 GB CI runners",
    "after upgrading Docker Desktop",
)

# (key stem, error text, tags, causes, fixes)
ERRORS: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "postgres-econnrefused",
        "ECONNREFUSED 127.0.0.1:5432",
        ("db", "postgres", "tests"),
        (
            "Postgres is not running",
            "the test database container was stopped",
            "the db service takes a few seconds to accept connections after `docker compose up`",
        ),
        (
            "start it with `docker compose up -d db` and wait for `pg_isready`",
            "run `make db-up` before the tests",
            "export PGHOST=127.0.0.1 and PGPORT=5432 in .env.test",
        ),
    ),
    (
        "postgres-ipv6-localhost",
        "connect ECONNREFUSED ::1:5432",
        ("db", "postgres", "node"),
        ("Node 18+ resolves localhost to ::1 first and Postgres listens on IPv4 only",),
        (
            "use 127.0.0.1 instead of localhost as the database host in tests",
            "set `listen_addresses = '*'` in the compose Postgres config",
        ),
    ),
    (
        "redis-econnrefused",
        "ECONNREFUSED 127.0.0.1:6379",
        ("redis", "cache", "tests"),
        ("Redis is not started by `make dev`", "the redis container exited after an OOM"),
        ("run `docker compose up -d redis`", "point REDIS_HOST at the compose service name inside containers"),
    ),
    (
        "port-3000-in-use",
        "EADDRINUSE: address already in use :::3000",
        ("node", "dev-server"),
        ("a previous dev server is still running", "the e2e job starts its own server on the same port"),
        ("find it with `lsof -i :3000` and stop it", "set PORT=3100 for the e2e server"),
    ),
    (
        "psycopg-connection-refused",
        "psycopg2.OperationalError: connection refused on port 5432",
        ("db", "postgres", "python"),
        ("pytest starts before the database is ready", "the test settings point at the wrong port"),
        ("add the `wait_for_db` fixture from tests/conftest.py", "use `config/settings/test.py`, not the dev settings"),
    ),
    (
        "sqlite-database-locked",
        "sqlite3.OperationalError: database is locked",
        ("db", "sqlite", "tests"),
        ("two pytest-xdist workers share one SQLite file", "a long transaction in the reconcile task"),
        (
            "give each worker its own file via the `worker_id` fixture",
            "keep transactions short in src/checkout/tasks/reconcile.py",
        ),
    ),
    (
        "module-not-found",
        "ModuleNotFoundError: No module named 'checkout'",
        ("python", "packaging"),
        ("the package is not installed in the virtualenv", "pytest runs from the wrong folder"),
        ("run `pip install -e .` once", "use `uv run pytest` so the project env is used"),
    ),
    (
        "pnpm-outdated-lockfile",
        "ERR_PNPM_OUTDATED_LOCKFILE",
        ("deps", "pnpm", "ci"),
        ("package.json changed without updating pnpm-lock.yaml",),
        ("run `pnpm install` locally and commit pnpm-lock.yaml", "never edit the lockfile by hand"),
    ),
    (
        "npm-eresolve",
        "npm ERR! code ERESOLVE",
        ("deps", "npm"),
        ("a peer dependency conflict after upgrading react",),
        ("pin react-dom to the same minor as react", "`--legacy-peer-deps` is only a stopgap"),
    ),
    (
        "ci-oomkilled",
        "exit code 137 (OOMKilled)",
        ("ci", "docker", "memory"),
        ("Jest uses one worker per core on the 4 GB runners", "the webpack build holds every source map"),
        ("pass `--maxWorkers=2`", "set NODE_OPTIONS=--max-old-space-size=3072 in the CI job"),
    ),
    (
        "jest-open-handles",
        "Jest did not exit one second after the test run has completed",
        ("tests", "node"),
        ("an open Redis client in tests/setup.ts", "a timer left running by the retry middleware"),
        ("close clients in `afterAll`", "run with `--detectOpenHandles` to find the leak"),
    ),
    (
        "relation-does-not-exist",
        'relation "orders" does not exist',
        ("db", "migrations"),
        ("migrations were not applied to the test database",),
        ("run `make db-migrate ENV=test`", "the test fixture `migrated_db` applies them; use it"),
    ),
    (
        "idempotency-unique-violation",
        "UNIQUE constraint failed: orders.idempotency_key",
        ("db", "payments"),
        ("the webhook is delivered twice", "retries reuse the same idempotency key by design"),
        ("treat the violation as success and return the existing order", "look the order up before inserting"),
    ),
    (
        "playwright-click-timeout",
        "TimeoutError: page.click: Timeout 30000ms exceeded",
        ("e2e", "playwright", "flaky"),
        ("the cart drawer animates in and the button is not yet clickable",),
        ("wait for `getByRole('button', { name: 'Pay' })` to be enabled", "disable animations in the e2e config"),
    ),
    (
        "go-mod-tidy",
        "go: updates to go.mod needed",
        ("go", "deps"),
        ("a new import without updating go.mod",),
        ("run `go mod tidy` and commit go.sum",),
    ),
    (
        "rust-undeclared-crate",
        "error[E0433]: failed to resolve: use of undeclared crate",
        ("rust", "build"),
        ("the crate is a dev-dependency but used in src",),
        ("move it to [dependencies] in Cargo.toml",),
    ),
    (
        "certificate-verify-failed",
        "SSL: CERTIFICATE_VERIFY_FAILED",
        ("python", "network"),
        ("the office proxy re-signs TLS traffic",),
        ("point REQUESTS_CA_BUNDLE at the proxy CA file",),
    ),
    (
        "mypy-missing-stubs",
        'error: Library stubs not installed for "requests"',
        ("python", "typing", "lint"),
        ("types-requests is not in the dev extras",),
        ("add types-requests to the test extra in pyproject.toml",),
    ),
    (
        "react-undefined-map",
        "TypeError: Cannot read properties of undefined (reading 'map')",
        ("frontend", "react"),
        ("the orders endpoint returns null instead of an empty list",),
        ("default to `[]` in web/src/hooks/useCheckout.ts", "fix the serializer to return an empty list"),
    ),
    (
        "sandbox-rate-limit",
        "HTTP 429 Too Many Requests from the payment sandbox",
        ("payments", "tests", "flaky"),
        ("the integration suite hits the sandbox once per test",),
        ("record responses with the vcr fixtures", "run the sandbox tests only in the nightly job"),
    ),
    (
        "docker-platform-mismatch",
        "exec format error",
        ("docker", "build"),
        ("an amd64 image runs on an arm64 laptop",),
        ("build with `--platform linux/amd64` or use the multi-arch tag",),
    ),
    (
        "alembic-multiple-heads",
        "alembic: Multiple head revisions are present",
        ("db", "migrations", "python"),
        ("two branches each added a migration",),
        ("run `alembic merge heads` and commit the merge revision",),
    ),
)

FACTS = (
    "{service} listens on port {port} locally; the compose file maps it to the same port.",
    "The {service} service reads its settings from config/settings/{env}.py; tests use config/settings/test.py.",
    "CI runs `{test}` on every push; the e2e suite only runs nightly and on release branches.",
    "The {service} team owns {path}; ask them before changing its public functions.",
    "Money amounts are integers in minor units everywhere in {service}; never use floats.",
    "{path} is generated by `make codegen`; edit the schema, not the generated file.",
    "The staging database is reset every night at 02:00 UTC; do not rely on data created there.",
    "The {pkg} version is pinned in {path}; CI fails when the local version differs.",
)
DECISIONS = (
    "Decision: {service} retries webhooks with exponential backoff capped at 10 minutes, never forever.",
    "Decision: new endpoints in {service} validate input with pydantic models, not hand-written checks.",
    "Decision: we use {pkg} for dependencies in this repository; do not add lockfiles of other tools.",
    "Decision: feature flags live in config/flags.yaml and are read once per request.",
    "Decision: integration tests use a real Postgres in docker, not SQLite, since {error_short} hid bugs.",
    "Decision: refunds are processed asynchronously by the refunds-worker; the API only enqueues them.",
)
NOTES = (
    "Reminder: run `{test}` before pushing changes to {path}.",
    "The flaky {test_name} in {path} is tracked in the backlog; rerun once before investigating.",
    "Benchmarks for {service} live in bench/; compare against main, not against the last release.",
    "When {service} logs `{error_short}`, check the dashboard for the database before paging anyone.",
)
EXTRA_TAGS = ("ci", "local-dev", "flaky", "perf", "docs", "onboarding")
TEST_NAMES = (
    "test_refund_webhook_retries",
    "test_cart_totals_with_coupons",
    "test_order_history_pagination",
    "checkout.spec.ts > pays with saved card",
    "TestLedgerBalance",
    "test_inventory_sync_conflict",
    "test_tax_rounding_eu",
    "test_idempotent_create_order",
)
LESSON_SHAPES = (
    "`{test}` fails with {error} {place}: {cause}. Fix: {fix}.",
    "{error} when running `{test}` for {service}. Cause: {cause}. {Fix}.",
    "If you see {error} {place}, {cause}; {fix}.",
    "{service}: {error} means {cause}. {Fix}, then rerun `{test}`.",
    "Seen in {path}: {error}. {Cause} {place}. {Fix}.",
)
INSTALL_SHAPES = (
    "Use `{install}` in CI and locally for {service}; plain `{pkg} install` rewrites the lockfile.",
    "After pulling, run `{install}` before `{test}` or the {service} tests import stale packages.",
)


@dataclass
class StoreStats:
    count: int
    seconds: float
    per_scope: Counter[str] = field(default_factory=Counter)
    archived: int = 0
    expired: int = 0
    expiring_later: int = 0
    staged: int = 0
    near_duplicates: int = 0
    shadowing: int = 0
    keys: dict[str, list[str]] = field(default_factory=dict)  # visible keys per scope, in creation order


def _sentence_case(text: str) -> str:
    return text[:1].upper() + text[1:]


def _lesson(rng: random.Random) -> tuple[str, str, tuple[str, ...], str]:
    """(key stem, value, tags, kind) of one memory."""
    service = rng.choice(SERVICES)
    test = rng.choice(TEST_COMMANDS)
    path = rng.choice(PATHS)
    pkg, install = rng.choice(INSTALLS)
    roll = rng.random()
    if roll < 0.62:
        stem, error, tags, causes, fixes = rng.choice(ERRORS)
        cause, fix = rng.choice(causes), rng.choice(fixes)
        value = rng.choice(LESSON_SHAPES).format(
            test=test,
            error=error,
            place=rng.choice(PLACES),
            cause=cause,
            Cause=_sentence_case(cause),
            fix=fix,
            Fix=_sentence_case(fix),
            service=service,
            path=path,
        )
        if rng.random() < 0.3:
            other = rng.choice(ERRORS)
            value += f" Not to be confused with {other[1]}, which means {rng.choice(other[3])}."
        kind = "lesson" if rng.random() < 0.85 else "fact"
        return f"{stem}-{service}", value, tuple(tags), kind
    if roll < 0.70:
        value = rng.choice(INSTALL_SHAPES).format(install=install, pkg=pkg, service=service, test=test)
        return f"{pkg}-install-{service}", value, ("deps", pkg), "lesson"
    fill = {
        "service": service,
        "port": rng.choice((3000, 5000, 8000, 8080, 8443, 9090)),
        "path": path,
        "test": test,
        "env": rng.choice(("dev", "test", "staging")),
        "pkg": pkg,
        "test_name": rng.choice(TEST_NAMES),
        "error_short": rng.choice(ERRORS)[1],
    }
    if roll < 0.86:
        template = rng.choice(FACTS)
        return f"{service}-fact-{FACTS.index(template)}", template.format(**fill), (service, "facts"), "fact"
    if roll < 0.93:
        template = rng.choice(DECISIONS)
        tags = (service, "architecture")
        return f"decision-{DECISIONS.index(template)}-{service}", template.format(**fill), tags, "decision"
    template = rng.choice(NOTES)
    return f"note-{NOTES.index(template)}-{service}", template.format(**fill), (service, "notes"), "note"


def _near_duplicate(rng: random.Random, value: str) -> str:
    """The same lesson, written again by another session with small differences."""
    edits = (
        lambda v: v + f" Seen again {rng.choice(PLACES)}.",
        lambda v: v.replace("Fix:", "Workaround:", 1) if "Fix:" in v else "Again: " + v,
        lambda v: v.replace(" the ", " our ", 1),
        lambda v: v.rstrip(".") + " (confirmed).",
    )
    return rng.choice(edits)(value)


def _unique_key(used: set[str], stem: str) -> str:
    key, n = stem, 1
    while key in used:
        n += 1
        key = f"{stem}-{n}"
    used.add(key)
    return key


def _pick_scope(rng: random.Random) -> str:
    roll, acc = rng.random(), 0.0
    for name, share in SCOPE_SHARES:
        acc += share
        if roll < acc:
            return rng.choice(OTHER_SCOPES) if name == "other" else name
    return "global"


def generate(home: Path, count: int, seed: int = 1, now: float | None = None) -> StoreStats:
    """Write `count` memory files into the home vault at `home`; same seed and `now`, same store.

    `now` defaults to the start of the current UTC day, so timestamps span the past year and
    expired memories are expired today.
    """
    started = time.perf_counter()
    vault = Vault(home, "home")
    stats = StoreStats(count=count, seconds=0.0)
    made_dirs: set[Path] = set()
    for i, memory in enumerate(memories(count, stats, seed, now)):
        path = vault.path_for(memory.scope, memory.key)
        if path.parent not in made_dirs:
            path.parent.mkdir(parents=True, exist_ok=True)
            made_dirs.add(path.parent)
        path.write_text(render(memory), encoding="utf-8")
        if i % 5000 == 4999:
            print(f"  synth: {i + 1:,} of {count:,} files", file=sys.stderr)
    stats.seconds = time.perf_counter() - started
    return stats


def memories(count: int, stats: StoreStats, seed: int = 1, now: float | None = None) -> Iterator[Memory]:
    """The `count` memories of the store `generate` writes (same seed and `now`, same memories), one
    at a time, counted in `stats` as they are made: for a consumer other than files (the team
    server's benchmark loads them into PostgreSQL)."""
    if now is None:
        today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        now = today.timestamp()
    rng = random.Random(seed)
    scopes: dict[str, Scope] = {}
    used: dict[str, set[str]] = {}  # keys per scope
    every_key: set[str] = set()  # keys are unique across scopes, except the deliberate shadowing copies
    written: list[Memory] = []

    for _ in range(count):
        roll = rng.random()
        shadow = False
        if roll < 0.04 and written:
            # A near-duplicate: another session wrote the same lesson under a new key.
            original = rng.choice(written[-400:])
            scope_name = str(original.scope)
            stem = original.key.split("-again")[0] + "-again"
            value, tags, kind = _near_duplicate(rng, original.value), original.tags, original.kind
            stats.near_duplicates += 1
        elif roll < 0.06 and written and str((original := rng.choice(written[-400:])).scope) in CHAIN:
            # The same key in another scope of the chain: the narrower copy shadows the wider one.
            others = [s for s in CHAIN if s != str(original.scope) and original.key not in used.get(s, set())]
            if others:
                scope_name, stem = rng.choice(others), original.key
                value, tags, kind = _near_duplicate(rng, original.value), original.tags, original.kind
                stats.shadowing += 1
                shadow = True
            else:
                scope_name = _pick_scope(rng)
                stem, value, tags, kind = _lesson(rng)
        else:
            scope_name = _pick_scope(rng)
            stem, value, tags, kind = _lesson(rng)

        scope = scopes.setdefault(scope_name, parse(scope_name))
        key = stem if shadow else _unique_key(every_key, stem)
        used.setdefault(scope_name, set()).add(key)
        created = now - rng.uniform(0.0, 365.0) * DAY
        updated = created + (now - created) * rng.random() ** 2
        fate = rng.random()
        archived_at = expires_at = None
        if fate < 0.01:
            archived_at = iso_from_epoch(updated + (now - updated) * rng.random())
            stats.archived += 1
        elif fate < 0.02:
            expires_at = iso_from_epoch(updated + (now - updated) * rng.random())
            stats.expired += 1
        elif fate < 0.03:
            expires_at = iso_from_epoch(now + rng.uniform(1.0, 90.0) * DAY)
            stats.expiring_later += 1
        state = "staged" if rng.random() < 0.05 else "committed"
        stats.staged += state == "staged"
        extra_tags = rng.sample(EXTRA_TAGS, k=rng.choice((0, 0, 1)))
        provenance = {
            "agent": rng.choice(("claude-code", "claude-code", "cursor", "codex", "cli")),
            "session": f"s-{int(created) // 3600 % 100000:05d}-{rng.randrange(1000):03d}",
            "repo": scope.name if scope.name and "/" in scope.name else "acme/checkout",
            "branch": scope.branch or "main",
        }
        memory = Memory(
            scope=scope,
            key=key,
            value=value,
            kind=kind,
            state=state,
            tags=tuple(dict.fromkeys((*tags, *extra_tags))),
            created=iso_from_epoch(created),
            updated=iso_from_epoch(updated),
            seen_count=min(20, 1 + int(rng.expovariate(0.3))),
            expires_at=expires_at,
            archived_at=archived_at,
            provenance=provenance,
        )
        written.append(memory)
        stats.per_scope[scope_name] += 1
        if archived_at is None and (expires_at is None or expires_at > iso_from_epoch(now)):
            stats.keys.setdefault(scope_name, []).append(key)
        if len(written) > 2000:
            del written[:1000]
        yield memory


# -- synthetic code, for the code map ----------------------------------------------------------

LAYERS = ("api", "core", "store")
FUNCTIONS_PER_FILE = 15
METHODS_PER_CLASS = 4
SYMBOLS_PER_FILE = FUNCTIONS_PER_FILE + 1 + METHODS_PER_CLASS  # the functions, one class and its methods
CROSS_FILE_CALLS = 0.7  # the share of functions that also call a function of another module


@dataclass
class CodeStats:
    files: int = 0
    symbols: int = 0
    calls: int = 0  # call sites written; the graph's edges are about as many
    folders: int = 0


def code(root: Path, symbols: int, seed: int = 1) -> CodeStats:
    """A layered Python repository of about `symbols` symbols under `root`/src: a folder per service
    and layer (`src/payments/api/`), modules of 15 functions and a class with 4 methods. Within a
    module function k calls function (k - 1) // 2 (a shallow tree, as helpers are); 7 times in 10 a
    function of `api` also calls one of a `core` module, and one of `core` one of a `store` module,
    mostly of its own service, imported by name so that every call resolves exactly. The same seed
    gives the same code."""
    rng = random.Random(seed)
    folders = [(service.replace("-", "_"), layer) for service in SERVICES for layer in LAYERS]
    count = max(1, -(-symbols // SYMBOLS_PER_FILE))
    modules = [(*folders[n % len(folders)], f"mod_{n // len(folders):03d}") for n in range(count)]
    by_layer = {layer: [m for m in modules if m[1] == layer] for layer in LAYERS}
    stats = CodeStats(folders=len({m[:2] for m in modules}))
    for service, layer, _name in modules:
        _write(root / "src" / service / "__init__.py", "")
        _write(root / "src" / service / layer / "__init__.py", "")
    for service, layer, name in modules:
        prefix = f"{service}_{layer}_{name}"
        below = by_layer[LAYERS[LAYERS.index(layer) + 1]] if layer != LAYERS[-1] else []
        lines, imports = [], set()
        for k in range(FUNCTIONS_PER_FILE):
            helper = f"    value = {prefix}_f{(k - 1) // 2}(value)" if k else "    value += 1"
            body = [f"def {prefix}_f{k}(value):", helper]
            stats.calls += bool(k)
            if below and rng.random() < CROSS_FILE_CALLS:
                other = _callee_module(rng, below, service)
                callee = f"{'_'.join(other)}_f{rng.randrange(FUNCTIONS_PER_FILE)}"
                imports.add(f"from {'.'.join(other)} import {callee}")
                body.append(f"    value = {callee}(value)")
                stats.calls += 1
            lines += [*body, "    return value", "", ""]
        lines.append(f"class {prefix.title().replace('_', '')}:")
        for j in range(METHODS_PER_CLASS):
            call = f"self.m{j - 1}(value)" if j else f"{prefix}_f{rng.randrange(FUNCTIONS_PER_FILE)}(value)"
            lines += [f"    def m{j}(self, value):", f"        return {call}", ""]
            stats.calls += 1
        _write(root / "src" / service / layer / f"{name}.py", "\n".join([*sorted(imports), "", "", *lines]))
        stats.files += 1
        stats.symbols += SYMBOLS_PER_FILE
    return stats


def _callee_module(rng: random.Random, below: list[tuple[str, str, str]], service: str) -> tuple[str, ...]:
    """A module of the layer below, of the same service 6 times in 10 when it has one."""
    same = [m for m in below if m[0] == service]
    return rng.choice(same) if same and rng.random() < 0.6 else rng.choice(below)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a synthetic hivelore store (a HIVELORE_HOME folder).")
    parser.add_argument("home", type=Path, help="the folder to fill (used as HIVELORE_HOME)")
    parser.add_argument("--count", type=int, default=6000, help="number of memories (default 6000)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    args = parser.parse_args(argv)
    stats = generate(args.home, args.count, args.seed)
    print(f"wrote {stats.count:,} memories to {args.home} in {stats.seconds:.2f} s")
    for scope, n in sorted(stats.per_scope.items(), key=lambda item: -item[1]):
        print(f"  {scope}: {n:,}")
    print(
        f"  near-duplicates {stats.near_duplicates:,} · same key in another chain scope {stats.shadowing:,}"
        f" · archived {stats.archived:,} · expired {stats.expired:,}"
        f" · expiring later {stats.expiring_later:,} · staged {stats.staged:,}"
    )
    print("then run `hivelore index rebuild` with HIVELORE_HOME set to that folder.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
