"""Cited code end to end, as a developer and an agent meet it: the real `hivelore` command and the real
prompt hook in a temporary HIVELORE_HOME and git repository, a cited function changed and then removed."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from harness import SHOP_FILES, claude_prompt, hook, make_shop

Cli = Callable[..., subprocess.CompletedProcess[str]]
SCOPE = "repo::acme/shop"
TOKENS = "shop/tokens.py::validate_token"
LESSON = "validate_token must reject expired JWTs: check exp before splitting the token"
FRESH = "expired JWTs must be rejected on refresh too, before splitting the token"


@pytest.fixture
def shop(tmp_path: Path, cli: Cli) -> Path:
    repo = make_shop(tmp_path / "shop", SHOP_FILES)
    assert cli("graph", "index", cwd=repo).returncode == 0
    return repo


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


def _change_validate_token(shop: Path, cli: Cli) -> None:
    tokens = shop / "shop" / "tokens.py"
    tokens.write_text(tokens.read_text().replace("split('.')[0]", "split('.')[1]"))
    _ok(cli("graph", "index", cwd=shop))


def test_a_lesson_citing_a_changed_function_says_so_and_ranks_below_a_fresh_one(
    shop: Path, cli: Cli, home: Path
) -> None:
    wrote = _ok(cli("write", f"{SCOPE}::token-expiry", LESSON, cwd=shop))
    assert "cites shop/tokens.py::validate_token" in wrote
    assert "validate_token: " in (home / "repo" / "acme" / "shop" / "token-expiry.md").read_text()
    _ok(cli("write", f"{SCOPE}::refresh-expiry", FRESH, cwd=shop))
    before = {h["key"]: h for h in json.loads(_ok(cli("search", "expired JWTs splitting", "--json", cwd=shop)))}
    assert before["token-expiry"]["stale"] == ""
    assert before["token-expiry"]["score"] >= 0.9 * before["refresh-expiry"]["score"]  # as good a match

    _change_validate_token(shop, cli)

    after = json.loads(_ok(cli("search", "expired JWTs splitting", "--json", cwd=shop)))
    assert [(h["key"], h["stale"]) for h in after] == [
        ("refresh-expiry", ""),
        ("token-expiry", "code changed since: shop/tokens.py::validate_token"),
    ]
    assert after[1]["score"] == pytest.approx(0.75 * before["token-expiry"]["score"], rel=0.02)
    assert "[code changed since: shop/tokens.py::validate_token]" in _ok(cli("search", "validate_token", cwd=shop))
    said = hook(home, shop, "claude", "UserPromptSubmit", claude_prompt(shop, "s-1", "validate_token rejects JWTs?"))
    assert f"{SCOPE}::token-expiry [lesson]: {LESSON} [code changed since: shop/tokens.py::validate_token]" in said

    linted = cli("lint", "--json", cwd=shop)
    assert linted.returncode == 1
    stale = {"kind": "stale", "address": f"{SCOPE}::token-expiry", "detail": f"code changed since: {TOKENS}"}
    assert stale in json.loads(linted.stdout)["problems"]

    _ok(cli("write", f"{SCOPE}::token-expiry", LESSON, cwd=shop))  # checked again: recorded as the code is now
    assert _ok(cli("search", "validate_token", "--json", cwd=shop)).count('"stale": ""') == 1


def test_a_lesson_citing_a_removed_function_cites_code_that_no_longer_exists(shop: Path, cli: Cli) -> None:
    _ok(cli("write", f"{SCOPE}::receipt-format", "keep `receipt` output stable: the accountants parse it", cwd=shop))
    orders = shop / "shop" / "orders.py"
    orders.write_text(orders.read_text().split("def receipt")[0])
    _ok(cli("graph", "index", cwd=shop))

    found = _ok(cli("search", "accountants", cwd=shop))
    assert "[cites code that no longer exists: shop/orders.py::receipt]" in found
    stats = json.loads(_ok(cli("stats", "--json", cwd=shop)))
    assert stats["citing_code"] == 1 and stats["stale"]["cites code that no longer exists"] == 1


def test_cites_given_explicitly_must_resolve_and_nothing_is_written_when_one_does_not(
    shop: Path, cli: Cli, home: Path
) -> None:
    refused = cli("write", f"{SCOPE}::vague", "orders are slow", "--cites", "no_such_function", cwd=shop)
    assert refused.returncode == 2 and refused.stdout == ""
    assert "--cites 'no_such_function' cannot be cited" in refused.stderr
    assert not (home / "repo" / "acme" / "shop" / "vague.md").exists()

    wrote = _ok(cli("write", f"{SCOPE}::slow", "orders are slow", "--kind", "fact", "--cites", "checkout", cwd=shop))
    assert "cites shop/orders.py::checkout" in wrote
    plain = _ok(cli("write", f"{SCOPE}::plain", "the total of checkout is a sum of the cart", cwd=shop))
    assert "\ncites" not in plain  # plain words are not code, even where a symbol has that name


def test_lint_dedupe_stats_and_diff_groom_a_vault(shop: Path, cli: Cli) -> None:
    db = "pnpm test fails with ECONNREFUSED 5432 when the database is down: run docker compose up -d db first"
    _ok(cli("write", f"{SCOPE}::db-down", db, "--tags", "db", cwd=shop))
    _ok(cli("write", f"{SCOPE}::db-down", db, "--tags", "db", cwd=shop))  # seen twice: the one a merge keeps
    _ok(cli("write", f"{SCOPE}::db-down-again", db.replace("-d db", "db") + " (on CI too)", "--tags", "ci", cwd=shop))
    _ok(cli("write", f"{SCOPE}::fix-2026-12-01", "the nightly job needs TZ=UTC", cwd=shop))
    _ok(cli("write", "global::db-down", db, cwd=shop))

    linted = cli("lint", cwd=shop)
    assert linted.returncode == 1
    assert f"volatile-key   {SCOPE}::fix-2026-12-01: it holds a date" in linted.stdout
    assert "near-duplicate" in linted.stdout

    dry = _ok(cli("dedupe", cwd=shop))
    assert f"would merge {SCOPE}::db-down-again into {SCOPE}::db-down" in dry and "dry run" in dry
    assert "global::db-down" not in dry  # across scopes a copy may be true in one place only
    assert _ok(cli("read", f"{SCOPE}::db-down-again", cwd=shop))  # the dry run changed nothing

    merged = json.loads(_ok(cli("dedupe", "--yes", "--json", cwd=shop)))
    assert merged["merges"][0]["archived"] == [f"{SCOPE}::db-down-again"]
    kept = json.loads(_ok(cli("read", f"{SCOPE}::db-down", "--json", cwd=shop)))
    assert "(on CI too)" in kept["value"] and set(kept["tags"]) == {"db", "ci"} and kept["seen_count"] == 3
    assert cli("read", f"{SCOPE}::db-down-again", cwd=shop).returncode == 1  # archived, not deleted:
    assert _ok(cli("restore", f"{SCOPE}::db-down-again", cwd=shop))

    stats = json.loads(_ok(cli("stats", "--json", cwd=shop)))
    assert stats["by_scope"] == {SCOPE: 3, "global": 1} and stats["by_tier"] == {"home": 4}

    diff = json.loads(_ok(cli("diff", SCOPE, "global", "--json", cwd=shop)))
    assert diff["counts"] == {"only-a": 2, "only-b": 0, "differs": 1, "same": 0}
    assert "remote mode is not configured" in _ok(cli("diff", "--remote", cwd=shop))
    assert cli("diff", SCOPE, cwd=shop).returncode == 2
