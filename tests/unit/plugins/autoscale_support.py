"""Shared fixtures for the AutoscaleEnforcer tests: a config, VMs, a state."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from plugins.autoscale_enforcer.config import Config, parse_config
from plugins.autoscale_enforcer.state import Amounts, State
from plugins.autoscale_enforcer.vm import VmInfo

GI = 2**30
CPU = 1000  # one vCPU in millicores


def config_doc(
    *, watermark: float = 0.5, cpu_system: str = "0", mem_system: str = "0", **top: Any
) -> dict[str, Any]:
    return {
        "nodeDefaults": {
            "cpu": {"watermark": watermark, "system": cpu_system},
            "memory": {"watermark": watermark, "system": mem_system},
            "computeUnit": {"vCPUs": 1, "mem": 1},
        },
        "memBlockSize": "1Gi",
        "schedulerName": "autoscale-scheduler",
        "doMigration": True,
        **top,
    }


def make_config(**kwargs: Any) -> Config:
    return parse_config(orjson.dumps(config_doc(**kwargs)))


def amounts(cpus: float, gib: float) -> Amounts:
    """Whole-unit shorthand: ``amounts(2, 4)`` = 2 vCPUs, 4 GiB."""
    return Amounts(int(cpus * CPU), int(gib * GI))


def vm(
    name: str = "vm",
    *,
    use: tuple[float, float] = (1, 1),
    min_: tuple[float, float] = (1, 1),
    max_: tuple[float, float] = (4, 4),
    migratable: bool = False,
    always_migrate: bool = False,
    namespace: str = "default",
    autoscaling: bool = True,
    overcommit: tuple[float, float] = (1, 1),
) -> VmInfo:
    return VmInfo(
        namespace=namespace,
        name=name,
        cpu_min=int(min_[0] * CPU),
        cpu_max=int(max_[0] * CPU),
        cpu_use=int(use[0] * CPU),
        mem_min=int(min_[1] * GI),
        mem_max=int(max_[1] * GI),
        mem_use=int(use[1] * GI),
        slot_bytes=GI,
        migratable=migratable,
        always_migrate=always_migrate,
        autoscaling_enabled=autoscaling,
        cpu_overcommit=round(overcommit[0] * 1000),
        mem_overcommit=round(overcommit[1] * 1000),
    )


def state_with_node(cpus: float = 8, gib: float = 8, **config: Any) -> State:
    state = State(make_config(**config))
    state.upsert_node("n1", amounts(cpus, gib))
    return state


def deep(obj: Any) -> Any:
    return copy.deepcopy(obj)
