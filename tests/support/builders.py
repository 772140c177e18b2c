"""Fluent builders for API objects as plain dicts (the wire form).

Pods and nodes come from ``scheduler.testing.builders`` (one family, shared
with plugin authors); the other kinds the project's tests need live here.

``make_node("n1").capacity(cpu="4", memory="8Gi").obj()`` reads like the object
it makes; every builder returns a fresh dict so cases never share state.
"""

from __future__ import annotations

import copy
from typing import Self

from scheduler.testing.builders import (
    NodeBuilder,
    Obj,
    PodBuilder,
    expression,
    make_node,
    make_pod,
    term,
)

__all__ = [
    "LeaseBuilder",
    "NodeBuilder",
    "Obj",
    "PodBuilder",
    "VirtualMachineBuilder",
    "expression",
    "make_config_map",
    "make_lease",
    "make_node",
    "make_pod",
    "make_vm",
    "term",
]


class LeaseBuilder:
    """A coordination.k8s.io/v1 Lease, as a leader-election lock."""

    def __init__(self, name: str, namespace: str) -> None:
        self._obj: Obj = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {},
        }

    def holder(self, identity: str, *, duration: int = 15) -> Self:
        self._obj["spec"]["holderIdentity"] = identity
        self._obj["spec"]["leaseDurationSeconds"] = duration
        return self

    def acquired(self, micro_time: str) -> Self:
        self._obj["spec"]["acquireTime"] = micro_time
        return self

    def renewed(self, micro_time: str) -> Self:
        self._obj["spec"]["renewTime"] = micro_time
        return self

    def transitions(self, count: int) -> Self:
        self._obj["spec"]["leaseTransitions"] = count
        return self

    def spec_field(self, key: str, value: object) -> Self:
        """Any other spec field (``strategy``, ``preferredHolder``)."""
        self._obj["spec"][key] = value
        return self

    def label(self, key: str, value: str) -> Self:
        self._obj["metadata"].setdefault("labels", {})[key] = value
        return self

    def resource_version(self, version: str) -> Self:
        self._obj["metadata"]["resourceVersion"] = version
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


def make_lease(name: str = "pyscheduler", namespace: str = "kube-system") -> LeaseBuilder:
    return LeaseBuilder(name, namespace)


class VirtualMachineBuilder:
    """A NeonVM ``VirtualMachine`` (``vm.neon.tech/v1``): cpus in vCPUs or
    millicpu quantities, memory in slots of ``slot_size``."""

    def __init__(self, name: str, namespace: str = "default") -> None:
        self._obj: Obj = {
            "apiVersion": "vm.neon.tech/v1",
            "kind": "VirtualMachine",
            "metadata": {"name": name, "namespace": namespace, "labels": {}},
            "spec": {
                "schedulerName": "autoscale-scheduler",
                "guest": {
                    "cpus": {"min": 1, "max": 4, "use": 1},
                    "memorySlots": {"min": 1, "max": 4, "use": 1},
                    "memorySlotSize": "1Gi",
                },
            },
            "status": {},
        }

    def cpus(self, min_: int | str, max_: int | str, use: int | str) -> Self:
        self._obj["spec"]["guest"]["cpus"] = {"min": min_, "max": max_, "use": use}
        return self

    def memory_slots(self, min_: int, max_: int, use: int) -> Self:
        self._obj["spec"]["guest"]["memorySlots"] = {"min": min_, "max": max_, "use": use}
        return self

    def slot_size(self, size: str) -> Self:
        self._obj["spec"]["guest"]["memorySlotSize"] = size
        return self

    def pod_name(self, name: str) -> Self:
        self._obj["status"]["podName"] = name
        return self

    def label(self, key: str, value: str) -> Self:
        self._obj["metadata"]["labels"][key] = value
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


def make_vm(name: str, namespace: str = "default") -> VirtualMachineBuilder:
    return VirtualMachineBuilder(name, namespace)


def make_config_map(name: str, namespace: str, data: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "data": dict(data),
    }
