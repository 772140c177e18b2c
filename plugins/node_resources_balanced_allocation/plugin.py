"""NodeResourcesBalancedAllocation: PreScore and Score (upstream 1.36 formula).

For each configured resource (default cpu, memory) the node's allocatable,
its *requested* amount (actual requests, not the 100m/200Mi non-zero
defaults) and that plus the pod's actual request. A resource is left out
when the node has none of it, or when it is a scalar resource the pod does
not request.

``balanced_resource_score``: fractions ``min(requested / allocatable, 1)``;
``std`` = half the difference of two fractions, the population standard
deviation of more, 0 for fewer; score ``int((1 - std) * 100)`` (float64, as
upstream, truncated). Since 1.36 the node score rewards the *change* in
balance: ``50 + (50 + with_pod - without_pod) / 2`` (integer division), so
it stays in 50..100 and is about 75 when the pod changes little.

PreScore skips best-effort pods (no request for any configured resource,
kubernetes issue 129138). No NormalizeScore. A listed extended resource a
DeviceClass serves, on a node that does not advertise it, counts the node's
devices of that class and those in use (DRAExtendedResource, as
NodeResourcesFit; then the pod is not signed).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from plugins.node_resources_balanced_allocation.args import NodeResourcesBalancedAllocationArgs
from scheduler.framework import (
    CPU,
    EPHEMERAL_STORAGE,
    MAX_NODE_SCORE,
    MEMORY,
    CycleState,
    Handle,
    NodeInfo,
    Pod,
    PreScorePlugin,
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
from scheduler.framework.resource import is_scalar_resource_name

NAME = "NodeResourcesBalancedAllocation"


@dataclass(frozen=True, slots=True)
class PreScoreState:
    # Aligned with the configured resources.
    pod_requests: tuple[int, ...]

    def clone(self) -> PreScoreState:
        return self  # immutable


PRE_SCORE_KEY: StateKey[PreScoreState] = StateKey(f"PreScore{NAME}")


class BalancedAllocation(PreScorePlugin, ScorePlugin, SignPlugin):
    name = NAME

    def __init__(
        self,
        args: NodeResourcesBalancedAllocationArgs,
        extended: ExtendedResourceClasses | None = None,
        dra_slot: DraDevicesSlot | None = None,
    ) -> None:
        self._resources = tuple(resource.name for resource in args.resources)
        self._extended = extended
        self._dra_slot = dra_slot

    def sign_pod(self, pod: Pod) -> Hashable | None:
        """Node-local: the result for a node depends only on the pod's requests
        (unless devices of a DeviceClass may count for one of them)."""
        scalar = pod.requests.scalar
        if scalar and self._extended is not None and self._extended.any_backed(scalar):
            return None
        return pod.requests.key()

    def pod_requests(self, pod: Pod) -> tuple[int, ...]:
        return tuple(pod.requests.get(name) for name in self._resources)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        requests = self.pod_requests(pod)
        if not any(requests):
            # Best-effort pods would otherwise all pile onto the same node.
            return Status.skip()
        state.write(PRE_SCORE_KEY, PreScoreState(requests))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        pre_score = state.get(PRE_SCORE_KEY)
        if pre_score is None:
            requests = self.pod_requests(pod)
            if not any(requests):
                return 0, None
        else:
            requests = pre_score.pod_requests
        allocated: list[int] = []
        with_pod: list[int] = []
        allocatable: list[int] = []
        for name, request in zip(self._resources, requests, strict=True):
            if request == 0 and is_scalar_resource_name(name):
                continue
            capacity, used = _allocatable_and_requested(node_info, name)
            if capacity == 0 and is_scalar_resource_name(name):
                counts = dra_allocatable_and_used(self._extended, self._dra_slot, node_info, name)
                if counts is not None:
                    capacity, used = counts
            if capacity == 0:
                continue
            allocatable.append(capacity)
            allocated.append(used)
            with_pod.append(used + request)
        return balanced_score(with_pod, allocated, allocatable), None


def _allocatable_and_requested(node_info: NodeInfo, name: str) -> tuple[int, int]:
    allocatable = node_info.allocatable
    requested = node_info.requested
    if name == CPU:
        return allocatable.milli_cpu, requested.milli_cpu
    if name == MEMORY:
        return allocatable.memory, requested.memory
    if name == EPHEMERAL_STORAGE:
        return allocatable.ephemeral_storage, requested.ephemeral_storage
    if name in allocatable.scalar:
        return allocatable.scalar[name], requested.scalar.get(name, 0)
    return 0, 0


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``int((1 - std) * 100)`` over the fractions of the resources with allocatable."""
    fractions: list[float] = []
    total = 0.0
    for wanted, capacity in zip(requested, allocatable, strict=True):
        if capacity == 0:
            continue
        fraction = min(wanted / capacity, 1.0)
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        squares = 0.0
        for fraction in fractions:
            squares = squares + (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def balanced_score(
    requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]
) -> int:
    """Upstream ``balancedResourceScorer``: the balance with the pod, shifted
    by how much the pod improves or worsens it (both scores are 50..100)."""
    with_pod = balanced_resource_score(requested, allocatable)
    without_pod = balanced_resource_score(allocated, allocatable)
    half = MAX_NODE_SCORE // 2
    return half + (half + with_pod - without_pod) // 2


def new(args: object, handle: Handle) -> BalancedAllocation:
    if args is None:
        args = NodeResourcesBalancedAllocationArgs()
    if not isinstance(args, NodeResourcesBalancedAllocationArgs):
        raise TypeError(
            f"{NAME} wants NodeResourcesBalancedAllocationArgs, got {type(args).__name__}"
        )
    informers = getattr(handle, "informers", None)
    gates = getattr(handle, "feature_gates", None)
    if informers is None or (gates is not None and not gates.enabled("DRAExtendedResource")):
        return BalancedAllocation(args)
    return BalancedAllocation(
        args, ExtendedResourceClasses.subscribe(informers), dra_devices(handle)
    )
