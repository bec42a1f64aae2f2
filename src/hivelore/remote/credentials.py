"""Which team server, with which token, and whether the user let that server have it.

The endpoint, first found wins: `--endpoint`, `HIVELORE_ENDPOINT`, the user's `config.json`, the
repository's `.hivelore.json`. The token: `HIVELORE_TOKEN` (which the commands read and pass as
`token`: the hook path never reads it, see hooks/wire.py), else the one `hivelore remote login`
kept for that endpoint in `$HIVELORE_HOME/credentials.json` (0600). A repository never supplies a
token (a `.hivelore.json` holding one is refused), and an endpoint a repository names gets the
user's token only once the user approved its host (`hivelore remote trust HOST`): anyone can
commit a `.hivelore.json`, and a token sent to their server would be theirs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

from hivelore import atomicfile
from hivelore.config import read_json
from hivelore.errors import BadInput
from hivelore.home import FILE_MODE, private_folder
from hivelore.remote.client import Endpoint

FILENAME = "credentials.json"


@dataclass(frozen=True)
class Remote:
    """The team server in force for a folder, and what decided it."""

    endpoint: Endpoint
    endpoint_source: str
    token: str | None  # None: no token, or withheld from an endpoint the user has not approved
    token_source: str
    approved: bool

    def withheld(self) -> str | None:
        """Why the token is not sent, when it is not: one sentence, for `doctor` and errors."""
        if self.approved:
            return None
        return (
            f"{self.endpoint_source} names the team server {self.endpoint}, which you have not approved: "
            f"run `hivelore remote trust {self.endpoint.host}` to let it have your token"
        )


def _read(home: str) -> dict[str, object]:
    from pathlib import Path

    return read_json(Path(home, FILENAME))


def _write(home: str, data: dict[str, object]) -> None:
    private_folder(home)
    body = (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()
    atomicfile.replace(os.path.join(home, FILENAME), body, permissions=FILE_MODE)


def approved_hosts(home: str) -> list[str]:
    hosts = _read(home).get("approved_hosts", [])
    return [h for h in hosts if isinstance(h, str)] if isinstance(hosts, list) else []


def _host(given: str) -> str:
    host = given.strip().lower()
    if not host or "/" in host or ":" in host.strip("[]"):
        raise BadInput(f"{given!r} is not a host name: give one like hivelore.example.com")
    return host


def approve(home: str, host: str) -> None:
    """Let the team server on `host` have the user's token when a repository names it."""
    data = _read(home)
    data["approved_hosts"] = sorted({*approved_hosts(home), _host(host)})
    _write(home, data)


def unapprove(home: str, host: str) -> None:
    """Take the approval back: a repository that names a server on `host` gets no token again."""
    host, approved = _host(host), approved_hosts(home)
    if host not in approved:
        listed = ", ".join(approved) or "none"
        raise BadInput(f"{host} is not an approved host (approved: {listed}): `hivelore remote trust` lists them")
    data = _read(home)
    data["approved_hosts"] = [h for h in approved if h != host]
    _write(home, data)


def keep_token(home: str, endpoint: Endpoint, token: str) -> None:
    data = _read(home)
    tokens = data.get("tokens")
    kept = dict(tokens) if isinstance(tokens, dict) else {}
    kept[endpoint.url] = token
    data["tokens"] = kept
    _write(home, data)


def forget_tokens(home: str, server: str) -> list[str]:
    """Remove the tokens kept for `server` (a server's address, or a host name: every server on it);
    the addresses whose token was removed. Nothing kept for it is bad input."""
    data = _read(home)
    tokens = data.get("tokens")
    kept = dict(tokens) if isinstance(tokens, dict) else {}
    wanted = server.strip().lower().rstrip("/")
    gone = [url for url in kept if wanted in (url.lower(), Endpoint(url).host)]
    if not gone:
        listed = ", ".join(sorted(kept)) or "none"
        raise BadInput(f"no token is kept for {server} (kept for: {listed}): give one of those")
    data["tokens"] = {url: token for url, token in kept.items() if url not in gone}
    _write(home, data)
    return gone


def kept_token(home: str, endpoint: Endpoint) -> str | None:
    """The token `hivelore remote login` kept for this server, if any."""
    tokens = _read(home).get("tokens")
    token = tokens.get(endpoint.url) if isinstance(tokens, dict) else None
    return token if isinstance(token, str) else None


def resolve(
    home: str, repo_root: str | None, env: Mapping[str, str], given: str | None = None, token: str | None = None
) -> Remote | None:
    """The team server for the folder whose repository is `repo_root`, or None when nothing names one."""
    from pathlib import Path

    repo_file = os.path.join(repo_root, ".hivelore.json") if repo_root else None
    repo = read_json(Path(repo_file)) if repo_file else {}
    if "token" in repo:
        raise BadInput(
            f"{repo_file} holds a token: a repository's file is read by anyone who clones it; "
            "remove the token from it and revoke it on the server"
        )
    candidates = (
        (given, "--endpoint"),
        (env.get("HIVELORE_ENDPOINT"), "HIVELORE_ENDPOINT"),
        (read_json(Path(home, "config.json")).get("endpoint"), os.path.join(home, "config.json")),
        (repo.get("endpoint"), repo_file or ""),
    )
    found = next((n for n, (url, _) in enumerate(candidates) if isinstance(url, str) and url), None)
    if found is None:
        return None
    url, source = candidates[found]
    endpoint = Endpoint(str(url))
    approved = found < len(candidates) - 1 or endpoint.host in approved_hosts(home)
    sent, token_source = None, "none: set HIVELORE_TOKEN or run `hivelore remote login`"
    if not approved:
        token_source = "withheld: the repository names the server, and you have not approved it"
    elif token:
        sent, token_source = token, "HIVELORE_TOKEN"
    elif kept := kept_token(home, endpoint):
        sent, token_source = kept, os.path.join(home, FILENAME)
    return Remote(endpoint, source, sent, token_source, approved)
