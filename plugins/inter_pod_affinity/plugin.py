"""InterPodAffinity: required and preferred pod affinity and anti-affinity.

Filter keeps the incoming pod's required affinity and anti-affinity and the
required anti-affinity of pods already running; Score prefers nodes by the
preferred terms of both sides (and existing pods' required affinity, by
``hardPodAffinityWeight``). Terms come parsed with the pod
(``Pod.pod_affinity``); term namespace selectors are resolved against the
namespaces informer once per cycle.

Reads other pods, so it is not node-local and never signs pods (no
``SignPlugin``): its verdicts must not be reused across cycles. PreFilter and
PreScore return Skip when nothing applies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from plugins.inter_pod_affinity.args import InterPodAffinityArgs
from plugins.inter_pod_affinity.filtering import (
    PairCounts,
    PreFilterState,
    TopologyPair,
    existing_anti_affinity_counts,
    incoming_counts,
    matches_all,
    satisfies_pod_affinity,
)
from plugins.inter_pod_affinity.scoring import (
    IncomingTerms,
    PreScoreState,
    compute_pre_score_state,
    normalize,
    score_node,
)
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EnqueueExtensions,
    EventResource,
    FilterPlugin,
    Handle,
    Node,
    NodeInfo,
    NodeScore,
    ObjectStore,
    Pod,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ScoreExtensions,
    ScorePlugin,
    SnapshotLister,
    StateKey,
    Status,
)
from scheduler.framework.podaffinity import AffinityTerm, WeightedAffinityTerm
from scheduler.framework.tally import Tallies, journal_of

NAME = "InterPodAffinity"
REASON_EXISTING_ANTI_AFFINITY_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
REASON_AFFINITY_NOT_MATCH = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

PRE_FILTER_KEY: StateKey[PreFilterState] = StateKey(f"PreFilter{NAME}")
PRE_SCORE_KEY: StateKey[PreScoreState] = StateKey(f"PreScore{NAME}")

_NO_LABELS: Mapping[str, str] = {}
_AFFINITY_NOT_MATCH = Status.unresolvable(REASON_AFFINITY_NOT_MATCH)
_ANTI_AFFINITY_NOT_MATCH = Status.unschedulable(REASON_ANTI_AFFINITY_NOT_MATCH)
_EXISTING_ANTI_AFFINITY_NOT_MATCH = Status.unschedulable(REASON_EXISTING_ANTI_AFFINITY_NOT_MATCH)


class InterPodAffinity(
    PreFilterPlugin,
    PreFilterExtensions,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ScoreExtensions,
    EnqueueExtensions,
):
    name = NAME

    def __init__(
        self, args: InterPodAffinityArgs, snapshot: SnapshotLister, namespaces: ObjectStore
    ) -> None:
        self._args = args
        self._snapshot = snapshot
        self._namespaces = namespaces
        # PreFilter's per-node pair counts, kept across cycles (scheduler.framework.tally).
        self._tallies: Tallies[TopologyPair] = Tallies()
        self._score_tallies: Tallies[TopologyPair] = Tallies()  # PreScore's

    # ------------------------------------------------------------ events
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.POD,
                    ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE,
                ),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_change(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        if old is not None and new is not None and pod.uid == new.uid:
            return QueueingHint.QUEUE  # its own labels changed
        for changed in (new, old):
            if changed is not None and not changed.node_name and not changed.nominated_node_name:
                return QueueingHint.QUEUE_SKIP
        terms = pod.pod_affinity.required_affinity
        anti_terms = pod.pod_affinity.required_anti_affinity
        if old is not None and new is not None:
            if not matches_all(terms, old) and matches_all(terms, new):
                return QueueingHint.QUEUE
            if matches_all(anti_terms, old) and not matches_all(anti_terms, new):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if new is not None:
            return QueueingHint.QUEUE if matches_all(terms, new) else QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE_SKIP
        if matches_all(anti_terms, old):
            return QueueingHint.QUEUE
        if matches_all(old.pod_affinity.required_anti_affinity, pod):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(
        self, pod: Pod, old: Node | None, new: Node | None
    ) -> QueueingHint:
        if new is None:
            return QueueingHint.QUEUE_SKIP
        for term in pod.pod_affinity.required_affinity:
            key = term.topology_key
            if old is None:
                if key in new.labels:
                    return QueueingHint.QUEUE
                continue
            before, after = old.labels.get(key), new.labels.get(key)
            if after is not None and before != after:
                return QueueingHint.QUEUE
        for term in pod.pod_affinity.required_anti_affinity:
            if old is None:
                return QueueingHint.QUEUE
            key = term.topology_key
            before, after = old.labels.get(key), new.labels.get(key)
            if before is not None and before != after:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # ------------------------------------------------------------ namespaces
    def _namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """Upstream ``GetNamespaceLabelsSnapshot``: empty when not known."""
        raw = self._namespaces.get(namespace)
        if raw is None:
            return _NO_LABELS
        labels: Mapping[str, str] = (raw.get("metadata") or {}).get("labels") or _NO_LABELS
        return labels

    def _resolve(self, term: AffinityTerm) -> AffinityTerm:
        """Upstream ``mergeAffinityTermNamespacesIfNotEmpty``."""
        if term.namespace_selector.empty:
            return term
        selector = term.namespace_selector
        names = []
        for namespace in self._namespaces.list():
            metadata = namespace.get("metadata") or {}
            if selector.matches(metadata.get("labels") or _NO_LABELS):
                names.append(metadata.get("name") or "")
        return term.with_selected_namespaces(names)

    def _resolve_weighted(
        self, terms: Sequence[WeightedAffinityTerm]
    ) -> tuple[WeightedAffinityTerm, ...]:
        return tuple(WeightedAffinityTerm(self._resolve(t.term), t.weight) for t in terms)

    # ------------------------------------------------------------ PreFilter
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        terms = pod.pod_affinity
        if terms.error:
            return None, Status.unresolvable(f"parsing pod: {terms.error}")
        affinity_terms = tuple(self._resolve(term) for term in terms.required_affinity)
        anti_terms = tuple(self._resolve(term) for term in terms.required_anti_affinity)
        namespace_labels = self._namespace_labels(pod.namespace)
        snapshot = self._snapshot
        journal = journal_of(snapshot)
        with_affinity = snapshot.have_pods_with_affinity()
        existing_anti = (
            existing_anti_affinity_counts(
                pod, namespace_labels, with_affinity, self._tallies, journal
            )
            if with_affinity
            else PairCounts()
        )
        if not existing_anti and not affinity_terms and not anti_terms:
            return None, Status.skip()
        affinity, anti = incoming_counts(
            affinity_terms,
            anti_terms,
            nodes,
            self._tallies,
            journal if nodes is snapshot.node_infos() else None,
        )
        state.write(
            PRE_FILTER_KEY,
            PreFilterState(
                affinity_terms, anti_terms, namespace_labels, existing_anti, affinity, anti
            ),
        )
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        return self

    def add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._update(state, pod, pod_to_add, node_info, 1)

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._update(state, pod, pod_to_remove, node_info, -1)

    def _update(
        self, state: CycleState, pod: Pod, changed: Pod, node_info: NodeInfo, delta: int
    ) -> Status | None:
        pre_filter = state.get(PRE_FILTER_KEY)
        if pre_filter is None:
            return Status.as_error(f"error reading {PRE_FILTER_KEY.name!r} from cycleState")
        pre_filter.update_with_pod(pod, changed, node_info.node, delta)
        return None

    # --------------------------------------------------------------- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        pre_filter = state.get(PRE_FILTER_KEY)
        if pre_filter is None:
            return Status.as_error(f"error reading {PRE_FILTER_KEY.name!r} from cycleState")
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        labels = node.labels
        if pre_filter.affinity_terms and not satisfies_pod_affinity(pre_filter, pod, labels):
            return _AFFINITY_NOT_MATCH
        # satisfies_pod_anti_affinity and satisfies_existing_anti_affinity,
        # inlined: this runs once per node per cycle.
        anti = pre_filter.anti
        if anti:
            for key in pre_filter.anti_keys:
                value = labels.get(key)
                if value is not None and anti.get((key, value), 0) > 0:
                    return _ANTI_AFFINITY_NOT_MATCH
        existing = pre_filter.existing_anti
        if existing:
            for pair in labels.items():
                if existing.get(pair, 0) > 0:
                    return _EXISTING_ANTI_AFFINITY_NOT_MATCH
        return None

    # ------------------------------------------------------- PreScore/Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        terms = pod.pod_affinity
        has_constraints = bool(terms.preferred_affinity or terms.preferred_anti_affinity)
        if self._args.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.skip()
        if terms.error:
            return Status.as_error(f"failed to parse pod: {terms.error}")
        all_nodes = (
            self._snapshot.node_infos()
            if has_constraints
            else self._snapshot.have_pods_with_affinity()
        )
        incoming = IncomingTerms(
            pod,
            self._resolve_weighted(terms.preferred_affinity),
            self._resolve_weighted(terms.preferred_anti_affinity),
            self._namespace_labels(pod.namespace),
        )
        pre_score = compute_pre_score_state(
            incoming,
            all_nodes,
            all_pods=has_constraints,
            hard_pod_affinity_weight=self._args.hard_pod_affinity_weight,
            tallies=self._score_tallies,
            journal=journal_of(self._snapshot),
        )
        if not pre_score.topology_score:
            return Status.skip()
        state.write(PRE_SCORE_KEY, pre_score)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        pre_score = state.get(PRE_SCORE_KEY)
        if pre_score is None:
            return 0, Status.as_error(f"failed to read {PRE_SCORE_KEY.name!r} from cycleState")
        node = node_info.node
        if node is None:
            return 0, Status.as_error("node not found")
        return score_node(pre_score, node), None

    def score_extensions(self) -> ScoreExtensions:
        return self

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        pre_score = state.get(PRE_SCORE_KEY)
        if pre_score is None:
            return Status.as_error(f"failed to read {PRE_SCORE_KEY.name!r} from cycleState")
        if not pre_score.topology_score:
            return None
        for entry, value in zip(scores, normalize([e.score for e in scores]), strict=True):
            entry.score = value
        return None


def new(args: InterPodAffinityArgs | None, handle: Handle) -> InterPodAffinity:
    return InterPodAffinity(
        args or InterPodAffinityArgs(), handle.snapshot(), handle.informers.store("namespaces")
    )
