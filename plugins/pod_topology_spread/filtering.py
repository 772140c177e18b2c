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

from collections.abc import Sequence
from dataclasses import dataclass, field

from plugins.pod_topology_spread.constraints import (
    Constraint,
    all_keys,
    count_matching,
    node_has_all_keys,
)
from scheduler.framework import Node, NodeInfo, Pod

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

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.constraints,
            [paths.clone() for paths in self.critical_paths],
            [dict(counts) for counts in self.counts],
        )

    def min_match(self, index: int, min_domains: int) -> int:
        """Upstream ``minMatchNum``: 0 while there are fewer domains than ``min_domains``."""
        if len(self.counts[index]) < min_domains:
            return 0
        return self.critical_paths[index].counts[0]

    def update_with_pod(self, changed: Pod, pod: Pod, node: Node | None, delta: int) -> None:
        """Upstream ``updateWithPod``: ``changed`` is added (+1) to or removed
        (-1) from ``node`` in a what-if for ``pod``."""
        if changed.namespace != pod.namespace or node is None:
            return
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
    pod: Pod, constraints: tuple[Constraint, ...], nodes: Sequence[NodeInfo]
) -> PreFilterState:
    """Upstream ``calPreFilterState`` over all nodes (a hot loop: per node only
    what the constraints need)."""
    counts: list[dict[str, int]] = [{} for _ in constraints]
    namespace = pod.namespace
    keys = tuple(constraint.topology_key for constraint in constraints)
    plan = [
        (constraint, counts[index], constraint.filters_nodes(pod), constraint.selector.empty)
        for index, constraint in enumerate(constraints)
    ]
    for node_info in nodes:
        node = node_info.node
        if node is None:
            continue
        labels = node.labels
        if not all_keys(labels, keys):
            continue
        pods = node_info.pods
        for constraint, domains, check, empty in plan:
            if check and not constraint.includes(pod, node):
                continue
            value = labels[constraint.topology_key]
            matched = (
                count_matching(pods.values(), constraint.selector, namespace)
                if pods and not empty
                else 0
            )
            domains[value] = domains.get(value, 0) + matched
    paths = []
    for domain_counts in counts:
        critical = CriticalPaths()
        for value, count in domain_counts.items():
            critical.update(value, count)
        paths.append(critical)
    return PreFilterState(constraints, paths, counts)


def violated(state: PreFilterState, pod: Pod, node: Node) -> tuple[bool, bool]:
    """(a topology key is missing, a skew exceeds maxSkew), checked in
    constraint order: the first failing constraint decides."""
    labels = node.labels
    for index, constraint in enumerate(state.constraints):
        value = labels.get(constraint.topology_key)
        if value is None:
            return True, False
        minimum = state.min_match(index, constraint.min_domains)
        self_match = 1 if constraint.selector.matches(pod.labels) else 0
        skew = state.counts[index].get(value, 0) + self_match - minimum
        if skew > constraint.max_skew:
            return False, True
    return False, False
