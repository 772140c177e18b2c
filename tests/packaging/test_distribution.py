"""The distribution as PyPI would carry it: ``python -m build`` makes an sdist
and, from that sdist, a wheel; ``twine check`` accepts both; the wheel
installed into a fresh virtual environment (no path to this checkout) runs
``pyscheduler --version``, and the example plugin package installs against it,
its dependency on ``kube-pyscheduler`` resolved by the installed wheel, and
passes its own tests there.

Dependencies come from pip's index and cache, pinned by constraints.txt, as
``make venv`` gets them.
"""

from __future__ import annotations

import email
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.unit.test_declared_dependencies import _declared_runtime_dependencies

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "plugin-package"
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "scheduler", "plugins")
_JUNK = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist")

pytestmark = pytest.mark.timeout(900)


def _run(*argv: str | Path, cwd: Path | None = None) -> str:
    """Runs a command without PYTHONPATH, so the fresh environment cannot see
    this checkout."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [str(arg) for arg in argv], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"{argv}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel built from it, from a copy of the build inputs."""
    work = tmp_path_factory.mktemp("dist")
    source = work / "source"
    source.mkdir()
    for name in BUILD_INPUTS:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=_JUNK)
        else:
            shutil.copy2(path, source / name)
    out = work / "dist"
    _run(sys.executable, "-m", "build", "--outdir", out, source)
    return out


@pytest.fixture(scope="module")
def fresh_venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with only the wheel (and pytest) installed."""
    venv = tmp_path_factory.mktemp("venv") / "venv"
    _run(sys.executable, "-m", "venv", venv)
    (wheel,) = dist.glob("*.whl")
    _run(
        venv / "bin" / "python", "-m", "pip", "install", "--quiet",
        "--disable-pip-version-check", "-c", ROOT / "constraints.txt",
        wheel, "pytest", "pytest-asyncio",
    )  # fmt: skip
    return venv


def _metadata(dist: Path) -> email.message.Message:
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(archive.read(name))


def test_build_makes_one_sdist_and_one_wheel_that_twine_accepts(dist: Path) -> None:
    names = sorted(path.name for path in dist.iterdir())

    assert [n.split("-")[0] for n in names] == ["kube_pyscheduler", "kube_pyscheduler"]
    assert names[0].endswith("-py3-none-any.whl")
    assert names[1].endswith(".tar.gz")
    _run(sys.executable, "-m", "twine", "check", "--strict", *sorted(dist.iterdir()))


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        pytest.param("Name", "kube-pyscheduler", id="the PyPI name"),
        pytest.param("License-Expression", "Apache-2.0", id="the license expression"),
        pytest.param("License-File", "LICENSE", id="the license file"),
        pytest.param("Requires-Python", ">=3.11", id="the Python floor"),
    ],
)
def test_the_wheel_metadata_says(dist: Path, field: str, expected: str) -> None:
    assert _metadata(dist)[field] == expected


def test_the_wheel_declares_every_runtime_dependency_and_classifiers(dist: Path) -> None:
    metadata = _metadata(dist)
    required = {Requirement(text).name for text in metadata.get_all("Requires-Dist") or []}

    assert set(_declared_runtime_dependencies()) <= required
    assert "Typing :: Typed" in (metadata.get_all("Classifier") or [])


def test_the_wheel_carries_the_license_and_the_typing_marker(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()

    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "scheduler/py.typed" in names


def test_the_installed_wheel_reports_its_version(fresh_venv: Path) -> None:
    line = _run(fresh_venv / "bin" / "pyscheduler", "--version").strip()

    assert line == "pyscheduler 0.1.0"


def test_the_example_plugin_package_installs_against_the_wheel_and_passes_its_tests(
    fresh_venv: Path, tmp_path: Path
) -> None:
    package = tmp_path / "plugin-package"
    shutil.copytree(EXAMPLE, package, ignore=_JUNK)
    python = fresh_venv / "bin" / "python"

    _run(python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", package)

    requires = _run(python, "-m", "pip", "show", "pyscheduler-pool-plugins")
    assert "Requires: kube-pyscheduler" in requires
    out = _run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=package)
    assert " passed" in out
