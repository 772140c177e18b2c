"""PreScore, Score and NormalizeScore of PodTopologySpread (upstream ``scoring.go``).

PreScore registers the topology values of the feasible nodes (nodes missing a
key are "ignored" when every key is required: always, except for the system
default constraints) and counts matching pods per value over all nodes that
count. Score: for each soft constraint whose key the node has,
``count * ln(domains + 2) + (maxSkew - 1)`` where ``count`` is the pods on the
node itself for the hostname key and the domain's count otherwise; the sum is
rounded half away from zero. NormalizeScore: fewer pods is better,
``100 * (max + min - s) / max`` (integer), 100 for all when ``max`` is 0,
ignored nodes 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from plugins.pod_topology_spread.constraints import (
    LABEL_HOSTNAME,
    Constraint,
    all_keys,
    count_matching,
    node_has_all_keys,
)
from scheduler.framework import MAX_NODE_SCORE, NodeInfo, NodeScore, Pod


@dataclass(slots=True)
class PreScoreState:
    constraints: tuple[Constraint, ...]
    ignored_nodes: set[str] = field(default_factory=set)
    counts: list[dict[str, int]] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)

    def clone(self) -> PreScoreState:
        return self  # not changed after PreScore


def normalizing_weight(size: int) -> float:
    """Upstream ``topologyNormalizingWeight``: ln(size + 2)."""
    return math.log(size + 2)


def score_for_count(count: int, max_skew: int, weight: float) -> float:
    return count * weight + (max_skew - 1)


def round_half_away(value: float) -> int:
    """Go ``math.Round`` (half away from zero)."""
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


def compute_pre_score_state(
    pod: Pod,
    constraints: tuple[Constraint, ...],
    filtered: Sequence[NodeInfo],
    all_nodes: Sequence[NodeInfo],
    *,
    require_all_topologies: bool,
) -> PreScoreState:
    state = PreScoreState(constraints, counts=[{} for _ in constraints])
    sizes = [0] * len(constraints)
    for node_info in filtered:
        node = node_info.node
        if node is None:
            continue
        if require_all_topologies and not node_has_all_keys(node.labels, constraints):
            state.ignored_nodes.add(node.name)
            continue
        for index, constraint in enumerate(constraints):
            if constraint.topology_key == LABEL_HOSTNAME:
                continue
            value = node.labels.get(constraint.topology_key, "")
            if value not in state.counts[index]:
                state.counts[index][value] = 0
                sizes[index] += 1
    for index, constraint in enumerate(constraints):
        size = sizes[index]
        if constraint.topology_key == LABEL_HOSTNAME:
            size = len(filtered) - len(state.ignored_nodes)
        state.weights.append(normalizing_weight(size))

    namespace = pod.namespace
    keys = tuple(constraint.topology_key for constraint in constraints)
    plan = [
        (constraint, state.counts[index], constraint.filters_nodes(pod), constraint.selector.empty)
        for index, constraint in enumerate(constraints)
    ]
    for node_info in all_nodes:
        node = node_info.node
        if node is None:
            continue
        labels = node.labels
        if require_all_topologies and not all_keys(labels, keys):
            continue
        pods = node_info.pods
        for constraint, domains, check, empty in plan:
            if check and not constraint.includes(pod, node):
                continue
            value = labels.get(constraint.topology_key, "")
            if value not in domains:
                continue
            if pods and not empty:
                domains[value] += count_matching(pods.values(), constraint.selector, namespace)
    return state


def score_node(state: PreScoreState, pod: Pod, node_info: NodeInfo) -> int:
    node = node_info.node
    if node is None or node.name in state.ignored_nodes:
        return 0
    total = 0.0
    for index, constraint in enumerate(state.constraints):
        value = node.labels.get(constraint.topology_key)
        if value is None:
            continue
        if constraint.topology_key == LABEL_HOSTNAME:
            count = count_matching(node_info.pods.values(), constraint.selector, pod.namespace)
        else:
            count = state.counts[index].get(value, 0)
        total += score_for_count(count, constraint.max_skew, state.weights[index])
    return round_half_away(total)


def normalize(state: PreScoreState, scores: list[NodeScore]) -> None:
    ignored = state.ignored_nodes
    counted = [entry.score for entry in scores if entry.name not in ignored]
    low = min(counted, default=0)
    high = max(max(counted, default=0), 0)
    for entry in scores:
        if entry.name in ignored:
            entry.score = 0
        elif high == 0:
            entry.score = MAX_NODE_SCORE
        else:
            entry.score = MAX_NODE_SCORE * (high + low - entry.score) // high
