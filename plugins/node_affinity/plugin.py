"""NodeAffinity: PreFilter, Filter, PreScore, Score and NormalizeScore.

Upstream ``pkg/scheduler/framework/plugins/nodeaffinity``:

- PreFilter skips the pod when it has no ``nodeSelector``, no required node
  affinity and the profile adds none. When every required term pins node
  names (``metadata.name In`` match fields), the candidates narrow to the
  union of those names; an empty union is UnschedulableAndUnresolvable
  ``pod affinity terms conflict``.
- Filter: a node outside the args' ``addedAffinity`` is rejected with
  ``node(s) didn't match scheduler-enforced node affinity``; a node that does
  not satisfy the pod's nodeSelector and required affinity with
  ``node(s) didn't match Pod's node affinity/selector``; both
  UnschedulableAndUnresolvable (evicting pods cannot help).
- PreScore skips pods without preferred terms (theirs or added); Score sums
  the weights of the matching terms; NormalizeScore scales to 0..100 by the
  highest score.

The selectors are parsed once per pod version (``Pod.required_affinity``,
``Pod.preferred_affinity``), so nothing needs to go into CycleState; the
result for a node depends only on those and on the node (``SignPlugin``).

Queueing: only a node that is added, or whose labels change from not matching
to matching, can help a pod this plugin rejected.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from plugins.node_affinity.args import NodeAffinityArgs
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
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ScoreExtensions,
    ScorePlugin,
    SignPlugin,
    Status,
    default_normalize,
)
from scheduler.framework.nodeaffinity import NodeSelector, PreferredTerms

NAME = "NodeAffinity"
REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"
# Filter's verdicts, made once (a Status is immutable; tagged once per plugin).
_ENFORCED_NOT_MATCH = Status.unresolvable(REASON_ENFORCED)
_POD_NOT_MATCH = Status.unresolvable(REASON_POD)


class NodeAffinity(
    PreFilterPlugin,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ScoreExtensions,
    SignPlugin,
    EnqueueExtensions,
):
    name = NAME

    def __init__(
        self,
        added_required: NodeSelector | None = None,
        added_preferred: PreferredTerms | None = None,
    ) -> None:
        self._added_required = added_required
        self._added_preferred = added_preferred

    def sign_pod(self, pod: Pod) -> Hashable:
        """Node-local: the result for a node depends only on this part of the pod."""
        return (pod.required_affinity, pod.preferred_affinity, pod.preferred_affinity_error)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            )
        ]

    def is_schedulable_after_node_change(
        self, pod: Pod, old: Node | None, new: Node | None
    ) -> QueueingHint:
        if new is None:
            return QueueingHint.QUEUE_SKIP
        if self._added_required is not None and not self._added_required.matches(
            new.name, new.labels
        ):
            return QueueingHint.QUEUE_SKIP
        required = pod.required_affinity
        if not required.matches(new.name, new.labels):
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        # An update helps only if it turned a non-matching node into a matching one.
        if required.matches(old.name, old.labels):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        required = pod.required_affinity
        if required.empty and self._added_required is None:
            return None, Status.skip()
        if required.conflicting:
            return None, Status.unresolvable(REASON_CONFLICT)
        if required.pinned_names is not None:
            return PreFilterResult(required.pinned_names), None
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        if self._added_required is not None and not self._added_required.matches(
            node.name, node.labels
        ):
            return _ENFORCED_NOT_MATCH
        if not pod.required_affinity.matches(node.name, node.labels):
            return _POD_NOT_MATCH
        return None

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        if pod.preferred_affinity_error:
            return Status.as_error(pod.preferred_affinity_error)
        if pod.preferred_affinity is None and self._added_preferred is None:
            return Status.skip()
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        node = node_info.node
        if node is None:
            return 0, Status.as_error("node not found")
        if pod.preferred_affinity_error:
            return 0, Status.as_error(pod.preferred_affinity_error)
        total = 0
        if self._added_preferred is not None:
            total += self._added_preferred.score(node.name, node.labels)
        if pod.preferred_affinity is not None:
            total += pod.preferred_affinity.score(node.name, node.labels)
        return total, None

    def score_extensions(self) -> ScoreExtensions:
        return self

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        normalized = self.normalize_values([entry.score for entry in scores])
        for entry, value in zip(scores, normalized, strict=True):
            entry.score = value
        return None

    def normalize_values(self, values: list[int]) -> list[int]:
        return default_normalize(values, MAX_NODE_SCORE, reverse=False)


def new(args: object, handle: Handle) -> NodeAffinity:
    if args is None:
        args = NodeAffinityArgs()
    if not isinstance(args, NodeAffinityArgs):
        raise TypeError(f"{NAME} wants NodeAffinityArgs, got {type(args).__name__}")
    return NodeAffinity(args.required(), args.preferred())
