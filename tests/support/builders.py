"""Fluent builders for API objects as plain dicts (the wire form).

``make_node("n1").capacity(cpu="4", memory="8Gi").obj()`` reads like the object
it makes; every builder returns a fresh dict so cases never share state.
"""

from __future__ import annotations

import copy
from typing import Any, Self

Obj = dict[str, Any]


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self._obj: Obj = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {
                "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
                "phase": "Running",
            },
        }

    def capacity(self, **resources: str) -> Self:
        self._obj["status"]["capacity"] = dict(resources)
        return self

    def allocatable(self, **resources: str) -> Self:
        self._obj["status"]["allocatable"] = dict(resources)
        return self

    def label(self, key: str, value: str) -> Self:
        self._obj["metadata"]["labels"][key] = value
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> Self:
        self._obj["spec"].setdefault("taints", []).append(
            {"key": key, "value": value, "effect": effect}
        )
        return self

    def unschedulable(self) -> Self:
        self._obj["spec"]["unschedulable"] = True
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


class PodBuilder:
    def __init__(self, name: str, namespace: str = "default") -> None:
        self._obj: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
        }

    def scheduler(self, name: str) -> Self:
        self._obj["spec"]["schedulerName"] = name
        return self

    def node(self, name: str) -> Self:
        self._obj["spec"]["nodeName"] = name
        return self

    def requests(self, **resources: str) -> Self:
        container = self._obj["spec"]["containers"][0]
        container.setdefault("resources", {})["requests"] = dict(resources)
        return self

    def claim_template(self, claim_name: str, template: str) -> Self:
        self._obj["spec"].setdefault("resourceClaims", []).append(
            {"name": claim_name, "resourceClaimTemplateName": template}
        )
        self._obj["spec"]["containers"][0].setdefault("resources", {})["claims"] = [
            {"name": claim_name}
        ]
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def make_pod(name: str, namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)
