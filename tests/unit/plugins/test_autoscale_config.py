"""AutoscaleEnforcer config: parsing, validation messages naming the JSON path,
node overrides, derived per-node budgets, and runtime-update rules."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from plugins.autoscale_enforcer.args import AutoscaleEnforcerArgs
from plugins.autoscale_enforcer.config import (
    CONFIG_MAP_KEY,
    ConfigError,
    ScoreCurve,
    check_update,
    config_from_config_map,
    derive_node,
    parse_config,
)

GI = 2**30

VALID: dict[str, Any] = {
    "nodeDefaults": {
        "cpu": {"watermark": 0.7, "system": "500m"},
        "memory": {"watermark": 0.7, "system": "0.5Gi"},
        "computeUnit": {"vCPUs": 1, "mem": 1},
    },
    "nodeOverrides": [],
    "memBlockSize": "1Gi",
    "schedulerName": "autoscale-scheduler",
    "doMigration": False,
}


def doc(**changes: Any) -> bytes:
    """VALID with dotted-path changes applied (value None with key deletes)."""
    document = copy.deepcopy(VALID)
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        target = document
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value
    return orjson.dumps(document)


_DELETE = object()


def test_the_reference_deployment_example_parses() -> None:
    config = parse_config(doc())
    assert config.scheduler_name == "autoscale-scheduler"
    assert config.slot_bytes == GI
    assert config.migration_enabled is False
    assert config.score_curve is ScoreCurve.TARGET_FILL
    assert (config.score_peak, config.min_usage_score, config.max_usage_score) == (0.8, 0.5, 0.0)
    assert config.randomize is False


IC = "Invalid configuration: at "


@pytest.mark.parametrize(
    ("document", "message"),
    [
        pytest.param(
            doc(nodeDefaults__cpu__watermark=0),
            IC + "nodeDefaults.cpu.watermark: value must be > 0",
            id="resourceConfig.validate: zero watermark",
        ),
        pytest.param(
            doc(nodeDefaults__cpu__watermark=1.5),
            IC + "nodeDefaults.cpu.watermark: value must be <= 1",
            id="resourceConfig.validate: watermark 1.5",
        ),
        pytest.param(
            doc(nodeDefaults__memory__system="-1Gi"),
            IC + "nodeDefaults.memory.system: value must be >= 0",
            id="negative system (ours: 0 allowed)",
        ),
        pytest.param(
            doc(nodeDefaults__memory__system="100m"),
            IC + "nodeDefaults.memory.system: value cannot have milli-precision",
            id="resourceConfig.validate: milli memory system",
        ),
        pytest.param(
            doc(nodeDefaults__cpu__system="lots"),
            IC + "nodeDefaults.cpu.system: invalid quantity 'lots'",
            id="bad quantity",
        ),
        pytest.param(
            doc(nodeDefaults__computeUnit__vCPUs=0),
            IC + "nodeDefaults.computeUnit: vCPUs must be non-zero",
            id="nodeConfig.validate: zero cu cpu",
        ),
        pytest.param(
            doc(nodeDefaults__computeUnit__mem=0),
            IC + "nodeDefaults.computeUnit: mem must be non-zero",
            id="nodeConfig.validate: zero cu mem",
        ),
        pytest.param(
            doc(nodeDefaults__computeUnit__mem=70000),
            IC + "nodeDefaults.computeUnit.mem: Input should be less than or equal to 65535",
            id="cu over uint16",
        ),
        pytest.param(
            doc(memBlockSize="0"),
            IC + "memBlockSize: value must be > 0",
            id="config.validate: zero block size",
        ),
        pytest.param(
            doc(memBlockSize="1500m"),
            IC + "memBlockSize: value cannot have milli-precision",
            id="config.validate: milli block size",
        ),
        pytest.param(
            doc(schedulerName=""),
            IC + "schedulerName: string cannot be empty",
            id="config.validate: empty scheduler name",
        ),
        pytest.param(
            doc(schedulerName=_DELETE),
            IC + "schedulerName: string cannot be empty",
            id="missing scheduler name is Go's zero value",
        ),
        pytest.param(
            doc(nodeDefaults=_DELETE),
            IC + "nodeDefaults.cpu.watermark: value must be > 0",
            id="missing defaults are Go's zero value",
        ),
        pytest.param(
            doc(nodeDefaults__cpu__watermark=0, schedulerName=""),
            IC + "nodeDefaults.cpu.watermark: value must be > 0",
            id="config.validate: the first problem only, in Neon's order",
        ),
        pytest.param(doc(surprise=1), 'json: unknown field "surprise"', id="DisallowUnknownFields"),
        pytest.param(
            doc(nodeDefaults__cpu__extra=1),
            'json: unknown field "extra"',
            id="DisallowUnknownFields: nested key",
        ),
        pytest.param(
            doc(nodeOverrides=[{"nodes": [], "config": VALID["nodeDefaults"]}]),
            IC + "nodeOverrides[0].nodes: array must be non-empty",
            id="overrideSet.validate: override without nodes",
        ),
        pytest.param(
            doc(
                nodeOverrides=[
                    {
                        "nodes": ["a"],
                        "config": {**VALID["nodeDefaults"], "cpu": {"watermark": 2, "system": "1"}},
                    }
                ]
            ),
            IC + "nodeOverrides[0].config.cpu.watermark: value must be <= 1",
            id="overrideSet.validate: bad override config",
        ),
        pytest.param(
            doc(scorePeak=1.2),
            IC + "scorePeak: Input should be less than or equal to 1",
            id="score peak above one",
        ),
        pytest.param(
            doc(minUsageScore=-0.1),
            IC + "minUsageScore: Input should be greater than or equal to 0",
            id="negative min usage score",
        ),
        pytest.param(
            doc(scoreCurve="sideways"),
            IC + "scoreCurve: Input should be 'targetFill' or 'nodeSize'",
            id="unknown score curve",
        ),
        pytest.param(
            doc(nodeMetricLabels={"zone": 3}),
            IC + "nodeMetricLabels.zone: Input should be a valid string",
            id="nodeMetricLabels: map[string]string values",
        ),
        pytest.param(
            doc(nodeMetricLabels=["zone"]),
            IC + "nodeMetricLabels: Input should be a valid dictionary",
            id="nodeMetricLabels: a JSON object",
        ),
        pytest.param(
            doc(nodeMetricLabels={"availability-zone": "topology.kubernetes.io/zone"}),
            IC + "nodeMetricLabels.availability-zone: not a valid Prometheus label name",
            id="nodeMetricLabels: bad metric label name (Neon panics at start-up)",
        ),
        pytest.param(
            doc(nodeMetricLabels={"__zone": "topology.kubernetes.io/zone"}),
            IC + "nodeMetricLabels.__zone: not a valid Prometheus label name",
            id="nodeMetricLabels: names starting __ are Prometheus' own",
        ),
        pytest.param(
            doc(nodeMetricLabels={"node": "kubernetes.io/hostname"}),
            IC + "nodeMetricLabels.node: label name already used by node metrics",
            id="nodeMetricLabels: duplicate label name (Neon panics at start-up)",
        ),
        pytest.param(
            doc(ignoredNamespaces=["a"], ignoreNamespaces=["b"]),
            IC + "ignoreNamespaces: give ignoredNamespaces only "
            "(ignoreNamespaces is its older name)",
            id="ignoredNamespaces and its v0.41 spelling together",
        ),
        pytest.param(b"[1, 2]", IC + "<root>: must be a JSON object", id="not an object"),
        pytest.param(
            b"{nope",
            "Invalid configuration: bad JSON: Expecting property name enclosed in double "
            "quotes: line 1 column 2 (char 1)",
            id="not JSON",
        ),
    ],
)
def test_invalid_configs_name_the_path(document: bytes, message: str) -> None:
    """Neon's texts (config.validate and friends, v0.1.13) where Neon has the check."""
    with pytest.raises(ConfigError) as caught:
        parse_config(document)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("document", "scheduler_name", "watermark"),
    [
        pytest.param(
            orjson.dumps({k.upper(): v for k, v in VALID.items()}),
            "autoscale-scheduler",
            0.7,
            id="encoding/json: keys in upper case match",
        ),
        pytest.param(
            orjson.dumps(
                {
                    **VALID,
                    "nodeDefaults": {
                        **VALID["nodeDefaults"],
                        "CPU": {"WaterMark": 0.25, "system": "500m"},
                    },
                }
            ),
            "autoscale-scheduler",
            0.25,
            id="encoding/json: a folded key after the exact one wins (last value)",
        ),
        pytest.param(
            doc() + b' {"schedulerName": "other"} trailing garbage',
            "autoscale-scheduler",
            0.7,
            id="Decoder.Decode: only the first value is read",
        ),
        pytest.param(
            b"\n\t " + doc(),
            "autoscale-scheduler",
            0.7,
            id="Decoder.Decode: leading whitespace",
        ),
        pytest.param(
            doc(nodeDefaults__cpu__watermark=1.00000001),
            "autoscale-scheduler",
            1.00000001,
            id="float32 field: 1.00000001 is 1, accepted",
        ),
        pytest.param(
            doc(doMigration=None, nodeOverrides=None),
            "autoscale-scheduler",
            0.7,
            id="null leaves the zero value",
        ),
    ],
)
def test_decoded_as_go_encoding_json(
    document: bytes, scheduler_name: str, watermark: float
) -> None:
    config = parse_config(document)
    assert (config.scheduler_name, config.node_defaults.cpu.watermark) == (
        scheduler_name,
        watermark,
    )


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        pytest.param(None, (), id="null: none (Go's nil map)"),
        pytest.param({}, (), id="empty"),
        pytest.param(
            {"node_group": "eks.amazonaws.com/nodegroup", "availability_zone": "z"},
            (("availability_zone", "z"), ("node_group", "eks.amazonaws.com/nodegroup")),
            id="buildNodeLabels: ordered by metric label name",
        ),
    ],
)
def test_node_metric_labels_decode_as_neon(
    labels: dict[str, str] | None, expected: tuple[tuple[str, str], ...]
) -> None:
    """Neon's ``Config.NodeMetricLabels`` (v0.42+, map[string]string)."""
    assert parse_config(doc(nodeMetricLabels=labels)).metric_labels() == expected


@pytest.mark.parametrize(
    "key",
    [
        pytest.param("ignoredNamespaces", id="Neon v0.42+ spelling (HEAD)"),
        pytest.param("ignoreNamespaces", id="Neon v0.41.0 spelling (ours first): an alias"),
        pytest.param("IGNOREDNAMESPACES", id="encoding/json: case-insensitive"),
    ],
)
def test_ignored_namespaces_under_either_spelling(key: str) -> None:
    config = parse_config(doc(**{key: ["overprovisioning"]}))
    assert config.ignore_namespaces == ("overprovisioning",)
    assert config.ignored("overprovisioning/placeholder")
    assert not config.ignored("default/placeholder")


def test_null_overrides_and_null_do_migration_mean_none_and_enabled() -> None:
    config = parse_config(doc(nodeOverrides=None, doMigration=None))
    assert config.node_overrides == ()
    assert config.migration_enabled is True


def test_first_matching_override_wins() -> None:
    small = {**VALID["nodeDefaults"], "computeUnit": {"vCPUs": 2, "mem": 4}}
    other = {**VALID["nodeDefaults"], "computeUnit": {"vCPUs": 3, "mem": 3}}
    config = parse_config(
        doc(
            nodeOverrides=[
                {"nodes": ["b", "c"], "config": small},
                {"nodes": ["c"], "config": other},
            ]
        )
    )
    assert config.node_config("a") is config.node_defaults
    assert config.node_config("c").compute_unit.vcpus == 2
    assert config.node_config("b").compute_unit.mem == 4


@pytest.mark.parametrize(
    ("allocatable_cpu", "allocatable_mem", "expected"),
    [
        pytest.param(
            3920,
            7 * GI + GI // 2,
            (3420, 7 * GI, 2394, int(0.7 * 7 * GI), 1000, GI),
            id="reference example, exact units",
        ),
        pytest.param(
            400,
            256 * 2**20,
            (0, 0, 0, 0, 1000, GI),
            id="node smaller than system saturates at zero",
        ),
    ],
)
def test_derived_node_budget(
    allocatable_cpu: int, allocatable_mem: int, expected: tuple[int, ...]
) -> None:
    config = parse_config(doc())
    budget = derive_node(config.node_defaults, config.slot_bytes, allocatable_cpu, allocatable_mem)
    assert (
        budget.cpu_total,
        budget.mem_total,
        budget.cpu_watermark,
        budget.mem_watermark,
        budget.cpu_unit,
        budget.mem_unit,
    ) == expected


@pytest.mark.parametrize(
    ("change", "accepted"),
    [
        pytest.param({"doMigration": True}, True, id="doMigration may change"),
        pytest.param({"nodeDefaults__cpu__watermark": 0.9}, True, id="watermark may change"),
        pytest.param({"memBlockSize": "1024Mi"}, True, id="same block size written differently"),
        pytest.param({"memBlockSize": "2Gi"}, False, id="block size may not change"),
        pytest.param({"schedulerName": "other"}, False, id="scheduler name may not change"),
        pytest.param(
            {"nodeMetricLabels": {"zone": "topology.kubernetes.io/zone"}},
            False,
            id="node metric labels may not change (the metrics' label names)",
        ),
    ],
)
def test_runtime_update_rules(change: dict[str, Any], accepted: bool) -> None:
    old, new = parse_config(doc()), parse_config(doc(**change))
    if accepted:
        check_update(old, new)
    else:
        with pytest.raises(ConfigError, match="value cannot be changed at runtime"):
            check_update(old, new)


def test_config_map_key_is_required() -> None:
    """handleNewConfigMap (v0.1.13): Go's %q of the key."""
    with pytest.raises(ConfigError) as caught:
        config_from_config_map({"data": {"other": "{}"}}, CONFIG_MAP_KEY)
    assert str(caught.value) == 'ConfigMap missing map key "autoscaler-enforcer-config.json"'

    config = config_from_config_map({"data": {CONFIG_MAP_KEY: doc().decode()}}, CONFIG_MAP_KEY)
    assert config.scheduler_name == "autoscale-scheduler"


def test_args_default_to_the_reference_constants() -> None:
    args = AutoscaleEnforcerArgs()
    assert (args.config_map_namespace, args.config_map_name, args.config_map_key) == (
        "kube-system",
        "scheduler-plugin-config",
        "autoscaler-enforcer-config.json",
    )
    assert args.init_config_map_timeout_seconds == 5
    assert args.agent_port == 10299
    assert AutoscaleEnforcerArgs.model_validate({"agentPort": 0}).agent_port == 0
