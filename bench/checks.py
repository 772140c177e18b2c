"""After-run correctness checks over raw API objects (pure).

A fast scheduler that overcommits nodes or leaves pods behind is not faster,
so every run is checked: no node holds bound pods requesting more cpu, memory
or pod slots than it can allocate (counting every bound, non-terminal pod,
whoever bound it), and every pod of a namespace is bound.

Requests are computed with the framework's ``parse_pod`` / ``parse_node``
(the upstream formula: containers, init containers, overhead).
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


def unbound_pods(pods: Iterable[Obj], namespace: str) -> list[str]:
    """Names of the pods of ``namespace`` without a node."""
    return sorted(
        pod["metadata"]["name"]
        for pod in pods
        if pod["metadata"].get("namespace") == namespace and not pod["spec"].get("nodeName")
    )
