"""PreScore, Score and NormalizeScore of InterPodAffinity (upstream ``scoring.go``).

PreScore sums weights per topology pair over existing pods: the incoming
pod's preferred affinity (+weight) and anti-affinity (-weight) terms that
select an existing pod, and the existing pod's terms that select the incoming
pod: required affinity (+hardPodAffinityWeight), preferred affinity
(+weight), preferred anti-affinity (-weight). With preferred terms of its
own the pod visits every pod of every node, otherwise only the pods with
affinity. Score: the sum over the node's labels. NormalizeScore:
``int(100 * (s - min) / (max - min))`` in floating point, all 0 when
``max == min``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.framework import MAX_NODE_SCORE, Node, NodeInfo, Pod
from scheduler.framework.podaffinity import AffinityTerm, WeightedAffinityTerm
from scheduler.framework.tally import Contribution, Journal, Tallies

_NO_LABELS: Mapping[str, str] = {}


@dataclass(slots=True)
class PreScoreState:
    # topology key -> topology value -> score
    topology_score: dict[str, dict[str, int]] = field(default_factory=dict)

    def clone(self) -> PreScoreState:
        return self  # not changed after PreScore

    def add(  # noqa: PLR0917 - upstream processTerm's arguments
        self,
        term: AffinityTerm,
        weight: int,
        namespace: str,
        labels: Mapping[str, str],
        ns_labels: Mapping[str, str],
        node: Node,
    ) -> None:
        """Upstream ``processTerm``."""
        if not term.matches(namespace, labels, ns_labels):
            return
        value = node.labels.get(term.topology_key)
        if value is None:
            return
        scores = self.topology_score.setdefault(term.topology_key, {})
        scores[value] = scores.get(value, 0) + weight


@dataclass(frozen=True, slots=True)
class IncomingTerms:
    pod: Pod
    preferred_affinity: tuple[WeightedAffinityTerm, ...]
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...]
    namespace_labels: Mapping[str, str]


def compute_pre_score_state(
    incoming: IncomingTerms,
    nodes: Sequence[NodeInfo],
    *,
    all_pods: bool,
    hard_pod_affinity_weight: int,
    tallies: Tallies[tuple[str, str]] | None = None,
    journal: Journal | None = None,
) -> PreScoreState:
    """Upstream PreScore's sums. With ``tallies`` (the plugin's, for the
    snapshot's nodes) the per-node sums are kept from cycle to cycle, by
    everything of the incoming pod they depend on; ``journal``: the
    snapshot's, when ``nodes`` is its node list (``all_pods``) or its nodes
    with pods with affinity."""
    contribution = _contribution(incoming, all_pods=all_pods, hard_weight=hard_pod_affinity_weight)
    totals: dict[tuple[str, str], int] = {}
    key = None
    if tallies is not None:
        pod = incoming.pod
        key = (
            "prescore",
            pod.namespace,
            frozenset(pod.labels.items()),
            frozenset(incoming.namespace_labels.items()),
            incoming.preferred_affinity,
            incoming.preferred_anti_affinity,
            all_pods,
            hard_pod_affinity_weight,
        )
    if tallies is not None and key is not None:
        (totals,) = tallies.get(key, 1, contribution).update(nodes, journal)
    else:
        for node_info in nodes:
            for _, pair, weight in contribution(node_info):
                totals[pair] = totals.get(pair, 0) + weight
    state = PreScoreState()
    for (topology_key, value), weight in totals.items():
        state.topology_score.setdefault(topology_key, {})[value] = weight
    return state


def _contribution(
    incoming: IncomingTerms, *, all_pods: bool, hard_weight: int
) -> Callable[[NodeInfo], Contribution[tuple[str, str]]]:
    def contribution(node_info: NodeInfo) -> Contribution[tuple[str, str]]:
        pods = node_info.pods if all_pods else node_info.pods_with_affinity
        if not pods:
            return ()
        node = node_info.node
        if node is None or not node.labels:
            return ()
        state = PreScoreState()
        for existing in pods.values():
            _process_existing_pod(state, incoming, existing, node, hard_weight)
        return tuple(
            (0, (topology_key, value), weight)
            for topology_key, values in state.topology_score.items()
            for value, weight in values.items()
        )

    return contribution


def _process_existing_pod(
    state: PreScoreState,
    incoming: IncomingTerms,
    existing: Pod,
    node: Node,
    hard_weight: int,
) -> None:
    for weighted in incoming.preferred_affinity:
        state.add(
            weighted.term, weighted.weight, existing.namespace, existing.labels, _NO_LABELS, node
        )
    for weighted in incoming.preferred_anti_affinity:
        state.add(
            weighted.term, -weighted.weight, existing.namespace, existing.labels, _NO_LABELS, node
        )
    pod = incoming.pod
    ns_labels = incoming.namespace_labels
    terms = existing.pod_affinity
    if hard_weight > 0:
        for term in terms.required_affinity:
            state.add(term, hard_weight, pod.namespace, pod.labels, ns_labels, node)
    for weighted in terms.preferred_affinity:
        state.add(weighted.term, weighted.weight, pod.namespace, pod.labels, ns_labels, node)
    for weighted in terms.preferred_anti_affinity:
        state.add(weighted.term, -weighted.weight, pod.namespace, pod.labels, ns_labels, node)


def score_node(state: PreScoreState, node: Node) -> int:
    total = 0
    labels = node.labels
    for key, values in state.topology_score.items():
        value = labels.get(key)
        if value is not None:
            total += values.get(value, 0)
    return total


def normalize(values: Sequence[int]) -> list[int]:
    if not values:
        return []
    low, high = min(values), max(values)
    spread = high - low
    if spread <= 0:
        return [0] * len(values)
    return [int(MAX_NODE_SCORE * ((value - low) / spread)) for value in values]
