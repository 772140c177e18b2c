"""``built_tool`` gives the path a build script prints last, and fails (never
skips) the test when the script cannot build."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.gotools import built_tool


def _script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "build-tool.sh"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script


def test_the_path_printed_last_is_the_tool(tmp_path: Path) -> None:
    script = _script(tmp_path, "echo building >&2\necho /cache/tool/bin")
    assert built_tool(script, 30) == Path("/cache/tool/bin")


@pytest.mark.parametrize(
    "body", [pytest.param("exit 3", id="script fails"), pytest.param(None, id="no script")]
)
def test_a_tool_that_cannot_be_built_fails_the_test(tmp_path: Path, body: str | None) -> None:
    script = _script(tmp_path, body) if body else tmp_path / "missing.sh"
    with pytest.raises(pytest.fail.Exception, match=script.name):
        built_tool(script, 30)
