"""Compare the cache with a fresh list from the API server (upstream's cache
debugger, ``pkg/scheduler/backend/cache/debugger``, with the resource check
added).

``compare`` is pure: given a ``CacheDump``, the parsed nodes and pods just
listed from the API, the pending pods the queue holds and the clock's ``now``,
it returns every difference, sorted. The chaos suite calls it after each
scenario and fails on any; an operator gets the same report on SIGUSR2 (log)
and at ``/debug/cache`` (JSON).

What counts as a difference:
- ``node-missing``: a node in the API that the cache does not hold (or holds
  only as a ghost); ``node-redundant``: a node the cache holds that the API no
  longer has. A ghost node is not a difference by itself: its pods are.
- ``pod-missing``: a non-terminal pod bound to a node in the API that the
  cache does not count; ``pod-wrong-node``: counted on another node;
  ``pod-redundant``: counted (not assumed) but not bound in the API, terminal
  or gone.
- ``assumed-too-long``: a pod assumed more than ``assumed_bound`` seconds ago
  (a bind takes far less; a longer one is a leak or a lost confirmation).
  A younger assumed pod is a bind in flight, expected on its node, unless
  ``assumed-gone``: the API no longer has it (deleted, or terminal), so no
  bind can confirm it and its requests leak until it is forgotten.
- ``requested-mismatch``: a node whose summed requests differ from the sum
  over the pods expected on it (the API's pods bound there plus the assumed
  ones not yet bound), each counted by the current accounting rule.
- ``pod-lost``: a pod of ours (``schedulers``) that is unbound, not terminal
  and not being deleted, yet neither queued nor assumed: nothing will ever
  schedule it.

Right after a change the cache may trail the list by one watch event; callers
compare once the cluster is quiet, as upstream's debugger assumes too.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from enum import StrEnum

from scheduler.cache.dump import CacheDump
from scheduler.framework.objects import Node, Pod
from scheduler.framework.resource import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, ZERO, Resource

DEFAULT_ASSUMED_BOUND_SECONDS = 60.0


class DifferenceKind(StrEnum):
    NODE_MISSING = "node-missing"
    NODE_REDUNDANT = "node-redundant"
    POD_MISSING = "pod-missing"
    POD_WRONG_NODE = "pod-wrong-node"
    POD_REDUNDANT = "pod-redundant"
    ASSUMED_TOO_LONG = "assumed-too-long"
    ASSUMED_GONE = "assumed-gone"
    REQUESTED_MISMATCH = "requested-mismatch"
    POD_LOST = "pod-lost"


@dataclass(frozen=True, order=True)
class Difference:
    kind: DifferenceKind
    subject: str  # a node name or a pod's namespace/name
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"kind": str(self.kind), "subject": self.subject, "detail": self.detail}

    def __str__(self) -> str:
        return f"{self.kind} {self.subject}: {self.detail}"


def describe(resource: Resource) -> str:
    """``cpu=1500m memory=1073741824 pods=3``: the non-zero entries, stable order."""
    parts = []
    if resource.milli_cpu:
        parts.append(f"{CPU}={resource.milli_cpu}m")
    for name in (MEMORY, EPHEMERAL_STORAGE, PODS):
        if resource.get(name):
            parts.append(f"{name}={resource.get(name)}")
    parts.extend(f"{name}={value}" for name, value in sorted(resource.scalar.items()) if value)
    return " ".join(parts) or "nothing"


def _same(left: Resource, right: Resource) -> bool:
    return describe(left) == describe(right)


def compare(
    dump: CacheDump,
    nodes: Iterable[Node],
    pods: Iterable[Pod],
    *,
    queued: Collection[str],
    schedulers: Collection[str],
    now: float,
    assumed_bound: float = DEFAULT_ASSUMED_BOUND_SECONDS,
) -> list[Difference]:
    """Every difference between ``dump`` and the API's ``nodes`` and ``pods``.

    ``queued`` holds the keys (``namespace/name``) of the pods in the
    scheduling queue, in flight included; ``schedulers`` the profile names.
    """
    found: list[Difference] = []
    api_nodes = {node.name for node in nodes}
    cached_nodes = {name for name, info in dump.nodes.items() if info.node is not None}
    found += [
        Difference(DifferenceKind.NODE_MISSING, name, "in the API, not in the cache")
        for name in api_nodes - cached_nodes
    ]
    found += [
        Difference(DifferenceKind.NODE_REDUNDANT, name, "in the cache, gone from the API")
        for name in cached_nodes - api_nodes
    ]

    cached: dict[str, tuple[str, Pod]] = {}  # uid -> (node, cached copy)
    for name, info in dump.nodes.items():
        for uid, pod in info.pods.items():
            cached[uid] = (name, pod)
    api_bound: dict[str, Pod] = {}
    api_live: set[str] = set()
    for pod in pods:
        if pod.terminal:
            continue
        api_live.add(pod.uid)
        if pod.assigned:
            api_bound[pod.uid] = pod
        elif (
            pod.scheduler_name in schedulers
            and not pod.deleting
            and pod.key not in queued
            and pod.uid not in dump.assumed_since
        ):
            found.append(
                Difference(DifferenceKind.POD_LOST, pod.key, "pending, neither queued nor assumed")
            )

    for uid, pod in api_bound.items():
        where = cached.get(uid)
        if where is None:
            detail = f"bound to {pod.node_name} in the API, not in the cache"
            found.append(Difference(DifferenceKind.POD_MISSING, pod.key, detail))
        elif where[0] != pod.node_name:
            detail = f"bound to {pod.node_name} in the API, counted on {where[0]}"
            found.append(Difference(DifferenceKind.POD_WRONG_NODE, pod.key, detail))

    for uid, (node_name, pod) in cached.items():
        since = dump.assumed_since.get(uid)
        if since is None:
            if uid not in api_bound:
                detail = f"counted on {node_name}, not bound to it in the API"
                found.append(Difference(DifferenceKind.POD_REDUNDANT, pod.key, detail))
        elif now - since > assumed_bound:
            state = (
                f"bound to {api_bound[uid].node_name} in the API"
                if uid in api_bound
                else "not bound in the API"
            )
            detail = (
                f"assumed on {node_name} {now - since:.0f}s ago (bound {assumed_bound:g}s); {state}"
            )
            found.append(Difference(DifferenceKind.ASSUMED_TOO_LONG, pod.key, detail))
        elif uid not in api_live:
            detail = f"assumed on {node_name}, gone from the API (deleted or terminal)"
            found.append(Difference(DifferenceKind.ASSUMED_GONE, pod.key, detail))

    expected: dict[str, Resource] = {}
    for pod in api_bound.values():
        expected[pod.node_name] = expected.get(pod.node_name, ZERO) + pod.requests
    for uid in dump.assumed_since:
        if uid in cached and uid in api_live and uid not in api_bound:
            node_name, pod = cached[uid]
            expected[node_name] = expected.get(node_name, ZERO) + pod.requests
    for name in sorted(set(dump.nodes) | set(expected)):
        cached_info = dump.nodes.get(name)
        have = cached_info.requested if cached_info is not None else ZERO
        want = expected.get(name, ZERO)
        if not _same(have, want):
            detail = f"cache counts {describe(have)}, the pods on it request {describe(want)}"
            found.append(Difference(DifferenceKind.REQUESTED_MISMATCH, name, detail))
    return sorted(found)
