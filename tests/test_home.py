"""HIVELORE_HOME as a user sets it: a relative one names the folder it names from where the command
runs, once; the index does not file its memories under a second root."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hivelore.home import home_path


def hivelore(cwd: Path, home: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HIVELORE_HOME": home, "HIVELORE_HOOK_SERVER": "off"}
    return subprocess.run(
        [sys.executable, "-m", "hivelore", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def test_a_relative_home_is_made_absolute_from_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert home_path({"HIVELORE_HOME": "../home"}) == str(tmp_path.parent / "home")
    assert home_path({"HIVELORE_HOME": "~/x"}) == os.path.join(os.path.expanduser("~"), "x")


def test_memories_written_through_a_relative_home_are_found_once_through_the_absolute_one(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    written = hivelore(work, "../home", "write", "global::relative-home", "a relative home is resolved once")
    assert written.returncode == 0, written.stderr
    found = hivelore(work, str(tmp_path / "home"), "search", "relative home", "--json")
    assert found.returncode == 0, found.stderr
    assert [hit["key"] for hit in json.loads(found.stdout)] == ["relative-home"]
