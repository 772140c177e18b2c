"""PreFilter state and Filter of PodTopologySpread (upstream ``filtering.go``).

PreFilter counts, per hard constraint and topology value, the matching pods
on the nodes that count (all constraint keys present, inclusion policies
met), and keeps for each constraint the two smallest domains ("critical
paths") so that Filter reads the global minimum in O(1). AddPod/RemovePod
update counts and paths for preemption's what-ifs exactly as upstream does,
including its approximation: after an update the paths track the two
domains they knew of, not necessarily the two smallest.

Filter: for each hard constraint in order, a node without the topology key is
UnschedulableAndUnresolvable; otherwise
``skew = count(node's domain) + (1 if the pod matches the selector) - min``
(``min`` is 0 while fewer domains than ``minDomains`` exist) must not exceed
``maxSkew``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from plugins.pod_topology_spread.constraints import (
    Constraint,
    all_keys,
    count_matching,
    node_has_all_keys,
)
from scheduler.framework import Node, NodeInfo, Pod
from scheduler.framework.tally import Contribution, Journal, Tallies

MAX_INT32 = 2**31 - 1


@dataclass(slots=True)
class CriticalPaths:
    """The two domains with the fewest matching pods (upstream ``criticalPaths``)."""

    values: list[str] = field(default_factory=lambda: ["", ""])
    counts: list[int] = field(default_factory=lambda: [MAX_INT32, MAX_INT32])

    def update(self, value: str, count: int) -> None:
        values, counts = self.values, self.counts
        index = 0 if value == values[0] else 1 if value == values[1] else -1
        if index >= 0:
            counts[index] = count
            if counts[0] > counts[1]:
                values.reverse()
                counts.reverse()
        elif count < counts[0]:
            values[1], counts[1] = values[0], counts[0]
            values[0], counts[0] = value, count
        elif count < counts[1]:
            values[1], counts[1] = value, count

    def clone(self) -> CriticalPaths:
        return CriticalPaths(list(self.values), list(self.counts))


@dataclass(slots=True)
class PreFilterState:
    constraints: tuple[Constraint, ...]
    critical_paths: list[CriticalPaths]
    counts: list[dict[str, int]]  # per constraint: topology value -> matching pods
    # Per constraint, 1 if the incoming pod matches its selector (empty: not known).
    self_match: tuple[int, ...] = ()
    # Filter's plan, made on first use and dropped by ``update_with_pod``:
    # per constraint (topology key, its counts, the highest count a domain
    # may hold for the pod to fit there).
    limits: list[tuple[str, dict[str, int], int]] | None = field(default=None, compare=False)

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.constraints,
            [paths.clone() for paths in self.critical_paths],
            [dict(counts) for counts in self.counts],
            self.self_match,
        )

    def update_with_pod(self, changed: Pod, pod: Pod, node: Node | None, delta: int) -> None:
        """Upstream ``updateWithPod``: ``changed`` is added (+1) to or removed
        (-1) from ``node`` in a what-if for ``pod``."""
        if changed.namespace != pod.namespace or node is None:
            return
        self.limits = None
        if not node_has_all_keys(node.labels, self.constraints):
            return
        for index, constraint in enumerate(self.constraints):
            if not constraint.selector.matches(changed.labels):
                continue
            if not constraint.includes(pod, node):
                continue
            value = node.labels[constraint.topology_key]
            counts = self.counts[index]
            counts[value] = counts.get(value, 0) + delta
            self.critical_paths[index].update(value, counts[value])


def compute_pre_filter_state(
    pod: Pod,
    constraints: tuple[Constraint, ...],
    nodes: Sequence[NodeInfo],
    tallies: Tallies[str] | None = None,
    journal: Journal | None = None,
) -> PreFilterState:
    """Upstream ``calPreFilterState`` over all nodes. With ``tallies`` (the
    plugin's, for the snapshot's nodes) the per-node counts are kept from
    cycle to cycle and only changed nodes are counted again; ``journal``: the
    snapshot's, when ``nodes`` is its node list (``scheduler.framework.tally``)."""
    contribution = _contribution(pod, constraints)
    tally = None
    if tallies is not None:
        key = _tally_key(pod, constraints)
        if key is not None:
            tally = tallies.get(key, len(constraints), contribution)
    if tally is not None:
        counts = [dict(totals) for totals in tally.update(nodes, journal)]
    else:
        counts = [{} for _ in constraints]
        for node_info in nodes:
            for slot, value, matched in contribution(node_info):
                domains = counts[slot]
                domains[value] = domains.get(value, 0) + matched
    self_match = tuple(1 if c.selector.matches(pod.labels) else 0 for c in constraints)
    paths = [_two_smallest(domains) for domains in counts]
    return PreFilterState(constraints, paths, counts, self_match)


def _two_smallest(domain_counts: dict[str, int]) -> CriticalPaths:
    """The critical paths of freshly counted domains: the two smallest by
    (count, value). Upstream takes them in Go's random map order, so ties go
    any way there; ordering ties by value makes the result independent of the
    order the counts were gathered in (kept tallies or a fresh count)."""
    critical = CriticalPaths()
    values, counts = critical.values, critical.counts
    for value, count in domain_counts.items():
        if count < counts[0] or (count == counts[0] and value < values[0]):
            values[1], counts[1] = values[0], counts[0]
            values[0], counts[0] = value, count
        elif count < counts[1] or (count == counts[1] and value < values[1]):
            values[1], counts[1] = value, count
    return critical


def _tally_key(pod: Pod, constraints: tuple[Constraint, ...]) -> Hashable | None:
    """What a node's contribution depends on besides the node: the
    constraints, the namespace, and the pod's node affinity and tolerations
    when a policy reads them (None if that is not hashable)."""
    inclusion: Hashable = None
    if any(constraint.filters_nodes(pod) for constraint in constraints):
        inclusion = (pod.required_affinity, tuple(pod.tolerations))
    key = (pod.namespace, constraints, inclusion)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _contribution(
    pod: Pod, constraints: tuple[Constraint, ...]
) -> Callable[[NodeInfo], Contribution[str]]:
    """One node's share of the counts: per constraint (slot) that counts the
    node, its topology value and the pods on it matching the selector."""
    namespace = pod.namespace
    keys = tuple(constraint.topology_key for constraint in constraints)
    plan = [
        (slot, constraint, constraint.filters_nodes(pod), constraint.selector.empty)
        for slot, constraint in enumerate(constraints)
    ]

    def contribution(node_info: NodeInfo) -> Contribution[str]:
        node = node_info.node
        if node is None:
            return ()
        labels = node.labels
        if not all_keys(labels, keys):
            return ()
        pods = node_info.pods
        shares = []
        for slot, constraint, check, empty in plan:
            if check and not constraint.includes(pod, node):
                continue
            matched = (
                count_matching(pods.values(), constraint.selector, namespace)
                if pods and not empty
                else 0
            )
            shares.append((slot, labels[constraint.topology_key], matched))
        return tuple(shares)

    return contribution


def _limits(state: PreFilterState, pod: Pod) -> list[tuple[str, dict[str, int], int]]:
    """Per constraint: the topology key, the counts and the largest count of
    the node's domain that keeps ``count + selfMatch - min <= maxSkew``."""
    known = state.self_match
    limits = []
    for index, constraint in enumerate(state.constraints):
        counts = state.counts[index]
        # Upstream ``minMatchNum``: 0 while there are fewer domains than minDomains.
        minimum = (
            0 if len(counts) < constraint.min_domains else state.critical_paths[index].counts[0]
        )
        self_match = (
            known[index] if known else (1 if constraint.selector.matches(pod.labels) else 0)
        )
        limits.append((constraint.topology_key, counts, constraint.max_skew + minimum - self_match))
    return limits


def violated(state: PreFilterState, pod: Pod, node: Node) -> tuple[bool, bool]:
    """(a topology key is missing, a skew exceeds maxSkew), checked in
    constraint order: the first failing constraint decides."""
    limits = state.limits
    if limits is None:
        limits = state.limits = _limits(state, pod)
    labels = node.labels
    for key, counts, limit in limits:
        value = labels.get(key)
        if value is None:
            return True, False
        if counts.get(value, 0) > limit:
            return False, True
    return False, False
