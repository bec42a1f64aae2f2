"""The shop story's cast for the team server's tests: developers, each on a machine of their own (a
HIVELORE_HOME and a clone of the shop with the same origin), each with their own agent, in remote
mode against a live `hivelore serve`. A hook is a real `hivelore hook` process fed that agent's own
payload shape (built from tests/fixtures/hook-payloads), answered by the home's resident hook server
as in production; what it prints is checked against the agent's stdout contract."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg
from conftest import Account, unique
from harness import PAYLOADS, SHOP_FILES, aimed, example, problems, said

from hivelore.hooks.client import stop_server
from hivelore.remote.mirror import path_for
from hivelore.remote.teamshare import ClaimsReplica, FailuresReplica
from hivelore.server.postgres import accounts

SCOPE = "repo::acme/shop"
REPO = "acme/shop"
SEEN_WAIT_S = 20.0  # what a test waits at most for something to cross machines; the figure is the benchmark's

VALIDATE = "    return token.split('.')[0]"
CHECKOUT = "    return {'user': user, 'total': sum(cart)}"
REFRESH = "    return token + '.refreshed'"
REFRESH_BROKEN = "    return token"

# The shop with a session refresh and its test: dev-c's change to refresh_session breaks test_refresh_session.
STORY_FILES = {
    **SHOP_FILES,
    "shop/tokens.py": SHOP_FILES["shop/tokens.py"] + f"\n\ndef refresh_session(token):\n{REFRESH}\n",
    "tests/test_tokens.py": (
        "from shop.tokens import refresh_session, validate_token\n\n\n"
        "def test_validate_token():\n    assert validate_token('a.b') == 'a'\n\n\n"
        "def test_refresh_session():\n    assert refresh_session('old.jwt') != 'old.jwt'\n"
    ),
}
TEST_COMMAND = "python -m pytest -q tests/test_tokens.py"


@dataclass
class Told:
    """What a hook said to the agent, and how long the hook process took."""

    text: str
    seconds: float


# --- each agent's payloads, from its fixtures ------------------------------------------------------------------------


def _ndjson(folder: str, name: str, line: int) -> dict:
    return json.loads((PAYLOADS / folder / name).read_text().splitlines()[line - 1])["_payload"]


def _kiro_capture(key: str) -> dict:
    return copy.deepcopy(json.loads((PAYLOADS / "kiro" / "payloads.json").read_text())[key])


def prompt_payload(agent: str, repo: Path, session: str, text: str) -> tuple[str, dict]:
    """(wire event, payload) of the user's prompt as `agent` sends it."""
    if agent == "claude":
        return "UserPromptSubmit", _aimed(example("claude", "UserPromptSubmit", "plain prompt"), repo, session, text)
    if agent == "codex":
        return "UserPromptSubmit", _aimed(example("codex", "UserPromptSubmit", "prompt"), repo, session, text)
    if agent == "kiro":
        return "userPromptSubmit", _aimed(example("kiro", "userPromptSubmit", "prompt"), repo, session, text)
    if agent == "gemini":
        return "BeforeAgent", _aimed(example("gemini", "BeforeAgent", "prompt"), repo, session, text)
    payload = example("cursor", "beforeSubmitPrompt", "prompt with attachment")
    payload["attachments"] = []
    return "beforeSubmitPrompt", {**_aimed(payload, repo, session, text), "conversation_id": session}


def _aimed(payload: dict, repo: Path, session: str, text: str) -> dict:
    found = aimed(payload, repo, session_id=session, prompt=text)
    assert isinstance(found, dict)
    return found


def edit_payload(agent: str, repo: Path, session: str, path: str, old: str, new: str) -> tuple[str, dict]:
    """(wire event, payload) of the moment before `agent` replaces `old` by `new` in `path`: Claude's Edit,
    Codex's apply_patch, Kiro's fs_write str_replace, Gemini CLI's replace."""
    absolute = str(repo / path)
    if agent == "claude":
        payload = example("claude", "PreToolUse", "Edit")
        payload["tool_input"] = {"file_path": absolute, "old_string": old, "new_string": new, "replace_all": False}
        return "PreToolUse", _aimed_call(payload, repo, session)
    if agent == "codex":
        payload = example("codex", "PreToolUse", "apply_patch (raw patch in tool_input.command)")
        patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n"
        payload["tool_input"] = {"command": patch}
        return "PreToolUse", _aimed_call(payload, repo, session)
    if agent == "kiro":
        # Kiro CLI's recorded fs_write str_replace call (a postToolUse capture), as its preToolUse carries it.
        payload = _kiro_capture("postToolUse_fs_write_str_replace")
        del payload["tool_response"]
        payload["hook_event_name"] = "preToolUse"
        payload["tool_input"].update(path=absolute, old_str=old, new_str=new)
        return "preToolUse", _aimed_call(payload, repo, session)
    if agent == "gemini":
        payload = _ndjson("gemini", "real-0.61-hooks.ndjson", 18)  # a recorded BeforeTool replace in a shop
        payload["tool_input"].update(file_path=absolute, old_string=old, new_string=new)
        return "BeforeTool", _aimed_call(payload, repo, session)
    raise ValueError(f"no edit payload for {agent}: its fixtures hold no pre-edit event")


def after_edit_payload(agent: str, repo: Path, session: str, path: str, old: str, new: str) -> tuple[str, dict]:
    """(wire event, payload) of the edit's result, for Claude Code and Gemini CLI."""
    absolute = str(repo / path)
    if agent == "claude":
        payload = example("claude", "PostToolUse", "Edit with structuredPatch")
        payload["tool_input"] = {"file_path": absolute, "old_string": old, "new_string": new, "replace_all": False}
        payload["tool_response"] = {"filePath": absolute, "oldString": old, "newString": new, "userModified": False}
        return "PostToolUse", _aimed_call(payload, repo, session)
    if agent == "gemini":
        payload = _ndjson("gemini", "real-0.61-hooks.ndjson", 19)
        payload["tool_input"].update(file_path=absolute, old_string=old, new_string=new)
        payload["tool_response"] = {"llmContent": f"Successfully modified file: {absolute} (1 replacements)."}
        return "AfterTool", _aimed_call(payload, repo, session)
    raise ValueError(f"no after-edit payload for {agent} in this story")


def failed_run_payload(repo: Path, session: str, command: str, output: str) -> tuple[str, dict]:
    """Claude Code's PostToolUseFailure of a Bash call that exited 1 with `output`."""
    payload = example("claude", "PostToolUseFailure", "Bash non-zero exit")
    payload["tool_input"]["command"] = command
    payload["error"] = f"Exit code 1\n{output}"
    return "PostToolUseFailure", _aimed_call(payload, repo, session)


def session_start_payload(agent: str, repo: Path, session: str) -> tuple[str, dict]:
    if agent != "cursor":
        raise ValueError("only Cursor's session start is played in this story")
    payload = example("cursor", "sessionStart", "session start")
    return "sessionStart", {**_aimed_call(payload, repo, session), "conversation_id": session}


def _aimed_call(payload: dict, repo: Path, session: str) -> dict:
    found = aimed(payload, repo, session_id=session)
    assert isinstance(found, dict)
    return found


# --- a developer's machine -------------------------------------------------------------------------------------------


class Developer:
    """One developer's laptop: a home in remote mode, a clone of the shop, an agent."""

    def __init__(self, name: str, agent: str, home: Path, repo: Path) -> None:
        self.name, self.agent, self.home, self.repo = name, agent, home, repo

    def env(self) -> dict[str, str]:
        # Not this run's HIVELORE_* (an agent running the tests may set some) nor PYTEST_* (dev-c's own pytest
        # run would take this run's options).
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HIVELORE_", "PYTEST_"))}
        return {**env, "HIVELORE_HOME": str(self.home), "HIVELORE_DEVELOPER": self.name, "HIVELORE_HOOK_SERVER": "on"}

    def cli(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "hivelore", *args], input=stdin, cwd=self.repo, env=self.env(),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    def join(self, url: str, account: Account) -> None:
        """Point the home at the team server, log in, and index the checkout (the graph stays here)."""
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "config.json").write_text(json.dumps({"mode": "remote", "endpoint": url}))
        login = self.cli("remote", "login", "--token", "-", stdin=account.token)
        assert login.returncode == 0, login.stderr
        indexed = self.cli("graph", "index")
        assert indexed.returncode == 0, indexed.stderr

    def hook(self, event: str, payload: dict) -> Told:
        """One hook as the agent runs it: exit 0, nothing on stderr, stdout in the agent's contract."""
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "hivelore", "hook", "--agent", self.agent, "--event", event],
            input=json.dumps(payload).encode(), cwd=self.repo, env=self.env(), capture_output=True, timeout=60,
        )  # fmt: skip
        seconds = time.monotonic() - started
        assert result.returncode == 0 and result.stderr == b"", result.stderr
        assert problems(self.agent, event, result.stdout) == []
        return Told(said(self.agent, result.stdout), seconds)

    def prompt(self, session: str, text: str) -> Told:
        return self.hook(*prompt_payload(self.agent, self.repo, session, text))

    def start_session(self, session: str) -> Told:
        return self.hook(*session_start_payload(self.agent, self.repo, session))

    def before_edit(self, session: str, path: str, old: str, new: str) -> Told:
        return self.hook(*edit_payload(self.agent, self.repo, session, path, old, new))

    def edit(self, session: str, path: str, old: str, new: str) -> tuple[Told, Told]:
        """The whole edit: the pre-edit hook, the change on disk, the post-edit hook."""
        before = self.before_edit(session, path, old, new)
        file = self.repo / path
        text = file.read_text()
        assert text.count(old) == 1, f"{old!r} is not once in {path}"
        file.write_text(text.replace(old, new))
        return before, self.hook(*after_edit_payload(self.agent, self.repo, session, path, old, new))

    def run_tests(self) -> subprocess.CompletedProcess[str]:
        """The shop's tests, run for real in this checkout (what the agent's shell call ran)."""
        # Without this run's plugins (hypothesis, playwright …): the shop needs none, and they cost seconds.
        env = {**self.env(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_tokens.py"],
            cwd=self.repo, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    def failed_run(self, session: str, output: str) -> Told:
        return self.hook(*failed_run_payload(self.repo, session, TEST_COMMAND, output))

    def claims(self, url: str) -> ClaimsReplica:
        return ClaimsReplica.beside(path_for(str(self.home), url))

    def failures(self, url: str) -> FailuresReplica:
        return FailuresReplica.beside(path_for(str(self.home), url))

    def outbox(self, url: str) -> Path:
        return Path(path_for(str(self.home), url).removesuffix(".db") + ".outbox")

    def queued(self, url: str) -> list[str]:
        """What waits in the outbox, oldest first: `op`, or `team:KIND` for a team change (claim, attempt …)."""
        changes = [json.loads(p.read_text()) for p in sorted(self.outbox(url).glob("*.json"))]
        return [f"team:{c['body']['kind']}" if c["op"] == "team" else c["op"] for c in changes]

    def stop_hook_server(self) -> None:
        stop_server(str(self.home))  # what `hivelore hook-server stop` does, without starting a process


def make_org(db: psycopg.Connection, make_user: Callable[..., Account], names: list[str]) -> list[Account]:
    """An organisation sharing repo::acme/shop: the first developer owns it, the others are members."""
    owner = make_user(names[0])
    org = unique("acme")
    accounts.create_org(db, org, owner.id)
    org_id, _ = accounts.role_in(db, org, owner.id)
    accounts.bind_scope(db, org_id, SCOPE, owner.id)
    team = [owner]
    for name in names[1:]:
        email = f"{unique(name)}@example.com"
        member = make_user(name, email=email)
        accounts.accept(db, accounts.invite(db, org_id, org, email, "member", owner.id).token, member.id)
        team.append(member)
    return team


def wait_for(what: str, check: Callable[[], bool], within: float = SEEN_WAIT_S) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"not seen within {within:g} s: {what}"
        time.sleep(0.1)


def claimed_by(replica: ClaimsReplica, symbol: str, developer: str) -> bool:
    claims, _ = replica.read(REPO)
    return any(s.endswith(symbol) and intent.owner == developer for s, intent, _who in claims)


def failed_for(replica: FailuresReplica, test: str, developer: str) -> bool:
    return any(test in f.attempt.failed and f.attempt.developer == developer for f in replica.read(REPO))
