"""``pyscheduler --config FILE``: a bad configuration stops start-up with exit
code 2 and a message naming the field path and the problem, before any
connection to a cluster is attempted."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.app import cli
from scheduler.framework.interfaces import ExtensionPoint
from scheduler.kube.client import KubeClient
from tests.unit.config.builders import make_config, make_profile

INVALID_YAML = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: p
   plugins: {}
"""


@pytest.fixture(autouse=True)
def restore_root_logger() -> Iterator[None]:
    """``main`` configures process logging on the root logger; undo it."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture(autouse=True)
def no_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    async def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the CLI connected to a cluster despite a bad configuration")

    monkeypatch.setattr(KubeClient, "connect", refuse)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param(
            make_config().profiles(make_profile("p").set("bogus", 1)).yaml(),
            ["profiles[0].bogus: unknown field"],
            id="unknown field in a profile",
        ),
        pytest.param(
            make_config().set("leaderElection.leaseDurationSeconds", 15).yaml(),
            ["leaderElection.leaseDurationSeconds: unknown field"],
            id="unknown nested field",
        ),
        pytest.param(
            make_config()
            .profiles(make_profile("p").enable(ExtensionPoint.SCORE, "TaintToleration:-1"))
            .yaml(),
            ["profiles[0].plugins.score.enabled[0].weight: must be >= 0"],
            id="negative weight",
        ),
        pytest.param(
            make_config()
            .profiles(
                make_profile("p").set(
                    "plugins",
                    {"score": {"enabled": [{"name": "TaintToleration", "weight": "heavy"}]}},
                )
            )
            .yaml(),
            ["profiles[0].plugins.score.enabled[0].weight: must be an integer, got str 'heavy'"],
            id="weight not an integer",
        ),
        pytest.param(
            make_config()
            .profiles(make_profile("p").enable(ExtensionPoint.FILTER, "NoSuchPlugin"))
            .yaml(),
            ["profiles[0].plugins.filter.enabled[0]: unknown plugin 'NoSuchPlugin'"],
            id="unknown plugin",
        ),
        pytest.param(
            INVALID_YAML,
            ["bad.yaml:5:11: invalid YAML: mapping values are not allowed here"],
            id="invalid YAML names line and column",
        ),
        pytest.param(
            make_config().set("parallelism", 0).profiles(make_profile("p").set("bogus", 1)).yaml(),
            [
                "parallelism: should be an integer value greater than zero",
                "profiles[0].bogus: unknown field",
            ],
            id="every problem reported at once",
        ),
    ],
)
def test_bad_config_exits_2_naming_field_and_problem(
    document: str, expected: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(document)

    code = cli.main(["--config", str(config), "--kubeconfig", str(tmp_path / "absent")])

    out, err = capsys.readouterr()
    assert code == cli.EXIT_CONFIG == 2
    assert out == ""
    assert err.startswith(f"pyscheduler: invalid configuration {config}:\n  ")
    for problem in expected:
        assert problem in err


def test_unreadable_config_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.yaml"

    code = cli.main(["--config", str(missing)])

    assert code == cli.EXIT_CONFIG
    assert "cannot read the configuration: No such file or directory" in capsys.readouterr().err
