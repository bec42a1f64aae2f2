"""What a built hivelore carries: one version, the license, and the marker that its type hints are its own."""

from __future__ import annotations

import ast
import importlib.metadata
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import hivelore

ROOT = Path(__file__).resolve().parents[1]


def test_the_installed_distribution_has_the_version_hivelore_says() -> None:
    assert importlib.metadata.version("hivelore") == hivelore.__version__


def test_the_version_module_imports_nothing() -> None:
    """The hook path reads __version__ (the hook server's address carries it), so the package's own module
    must stay free of imports, and setuptools reads it without running it."""
    tree = ast.parse(Path(hivelore.__file__).read_text())

    assert [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)] == []


def test_a_built_wheel_carries_the_version_the_license_and_py_typed(tmp_path: Path) -> None:
    """Built from a copy of the sources a source distribution holds, so the build leaves nothing in the checkout."""
    source = tmp_path / "source"
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copytree(ROOT / "scripts", source / "scripts")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr

    [wheel] = tmp_path.glob("hivelore-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"hivelore-{hivelore.__version__}.dist-info/METADATA").decode()

    assert wheel.name.startswith(f"hivelore-{hivelore.__version__}-")
    assert f"\nVersion: {hivelore.__version__}\n" in metadata
    assert "hivelore/py.typed" in names
    assert "License-File: LICENSE" in metadata
    assert [name for name in names if name.endswith("/LICENSE") and ".dist-info/" in name] != []
    assert {"hivelore/agents/skills/hivelore-memory/SKILL.md", "hivelore/hooks/client.py"} <= names
    # the dashboard runs from the wheel: its templates and static files are package data
    assert {"hivelore/dashboard/templates/memories.html", "hivelore/dashboard/static/dashboard.js"} <= names
    # the code map's graph library is a built file in the wheel, with its licence: nothing is fetched
    assert {
        "hivelore/dashboard/static/vendor/cytoscape.min.js",
        "hivelore/dashboard/static/vendor/cytoscape.LICENSE",
    } <= names
