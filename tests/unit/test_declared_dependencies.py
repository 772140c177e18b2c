"""Every third-party module that the product (``scheduler``, ``plugins``)
imports comes from a distribution that pyproject.toml declares as a runtime
dependency, so an installed wheel never meets an ImportError that the
development environment hides (``typing_extensions`` came in with pydantic
before it was declared)."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("scheduler", "plugins")


def _declared_runtime_dependencies() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [canonicalize_name(Requirement(text).name) for text in project["dependencies"]]


def _imported_top_level_modules() -> dict[str, str]:
    """Third-party top-level module -> one file of the product importing it."""
    found: dict[str, str] = {}
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in PRODUCT:
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_imported_third_party_module_is_a_declared_dependency() -> None:
    providers = packages_distributions()
    declared = set(_declared_runtime_dependencies())

    undeclared = {
        module: where
        for module, where in _imported_top_level_modules().items()
        if not declared & {canonicalize_name(d) for d in providers.get(module, [module])}
    }

    assert undeclared == {}
