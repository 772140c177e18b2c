"""``pyscheduler --version``: the distribution's version, and the git revision
only when the package is imported from a checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from scheduler.app import buildinfo
from scheduler.app.cli import main


def _git(cwd: Path, *argv: str) -> str:
    done = subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_a_package_beside_a_git_directory_reports_the_checkout_commit(tmp_path: Path) -> None:
    (tmp_path / "scheduler").mkdir()
    _git(tmp_path, "init", "-q")
    _git(
        tmp_path,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
    )

    assert buildinfo.revision(tmp_path / "scheduler") == _git(
        tmp_path, "rev-parse", "--short=12", "HEAD"
    )


@pytest.mark.parametrize(
    "layout",
    [
        pytest.param("site-packages/scheduler", id="an installed wheel"),
        pytest.param(
            "checkout/.venv/lib/site-packages/scheduler", id="a wheel in a venv inside a checkout"
        ),
    ],
)
def test_a_package_outside_a_checkout_has_no_revision(tmp_path: Path, layout: str) -> None:
    package = tmp_path / layout
    package.mkdir(parents=True)
    (tmp_path / "checkout" / ".git").mkdir(parents=True, exist_ok=True)

    assert buildinfo.revision(package) is None


def test_version_flag_prints_the_version_line_and_exits_zero(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(buildinfo, "version", lambda: "9.8.7")

    assert main(["--version"]) == 0

    assert capsys.readouterr().out.startswith("pyscheduler 9.8.7")
