"""Node scoring for NodeResourcesFit, exactly as upstream (Go int64 arithmetic).

For each configured resource the scorer sees the node's allocatable and the
node's requested amount *plus this pod's*: cpu and memory use the non-zero
requests (a container without a request counts 100m / 200Mi), everything else
the actual ones. A resource is left out (allocatable 0) when the node does not
have it or when it is a scalar resource the pod does not request.

- LeastAllocated: ``(alloc - req) * 100 / alloc`` (0 when over), weighted mean.
- MostAllocated: ``min(req, alloc) * 100 / alloc``, weighted mean.
- RequestedToCapacityRatio: utilization ``req * 100 / alloc`` (100 when over)
  through the broken-linear ``shape`` (scores scaled x10); resources scoring 0
  are left out of the weighted mean, which is rounded, not truncated.

All values are non-negative except the slopes of a decreasing shape, which is
why ``go_div`` (truncation toward zero) is used there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from plugins.node_resources_fit.args import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    ScoringStrategy,
    ScoringStrategyType,
)
from plugins.node_resources_fit.fit import is_scalar_resource_name
from scheduler.framework import CPU, EPHEMERAL_STORAGE, MAX_NODE_SCORE, MEMORY, NodeInfo, Pod
from scheduler.framework.types import go_div

# scorer(requested, allocatable) -> node score, both lists aligned with the
# configured resources; allocatable 0 marks a resource left out.
Scorer = Callable[[Sequence[int], Sequence[int]], int]


def go_round_ratio(numerator: int, denominator: int) -> int:
    """``math.Round(float64(n) / float64(d))`` for non-negative n and positive d,
    without the float: halves round up."""
    return (2 * numerator + denominator) // (2 * denominator)


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    # Requests can exceed capacity because of the non-zero defaults.
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def broken_linear(shape: Sequence[tuple[int, int]], utilization: int) -> int:
    """Piecewise-linear through ``(utilization, score)`` points, flat outside."""
    for index, (point_utilization, point_score) in enumerate(shape):
        if utilization <= point_utilization:
            if index == 0:
                return point_score
            previous_utilization, previous_score = shape[index - 1]
            return previous_score + go_div(
                (point_score - previous_score) * (utilization - previous_utilization),
                point_utilization - previous_utilization,
            )
    return shape[-1][1]


def _weighted_mean_scorer(
    weights: Sequence[int], resource_score: Callable[[int, int], int]
) -> Scorer:
    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        total = weight_sum = 0
        for weight, wanted, capacity in zip(weights, requested, allocatable, strict=True):
            if capacity == 0:
                continue
            total += resource_score(wanted, capacity) * weight
            weight_sum += weight
        return total // weight_sum if weight_sum else 0

    return score


def requested_to_capacity_ratio_scorer(
    weights: Sequence[int], shape: Sequence[tuple[int, int]]
) -> Scorer:
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    scaled = tuple((utilization, score * scale) for utilization, score in shape)

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return broken_linear(scaled, MAX_UTILIZATION)
        return broken_linear(scaled, requested * MAX_UTILIZATION // capacity)

    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        total = weight_sum = 0
        for weight, wanted, capacity in zip(weights, requested, allocatable, strict=True):
            if capacity == 0:
                continue
            value = resource_score(wanted, capacity)
            if value > 0:
                total += value * weight
                weight_sum += weight
        return go_round_ratio(total, weight_sum) if weight_sum else 0

    return score


def build_scorer(strategy: ScoringStrategy) -> Scorer:
    weights = tuple(resource.weight for resource in strategy.resources)
    if strategy.type is ScoringStrategyType.LEAST_ALLOCATED:
        return _weighted_mean_scorer(weights, least_requested_score)
    if strategy.type is ScoringStrategyType.MOST_ALLOCATED:
        return _weighted_mean_scorer(weights, most_requested_score)
    ratio = strategy.requested_to_capacity_ratio
    if ratio is None:  # pragma: no cover - the args model rejects this
        raise ValueError("RequestedToCapacityRatio needs a shape")
    shape = tuple((point.utilization, point.score) for point in ratio.shape)
    return requested_to_capacity_ratio_scorer(weights, shape)


def pod_score_requests(pod: Pod, resources: Sequence[str]) -> tuple[int, ...]:
    """The pod's request per resource, with the non-zero cpu/memory defaults."""
    return tuple(pod.non_zero_requests.get(name) for name in resources)


# (node, resource) -> (allocatable, in use) of a DRA-backed extended resource
# the node does not advertise, or None
DraCounts = Callable[[NodeInfo, str], tuple[int, int] | None]


def allocatable_and_requested(
    node_info: NodeInfo, name: str, pod_request: int, dra: DraCounts | None = None
) -> tuple[int, int]:
    """(allocatable, requested incl. the pod) of one resource; (0, 0) leaves it
    out. A scalar resource the node does not advertise counts the devices of
    the DeviceClass serving it (``dra``; upstream
    ``calculateDRAExtendedResourceAllocatableRequest``)."""
    if pod_request == 0 and is_scalar_resource_name(name):
        return 0, 0
    allocatable = node_info.allocatable
    if name == CPU:
        return allocatable.milli_cpu, node_info.non_zero_requested.milli_cpu + pod_request
    if name == MEMORY:
        return allocatable.memory, node_info.non_zero_requested.memory + pod_request
    if name == EPHEMERAL_STORAGE:
        return allocatable.ephemeral_storage, node_info.requested.ephemeral_storage + pod_request
    advertised = allocatable.scalar.get(name)
    if not advertised and dra is not None:
        counts = dra(node_info, name)
        if counts is not None:
            return counts[0], counts[1] + pod_request
    if advertised is not None:
        return advertised, node_info.requested.scalar.get(name, 0) + pod_request
    return 0, 0


def score_node(
    scorer: Scorer,
    resources: Sequence[str],
    pod_requests: Sequence[int],
    node_info: NodeInfo,
    dra: DraCounts | None = None,
) -> int:
    requested = [0] * len(resources)
    allocatable = [0] * len(resources)
    for index, (name, pod_request) in enumerate(zip(resources, pod_requests, strict=True)):
        capacity, wanted = allocatable_and_requested(node_info, name, pod_request, dra)
        if capacity:
            allocatable[index], requested[index] = capacity, wanted
    return scorer(requested, allocatable)
