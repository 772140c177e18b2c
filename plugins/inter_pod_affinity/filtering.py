"""PreFilter state and Filter of InterPodAffinity (upstream ``filtering.go``).

PreFilter counts, per topology pair (key, value):
- ``existing_anti``: existing pods' required anti-affinity terms that select
  the incoming pod (only nodes holding pods with affinity are visited);
- ``affinity``: existing pods matching *all* the incoming pod's required
  affinity terms, once per term's topology key;
- ``anti``: existing pods matching each of the incoming pod's required
  anti-affinity terms.
Pairs whose count drops to 0 are removed, as upstream: "no pair" is how
Filter recognises the first pod of a group.

Filter, in this order: required affinity (a missing topology key, or no
matching pod in the node's domain, fails UnschedulableAndUnresolvable unless
no pod matches anywhere and the pod matches its own terms); the pod's
required anti-affinity (Unschedulable); existing pods' anti-affinity
(Unschedulable).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from scheduler.framework import Node, NodeInfo, Pod
from scheduler.framework.podaffinity import AffinityTerm
from scheduler.framework.tally import Contribution, Journal, Tallies

TopologyPair = tuple[str, str]
_NO_LABELS: Mapping[str, str] = {}


class PairCounts(dict[TopologyPair, int]):
    """Topology pair -> count; a pair is absent rather than 0."""

    def update_pair(self, node: Node, key: str, delta: int) -> None:
        value = node.labels.get(key)
        if value is None:
            return
        pair = (key, value)
        total = self.get(pair, 0) + delta
        if total == 0:
            self.pop(pair, None)
        else:
            self[pair] = total

    def copy(self) -> PairCounts:
        return PairCounts(self)


def matches_all(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    """Upstream ``podMatchesAllAffinityTerms`` (no namespace labels; false for no terms)."""
    if not terms:
        return False
    return all(term.matches(pod.namespace, pod.labels, _NO_LABELS) for term in terms)


@dataclass(slots=True)
class PreFilterState:
    affinity_terms: tuple[AffinityTerm, ...]
    anti_affinity_terms: tuple[AffinityTerm, ...]
    namespace_labels: Mapping[str, str]
    existing_anti: PairCounts
    affinity: PairCounts
    anti: PairCounts
    # The distinct topology keys of ``anti_affinity_terms``, in order (Filter's loop).
    anti_keys: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.anti_keys:
            keys = (term.topology_key for term in self.anti_affinity_terms)
            self.anti_keys = tuple(dict.fromkeys(keys))

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.affinity_terms,
            self.anti_affinity_terms,
            self.namespace_labels,
            self.existing_anti.copy(),
            self.affinity.copy(),
            self.anti.copy(),
            self.anti_keys,
        )

    def update_with_pod(self, pod: Pod, changed: Pod, node: Node | None, delta: int) -> None:
        """Upstream ``updateWithPod``: ``changed`` added (+1) or removed (-1) on ``node``."""
        if node is None:
            return
        for term in changed.pod_affinity.required_anti_affinity:
            if term.matches(pod.namespace, pod.labels, self.namespace_labels):
                self.existing_anti.update_pair(node, term.topology_key, delta)
        if matches_all(self.affinity_terms, changed):
            for term in self.affinity_terms:
                self.affinity.update_pair(node, term.topology_key, delta)
        for term in self.anti_affinity_terms:
            if term.matches(changed.namespace, changed.labels, _NO_LABELS):
                self.anti.update_pair(node, term.topology_key, delta)


def existing_anti_affinity_counts(
    pod: Pod,
    namespace_labels: Mapping[str, str],
    nodes: Sequence[NodeInfo],
    tallies: Tallies[TopologyPair] | None = None,
    journal: Journal | None = None,
) -> PairCounts:
    """Pairs of the existing pods' anti-affinity terms selecting ``pod``.
    With ``tallies`` (the plugin's, for the snapshot's nodes) kept from cycle
    to cycle, by the pod's namespace and labels and its namespace's labels;
    ``journal``: the snapshot's, when ``nodes`` are its nodes with pods with
    affinity (``scheduler.framework.tally``)."""
    contribution = _existing_anti_contribution(pod, namespace_labels)
    if tallies is not None:
        labels = frozenset(pod.labels.items())
        key = ("existing", pod.namespace, labels, frozenset(namespace_labels.items()))
        (totals,) = tallies.get(key, 1, contribution).update(nodes, journal)
        return PairCounts(totals)
    counts = PairCounts()
    for node_info in nodes:
        for _, pair, count in contribution(node_info):
            counts[pair] = counts.get(pair, 0) + count
    return counts


def _existing_anti_contribution(
    pod: Pod, namespace_labels: Mapping[str, str]
) -> Callable[[NodeInfo], Contribution[TopologyPair]]:
    namespace, labels = pod.namespace, pod.labels

    def contribution(node_info: NodeInfo) -> Contribution[TopologyPair]:
        with_affinity = node_info.pods_with_affinity
        if not with_affinity:
            return ()
        node = node_info.node
        if node is None:
            return ()
        node_labels = node.labels
        counts: dict[TopologyPair, int] = {}
        for existing in with_affinity.values():
            for term in existing.pod_affinity.required_anti_affinity:
                value = node_labels.get(term.topology_key)
                if value is not None and term.matches(namespace, labels, namespace_labels):
                    pair = (term.topology_key, value)
                    counts[pair] = counts.get(pair, 0) + 1
        return tuple((0, pair, count) for pair, count in counts.items())

    return contribution


def incoming_counts(
    affinity_terms: tuple[AffinityTerm, ...],
    anti_affinity_terms: tuple[AffinityTerm, ...],
    nodes: Sequence[NodeInfo],
    tallies: Tallies[TopologyPair] | None = None,
    journal: Journal | None = None,
) -> tuple[PairCounts, PairCounts]:
    """Pairs of the existing pods matching all the incoming pod's affinity
    terms (once per term), and each of its anti-affinity terms. With
    ``tallies`` kept from cycle to cycle, by the (resolved) terms; ``journal``:
    the snapshot's, when ``nodes`` is its node list."""
    if not affinity_terms and not anti_affinity_terms:
        return PairCounts(), PairCounts()
    contribution = _incoming_contribution(affinity_terms, anti_affinity_terms)
    if tallies is not None:
        key = ("incoming", affinity_terms, anti_affinity_terms)
        affinity_totals, anti_totals = tallies.get(key, 2, contribution).update(nodes, journal)
        return PairCounts(affinity_totals), PairCounts(anti_totals)
    affinity, anti = PairCounts(), PairCounts()
    slots = (affinity, anti)
    for node_info in nodes:
        for slot, pair, count in contribution(node_info):
            counts = slots[slot]
            counts[pair] = counts.get(pair, 0) + count
    return affinity, anti


def _incoming_contribution(
    affinity_terms: tuple[AffinityTerm, ...], anti_affinity_terms: tuple[AffinityTerm, ...]
) -> Callable[[NodeInfo], Contribution[TopologyPair]]:
    def contribution(node_info: NodeInfo) -> Contribution[TopologyPair]:
        pods = node_info.pods
        if not pods:
            return ()
        node = node_info.node
        if node is None:
            return ()
        node_labels = node.labels
        affinity: dict[TopologyPair, int] = {}
        anti: dict[TopologyPair, int] = {}
        for existing in pods.values():
            if affinity_terms and matches_all(affinity_terms, existing):
                for term in affinity_terms:
                    value = node_labels.get(term.topology_key)
                    if value is not None:
                        pair = (term.topology_key, value)
                        affinity[pair] = affinity.get(pair, 0) + 1
            for term in anti_affinity_terms:
                value = node_labels.get(term.topology_key)
                if value is not None and term.matches(
                    existing.namespace, existing.labels, _NO_LABELS
                ):
                    pair = (term.topology_key, value)
                    anti[pair] = anti.get(pair, 0) + 1
        if not affinity and not anti:
            return ()
        return tuple((0, pair, count) for pair, count in affinity.items()) + tuple(
            (1, pair, count) for pair, count in anti.items()
        )

    return contribution


def satisfies_pod_affinity(state: PreFilterState, pod: Pod, labels: Mapping[str, str]) -> bool:
    pods_exist = True
    for term in state.affinity_terms:
        value = labels.get(term.topology_key)
        if value is None:
            return False
        if state.affinity.get((term.topology_key, value), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # The first pod of a group that selects itself may go anywhere.
    return not state.affinity and matches_all(state.affinity_terms, pod)


def satisfies_pod_anti_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    """No pod matching one of the incoming pod's anti-affinity terms in the
    node's domain of that term's key (the plugin's Filter inlines this)."""
    anti = state.anti
    if not anti:
        return True
    for key in state.anti_keys:
        value = labels.get(key)
        if value is not None and anti.get((key, value), 0) > 0:
            return False
    return True


def satisfies_existing_anti_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    """No existing pod's anti-affinity term selecting the incoming pod in one
    of the node's domains (the plugin's Filter inlines this)."""
    counts = state.existing_anti
    if not counts:
        return True
    for pair in labels.items():  # noqa: SIM110 - hot path, no generator
        if counts.get(pair, 0) > 0:
            return False
    return True
