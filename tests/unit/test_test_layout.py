"""The test tree's own rules: shared objects live in ``tests/support`` (never
imported from a conftest), and every marker declared is used."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

TESTS = Path(__file__).parents[1]
ROOT = TESTS.parent


def _imports(path: Path) -> list[str]:
    modules = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules.append(node.module)
        elif isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
    return modules


def test_no_test_imports_from_a_conftest() -> None:
    offenders = {
        f"{path.relative_to(ROOT)}: {module}"
        for path in TESTS.rglob("*.py")
        for module in _imports(path)
        if module.split(".")[-1] == "conftest"
    }
    assert offenders == set()


def test_every_declared_marker_is_used() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = {
        line.split(":")[0].strip() for line in config["tool"]["pytest"]["ini_options"]["markers"]
    }
    sources = [path.read_text() for path in TESTS.rglob("*.py") if path != Path(__file__)]
    unused = {
        marker
        for marker in declared
        if not any(f"mark.{marker}" in text or f'"{marker}"' in text for text in sources)
    }
    assert unused == set()
