"""After-run correctness checks over raw API objects (pure).

A fast scheduler that overcommits nodes or leaves pods behind is not faster,
so every run is checked: no node holds bound pods requesting more cpu, memory
or pod slots than it can allocate (counting every bound, non-terminal pod,
whoever bound it), and every pod of a namespace is bound.

Requests are computed with the framework's ``parse_pod`` / ``parse_node``
(the upstream formula: containers, init containers, overhead).

Pods that are deleted while the run goes on (the churn mode's) are gone by
the end, so ``Occupancy`` checks the same rule all along: fed every pod when
first seen bound and when deleted, in the pod watch's order (the order the
scheduler sees them in), it records each node that ever held more than it
allocates.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scheduler.framework import Resource, parse_node, parse_pod

Obj = dict[str, Any]


def overcommitted_nodes(nodes: Iterable[Obj], pods: Iterable[Obj]) -> dict[str, str]:
    """Node name -> what was requested and what it allocates, for each overcommitted node."""
    requested: dict[str, Resource] = {}
    counts: dict[str, int] = {}
    for raw in pods:
        pod = parse_pod(raw)
        if pod.node_name and not pod.terminal:
            requested[pod.node_name] = requested.get(pod.node_name, Resource()) + pod.requests
            counts[pod.node_name] = counts.get(pod.node_name, 0) + 1
    problems = {}
    for raw in nodes:
        node = parse_node(raw)
        used = requested.get(node.name)
        if used is None:
            continue
        allocatable = node.allocatable
        if (
            used.milli_cpu > allocatable.milli_cpu
            or used.memory > allocatable.memory
            or counts[node.name] > allocatable.allowed_pods
        ):
            problems[node.name] = f"requested {used}, allocatable {allocatable}"
    return problems


class Occupancy:
    """What the bound pods request of each node, kept from the pod watch (a
    ``bench.podwatch.BindListener``), and the nodes it ever overcommitted."""

    def __init__(self, nodes: Iterable[Obj]) -> None:
        self._allocatable = {node.name: node.allocatable for node in map(parse_node, nodes)}
        self._requested: dict[str, Resource] = {}
        self._counts: dict[str, int] = {}
        self._pods: dict[tuple[str, str], tuple[str, Resource]] = {}
        self.overcommitted: dict[str, str] = {}

    def bound(self, raw: Obj) -> None:
        pod = parse_pod(raw)
        if not pod.node_name or pod.terminal:
            return
        node = pod.node_name
        self._pods[(pod.namespace, pod.name)] = (node, pod.requests)
        used = self._requested.get(node, Resource()) + pod.requests
        self._requested[node] = used
        self._counts[node] = self._counts.get(node, 0) + 1
        allocatable = self._allocatable.get(node)
        if allocatable is not None and (
            used.milli_cpu > allocatable.milli_cpu
            or used.memory > allocatable.memory
            or self._counts[node] > allocatable.allowed_pods
        ):
            self.overcommitted.setdefault(node, f"requested {used}, allocatable {allocatable}")

    def deleted(self, raw: Obj) -> None:
        metadata = raw["metadata"]
        held = self._pods.pop((metadata["namespace"], metadata["name"]), None)
        if held is not None:
            node, requests = held
            self._requested[node] = self._requested[node] - requests
            self._counts[node] -= 1


def unbound_pods(pods: Iterable[Obj], namespace: str) -> list[str]:
    """Names of the pods of ``namespace`` without a node."""
    return sorted(
        pod["metadata"]["name"]
        for pod in pods
        if pod["metadata"].get("namespace") == namespace and not pod["spec"].get("nodeName")
    )
