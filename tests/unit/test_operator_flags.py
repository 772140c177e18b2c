"""A kube-scheduler operator's own flags and files: every upstream flag is
accepted (working, or a logged no-op with its reason), deprecated flags act as
upstream's do, ``--write-config-to`` writes the configuration in force without
connecting, and the exit codes tell a bad configuration from a missing
cluster."""

from __future__ import annotations

import logging
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.app import cli
from scheduler.app.flags import NO_OP_FLAGS, apply_flags, parse_args
from scheduler.config import load_config
from scheduler.config.advice import warnings
from scheduler.framework.durations import format_duration
from scheduler.kube.client import KubeClient
from scheduler.ops.tls import serving_context
from tests.unit.config.builders import make_config, make_profile

DATA = Path(__file__).parent / "config" / "data"
UPSTREAM_DUMP = DATA / "kube-scheduler-v1.36.3-write-config-to.yaml"


@pytest.fixture(autouse=True)
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture
def no_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    async def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("connected to a cluster")

    monkeypatch.setattr(KubeClient, "connect", refuse)


# A value each no-op flag accepts (upstream validates some of them).
_VALID_VALUES = {"show-hidden-metrics-for-version": "1.35"}


def _flag_argv(flag: str, metavar: str | None) -> list[str]:
    return [f"--{flag}"] if metavar is None else [f"--{flag}={_VALID_VALUES.get(flag, 'x')}"]


@pytest.mark.parametrize(
    ("flag", "metavar", "reason"),
    [pytest.param(flag, m, r, id=flag) for flag, (m, r) in NO_OP_FLAGS.items()],
)
def test_a_flag_without_effect_is_accepted_and_noted_with_its_reason(
    flag: str, metavar: str | None, reason: str
) -> None:
    args = parse_args(_flag_argv(flag, metavar))

    assert args.notes == [f"--{flag} has no effect here: {reason}"]


@pytest.mark.parametrize(
    ("argv", "field", "expected"),
    [
        pytest.param(["--kube-api-qps=12.5"], "client_connection.qps", 12.5, id="kube-api-qps"),
        pytest.param(["--kube-api-burst=7"], "client_connection.burst", 7, id="kube-api-burst"),
        pytest.param(
            ["--kube-api-content-type=application/json"],
            "client_connection.content_type",
            "application/json",
            id="kube-api-content-type",
        ),
        pytest.param(
            ["--profiling=false"], "enable_profiling", False, id="profiling=false (CIS 1.4.1)"
        ),
        pytest.param(
            ["--contention-profiling=false"], "enable_contention_profiling", False, id="contention"
        ),
        pytest.param(
            ["--lock-object-name=mine"],
            "leader_election.resource_name",
            "mine",
            id="removed --lock-object-name read as resource name",
        ),
        pytest.param(
            ["--lock-object-namespace=ops"],
            "leader_election.resource_namespace",
            "ops",
            id="removed --lock-object-namespace read as resource namespace",
        ),
    ],
)
def test_deprecated_flags_set_the_configuration_without_config(
    argv: list[str], field: str, expected: Any
) -> None:
    config = apply_flags(load_config(None), parse_args(argv))

    value: Any = config
    for part in field.split("."):
        value = getattr(value, part)
    assert value == expected


def test_deprecated_configuration_flags_are_ignored_with_config_and_said_so(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(make_config().yaml())
    args = parse_args([f"--config={path}", "--kube-api-qps=5", "--profiling=false"])

    config = apply_flags(load_config(str(path)), args)

    assert config.client_connection.qps == 50.0
    assert config.enable_profiling is True
    assert args.notes == ["--profiling, --kube-api-qps ignored: --config is given (as upstream)"]


@pytest.mark.parametrize(
    ("argv", "attribute", "expected"),
    [
        pytest.param(
            ["--master=https://10.0.0.1:6443"], "master", "https://10.0.0.1:6443", id="master"
        ),
        pytest.param(
            ["--tls-min-version=VersionTLS13"],
            "tls_min_version",
            ssl.TLSVersion.TLSv1_3,
            id="tls 1.3",
        ),
        pytest.param([], "tls_min_version", ssl.TLSVersion.TLSv1_2, id="tls 1.2 by default"),
        pytest.param(
            ["--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256"],
            "tls_cipher_suites",
            ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"),
            id="cipher suites by Go name",
        ),
        pytest.param(
            ["--emulated-version=kube=1.36"], "emulated_version", "1.36", id="emulated 1.36"
        ),
        pytest.param(
            ["--pod-max-in-unschedulable-pods-duration=1m"],
            "pod_max_in_unschedulable_pods_duration",
            60.0,
            id="max in unschedulable",
        ),
        pytest.param(
            [
                "--feature-gates=NodeDeclaredFeatures=false",
                "--feature-gates=kube:SidecarContainers=true",
            ],
            "feature_gates.overrides",
            {"NodeDeclaredFeatures": False, "SidecarContainers": True},
            id="feature gates repeated, merged",
        ),
        pytest.param(["-v=4"], "v", 4, id="-v=4"),
        pytest.param(["-v", "2"], "v", 2, id="-v 2"),
        pytest.param(
            ["--show-hidden-metrics-for-version=1.35"],
            "noop_show_hidden_metrics_for_version",
            "1.35",
            id="hidden metrics for the previous minor",
        ),
        pytest.param(
            ["--show-hidden-metrics-for-version="],
            "noop_show_hidden_metrics_for_version",
            "",
            id="hidden metrics for an empty version, as omitted",
        ),
    ],
)
def test_upstream_flags_work(argv: list[str], attribute: str, expected: Any) -> None:
    value: Any = parse_args(argv)
    for part in attribute.split("."):
        value = getattr(value, part)
    assert value == expected


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--tls-min-version=TLS1.2"], "unexpected TLS version", id="tls version name"),
        pytest.param(
            ["--tls-cipher-suites=TLS_NO_SUCH_SUITE"],
            "Cipher suite TLS_NO_SUCH_SUITE not supported or doesn't exist",
            id="unknown cipher suite",
        ),
        pytest.param(
            ["--emulated-version=1.35"], "implements Kubernetes 1.36 only", id="emulating 1.35"
        ),
        pytest.param(["--log-json"], "unrecognized arguments", id="no abbreviations, as Go"),
        *(
            pytest.param(
                [f"--show-hidden-metrics-for-version={value}"],
                "--show-hidden-metrics-for-version must be omitted or have the value '1.35'. "
                "Only the previous minor version is allowed",
                id=f"hidden metrics for {value!r}: only the previous minor",
            )
            for value in ("1.36", "1.34", "v1.35", "1.35.0", "x")
        ),
    ],
)
def test_upstream_flags_refused_with_upstreams_reason(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)

    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_serving_context_applies_the_tls_flags() -> None:
    context = serving_context(
        None,
        None,
        1.7e9,
        min_version=ssl.TLSVersion.TLSv1_3,
        cipher_suites=("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",),
    )

    assert context.minimum_version is ssl.TLSVersion.TLSv1_3
    tls12 = [c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"]
    assert tls12 == ["ECDHE-RSA-AES256-GCM-SHA384"]


def test_write_config_to_writes_upstreams_dump_back_unchanged_without_connecting(
    tmp_path: Path, no_connection: None
) -> None:
    out = tmp_path / "effective.yaml"

    code = cli.main([f"--config={UPSTREAM_DUMP}", f"--write-config-to={out}"])

    assert code == 0
    assert yaml.safe_load(out.read_text()) == yaml.safe_load(UPSTREAM_DUMP.read_text())


def test_write_config_to_includes_flags_and_defaults(tmp_path: Path, no_connection: None) -> None:
    out = tmp_path / "effective.yaml"

    code = cli.main(["--leader-elect-resource-name=ours", f"--write-config-to={out}"])

    written = yaml.safe_load(out.read_text())
    assert code == 0
    assert written["leaderElection"]["resourceName"] == "ours"
    assert written["profiles"][0]["schedulerName"] == "pyscheduler"
    fit = next(c for c in written["profiles"][0]["pluginConfig"] if c["name"] == "NodeResourcesFit")
    assert fit["args"]["scoringStrategy"]["type"] == "LeastAllocated"
    assert "TaintToleration" in [
        e["name"] for e in written["profiles"][0]["plugins"]["multiPoint"]["enabled"]
    ]


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param(make_config(), [], id="ours: nothing to say"),
        pytest.param(
            make_config().profiles(make_profile("default-scheduler")),
            ["profiles[0].schedulerName is 'default-scheduler'"],
            id="a profile named default-scheduler",
        ),
        pytest.param(
            make_config().set("leaderElection.resourceName", "kube-scheduler"),
            ["leaderElection uses the Lease kube-system/kube-scheduler"],
            id="kube-scheduler's own Lease",
        ),
        pytest.param(
            make_config()
            .set("leaderElection.resourceName", "kube-scheduler")
            .set("leaderElection.leaderElect", False),
            [],
            id="that Lease name without leader election",
        ),
    ],
)
def test_dangerous_choices_are_warned(document: Any, expected: list[str], tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(document.yaml())

    found = warnings(load_config(str(path)))

    assert [w[: len(e)] for w, e in zip(found, expected, strict=True)] == expected


def test_a_missing_kubeconfig_exits_4_naming_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["--kubeconfig=/nonexistent/kubeconfig"])

    assert code == cli.EXIT_NO_CLUSTER == 4
    assert "kubeconfig /nonexistent/kubeconfig: no such file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        pytest.param(15, "15s", id="seconds"),
        pytest.param(60, "1m0s", id="a minute"),
        pytest.param(600, "10m0s", id="ten minutes"),
        pytest.param(3661, "1h1m1s", id="hours"),
        pytest.param(1.5, "1.5s", id="fraction"),
        pytest.param(0.5, "500ms", id="milliseconds"),
        pytest.param(0.0000015, "1.5\u00b5s", id="microseconds"),
        pytest.param(0, "0s", id="zero"),
    ],
)
def test_durations_are_written_as_go_writes_them(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
