"""The docs keep up with the code: every command of the `hivelore` CLI is in docs/cli.md, every MCP tool in
docs/mcp.md, and every relative link of README.md and docs/*.md reaches a file (and its heading, when it names
one). The commands and tools are read from the running application, so a new one fails here until documented.
"""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest
import typer.main

from hivelore.cli import FAST_COMMANDS
from hivelore.cli.app import app
from hivelore.mcp.tools import build_server

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")


def command_paths(command: object, prefix: tuple[str, ...] = ()) -> list[str]:
    """Every runnable command under a click command, as its words after `hivelore` ("graph blast-radius")."""
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        return [" ".join(prefix)]
    return [path for name, sub in subcommands.items() for path in command_paths(sub, (*prefix, name))]


def cli_commands() -> set[str]:
    """The typer application's commands and the fast ones `hivelore` answers before typer loads (`hook`)."""
    return {*command_paths(typer.main.get_command(app)), *FAST_COMMANDS}


def documented_commands(text: str) -> set[str]:
    """The command words at the start of each code span of docs/cli.md. A span may list a group's
    sub-commands as alternatives, `index status \\| rebuild \\| path`: each counts."""
    found = set()
    for span in CODE_SPAN.findall(text):
        first, *alternatives = span.split("\\|")
        words = leading_words(first)
        found.update(" ".join(words[:n]) for n in (1, 2) if len(words) >= n)
        if len(words) >= 2:
            found.update(f"{words[0]} {alt_words[0]}" for alt in alternatives if (alt_words := leading_words(alt)))
    return found


def leading_words(text: str) -> list[str]:
    """The words a command line starts with before its first argument or option ("graph why SYMBOL" → 2)."""
    words = []
    for word in text.split():
        if not re.fullmatch(r"[a-z][a-z-]*", word):
            break
        words.append(word)
    return words


def mcp_tools() -> set[str]:
    """The tool names the MCP server lists, as a client's tools/list sees them."""
    return {tool.name for tool in anyio.run(build_server().list_tools)}


def slug(heading: str) -> str:
    """A heading's anchor as GitHub renders it: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page's headings (outside fenced code)."""
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
    return {slug(match) for match in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """The relative links of a page whose file is missing, or whose #anchor names no heading of a Markdown file
    (each named by the page's path under `root`)."""
    text = CODE_SPAN.sub("", re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            continue  # a URL (https:, mailto:) or a site-absolute path is not a file of this repository
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        if not linked.exists():
            broken.append(f"{page.relative_to(root)}: {target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{page.relative_to(root)}: {target} (no heading #{anchor})")
    return broken


def test_the_walk_finds_the_commands_and_tools_it_should() -> None:
    """The walks below are not vacuous: they see top-level commands, each group's sub-commands, the fast
    `hook` and the MCP tools of both families."""
    commands = cli_commands()
    expected = {"write", "hook", "mcp", "index rebuild", "graph blast-radius", "task decide", "hook-server stop"}
    assert expected <= commands
    assert {"profile", "graph", "task"}.isdisjoint(commands)  # groups are walked into, not listed
    assert {"memory_write", "profile_search", "blast_radius", "task_board"} <= mcp_tools()


def test_every_cli_command_is_in_docs_cli_md() -> None:
    documented = documented_commands((DOCS / "cli.md").read_text())

    assert sorted(cli_commands() - documented) == []


def test_documented_commands_reads_alternatives_and_nothing_else() -> None:
    text = "| `index status \\| rebuild \\| path` | … |\n| `read SCOPE::KEY \\| KEY` | … |\n| `mcp --prepare x` |"

    assert documented_commands(text) == {"index", "index status", "index rebuild", "index path", "read", "mcp"}


def test_every_mcp_tool_is_in_docs_mcp_md() -> None:
    documented = set(CODE_SPAN.findall((DOCS / "mcp.md").read_text()))

    assert sorted(mcp_tools() - documented) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_its_heading(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_and_a_missing_heading_are_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## The hook server\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#the-hook-server) [gone](missing.md) [no heading](other.md#nowhere) "
        "[web](https://example.com/x.md) [here](#top) `RULES[kind](…)`\n\n# Top\n"
    )

    assert broken_links(page, root=tmp_path) == [
        "page.md: missing.md (no such file)",
        "page.md: other.md#nowhere (no heading #nowhere)",
    ]
