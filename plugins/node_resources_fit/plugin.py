"""NodeResourcesFit: PreFilter, Filter, PreScore and Score over node resources.

The thin adapter over the pure ``fit`` (Filter) and ``scoring`` (Score)
modules. PreFilter stores the pod's effective request (computed once by
``parse_pod``: containers, init containers, sidecars, overhead) in CycleState;
Filter rejects with every ``Insufficient <resource>`` / ``Too many pods``
reason, as UnschedulableAndUnresolvable when some request exceeds the whole
node. The scores are already in 0..100, so there is no NormalizeScore.

Queueing: a rejected pod may fit after a pod on a node goes away or shrinks,
or after a node is added or grows its allocatable; the hints check that the
change concerns a resource the pod asks for.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from plugins.node_resources_fit.args import NodeResourcesFitArgs
from plugins.node_resources_fit.fit import (
    any_requested_resource_decreased,
    any_requested_resource_increased,
    fits_request,
    is_fit,
)
from plugins.node_resources_fit.scoring import build_scorer, pod_score_requests, score_node
from scheduler.framework import (
    CPU,
    MEMORY,
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
    Pod,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    Resource,
    ScorePlugin,
    SignPlugin,
    StateKey,
    Status,
)
from scheduler.framework.deviceclasses import (
    DraDevicesSlot,
    ExtendedResourceClasses,
    dra_allocatable_and_used,
    dra_devices,
)

NAME = "NodeResourcesFit"


@dataclass(frozen=True, slots=True)
class PreFilterState:
    request: Resource

    def clone(self) -> PreFilterState:
        return self  # immutable


@dataclass(frozen=True, slots=True)
class PreScoreState:
    # Aligned with the scoring strategy's resources.
    pod_requests: tuple[int, ...]

    def clone(self) -> PreScoreState:
        return self  # immutable


PRE_FILTER_KEY: StateKey[PreFilterState] = StateKey(f"PreFilter{NAME}")
PRE_SCORE_KEY: StateKey[PreScoreState] = StateKey(f"PreScore{NAME}")


class NodeResourcesFit(
    PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, SignPlugin, EnqueueExtensions
):
    name = NAME

    def __init__(
        self,
        args: NodeResourcesFitArgs,
        extended: ExtendedResourceClasses | None = None,
        dra_slot: DraDevicesSlot | None = None,
    ) -> None:
        # Extended resources a DeviceClass serves are left to DynamicResources
        # on nodes that do not advertise them (DRAExtendedResource, beta on),
        # and scored by the devices DynamicResources counts (``dra_slot``).
        self._extended = extended
        self._dra_slot = dra_slot
        self._ignored = frozenset(args.ignored_resources)
        self._ignored_groups = frozenset(args.ignored_resource_groups)
        self._resources = tuple(spec.name for spec in args.scoring_strategy.resources)
        self._scorer = build_scorer(args.scoring_strategy)
        # The default resources get a direct path: Score runs per node per cycle.
        self._cpu_memory_only = self._resources == (CPU, MEMORY)

    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Node-local: the result for a node depends only on this part of the pod
        (not when DynamicResources may serve one of its extended resources)."""
        if self._uses_dra(pod):
            return None
        return (pod.requests.key(), pod.non_zero_requests.key())

    def _uses_dra(self, pod: Pod) -> bool:
        scalar = pod.requests.scalar
        return bool(scalar) and self._extended is not None and self._extended.any_backed(scalar)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN
                ),
                self.is_schedulable_after_pod_event,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
                ),
                self.is_schedulable_after_node_change,
            ),
            *(
                [
                    ClusterEventWithHint(
                        ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)
                    )
                ]
                if self._extended is not None
                else []
            ),
        ]

    def is_schedulable_after_pod_event(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        if new is None:
            # Deleting a pod that neither ran nor was nominated anywhere frees nothing.
            if old is None or (not old.node_name and not old.nominated_node_name):
                return QueueingHint.QUEUE_SKIP
            return QueueingHint.QUEUE
        if new.uid == pod.uid:
            return QueueingHint.QUEUE  # the waiting pod itself scaled down
        if not new.node_name or old is None:
            return QueueingHint.QUEUE_SKIP
        if any_requested_resource_decreased(pod.requests, old.requests, new.requests):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(
        self, pod: Pod, old: Node | None, new: Node | None
    ) -> QueueingHint:
        if new is None or not is_fit(pod, new):
            return QueueingHint.QUEUE_SKIP  # too small for the pod even when empty
        if old is None:
            return QueueingHint.QUEUE
        if any_requested_resource_increased(pod.requests, old.allocatable, new.allocatable):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(PRE_FILTER_KEY, PreFilterState(pod.requests))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        pre_filter = state.get(PRE_FILTER_KEY)
        if pre_filter is None:
            return Status.as_error(f"reading {PRE_FILTER_KEY.name!r} from cycle state: not found")
        insufficient = fits_request(
            pre_filter.request, node_info, self._ignored, self._ignored_groups
        )
        if insufficient and self._extended is not None and pod.requests.scalar:
            extended = self._extended
            scalar = node_info.allocatable.scalar
            insufficient = [
                item
                for item in insufficient
                if not extended.delegated(item.resource, scalar.get(item.resource, 0))
            ]
        if not insufficient:
            return None
        reasons = tuple(item.reason for item in insufficient)
        if any(item.unresolvable for item in insufficient):
            return Status.unresolvable(*reasons)
        return Status.unschedulable(*reasons)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_KEY, PreScoreState(pod_score_requests(pod, self._resources)))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        pre_score = state.get(PRE_SCORE_KEY)
        pod_requests = (
            pre_score.pod_requests
            if pre_score is not None
            else pod_score_requests(pod, self._resources)
        )
        if self._cpu_memory_only:
            # Same as score_node for (cpu, memory): a resource with no
            # allocatable is left out of the mean.
            allocatable = node_info.allocatable
            used = node_info.non_zero_requested
            cpu, memory = allocatable.milli_cpu, allocatable.memory
            requested = (
                used.milli_cpu + pod_requests[0] if cpu else 0,
                used.memory + pod_requests[1] if memory else 0,
            )
            return self._scorer(requested, (cpu, memory)), None
        return (
            score_node(self._scorer, self._resources, pod_requests, node_info, self._dra_counts),
            None,
        )

    def _dra_counts(self, node_info: NodeInfo, name: str) -> tuple[int, int] | None:
        return dra_allocatable_and_used(self._extended, self._dra_slot, node_info, name)


def new(args: object, handle: Handle) -> NodeResourcesFit:
    if args is None:
        args = NodeResourcesFitArgs()
    if not isinstance(args, NodeResourcesFitArgs):
        raise TypeError(f"{NAME} wants NodeResourcesFitArgs, got {type(args).__name__}")
    # A handle without informers (some tests) means no DeviceClass index;
    # without DRAExtendedResource no extended resource is backed by DRA.
    informers = getattr(handle, "informers", None)
    gates = getattr(handle, "feature_gates", None)
    backed = gates is None or gates.enabled("DRAExtendedResource")
    extended = (
        ExtendedResourceClasses.subscribe(informers) if informers is not None and backed else None
    )
    return NodeResourcesFit(args, extended, dra_devices(handle) if backed else None)
