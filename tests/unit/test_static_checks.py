"""The codebase's own rules, checked on every run: ruff (lint and format),
mypy --strict, the import-linter layer contracts and hadolint on the
Dockerfile. Each check is a named case; its output is the failure message."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    found = BIN / name
    if found.exists():
        return str(found)
    path = shutil.which(name)
    assert path, f"{name} is not installed: run `make venv`"
    return path


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["ruff", "check", "."], id="ruff lint"),
        pytest.param(["ruff", "format", "--check", "."], id="ruff format"),
        pytest.param(["mypy"], id="mypy strict"),
        pytest.param(["lint-imports"], id="import layers"),
        pytest.param(["hadolint", "Dockerfile"], id="hadolint Dockerfile"),
    ],
)
def test_static_check_is_clean(argv: list[str]) -> None:
    result = subprocess.run(
        [_tool(argv[0]), *argv[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, f"{' '.join(argv)} failed:\n{result.stdout}\n{result.stderr}"
