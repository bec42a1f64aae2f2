"""`hivelore remote …`, `org …` and `token …`: the team server from the terminal (docs/server.md).

Each command is one request (or two) through `remote.client`; what the server refuses is shown as
its own sentence, and a secret the server makes (a token, an invitation) is printed once, alone on
stdout, so a script can take it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from hivelore.cli.output import EXIT_BAD_INPUT, fail, print_json, reported_errors
from hivelore.home import home_path
from hivelore.remote import credentials
from hivelore.remote.client import Client, segment

remote_app = typer.Typer(help="The team server this folder uses: status, login, approved hosts.", no_args_is_help=True)
org_app = typer.Typer(
    help="Organisations on the team server: members, invitations, shared scopes, switches, data, audit.",
    no_args_is_help=True,
)
token_app = typer.Typer(help="Your tokens on the team server (hl_rw_, hl_ro_, hl_wo_).", no_args_is_help=True)

EndpointOption = Annotated[
    str | None, typer.Option("--endpoint", help="The team server (default: HIVELORE_ENDPOINT, then config files).")
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]
STATUS_BUDGET_S = 10.0  # `remote status` may wait longer than a read: it is asked to reach the server


def _home() -> str:
    return home_path(os.environ)


def _repo_root() -> str | None:
    from hivelore.gitrepo import read_git_info

    git = read_git_info(Path.cwd())
    return str(git.root) if git else None


def _remote(given: str | None) -> credentials.Remote:
    found = credentials.resolve(_home(), _repo_root(), os.environ, given, token=os.environ.get("HIVELORE_TOKEN"))
    if found is None:
        fail(
            "no team server is named: pass --endpoint https://…, set HIVELORE_ENDPOINT, "
            'or put {"endpoint": "https://…"} in your config.json',
            EXIT_BAD_INPUT,
        )
    return found


def _client(given: str | None) -> Client:
    found = _remote(given)
    if not found.approved:
        fail(str(found.withheld()), EXIT_BAD_INPUT)
    return Client(found.endpoint, found.token)


def _show(data: object, as_json: bool, lines: list[str]) -> None:
    if as_json:
        print_json(data)
    else:
        print("\n".join(lines))


# -- remote ---------------------------------------------------------------------------------------


@remote_app.command("status")
def status(endpoint: EndpointOption = None, as_json: JsonFlag = False) -> None:
    """Which team server, where its address and token come from, and who the token is."""
    from hivelore.remote.status import look

    with reported_errors():
        report = look(_home(), _remote(endpoint), STATUS_BUDGET_S).as_dict()
    _show(report, as_json, [f"{name}: {value}" for name, value in report.items()])
    if "refused" in report:  # the report is shown (what waits), and the exit says it needs a login
        fail(str(report["refused"]), EXIT_BAD_INPUT)


@remote_app.command("trust")
def trust(host: Annotated[str | None, typer.Argument(help="The host to approve; none: list them.")] = None) -> None:
    """Approve HOST: a repository's .hivelore.json that names a server on it may then receive your
    token. Without HOST: the hosts approved."""
    if host is None:
        print("\n".join(credentials.approved_hosts(_home())) or "(no approved hosts)")
        return
    with reported_errors():
        credentials.approve(_home(), host)
    print(f"approved {host.strip().lower()}: repositories that name it get your token")


@remote_app.command("untrust")
def untrust(host: str) -> None:
    """Take back the approval of HOST: a repository that names a server on it gets no token again."""
    with reported_errors():
        credentials.unapprove(_home(), host)
    print(f"{host.strip().lower()} is no longer approved: repositories that name it get no token")


@remote_app.command("logout")
def logout(
    server: Annotated[
        str | None, typer.Argument(help="A server's address or host (default: the server this folder uses).")
    ] = None,
) -> None:
    """Remove the token `remote login` kept for a server from credentials.json (the server keeps it
    valid: `hivelore token revoke` ends it there)."""
    with reported_errors():
        gone = credentials.forget_tokens(_home(), server or _remote(None).endpoint.url)
    print("\n".join(f"logged out of {url}: its token is no longer kept here" for url in gone))


@remote_app.command("login")
def login(
    token: Annotated[
        str, typer.Option(help="The token, or - to read it from stdin (keeps it out of the shell history).")
    ],
    endpoint: EndpointOption = None,
) -> None:
    """Check a token against the server, then keep it (owner-only) for that server."""
    secret = sys.stdin.readline().strip() if token == "-" else token.strip()
    with reported_errors():
        found = _remote(endpoint)
        me = Client(found.endpoint, secret).get("/v1/me")
        credentials.keep_token(_home(), found.endpoint, secret)
    user = me.get("user") if isinstance(me, dict) else "?"
    print(f"logged in to {found.endpoint} as {user}")


# -- org ------------------------------------------------------------------------------------------


@org_app.command("create")
def org_create(name: str, endpoint: EndpointOption = None) -> None:
    """Make an organisation; you are its owner."""
    with reported_errors():
        _client(endpoint).post("/v1/orgs", {"name": name})
    print(f"created {name}; you are its owner")


@org_app.command("list")
def org_list(endpoint: EndpointOption = None, as_json: JsonFlag = False) -> None:
    """The organisations you belong to, with your role."""
    with reported_errors():
        me = _client(endpoint).get("/v1/me")
    orgs = me.get("orgs", []) if isinstance(me, dict) else []
    _show(orgs, as_json, [f"{o['org']}  {o['role']}" for o in orgs] or ["(none)"])


@org_app.command("show")
def org_show(org: str, endpoint: EndpointOption = None, as_json: JsonFlag = False) -> None:
    """An organisation's members, their roles and its shared scopes."""
    with reported_errors():
        data = _client(endpoint).get(f"/v1/orgs/{segment(org)}")
    assert isinstance(data, dict)
    lines = [f"{org} (you: {data['role']})", "members:"]
    lines += [f"  {m['user']}  {m['role']}" for m in data["members"]]
    lines += ["shared scopes:", *(f"  {s}" for s in data["scopes"] or ["(none)"])]
    _show(data, as_json, lines)


@org_app.command("invite")
def org_invite(
    org: str,
    invitee: Annotated[str, typer.Argument(help="An email address, or a GitHub handle like @octocat.")],
    role: Annotated[str, typer.Option(help="viewer, member or admin.")] = "member",
    endpoint: EndpointOption = None,
) -> None:
    """Invite someone; prints the invitation token (once) for you to pass on."""
    with reported_errors():
        made = _client(endpoint).post(f"/v1/orgs/{segment(org)}/invitations", {"invitee": invitee, "role": role})
    assert isinstance(made, dict)
    print(made["token"])
    print(f"invited {made['invitee']} to {org} as {made['role']} until {made['expires'][:10]}", file=sys.stderr)


@org_app.command("join")
def org_join(
    invitation: Annotated[str, typer.Argument(help="The hl_inv_ token you were given.")],
    name: Annotated[
        str | None, typer.Option(help="Without an account: the user name to create (your token is then kept).")
    ] = None,
    endpoint: EndpointOption = None,
) -> None:
    """Accept an invitation, with your token, or as a new user named --name."""
    with reported_errors():
        found = _remote(endpoint)
        if name:
            body = {"token": invitation, "name": name}
            joined = Client(found.endpoint, None).request("POST", "/v1/invitations/accept", body, authenticated=False)
            assert isinstance(joined, dict)
            credentials.keep_token(_home(), found.endpoint, joined["token"])
        else:
            joined = _client(endpoint).post("/v1/invitations/accept", {"token": invitation})
            assert isinstance(joined, dict)
    print(f"joined {joined['org']} as {joined['role']} ({joined['user']})")


@org_app.command("role")
def org_role(org: str, user: str, role: str, endpoint: EndpointOption = None) -> None:
    """Give a member another role (viewer, member, admin, owner)."""
    with reported_errors():
        _client(endpoint).put(f"/v1/orgs/{segment(org)}/members/{segment(user)}", {"role": role})
    print(f"{user} is {role} in {org}")


@org_app.command("remove")
def org_remove(org: str, user: str, endpoint: EndpointOption = None) -> None:
    """Remove a member (yourself: leave)."""
    with reported_errors():
        _client(endpoint).delete(f"/v1/orgs/{segment(org)}/members/{segment(user)}")
    print(f"{user} is no longer in {org}")


@org_app.command("share")
def org_share(org: str, scope: str, endpoint: EndpointOption = None) -> None:
    """Bind a scope to the organisation: members' writes under it go to the org's shared copy."""
    with reported_errors():
        _client(endpoint).put(f"/v1/orgs/{segment(org)}/scopes/{segment(scope)}")
    print(f"{scope} is shared by {org}")


@org_app.command("unshare")
def org_unshare(org: str, scope: str, endpoint: EndpointOption = None) -> None:
    """Unbind a shared scope."""
    with reported_errors():
        _client(endpoint).delete(f"/v1/orgs/{segment(org)}/scopes/{segment(scope)}")
    print(f"{scope} is no longer shared by {org}")


@org_app.command("rename")
def org_rename(org: str, new_name: str, endpoint: EndpointOption = None) -> None:
    """Rename an organisation (owner)."""
    with reported_errors():
        _client(endpoint).patch(f"/v1/orgs/{segment(org)}", {"name": new_name})
    print(f"{org} is now {new_name}")


@org_app.command("delete")
def org_delete(
    org: str,
    yes: Annotated[bool, typer.Option("--yes", help="Really delete it, with its members and shared scopes.")] = False,
    endpoint: EndpointOption = None,
) -> None:
    """Delete an organisation (owner); needs --yes."""
    if not yes:
        fail(f"deleting {org} removes its members and shared scopes: add --yes to do it", EXIT_BAD_INPUT)
    with reported_errors():
        _client(endpoint).delete(f"/v1/orgs/{segment(org)}")
    print(f"deleted {org}")


@org_app.command("switch-off")
def org_switch_off(
    org: str,
    repo: Annotated[str, typer.Argument(help="The repository's scope, like repo::acme/shop.")],
    endpoint: EndpointOption = None,
) -> None:
    """Switch memory off for a repository (admin): the server keeps and serves nothing of it for the
    org's members, and their checkouts of it are off after their next sync."""
    with reported_errors():
        _client(endpoint).put(f"/v1/orgs/{segment(org)}/switches/{segment(repo)}")
    print(f"memory is off for {repo} in {org}; members' checkouts of it are off after their next sync")


@org_app.command("switch-on")
def org_switch_on(
    org: str,
    repo: Annotated[str, typer.Argument(help="The repository's scope, like repo::acme/shop.")],
    endpoint: EndpointOption = None,
) -> None:
    """Switch memory back on for a repository (admin)."""
    with reported_errors():
        _client(endpoint).delete(f"/v1/orgs/{segment(org)}/switches/{segment(repo)}")
    print(f"memory is on again for {repo} in {org}; members' checkouts of it are on after their next sync")


@org_app.command("switches")
def org_switches(org: str, endpoint: EndpointOption = None, as_json: JsonFlag = False) -> None:
    """The repositories the organisation switched memory off for, who did it and when."""
    with reported_errors():
        found = _client(endpoint).get(f"/v1/orgs/{segment(org)}/switches")
    assert isinstance(found, list)
    _show(found, as_json, [f"{s['scope']}  off since {s['at'][:16]}Z by {s['by']}" for s in found] or ["(none)"])


@org_app.command("memories")
def org_memories(
    org: str,
    scope: Annotated[str | None, typer.Option(help="Only this scope.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many (a page of the server's at a time).")] = 1000,
    endpoint: EndpointOption = None,
    as_json: JsonFlag = False,
) -> None:
    """What the organisation holds on the team server (admin): scope, key, owner, archived or not."""
    from urllib.parse import urlencode

    found: list[dict[str, Any]] = []
    after: dict[str, str] = {}
    with reported_errors():
        client = _client(endpoint)
        while len(found) < limit:
            query = {**({"scope": scope} if scope else {}), **after, "limit": min(limit - len(found), 500)}
            page = client.get(f"/v1/orgs/{segment(org)}/memories?{urlencode(query)}")
            assert isinstance(page, dict)
            found += page["memories"]
            if not page["next"]:
                break
            after = {"after_scope": page["next"]["scope"], "after_key": page["next"]["key"]}
    lines = [
        f"{m['scope']}::{m['key']}  {m['kind']}  {m['owner'] or '(gone)'}  {m['updated'][:10]}"
        f"{'  archived' if m['archived'] else ''}"
        for m in found
    ]
    _show(found, as_json, lines or ["(none)"])


@org_app.command("forget")
def org_forget(
    org: str,
    key: Annotated[str | None, typer.Argument(help="The memory's key (with --scope).")] = None,
    scope: Annotated[
        str, typer.Option(help="The scope; without KEY every memory under it (a repository's: its branches' too).")
    ] = "",
    yes: Annotated[bool, typer.Option("--yes", help="Confirm deleting a whole scope.")] = False,
    endpoint: EndpointOption = None,
) -> None:
    """Delete from the organisation's space (admin): one memory (KEY --scope S), or every memory under
    --scope S and, for a repository, its branches (with --yes). Mirrors drop them at their next sync."""
    from urllib.parse import urlencode

    if not scope:
        fail("name the scope with --scope, like --scope repo::acme/shop", EXIT_BAD_INPUT)
    if key is None and not yes:
        fail(f"this deletes every memory {org} holds under {scope}: add --yes to do it", EXIT_BAD_INPUT)
    query = {"scope": scope, **({"key": key} if key is not None else {})}
    with reported_errors():
        answer = _client(endpoint).delete(f"/v1/orgs/{segment(org)}/memories?{urlencode(query)}")
    assert isinstance(answer, dict)
    print("\n".join(f"deleted {address}" for address in answer["deleted"]) or f"{org} holds nothing under {scope}")


@org_app.command("team")
def org_team(org: str, endpoint: EndpointOption = None, as_json: JsonFlag = False) -> None:
    """The organisation's team data on the team server (admin), counted per repository."""
    with reported_errors():
        found = _client(endpoint).get(f"/v1/orgs/{segment(org)}/team")
    assert isinstance(found, list)
    lines = [
        f"{r['repo']}  {r['intents']} tasks  {r['decisions']} decisions  {r['attempts']} attempts  {r['notes']} notes"
        + _graph_held(r.get("graph"))
        for r in found
    ]
    _show(found, as_json, lines or ["(none)"])


def _graph_held(graph: dict | None) -> str:
    """The pushed code graph's part of a repository's line in `org team`."""
    if not graph:
        return ""
    by = f" by {graph['pushed_by']}" if graph.get("pushed_by") else ""
    return f"  graph: {graph['files']} files, {graph['symbols']} symbols, pushed{by} at {graph['pushed_at'][:16]}Z"


@org_app.command("team-forget")
def org_team_forget(
    org: str,
    repo: Annotated[str, typer.Argument(help="The repository, OWNER/NAME.")],
    yes: Annotated[bool, typer.Option("--yes", help="Confirm deleting the repository's whole team data.")] = False,
    endpoint: EndpointOption = None,
) -> None:
    """Delete the organisation's team data of one repository (admin): its tasks, with their sessions,
    claims, changes, attempts and notes, its decisions, and the code graph pushed for it."""
    from urllib.parse import urlencode

    if not yes:
        fail(
            f"this deletes every task, decision and the pushed code graph {org} holds for {repo}: add --yes to do it",
            EXIT_BAD_INPUT,
        )
    with reported_errors():
        gone = _client(endpoint).delete(f"/v1/orgs/{segment(org)}/team?{urlencode({'repo': repo})}")
    assert isinstance(gone, dict)
    graph = gone.get("graph")
    code = f", its code graph ({graph['files']} files)" if graph else ""
    print(f"deleted {repo}'s team data in {org}: {gone['intents']} tasks, {gone['decisions']} decisions{code}")


@org_app.command("audit")
def org_audit(org: str, endpoint: EndpointOption = None, as_json: JsonFlag = False) -> None:
    """The organisation's audit log, newest first (admin)."""
    with reported_errors():
        answer = _client(endpoint).get(f"/v1/orgs/{segment(org)}/audit")
    assert isinstance(answer, dict)
    lines = [f"{a['at'][:19]}Z  {a['actor']}  {a['action']}  {a['target']}" for a in answer["lines"]]
    _show(answer["lines"], as_json, lines or ["(none)"])


# -- token ----------------------------------------------------------------------------------------


@token_app.command("create")
def token_create(
    kind: Annotated[str, typer.Option(help="rw (read and write), ro (read only: CI), wo (write only).")] = "rw",
    name: Annotated[str, typer.Option(help="A name to tell it by.")] = "",
    scope: Annotated[
        list[str] | None, typer.Option("--scope", help="Only these scope patterns, like repo::acme/* (repeatable).")
    ] = None,
    expires_in_days: Annotated[int | None, typer.Option(help="Expire after this many days.")] = None,
    endpoint: EndpointOption = None,
) -> None:
    """Make a token; prints it (once) on stdout."""
    body = {"kind": kind, "name": name, "scopes": scope or [], "expires_in_days": expires_in_days}
    with reported_errors():
        made = _client(endpoint).post("/v1/tokens", body)
    assert isinstance(made, dict)
    print(made["token"])
    print(f"token {made['id']} ({made['kind']}) made; it is shown this once", file=sys.stderr)


@token_app.command("list")
def token_list(endpoint: EndpointOption = None, as_json: JsonFlag = False) -> None:
    """Your tokens, without their secrets."""
    with reported_errors():
        tokens = _client(endpoint).get("/v1/tokens")
    assert isinstance(tokens, list)
    lines = [
        f"{t['id']}  hl_{t['kind']}_  {t['name'] or '-'}  "
        f"{'revoked' if t['revoked'] else 'expires ' + t['expires'][:10] if t['expires'] else 'active'}"
        f"{'  scopes ' + ', '.join(t['scopes']) if t['scopes'] else ''}"
        for t in tokens
    ]
    _show(tokens, as_json, lines)


@token_app.command("revoke")
def token_revoke(token_id: int, endpoint: EndpointOption = None) -> None:
    """Revoke one of your tokens by its id (`hivelore token list`)."""
    with reported_errors():
        _client(endpoint).delete(f"/v1/tokens/{token_id}")
    print(f"token {token_id} revoked")


def exported(include_hidden: bool) -> tuple[list[object], list[dict[str, object]]]:
    """Every memory the caller owns on the team server (GET /v1/me/export), as export records, and
    the team rows they wrote, each as a `{"team": TABLE, "row": {...}}` line (`import` skips them)."""
    answer = _client(None).get(f"/v1/me/export?include_hidden={str(include_hidden).lower()}")
    records = answer.get("records") if isinstance(answer, dict) else None
    if not isinstance(records, list):
        raise ValueError("the team server's export answer holds no records: is it a hivelore server?")
    team = answer.get("team") if isinstance(answer, dict) else None
    tables = team if isinstance(team, dict) else {}  # a server from before the team store has none
    return records, [{"team": table, "row": row} for table, rows in tables.items() for row in rows]


@remote_app.command("delete-my-data")
def delete_my_data(
    yes: Annotated[bool, typer.Option("--yes", help="Confirm: every memory of your personal space is hidden.")] = False,
    endpoint: EndpointOption = None,
) -> None:
    """Delete your personal space's memories on the team server (restorable for the recovery window)."""
    if not yes:
        fail("this hides every memory of your personal space on the team server: pass --yes to do it", EXIT_BAD_INPUT)
    with reported_errors():
        answer = _client(endpoint).delete("/v1/me/data")
    assert isinstance(answer, dict)
    print(
        f"hid {answer['hidden']} memories; `hivelore remote restore-my-data` brings them back"
        f" until {answer['purge_after']}, when they and the {answer.get('team_rows', 0)} team rows you wrote"
        " are deleted"
    )


@remote_app.command("restore-my-data")
def restore_my_data(endpoint: EndpointOption = None) -> None:
    """Bring back what `remote delete-my-data` hid, within the recovery window."""
    with reported_errors():
        answer = _client(endpoint).post("/v1/me/data/restore")
    assert isinstance(answer, dict)
    print(f"restored {answer['restored']} memories")


@remote_app.command("delete-my-account")
def delete_my_account(
    yes: Annotated[
        bool, typer.Option("--yes", help="Confirm: your account and everything of yours go for good.")
    ] = False,
    endpoint: EndpointOption = None,
) -> None:
    """Delete your account on the team server, at once and for good: your tokens, personal space,
    memberships and team rows. Refused while you are the last owner of an organisation."""
    if not yes:
        fail(
            "this deletes your account on the team server for good — your tokens, your personal space, your"
            " memberships and the team rows you wrote, with no recovery window: pass --yes to do it",
            EXIT_BAD_INPUT,
        )
    with reported_errors():
        answer = _client(endpoint).delete("/v1/me")
    assert isinstance(answer, dict)
    left = f"; left {', '.join(answer['orgs'])}" if answer["orgs"] else ""
    print(
        f"deleted the account {answer['user']}: {answer['memories']} memories, {answer['team_rows']} team rows,"
        f" {answer['tokens']} tokens{left}; `hivelore remote logout` forgets its token here"
    )
