"""kube-scheduler's flag names: parsing, Go spellings, and how the flags that
override the configuration file merge into the configuration in force."""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import pytest

from scheduler.app.flags import DEFAULT_ALWAYS_ALLOW_PATHS, apply_flags, log_level, parse_args
from scheduler.app.gateflags import FeatureGateError, parse_feature_gates
from scheduler.config import ConfigError, parse_config
from scheduler.cycle.concurrency import DEFAULT_MAX_CONCURRENT_BINDS
from scheduler.engine.assembly import build_registry, resolve
from tests.support.handles import bare_profile_handle
from tests.unit.config.builders import make_config


@pytest.mark.parametrize(
    ("argv", "attribute", "expected"),
    [
        pytest.param([], "secure_port", 10259, id="secure port default"),
        pytest.param([], "bind_address", "0.0.0.0", id="bind address default"),
        pytest.param(
            [], "authorization_always_allow_paths", DEFAULT_ALWAYS_ALLOW_PATHS, id="allow paths"
        ),
        pytest.param([], "logging_format", "text", id="text logs by default"),
        pytest.param([], "v", 0, id="verbosity 0"),
        pytest.param([], "leader_elect", None, id="leader-elect unset"),
        pytest.param(["--secure-port=0"], "secure_port", 0, id="port 0 picks a free one"),
        pytest.param(["--secure-port", "10300"], "secure_port", 10300, id="port as two args"),
        pytest.param(["-v=4"], "v", 4, id="go -v=4"),
        pytest.param(["-v", "5"], "v", 5, id="go -v 5"),
        pytest.param(["--v=2"], "v", 2, id="--v=2"),
        pytest.param(["--logging-format=json"], "logging_format", "json", id="json logs"),
        pytest.param(["--leader-elect"], "leader_elect", True, id="bare --leader-elect"),
        pytest.param(["--leader-elect=false"], "leader_elect", False, id="--leader-elect=false"),
        pytest.param(
            ["--authorization-always-allow-paths=/healthz, /metrics"],
            "authorization_always_allow_paths",
            ("/healthz", "/metrics"),
            id="allow paths list",
        ),
        pytest.param(
            ["--authorization-always-allow-paths="],
            "authorization_always_allow_paths",
            (),
            id="no always-allowed path",
        ),
        pytest.param(
            ["--tls-cert-file=c.pem", "--tls-private-key-file=k.pem"],
            "tls_cert_file",
            "c.pem",
            id="cert and key",
        ),
        pytest.param(
            ["--authentication-kubeconfig=a", "--authorization-kubeconfig=b"],
            "authorization_kubeconfig",
            "b",
            id="delegation kubeconfigs",
        ),
        pytest.param([], "seed", None, id="unseeded by default"),
        pytest.param(["--seed=7"], "seed", 7, id="--seed"),
        pytest.param(
            [],
            "max_concurrent_binds",
            DEFAULT_MAX_CONCURRENT_BINDS,
            id="the concurrency module's ceiling by default",
        ),
        pytest.param(["--max-concurrent-binds=0"], "max_concurrent_binds", 0, id="no bind cap"),
        pytest.param([], "adaptive_concurrent_binds", False, id="a pinned bind limit by default"),
        pytest.param(
            ["--adaptive-concurrent-binds=false"],
            "adaptive_concurrent_binds",
            False,
            id="bind limit pinned at the ceiling",
        ),
        pytest.param(
            ["--adaptive-concurrent-binds"], "adaptive_concurrent_binds", True, id="bare is true"
        ),
    ],
)
def test_flags_parse(argv: list[str], attribute: str, expected: Any) -> None:
    assert attrgetter(attribute)(parse_args(argv)) == expected


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--port=1"], "unrecognized arguments: --port=1", id="old --port is gone"),
        pytest.param(["--log-json"], "unrecognized arguments", id="old --log-json is gone"),
        pytest.param(["--secure-port=70000"], "must be in 0..65535", id="port out of range"),
        pytest.param(["--logging-format=xml"], "invalid choice: 'xml'", id="unknown log format"),
        pytest.param(["--leader-elect=maybe"], "invalid boolean 'maybe'", id="bad boolean"),
        pytest.param(["--max-concurrent-binds=-1"], "must be 0 or more", id="negative bind cap"),
        pytest.param(
            ["--adaptive-concurrent-binds=often"], "invalid boolean 'often'", id="bad bind mode"
        ),
        pytest.param(
            ["--authorization-always-allow-paths=healthz"],
            "must start with '/'",
            id="relative allow path",
        ),
        pytest.param(["--tls-cert-file=c.pem"], "go together", id="certificate without its key"),
        pytest.param(
            ["--feature-gates=NoSuchGate=true"],
            "unrecognized feature gate: NoSuchGate",
            id="unknown feature gate",
        ),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse_args(argv)

    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("verbosity", "level"), [(0, "INFO"), (2, "INFO"), (3, "INFO"), (4, "DEBUG"), (10, "DEBUG")]
)
def test_verbosity_maps_to_a_level(verbosity: int, level: str) -> None:
    assert log_level(verbosity) == level


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", {"NodeDeclaredFeatures": True}, id="defaults"),
        pytest.param(
            "NodeDeclaredFeatures=false", {"NodeDeclaredFeatures": False}, id="turned off"
        ),
        pytest.param(" NodeDeclaredFeatures = true ,", {"NodeDeclaredFeatures": True}, id="spaces"),
        pytest.param(
            "kube:NodeDeclaredFeatures=false",
            {"NodeDeclaredFeatures": False},
            id="component prefix",
        ),
        pytest.param(
            "DynamicResourceAllocation=true,SidecarContainers=true,DRAExtendedResource=true",
            {"NodeDeclaredFeatures": True},
            id="a platform's shared list: GA and beta gates at their defaults",
        ),
        pytest.param(
            "RuntimeClassInImageCriApi=true,APIServerIdentity=false",
            {"NodeDeclaredFeatures": True},
            id="gates of other components, any value",
        ),
    ],
)
def test_feature_gates(text: str, expected: dict[str, bool]) -> None:
    effective = parse_feature_gates(text).effective()
    assert {name: effective[name] for name in expected} == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("Bogus=true", "unrecognized feature gate: Bogus", id="unknown"),
        pytest.param("NodeDeclaredFeatures", "expected Name=true|false", id="no value"),
        pytest.param("NodeDeclaredFeatures=yes", "invalid value 'yes'", id="not a boolean"),
        pytest.param(
            "SidecarContainers=false",
            "cannot set feature gate SidecarContainers to false, feature is locked to true",
            id="a locked GA gate away from its lock",
        ),
        pytest.param(
            "StorageCapacityScoring=true",
            "feature gate StorageCapacityScoring=true: pyscheduler implements only the v1.36"
            " default of this scheduler gate",
            id="a scheduler gate whose other position is not implemented",
        ),
        pytest.param(
            "AllAlpha=true",
            r"GangScheduling=true.*\(set by AllAlpha/AllBeta\)",
            id="AllAlpha turns on scheduler gates we do not have",
        ),
    ],
)
def test_bad_feature_gates(text: str, message: str) -> None:
    with pytest.raises(FeatureGateError, match=message):
        parse_feature_gates(text)


@pytest.mark.parametrize(
    ("document", "argv", "attribute", "expected"),
    [
        pytest.param(
            make_config(), [], "leader_election.leader_elect", True, id="no flag: the file"
        ),
        pytest.param(
            make_config().set("leaderElection.leaderElect", True),
            ["--leader-elect=false"],
            "leader_election.leader_elect",
            False,
            id="--leader-elect wins over the file",
        ),
        pytest.param(
            make_config().set("leaderElection.leaseDuration", "30s"),
            ["--leader-elect-renew-deadline=20s"],
            "leader_election.renew_deadline",
            20.0,
            id="renew deadline flag",
        ),
        pytest.param(
            make_config().set("leaderElection.leaseDuration", "30s"),
            ["--leader-elect-renew-deadline=20s"],
            "leader_election.lease_duration",
            30.0,
            id="the file's other fields stay",
        ),
        pytest.param(
            make_config(),
            ["--leader-elect-resource-name=mine", "--leader-elect-resource-namespace=ns"],
            "leader_election.resource_name",
            "mine",
            id="lock name flag",
        ),
        pytest.param(
            make_config().set("clientConnection.kubeconfig", "/from/file"),
            ["--kubeconfig=/from/flag"],
            "client_connection.kubeconfig",
            "/from/flag",
            id="--kubeconfig wins over clientConnection.kubeconfig",
        ),
        pytest.param(
            make_config().set("clientConnection.qps", 7.5),
            ["--kubeconfig=k"],
            "client_connection.qps",
            7.5,
            id="merging keeps the rest of the file",
        ),
    ],
)
def test_flags_override_the_file(
    document: Any, argv: list[str], attribute: str, expected: Any
) -> None:
    config = apply_flags(parse_config(document.yaml()), parse_args(argv))

    assert attrgetter(attribute)(config) == expected


def test_a_flag_making_the_configuration_invalid_is_named() -> None:
    config = parse_config(make_config().set("leaderElection.leaseDuration", "15s").yaml())

    with pytest.raises(ConfigError) as error:
        apply_flags(config, parse_args(["--leader-elect-renew-deadline=20s"]))

    assert "leaderElection.leaseDuration: must be greater than renewDeadline (20s)" in str(
        error.value
    )
    assert error.value.source == "the command-line flags"


def test_configuration_round_trips_through_its_dump() -> None:
    config = parse_config(
        make_config()
        .set("leaderElection.leaseDuration", "1m")
        .set("clientConnection.qps", 12.5)
        .yaml()
    )

    dumped = config.model_dump(mode="json", by_alias=True, exclude_none=True)

    assert dumped["leaderElection"]["leaseDuration"] == "1m0s"
    assert dumped["parallelism"] == 16
    assert apply_flags(config, parse_args(["--kubeconfig=k"])).leader_election == (
        config.leader_election
    )


@pytest.mark.parametrize(
    ("gates", "included"),
    [
        pytest.param("", True, id="on by default (v1.36 beta)"),
        pytest.param("NodeDeclaredFeatures=false", False, id="turned off"),
    ],
)
def test_a_gate_is_honoured_not_just_accepted(gates: str, included: bool) -> None:
    (profile,) = resolve(
        parse_config(make_config().yaml()), build_registry(), parse_feature_gates(gates)
    )

    names = {ref.name for refs in profile.plugins.values() for ref in refs}
    assert ("NodeDeclaredFeatures" in names) == included


def test_plugins_read_the_gates_in_force_from_their_handle() -> None:
    gates = parse_feature_gates("NodeDeclaredFeatures=false")
    handle = bare_profile_handle(feature_gates=gates)

    assert handle.feature_gates.enabled("NodeDeclaredFeatures") is False
    with pytest.raises(KeyError, match="unknown feature gate"):
        handle.feature_gates.enabled("NoSuchGate")
