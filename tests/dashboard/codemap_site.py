"""A real `hivelore dashboard` over the shop of tests/test_team.py written as code: place_order calls
checkout and send_receipt; checkout calls current_user and total; current_user → validate_token →
decode_jwt → b64decode; ping stands alone. Indexed by the real CLI; dev-a's agent edits validate_token (its task's title
carries `<script>`), dev-b's agent edits checkout (two call hops above it: a conflict)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dashboard_site import ok, start
from harness import claude_hook_as, cli_as, make_shop

SCRIPT_TITLE = "<script>alert('claim')</script> tokens"
SHOP = {
    "shop/__init__.py": "",
    "shop/encoding.py": "def b64decode(data):\n    return data[::-1]\n",
    "shop/tokens.py": (
        "from shop.encoding import b64decode\n\n\n"
        "def decode_jwt(token):\n    return b64decode(token)\n\n\n"
        "def validate_token(token):\n    return decode_jwt(token)\n"
    ),
    "shop/auth.py": "from shop.tokens import validate_token\n\n\ndef current_user(request):\n"
    "    return validate_token(request)\n",
    "shop/orders.py": (
        "from shop.auth import current_user\n\n\n"
        "class Cart:\n    def total(self, items):\n        return sum(items)\n\n\n"
        "def checkout(request, items):\n    current_user(request)\n    return Cart().total(items)\n"
    ),
    "shop/emails.py": "def send_receipt(order):\n    return str(order)\n",
    "shop/health.py": "def ping():\n    return 'pong'\n",  # calls nothing, called by nothing
    "shop/api.py": (
        "from shop.emails import send_receipt\nfrom shop.orders import checkout\n\n\n"
        "def place_order(request, items):\n    order = checkout(request, items)\n    send_receipt(order)\n"
        "    return order\n"
    ),
}


@dataclass
class ShopMap:
    url: str
    home: Path
    repo: Path


def _edit(home: Path, repo: Path, developer: str, session: str, prompt: str, path: str, old: str) -> None:
    claude_hook_as(home, repo, developer, "UserPromptSubmit", {"session_id": session, "prompt": prompt})
    edit = {"file_path": str(repo / path), "old_string": old, "new_string": f"{old}  # changed"}
    claude_hook_as(
        home, repo, developer, "PreToolUse", {"session_id": session, "tool_name": "Edit", "tool_input": edit}
    )


@pytest.fixture(scope="module", name="shop_map")
def shop_map_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShopMap]:
    base = tmp_path_factory.mktemp("codemap")
    home, repo = base / "home", make_shop(base / "shop", SHOP)
    ok(cli_as(home, repo, "dev-a", "graph", "index"))
    _edit(home, repo, "dev-a", "a-1", SCRIPT_TITLE, "shop/tokens.py", "    return decode_jwt(token)")
    _edit(home, repo, "dev-b", "b-1", "make checkout faster", "shop/orders.py", "    current_user(request)")
    url, process = start(home, repo, base / "dashboard.log")
    yield ShopMap(url, home, repo)
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
