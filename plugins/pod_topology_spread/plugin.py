"""PodTopologySpread: spread matching pods evenly over topology domains.

Hard constraints (DoNotSchedule) filter, soft ones (ScheduleAnyway) score;
pods without constraints get the profile's default constraints (the system
defaults, hostname maxSkew 3 and zone maxSkew 5, both soft), selecting pods
of the same services and controller. PreFilter and PreScore return Skip when
no constraint applies, so the plugin costs nothing for such pods.

Reads other pods, so it is not node-local and never signs pods (no
``SignPlugin``): its verdicts must not be reused across cycles.
"""

from __future__ import annotations

from collections.abc import Sequence

from plugins.pod_topology_spread.args import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    DefaultingType,
    NodeInclusionPolicy,
    PodTopologySpreadArgs,
)
from plugins.pod_topology_spread.constraints import (
    SYSTEM_DEFAULT_CONSTRAINTS,
    Constraint,
    DefaultSelector,
    default_constraint_dicts,
    filter_constraints,
    node_has_all_keys,
    pod_matches_any,
)
from plugins.pod_topology_spread.filtering import (
    PreFilterState,
    compute_pre_filter_state,
    violated,
)
from plugins.pod_topology_spread.scoring import (
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
from scheduler.framework.labels import LabelSelectorError
from scheduler.framework.tally import Tallies, journal_of

NAME = "PodTopologySpread"
REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
REASON_NODE_LABEL_NOT_MATCH = REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

PRE_FILTER_KEY: StateKey[PreFilterState] = StateKey(f"PreFilter{NAME}")
PRE_SCORE_KEY: StateKey[PreScoreState] = StateKey(f"PreScore{NAME}")

# Filter's verdicts, made once: a Status is immutable, and a constant one is
# tagged with the plugin's name once rather than once per rejected node.
_NODE_LABEL_NOT_MATCH = Status.unresolvable(REASON_NODE_LABEL_NOT_MATCH)
_CONSTRAINTS_NOT_MATCH = Status.unschedulable(REASON_CONSTRAINTS_NOT_MATCH)


class PodTopologySpread(
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
        self,
        snapshot: SnapshotLister,
        default_constraints: tuple[dict[str, object], ...],
        default_selector: DefaultSelector | None,
        *,
        system_defaulted: bool,
    ) -> None:
        self._snapshot = snapshot
        self._default_constraints = default_constraints
        self._default_selector = default_selector
        self._system_defaulted = system_defaulted
        # PreFilter's per-node counts, kept across cycles (scheduler.framework.tally).
        self._tallies: Tallies[str] = Tallies()

    # ------------------------------------------------------------ constraints
    def constraints(self, pod: Pod, action: str) -> tuple[Constraint, ...]:
        """The pod's constraints of ``action``, or the defaults (raises
        LabelSelectorError for a malformed selector)."""
        own = pod.spec.get("topologySpreadConstraints")
        if own:
            return filter_constraints(own, pod.labels, action)
        if not self._default_constraints or self._default_selector is None:
            return ()
        if not any(c.get("whenUnsatisfiable") == action for c in self._default_constraints):
            return ()
        selector = self._default_selector(pod)
        if selector.empty:
            return ()
        return filter_constraints(self._default_constraints, pod.labels, action, selector)

    # ------------------------------------------------------------ events
    def events_to_register(self) -> list[ClusterEventWithHint]:
        pod_actions = (
            ActionType.ADD
            | ActionType.UPDATE_POD_LABEL
            | ActionType.UPDATE_POD_TOLERATION
            | ActionType.DELETE
        )
        node_actions = (
            ActionType.ADD
            | ActionType.DELETE
            | ActionType.UPDATE_NODE_LABEL
            | ActionType.UPDATE_NODE_TAINT
        )
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, pod_actions), self.is_schedulable_after_pod_change
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, node_actions),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_change(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        if (new is not None and not _involved(new, pod)) or (
            old is not None and not _involved(old, pod)
        ):
            return QueueingHint.QUEUE_SKIP
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except LabelSelectorError:
            return QueueingHint.QUEUE
        if old is not None and new is not None:
            if (
                pod.uid == new.uid
                and new.tolerations != old.tolerations
                and any(c.node_taints_policy is NodeInclusionPolicy.HONOR for c in constraints)
            ):
                return QueueingHint.QUEUE
            if dict(new.labels) == dict(old.labels):
                return QueueingHint.QUEUE_SKIP
            for constraint in constraints:
                if constraint.selector.matches(old.labels) != constraint.selector.matches(
                    new.labels
                ):
                    return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        changed = new if new is not None else old
        if changed is not None and pod_matches_any(constraints, changed.labels):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(
        self, pod: Pod, old: Node | None, new: Node | None
    ) -> QueueingHint:
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except LabelSelectorError:
            return QueueingHint.QUEUE
        old_matching = old is not None and node_has_all_keys(old.labels, constraints)
        new_matching = new is not None and node_has_all_keys(new.labels, constraints)
        if old is not None and new is not None:
            if old_matching != new_matching:
                return QueueingHint.QUEUE
            if new_matching and (
                any(
                    old.labels.get(c.topology_key) != new.labels.get(c.topology_key)
                    for c in constraints
                )
                or old.taints != new.taints
            ):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if new is not None:
            return QueueingHint.QUEUE if new_matching else QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if old_matching else QueueingHint.QUEUE_SKIP

    # ------------------------------------------------------------ PreFilter
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except LabelSelectorError as error:
            return None, Status.as_error(f"get constraints from pod: {error}")
        if not constraints:
            return None, Status.skip()
        snapshot = self._snapshot
        journal = journal_of(snapshot) if nodes is snapshot.node_infos() else None
        state.write(
            PRE_FILTER_KEY,
            compute_pre_filter_state(pod, constraints, nodes, self._tallies, journal),
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
            return Status.as_error(f"reading {PRE_FILTER_KEY.name!r} from cycleState: not found")
        pre_filter.update_with_pod(changed, pod, node_info.node, delta)
        return None

    # --------------------------------------------------------------- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        pre_filter = state.get(PRE_FILTER_KEY)
        if pre_filter is None:
            return Status.as_error(f"reading {PRE_FILTER_KEY.name!r} from cycleState: not found")
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        missing_label, too_skewed = violated(pre_filter, pod, node)
        if missing_label:
            return _NODE_LABEL_NOT_MATCH
        if too_skewed:
            return _CONSTRAINTS_NOT_MATCH
        return None

    # ------------------------------------------------------- PreScore/Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        all_nodes = self._snapshot.node_infos()
        if not all_nodes:
            return Status.skip()
        try:
            constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        except LabelSelectorError as error:
            return Status.as_error(f"calculating preScoreState: {error}")
        if not constraints:
            return Status.skip()
        require_all = bool(pod.spec.get("topologySpreadConstraints")) or not self._system_defaulted
        state.write(
            PRE_SCORE_KEY,
            compute_pre_score_state(
                pod, constraints, nodes, all_nodes, require_all_topologies=require_all
            ),
        )
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        pre_score = state.get(PRE_SCORE_KEY)
        if pre_score is None:
            return 0, Status.as_error(f"reading {PRE_SCORE_KEY.name!r} from cycleState: not found")
        return score_node(pre_score, pod, node_info), None

    def score_extensions(self) -> ScoreExtensions:
        return self

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        pre_score = state.get(PRE_SCORE_KEY)
        if pre_score is None:
            return Status.as_error(f"reading {PRE_SCORE_KEY.name!r} from cycleState: not found")
        normalize(pre_score, scores)
        return None


def _involved(changed: Pod, pod: Pod) -> bool:
    """Upstream ``involvedInTopologySpreading``: the pod itself, or a pod bound
    (or nominated) in the same namespace."""
    if changed.uid == pod.uid:
        return True
    if not changed.node_name and not changed.nominated_node_name:
        return False
    return changed.namespace == pod.namespace


def new(args: PodTopologySpreadArgs | None, handle: Handle) -> PodTopologySpread:
    args = args or PodTopologySpreadArgs()
    system = args.defaulting_type is DefaultingType.SYSTEM
    defaults = SYSTEM_DEFAULT_CONSTRAINTS if system else args.default_constraints
    selector = None
    if defaults:
        informers = handle.informers
        selector = DefaultSelector(
            informers.store("services"),
            informers.store("replicationcontrollers"),
            informers.store("replicasets"),
            informers.store("statefulsets"),
        )
    return PodTopologySpread(
        handle.snapshot(),
        default_constraint_dicts(defaults),
        selector,
        system_defaulted=system,
    )
