"""TaintToleration: Filter, PreScore, Score and NormalizeScore over node taints.

- Filter: the first ``NoSchedule``/``NoExecute`` taint that no toleration of
  the pod tolerates rejects the node (UnschedulableAndUnresolvable). Since
  v1.35 (kubernetes PR #134740, also in 1.34 patches) upstream no longer puts
  the taint's key and value in the reason, which lands in pod status.
- PreScore keeps the tolerations that can tolerate ``PreferNoSchedule`` taints
  (effect ``PreferNoSchedule`` or empty); Score counts the node's
  ``PreferNoSchedule`` taints they do not tolerate; NormalizeScore maps the
  counts to 0..100 reversed (fewest untolerated taints = 100).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from scheduler.framework import (
    MAX_NODE_SCORE,
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
    PreScorePlugin,
    QueueingHint,
    ScoreExtensions,
    ScorePlugin,
    SignPlugin,
    StateKey,
    Status,
    Taint,
    Toleration,
    default_normalize,
)

NAME = "TaintToleration"
REASON_UNTOLERATED = "node(s) had untolerated taint(s)"

EFFECT_NO_SCHEDULE = "NoSchedule"
EFFECT_NO_EXECUTE = "NoExecute"
EFFECT_PREFER_NO_SCHEDULE = "PreferNoSchedule"
_HARD_EFFECTS = frozenset({EFFECT_NO_SCHEDULE, EFFECT_NO_EXECUTE})


@dataclass(frozen=True, slots=True)
class PreScoreState:
    tolerations: tuple[Toleration, ...]

    def clone(self) -> PreScoreState:
        return self  # immutable


PRE_SCORE_KEY: StateKey[PreScoreState] = StateKey(f"PreScore{NAME}")


class TaintToleration(
    FilterPlugin, PreScorePlugin, ScorePlugin, ScoreExtensions, SignPlugin, EnqueueExtensions
):
    name = NAME

    def sign_pod(self, pod: Pod) -> Hashable:
        """Node-local: the result for a node depends only on this part of the pod."""
        return pod.tolerations

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
                self.is_schedulable_after_pod_toleration_change,
            ),
        ]

    def is_schedulable_after_node_change(
        self, pod: Pod, old: Node | None, new: Node | None
    ) -> QueueingHint:
        if new is None:
            return QueueingHint.QUEUE_SKIP
        was_untolerated = (
            old is None or find_untolerated_taint(old.taints, pod.tolerations) is not None
        )
        if was_untolerated and find_untolerated_taint(new.taints, pod.tolerations) is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_toleration_change(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        # Tolerations can only be added, so any change to this pod may help it.
        if new is not None and new.uid == pod.uid:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        if not node.taints or find_untolerated_taint(node.taints, pod.tolerations) is None:
            return None
        return Status.unresolvable(REASON_UNTOLERATED)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_KEY, PreScoreState(prefer_no_schedule_tolerations(pod.tolerations)))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        pre_score = state.get(PRE_SCORE_KEY)
        if pre_score is None:
            return 0, Status.as_error(f"reading {PRE_SCORE_KEY.name!r} from cycle state: not found")
        node = node_info.node
        if node is None:
            return 0, Status.as_error("node not found")
        if not node.taints:
            return 0, None
        return count_untolerated_prefer_no_schedule(node.taints, pre_score.tolerations), None

    def score_extensions(self) -> ScoreExtensions:
        return self

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, reverse=True, scores=scores)
        return None

    def normalize_values(self, values: list[int]) -> list[int]:
        return default_normalize(values, MAX_NODE_SCORE, reverse=True)


def tolerated(taint: Taint, tolerations: Iterable[Toleration]) -> bool:
    return any(toleration.tolerates(taint) for toleration in tolerations)


def find_untolerated_taint(
    taints: Iterable[Taint], tolerations: Sequence[Toleration]
) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration tolerates, if any."""
    for taint in taints:
        if taint.effect in _HARD_EFFECTS and not tolerated(taint, tolerations):
            return taint
    return None


def prefer_no_schedule_tolerations(tolerations: Iterable[Toleration]) -> tuple[Toleration, ...]:
    # An empty effect tolerates every effect, PreferNoSchedule included.
    return tuple(t for t in tolerations if t.effect in ("", EFFECT_PREFER_NO_SCHEDULE))


def count_untolerated_prefer_no_schedule(
    taints: Iterable[Taint], tolerations: Sequence[Toleration]
) -> int:
    return sum(
        1
        for taint in taints
        if taint.effect == EFFECT_PREFER_NO_SCHEDULE and not tolerated(taint, tolerations)
    )


def default_normalize_score(max_priority: int, *, reverse: bool, scores: list[NodeScore]) -> None:
    """``default_normalize`` applied in place to NodeScores."""
    normalized = default_normalize([entry.score for entry in scores], max_priority, reverse=reverse)
    for entry, value in zip(scores, normalized, strict=True):
        entry.score = value


def new(args: object, handle: Handle) -> TaintToleration:
    return TaintToleration()
