"""Reading KubeSchedulerConfiguration v1: defaults, accepted documents, and
rejected ones with the field path and problem in the message."""

from __future__ import annotations

from operator import attrgetter
from pathlib import Path
from typing import Any

import pytest

from scheduler.config import (
    DEFAULT_SCHEDULER_NAME,
    ConfigError,
    SchedulerConfiguration,
    load_config,
    parse_config,
    parse_duration,
)
from scheduler.framework.interfaces import ExtensionPoint
from tests.unit.config.builders import ConfigBuilder, make_config, make_profile


def _parse(builder: ConfigBuilder) -> SchedulerConfiguration:
    return parse_config(builder.yaml(), source="test.yaml")


@pytest.mark.parametrize(
    ("attribute", "expected"),
    [
        pytest.param("api_version", "kubescheduler.config.k8s.io/v1", id="apiVersion"),
        pytest.param("kind", "KubeSchedulerConfiguration", id="kind"),
        pytest.param("parallelism", 16, id="parallelism 16 (accepted; filtering runs on one core)"),
        pytest.param("percentage_of_nodes_to_score", 0, id="percentageOfNodesToScore adaptive"),
        pytest.param("pod_initial_backoff_seconds", 1, id="initial backoff 1s"),
        pytest.param("pod_max_backoff_seconds", 10, id="max backoff 10s"),
        pytest.param("client_connection.kubeconfig", "", id="in-cluster kubeconfig"),
        pytest.param("client_connection.qps", 50.0, id="qps 50"),
        pytest.param("client_connection.burst", 100, id="burst 100"),
        pytest.param(
            "client_connection.content_type",
            "application/vnd.kubernetes.protobuf",
            id="protobuf content type (bindings and events)",
        ),
        pytest.param("client_connection.accept_content_types", "", id="accept content types"),
        pytest.param("leader_election.leader_elect", True, id="leader election on"),
        pytest.param("leader_election.lease_duration", 15.0, id="lease 15s"),
        pytest.param("leader_election.renew_deadline", 10.0, id="renew 10s"),
        pytest.param("leader_election.retry_period", 2.0, id="retry 2s"),
        pytest.param("leader_election.resource_lock", "leases", id="lock leases"),
        pytest.param("leader_election.resource_name", "pyscheduler", id="lock name ours"),
        pytest.param("leader_election.resource_namespace", "kube-system", id="lock namespace"),
        pytest.param("extenders", (), id="no extenders"),
        pytest.param("delay_cache_until_active", False, id="cache starts before leading"),
        pytest.param("enable_profiling", True, id="profiling on (no effect here)"),
        pytest.param(
            "enable_contention_profiling", True, id="contention profiling on (no effect here)"
        ),
    ],
)
def test_defaults_are_upstreams_except_our_names(attribute: str, expected: Any) -> None:
    from_nothing = load_config(None)
    from_minimal_file = _parse(make_config())

    assert attrgetter(attribute)(from_nothing) == expected
    assert from_minimal_file == from_nothing


def test_default_profile_is_ours() -> None:
    config = load_config(None)

    assert [profile.scheduler_name for profile in config.profiles] == [DEFAULT_SCHEDULER_NAME]
    assert DEFAULT_SCHEDULER_NAME == "pyscheduler"
    assert config.profiles[0].percentage_of_nodes_to_score is None
    assert config.profiles[0].plugin_config == ()


@pytest.mark.parametrize(
    ("builder", "attribute", "expected"),
    [
        pytest.param(
            make_config()
            .set("leaderElection.leaseDuration", "1m")
            .set("leaderElection.renewDeadline", "45s")
            .set("leaderElection.retryPeriod", "1500ms"),
            "leader_election",
            (60.0, 45.0, 1.5),
            id="durations parse to seconds",
        ),
        pytest.param(
            make_config().set("leaderElection.leaseDuration", "0s"),
            "leader_election.lease_duration",
            15.0,
            id="zero lease duration means the default",
        ),
        pytest.param(
            make_config().set("leaderElection.resourceName", ""),
            "leader_election.resource_name",
            "pyscheduler",
            id="empty lock name means the default",
        ),
        pytest.param(
            make_config().set("clientConnection.qps", 0),
            "client_connection.qps",
            50.0,
            id="zero qps means the default",
        ),
        pytest.param(
            make_config().set("clientConnection.burst", 0),
            "client_connection.burst",
            100,
            id="zero burst means the default",
        ),
        pytest.param(
            make_config().set("clientConnection.contentType", ""),
            "client_connection.content_type",
            "application/vnd.kubernetes.protobuf",
            id="empty content type means the default, protobuf as upstream",
        ),
        pytest.param(
            make_config().set("clientConnection.qps", 12.5),
            "client_connection.qps",
            12.5,
            id="fractional qps",
        ),
        pytest.param(
            make_config().set("podMaxBackoffSeconds", None),
            "pod_max_backoff_seconds",
            10,
            id="null means unset",
        ),
        pytest.param(
            make_config()
            .set("leaderElection.leaderElect", False)
            .set("leaderElection.leaseDuration", "1s"),
            "leader_election.leader_elect",
            False,
            id="lease timings are not checked without leader election",
        ),
        pytest.param(
            make_config().set("podInitialBackoffSeconds", 3).set("podMaxBackoffSeconds", 3),
            "pod_max_backoff_seconds",
            3,
            id="max backoff may equal initial backoff",
        ),
        pytest.param(
            make_config().set("percentageOfNodesToScore", 100),
            "percentage_of_nodes_to_score",
            100,
            id="score every node",
        ),
        pytest.param(
            make_config().set("profiles", []),
            "profiles",
            (DEFAULT_SCHEDULER_NAME,),
            id="empty profile list gets the default profile",
        ),
        pytest.param(
            make_config().profiles(make_profile(None)),
            "profiles",
            (DEFAULT_SCHEDULER_NAME,),
            id="a single unnamed profile gets the default name",
        ),
        pytest.param(
            make_config().profiles(make_profile("default-scheduler"), make_profile("batch")),
            "profiles",
            ("default-scheduler", "batch"),
            id="named profiles keep their names and order",
        ),
        pytest.param(
            make_config().profiles(make_profile().set("percentageOfNodesToScore", 40)),
            "profiles[0].percentage_of_nodes_to_score",
            40,
            id="profile percentage overrides",
        ),
        pytest.param(
            make_config().set("extenders", []),
            "extenders",
            (),
            id="empty extender list",
        ),
        pytest.param(
            make_config().set("delayCacheUntilActive", False),
            "delay_cache_until_active",
            False,
            id="delay cache until active off",
        ),
        pytest.param(
            make_config()
            .set("enableProfiling", False)
            .set("enableContentionProfiling", False)
            .set("clientConnection.contentType", "application/json")
            .set("clientConnection.acceptContentTypes", "application/json"),
            "enable_profiling",
            False,
            id="the values we run with are accepted",
        ),
    ],
)
def test_accepted_document(builder: ConfigBuilder, attribute: str, expected: Any) -> None:
    config = _parse(builder)

    if attribute == "leader_election":
        election = config.leader_election
        actual: Any = (election.lease_duration, election.renew_deadline, election.retry_period)
    elif attribute == "profiles":
        actual = tuple(profile.scheduler_name for profile in config.profiles)
    elif attribute.startswith("profiles[0]."):
        actual = attrgetter(attribute.removeprefix("profiles[0]."))(config.profiles[0])
    else:
        actual = attrgetter(attribute)(config)
    assert actual == expected


def test_plugin_sets_are_read_per_extension_point() -> None:
    config = _parse(
        make_config().profiles(
            make_profile()
            .enable(ExtensionPoint.SCORE, "Image:4", "Fit")
            .disable(ExtensionPoint.SCORE, "*")
            .enable("multiPoint", "Extra")
            .plugin_config("Fit", {"ignoredResources": ["gpu"]})
        )
    )

    plugins = config.profiles[0].plugins
    assert [(e.name, e.weight) for e in plugins.at(ExtensionPoint.SCORE).enabled] == [
        ("Image", 4),
        ("Fit", None),
    ]
    assert [e.name for e in plugins.score.disabled] == ["*"]
    assert [e.name for e in plugins.multi_point.enabled] == ["Extra"]
    assert config.profiles[0].plugin_config[0].args == {"ignoredResources": ["gpu"]}


def test_json_is_accepted() -> None:
    text = (
        '{"apiVersion": "kubescheduler.config.k8s.io/v1",'
        ' "kind": "KubeSchedulerConfiguration", "podMaxBackoffSeconds": 4}'
    )

    assert parse_config(text).pod_max_backoff_seconds == 4


@pytest.mark.parametrize(
    ("builder", "expected"),
    [
        pytest.param(
            make_config().without("apiVersion"), "apiVersion: required field", id="no apiVersion"
        ),
        pytest.param(make_config().without("kind"), "kind: required field", id="no kind"),
        pytest.param(
            make_config().set("apiVersion", "kubescheduler.config.k8s.io/v1beta3"),
            "apiVersion: unsupported 'kubescheduler.config.k8s.io/v1beta3': expected "
            "'kubescheduler.config.k8s.io/v1' (only v1 is served",
            id="removed v1beta3",
        ),
        pytest.param(
            make_config().set("kind", "KubeProxyConfiguration"),
            "kind: must be 'KubeSchedulerConfiguration', got 'KubeProxyConfiguration'",
            id="foreign kind",
        ),
        pytest.param(
            make_config().set("fooBar", 1), "fooBar: unknown field", id="unknown top-level field"
        ),
        pytest.param(
            make_config().set("podInitialBackoffSeconds", 10**20),
            "podInitialBackoffSeconds: must be at most 9223372036",
            id="initial backoff beyond time.Duration",
        ),
        pytest.param(
            make_config().set("podMaxBackoffSeconds", 10**20),
            "podMaxBackoffSeconds: must be at most 9223372036",
            id="max backoff beyond time.Duration",
        ),
        pytest.param(
            make_config().set("leaderElection.leaseDuration", "1e20s"),
            "leaderElection.leaseDuration: invalid duration",
            id="a duration with an exponent is not Go syntax",
        ),
        pytest.param(
            make_config().set("leaderElection.leaseDuration", "100000000000000000000h"),
            "leaderElection.leaseDuration: invalid duration '100000000000000000000h': "
            "out of the range of Go's time.Duration",
            id="lease duration beyond time.Duration",
        ),
        pytest.param(
            make_config().set("clientConnection.qps", float("inf")),
            "clientConnection.qps: must be a finite float32",
            id="infinite qps",
        ),
        pytest.param(
            make_config().set("clientConnection.qps", float("nan")),
            "clientConnection.qps: must be a finite float32",
            id="nan qps",
        ),
        pytest.param(
            make_config().set("clientConnection.qps", 1e39),
            "clientConnection.qps: must be a finite float32",
            id="qps beyond float32",
        ),
        pytest.param(
            make_config().set("clientConnection.burst", 2**31),
            "clientConnection.burst: must be at most 2147483647",
            id="burst beyond int32",
        ),
        pytest.param(
            make_config().set("pod_initial_backoff_seconds", 2),
            "pod_initial_backoff_seconds: unknown field",
            id="snake_case keys are unknown",
        ),
        pytest.param(
            make_config().set("leaderElection.leaseDurationSeconds", 15),
            "leaderElection.leaseDurationSeconds: unknown field",
            id="unknown nested field",
        ),
        pytest.param(
            make_config().profiles(make_profile().set("plugins", {"filters": {}})),
            "profiles[0].plugins.filters: unknown field",
            id="unknown extension point",
        ),
        pytest.param(
            make_config().profiles(
                make_profile().set("plugins", {"score": {"enabled": [{"name": "A", "wieght": 2}]}})
            ),
            "profiles[0].plugins.score.enabled[0].wieght: unknown field",
            id="unknown field in a plugin entry",
        ),
        pytest.param(
            make_config().set("parallelism", 0),
            "parallelism: should be an integer value greater than zero",
            id="parallelism zero, refused as upstream",
        ),
        pytest.param(
            make_config().set("parallelism", "4"),
            "parallelism: must be an integer, got str '4'",
            id="parallelism as a string",
        ),
        pytest.param(
            make_config().set("enableProfiling", "yes"),
            "enableProfiling: must be a boolean",
            id="profiling not a boolean",
        ),
        pytest.param(
            make_config().profiles(
                make_profile("p").set("plugins", {"placementScore": {"enabled": [{"name": "X"}]}})
            ),
            "profiles[0].plugins.placementScore: not supported: pyscheduler has no pod-group"
            " placement phase",
            id="a pod-group placement plugin",
        ),
        pytest.param(
            make_config().set("delayCacheUntilActive", True),
            "delayCacheUntilActive: not supported: the informers always start",
            id="delayCacheUntilActive refused",
        ),
        pytest.param(
            make_config().set("clientConnection.contentType", "application/yaml"),
            "clientConnection.contentType: 'application/yaml' is not supported",
            id="a content type other than protobuf or JSON refused",
        ),
        pytest.param(
            make_config().set(
                "clientConnection.acceptContentTypes", "application/vnd.kubernetes.protobuf"
            ),
            "clientConnection.acceptContentTypes: 'application/vnd.kubernetes.protobuf' is not",
            id="protobuf accept refused",
        ),
        pytest.param(
            make_config().set("percentageOfNodesToScore", 101),
            "percentageOfNodesToScore: must be in the range 0..100",
            id="percentage above 100",
        ),
        pytest.param(
            make_config().set("percentageOfNodesToScore", -1),
            "percentageOfNodesToScore: must be in the range 0..100",
            id="negative percentage",
        ),
        pytest.param(
            make_config().profiles(make_profile().set("percentageOfNodesToScore", 150)),
            "profiles[0].percentageOfNodesToScore: must be in the range 0..100",
            id="profile percentage above 100",
        ),
        pytest.param(
            make_config().set("podInitialBackoffSeconds", 0),
            "podInitialBackoffSeconds: must be > 0",
            id="zero initial backoff",
        ),
        pytest.param(
            make_config().set("podInitialBackoffSeconds", 5).set("podMaxBackoffSeconds", 4),
            "podMaxBackoffSeconds: must be >= podInitialBackoffSeconds (5)",
            id="max backoff below initial",
        ),
        pytest.param(
            make_config().set("clientConnection.qps", -1),
            "clientConnection.qps: must be > 0",
            id="negative qps",
        ),
        pytest.param(
            make_config().set("clientConnection.burst", -5),
            "clientConnection.burst: must be >= 1",
            id="negative burst",
        ),
        pytest.param(
            make_config().set("clientConnection.qps", "fast"),
            "clientConnection.qps: must be a number, got str 'fast'",
            id="qps not a number",
        ),
        pytest.param(
            make_config().set("leaderElection.leaseDuration", "10s"),
            "leaderElection.leaseDuration: must be greater than renewDeadline (10s), got 10s",
            id="lease not longer than renew deadline",
        ),
        pytest.param(
            make_config().set("leaderElection.retryPeriod", "9s"),
            "leaderElection.renewDeadline: must be greater than retryPeriod * 1.2 (10.8s)",
            id="renew deadline within retry jitter",
        ),
        pytest.param(
            make_config().set("leaderElection.retryPeriod", "-1s"),
            "leaderElection.retryPeriod: must be > 0",
            id="negative retry period",
        ),
        pytest.param(
            make_config().set("leaderElection.leaseDuration", "15"),
            "leaderElection.leaseDuration: invalid duration '15'",
            id="duration without unit",
        ),
        pytest.param(
            make_config().set("leaderElection.leaseDuration", 15),
            "leaderElection.leaseDuration: must be a duration string such as '15s', got 15",
            id="duration as a number",
        ),
        pytest.param(
            make_config().set("leaderElection.resourceLock", "endpoints"),
            "leaderElection.resourceLock: 'endpoints' is not supported; only 'leases'",
            id="endpoints lock",
        ),
        pytest.param(
            make_config().set("leaderElection.leaderElect", "true"),
            "leaderElection.leaderElect: must be a boolean, got str 'true'",
            id="quoted boolean",
        ),
        pytest.param(
            make_config().set("extenders", [{"urlPrefix": "http://extender:8888"}]),
            "extenders: not supported",
            id="extenders",
        ),
        pytest.param(
            make_config().profiles(make_profile("a"), make_profile("b"), make_profile("a")),
            "profiles[2].schedulerName: duplicate 'a': also used by profiles[0]",
            id="duplicate scheduler name",
        ),
        pytest.param(
            make_config().profiles(make_profile("")),
            "profiles[0].schedulerName: must not be empty",
            id="empty scheduler name",
        ),
        pytest.param(
            make_config().profiles(make_profile("a"), make_profile(None)),
            "profiles[1].schedulerName: required when there is more than one profile",
            id="unnamed profile among several",
        ),
        pytest.param(
            make_config().profiles(make_profile().enable(ExtensionPoint.SCORE, "A:1", "B:-1")),
            "profiles[0].plugins.score.enabled[1].weight: must be >= 0",
            id="negative score weight",
        ),
        pytest.param(
            make_config().profiles(make_profile().enable(ExtensionPoint.FILTER, "")),
            "profiles[0].plugins.filter.enabled[0].name: must not be empty",
            id="empty plugin name",
        ),
        pytest.param(
            make_config().profiles(
                make_profile().set("plugins", {"filter": {"enabled": [{"weight": 1}]}})
            ),
            "profiles[0].plugins.filter.enabled[0].name: required field",
            id="plugin entry without a name",
        ),
        pytest.param(
            make_config().set("profiles", {"schedulerName": "a"}),
            "profiles: must be a list, got a mapping",
            id="profiles not a list",
        ),
        pytest.param(
            make_config().profiles(
                make_profile().set("pluginConfig", [{"name": "Fit", "args": [1]}])
            ),
            "profiles[0].pluginConfig[0].args: must be a mapping, got a list",
            id="plugin args not a mapping",
        ),
    ],
)
def test_rejected_document(builder: ConfigBuilder, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _parse(builder)

    assert expected in str(caught.value)
    assert str(caught.value).startswith("test.yaml: ")


def test_every_problem_is_reported_at_once() -> None:
    builder = (
        make_config()
        .set("parallelism", 0)
        .set("clientConnection.burst", -1)
        .set("unknownField", True)
    )

    with pytest.raises(ConfigError) as caught:
        _parse(builder)

    assert caught.value.problems == (
        "parallelism: should be an integer value greater than zero",
        "clientConnection.burst: must be >= 1",
        "unknownField: unknown field",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: [\n",
            "cfg.yaml:3:1: invalid YAML",
            id="unclosed flow sequence",
        ),
        pytest.param(
            "apiVersion: v1\n  kind: x\n",
            "cfg.yaml:2:7: invalid YAML: mapping values are not allowed here",
            id="bad indentation",
        ),
        pytest.param(
            "parallelism: 1\nparallelism: 2\n",
            "cfg.yaml:2:1: invalid YAML: while constructing a mapping: found duplicate key "
            "'parallelism'",
            id="duplicate key",
        ),
        pytest.param(
            "profiles:\n- schedulerName: a\n  schedulerName: b\n",
            "cfg.yaml:3:3: invalid YAML: while constructing a mapping: found duplicate key "
            "'schedulerName'",
            id="duplicate nested key",
        ),
        pytest.param("", "cfg.yaml: expected a mapping", id="empty document"),
        pytest.param("- a\n- b\n", "got a list", id="top-level list"),
        pytest.param(
            "parallelism: 1\n---\nparallelism: 2\n",
            "cfg.yaml:2:1: invalid YAML: expected a single document in the stream",
            id="two documents",
        ),
    ],
)
def test_yaml_errors_name_the_line(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source="cfg.yaml")

    assert expected in str(caught.value)


def test_load_config_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(make_config().set("podMaxBackoffSeconds", 8).yaml(), encoding="utf-8")

    assert load_config(path).pod_max_backoff_seconds == 8
    assert load_config(str(path)).pod_max_backoff_seconds == 8


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(None, "scheduler.yaml: cannot read the configuration", id="missing file"),
        pytest.param(
            b"\xff\xfe\x00", "scheduler.yaml: cannot read the configuration", id="not UTF-8"
        ),
        pytest.param(
            make_config().set("parallelism", 0).yaml().encode(),
            "scheduler.yaml: parallelism: should be an integer value greater than zero",
            id="invalid content",
        ),
    ],
)
def test_load_config_names_the_file(tmp_path: Path, content: bytes | None, expected: str) -> None:
    path = tmp_path / "scheduler.yaml"
    if content is not None:
        path.write_bytes(content)

    with pytest.raises(ConfigError) as caught:
        load_config(path)

    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("15s", 15.0, id="seconds"),
        pytest.param("1m30s", 90.0, id="minutes and seconds"),
        pytest.param("1.5h", 5400.0, id="fractional hours"),
        pytest.param("500ms", 0.5, id="milliseconds"),
        pytest.param("250us", 0.00025, id="microseconds"),
        pytest.param("1h2m3s4ms", 3723.004, id="every unit"),
        pytest.param("0", 0.0, id="bare zero"),
        pytest.param("-2s", -2.0, id="negative"),
        pytest.param("+.5s", 0.5, id="leading dot"),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("15", id="no unit"),
        pytest.param("s", id="no number"),
        pytest.param("1x", id="unknown unit"),
        pytest.param(" 1s", id="leading space"),
        pytest.param("1s ", id="trailing space"),
        pytest.param("--1s", id="two signs"),
        pytest.param("1d", id="days are not a Go unit"),
    ],
)
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)
