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


@pytest.mark.parametrize(
    ("document", "message"),
    [
        pytest.param(
            doc(nodeDefaults__cpu__watermark=0),
            "at nodeDefaults.cpu.watermark:",
            id="zero watermark",
        ),
        pytest.param(
            doc(nodeDefaults__cpu__watermark=1.5),
            "at nodeDefaults.cpu.watermark:",
            id="watermark above one",
        ),
        pytest.param(
            doc(nodeDefaults__memory__system="-1Gi"),
            "at nodeDefaults.memory.system: value must not be negative",
            id="negative system",
        ),
        pytest.param(
            doc(nodeDefaults__memory__system="100m"),
            "at nodeDefaults.memory: system: value cannot have milli-precision",
            id="milli memory system",
        ),
        pytest.param(
            doc(nodeDefaults__cpu__system="lots"),
            "at nodeDefaults.cpu.system: invalid quantity 'lots'",
            id="bad quantity",
        ),
        pytest.param(
            doc(nodeDefaults__computeUnit__vCPUs=0),
            "at nodeDefaults.computeUnit.vCPUs: vCPUs must be non-zero",
            id="zero cu cpu",
        ),
        pytest.param(
            doc(nodeDefaults__computeUnit__mem=0),
            "at nodeDefaults.computeUnit.mem: mem must be non-zero",
            id="zero cu mem",
        ),
        pytest.param(
            doc(nodeDefaults__computeUnit__mem=70000),
            "at nodeDefaults.computeUnit.mem:",
            id="cu over uint16",
        ),
        pytest.param(
            doc(memBlockSize="0"), "at memBlockSize: value must be > 0", id="zero block size"
        ),
        pytest.param(
            doc(memBlockSize="1500m"),
            "at memBlockSize: value cannot have milli-precision",
            id="milli block size",
        ),
        pytest.param(doc(schedulerName=""), "at schedulerName:", id="empty scheduler name"),
        pytest.param(
            doc(schedulerName=_DELETE),
            "at schedulerName: Field required",
            id="missing scheduler name",
        ),
        pytest.param(
            doc(nodeDefaults=_DELETE), "at nodeDefaults: Field required", id="missing defaults"
        ),
        pytest.param(
            doc(surprise=1), "at surprise: Extra inputs are not permitted", id="unknown key"
        ),
        pytest.param(
            doc(nodeDefaults__cpu__extra=1),
            "at nodeDefaults.cpu.extra: Extra inputs",
            id="unknown nested key",
        ),
        pytest.param(
            doc(nodeOverrides=[{"nodes": [], "config": VALID["nodeDefaults"]}]),
            "at nodeOverrides[0].nodes: array must be non-empty",
            id="override without nodes",
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
            "at nodeOverrides[0].config.cpu.watermark:",
            id="bad override config",
        ),
        pytest.param(doc(scorePeak=1.2), "at scorePeak:", id="score peak above one"),
        pytest.param(doc(minUsageScore=-0.1), "at minUsageScore:", id="negative min usage score"),
        pytest.param(doc(scoreCurve="sideways"), "at scoreCurve:", id="unknown score curve"),
        pytest.param(b"[1, 2]", "at <root>: must be a JSON object", id="not an object"),
        pytest.param(b"{nope", "bad JSON", id="not JSON"),
    ],
)
def test_invalid_configs_name_the_path(document: bytes, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(document)
    assert str(caught.value).startswith(("Invalid configuration: ",))
    assert message in str(caught.value)


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
    with pytest.raises(ConfigError, match="ConfigMap missing map key"):
        config_from_config_map({"data": {"other": "{}"}}, CONFIG_MAP_KEY)
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
