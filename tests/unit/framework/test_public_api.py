"""The public plugin API is pinned and is all the example package uses.

A failure of the pin means the public surface of ``scheduler.framework`` or
``scheduler.testing`` changed. If the change is deliberate, regenerate the
pin (see api_surface.py) and let the review see the diff; otherwise undo it.
"""

from __future__ import annotations

import ast
import difflib
from pathlib import Path

import pytest

from tests.unit.framework.api_surface import PUBLIC_MODULES, surface

PIN = Path(__file__).with_name("public_api.txt")
ROOT = Path(__file__).parents[3]
EXAMPLE = ROOT / "examples" / "plugin-package"
PUBLIC = {module.__name__ for module in PUBLIC_MODULES}


def test_the_public_api_equals_its_pin() -> None:
    pinned = PIN.read_text().splitlines()
    current = surface()
    diff = "\n".join(difflib.unified_diff(pinned, current, "public_api.txt", "now", lineterm=""))
    assert current == pinned, f"the public API changed:\n{diff}"


@pytest.mark.parametrize("module", PUBLIC_MODULES, ids=lambda m: m.__name__)
def test_every_public_name_exists_once(module: object) -> None:
    names = list(module.__all__)  # type: ignore[attr-defined]
    assert [name for name in names if not hasattr(module, name)] == []
    assert len(set(names)) == len(names)


def _scheduler_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return [name for name in found if name.split(".")[0] == "scheduler"]


def test_the_example_plugin_package_imports_only_the_public_api() -> None:
    files = sorted(EXAMPLE.rglob("*.py"))
    assert files, EXAMPLE
    outside = {
        f"{path.relative_to(EXAMPLE)}: {name}"
        for path in files
        for name in _scheduler_imports(path)
        if name not in PUBLIC
    }
    assert outside == set()
