"""Resource vectors and the upstream pod-request rule.

``Resource`` is an immutable vector: cpu in millicores, memory and
ephemeral-storage in bytes, the pod count, and any other (extended, hugepages)
resource by name. ``pod_requests`` applies kube-scheduler's rule:

    max(sum(app containers) + sum(sidecars),
        max over init containers of (init + sidecars started before it))
    + pod overhead

with pod-level ``spec.resources.requests`` taking precedence, per resource,
for the resources upstream supports there (cpu, memory, ``hugepages-*``);
other pod-level names are ignored, as upstream does. ``non_zero=True``
counts a container without a cpu or memory request as 100m / 200Mi, which
upstream uses for scoring only, never for fit.

In-place resize (InPlacePodVerticalScaling, GA; upstream ``PodRequests`` with
``UseStatusResources``): given the pod's ``status``, an app container or a
sidecar whose status reports ``resources`` counts, per resource, the largest
of its spec request, its actuated request (``status.containerStatuses[]
.resources.requests``) and its ``allocatedResources``; when the resize is
Infeasible (condition ``PodResizePending``, reason ``Infeasible``) the spec is
left out. Plain init containers use the spec. Pod-level requests follow the
same rule with ``status.resources`` and ``status.allocatedResources``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.quantity import QuantityError, to_milli, to_units

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

_EMPTY: Mapping[str, int] = {}
_NO_FIELDS: Mapping[str, Any] = {}


@dataclass(frozen=True, slots=True)
class Resource:
    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pods: int = 0
    scalar: Mapping[str, int] = field(default_factory=dict)

    @staticmethod
    def from_list(resources: Mapping[str, Any] | None) -> Resource:
        """From an API resource list such as ``{"cpu": "2", "memory": "1Gi"}``.

        Raises ``QuantityError`` for a malformed or negative value (the API
        server refuses negative requests; counting one would hide capacity).
        """
        if not resources:
            return ZERO
        milli_cpu = memory = storage = pods = 0
        scalar: dict[str, int] = {}
        for name, value in resources.items():
            try:
                if name == CPU:
                    milli_cpu = to_milli(value)
                elif name == MEMORY:
                    memory = to_units(value)
                elif name == EPHEMERAL_STORAGE:
                    storage = to_units(value)
                elif name == PODS:
                    pods = to_units(value)
                else:
                    scalar[name] = to_units(value)
            except QuantityError as error:
                raise QuantityError(f"{name}: {error}") from None
        if min(milli_cpu, memory, storage, pods, *scalar.values()) < 0:
            negative = next(name for name, value in resources.items() if str(value).startswith("-"))
            raise QuantityError(f"{negative}: {resources[negative]!r} is negative")
        return Resource(milli_cpu, memory, storage, pods, scalar)

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pods
        return self.scalar.get(name, 0)

    def names(self) -> Iterable[str]:
        """Names of the non-zero entries, cpu/memory/storage first."""
        if self.milli_cpu:
            yield CPU
        if self.memory:
            yield MEMORY
        if self.ephemeral_storage:
            yield EPHEMERAL_STORAGE
        for name, value in self.scalar.items():
            if value:
                yield name

    def __add__(self, other: Resource) -> Resource:
        if other is ZERO:
            return self
        if self is ZERO:
            return other
        return Resource(
            self.milli_cpu + other.milli_cpu,
            self.memory + other.memory,
            self.ephemeral_storage + other.ephemeral_storage,
            self.allowed_pods + other.allowed_pods,
            _merge(self.scalar, other.scalar, lambda a, b: a + b),
        )

    def __sub__(self, other: Resource) -> Resource:
        if other is ZERO:
            return self
        return Resource(
            self.milli_cpu - other.milli_cpu,
            self.memory - other.memory,
            self.ephemeral_storage - other.ephemeral_storage,
            self.allowed_pods - other.allowed_pods,
            _merge(self.scalar, other.scalar, lambda a, b: a - b),
        )

    def max(self, other: Resource) -> Resource:
        return Resource(
            max(self.milli_cpu, other.milli_cpu),
            max(self.memory, other.memory),
            max(self.ephemeral_storage, other.ephemeral_storage),
            max(self.allowed_pods, other.allowed_pods),
            _merge(self.scalar, other.scalar, max),
        )

    def key(self) -> tuple[int, int, int, int, tuple[tuple[str, int], ...]]:
        """A hashable value equal for equal vectors (``scalar`` is a dict)."""
        return (
            self.milli_cpu,
            self.memory,
            self.ephemeral_storage,
            self.allowed_pods,
            tuple(sorted(self.scalar.items())),
        )

    def is_zero(self) -> bool:
        return not (
            self.milli_cpu
            or self.memory
            or self.ephemeral_storage
            or self.allowed_pods
            or any(self.scalar.values())
        )


def _merge(left: Mapping[str, int], right: Mapping[str, int], combine: Any) -> Mapping[str, int]:
    if not right:
        return left
    if not left:
        return {name: combine(0, value) for name, value in right.items()}
    merged = dict(left)
    for name, value in right.items():
        merged[name] = combine(merged.get(name, 0), value)
    return merged


ZERO = Resource()

_DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"
_REQUESTS_PREFIX = "requests."
_HUGEPAGES_PREFIX = "hugepages-"
_ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"


def is_native_resource_name(name: str) -> bool:
    """No domain, or a ``kubernetes.io/`` one."""
    return "/" not in name or _DEFAULT_NAMESPACE_PREFIX in name


def is_extended_resource_name(name: str) -> bool:
    """Upstream ``IsExtendedResourceName`` (the API server has already
    checked that the name is qualified)."""
    return not is_native_resource_name(name) and not name.startswith(_REQUESTS_PREFIX)


def is_scalar_resource_name(name: str) -> bool:
    """Upstream ``IsScalarResourceName``: extended, hugepages, prefixed native
    or attachable-volume resources."""
    return (
        is_extended_resource_name(name)
        or name.startswith(_HUGEPAGES_PREFIX)
        or _DEFAULT_NAMESPACE_PREFIX in name
        or name.startswith(_ATTACHABLE_VOLUMES_PREFIX)
    )


def is_pod_level_resource_name(name: str) -> bool:
    """Upstream ``IsSupportedPodLevelResource``: cpu, memory and hugepages."""
    return name in (CPU, MEMORY) or name.startswith(_HUGEPAGES_PREFIX)


POD_RESIZE_PENDING = "PodResizePending"
REASON_INFEASIBLE = "Infeasible"


def resize_infeasible(status: Mapping[str, Any]) -> bool:
    """Upstream ``IsPodResizeInfeasible``: the first ``PodResizePending``
    condition has reason ``Infeasible``."""
    for condition in status.get("conditions") or ():
        if condition.get("type") == POD_RESIZE_PENDING:
            return bool(condition.get("reason") == REASON_INFEASIBLE)
    return False


def _effective(
    spec: Mapping[str, Any],
    actuated: Mapping[str, Any],
    allocated: Mapping[str, Any],
    infeasible: bool,
) -> tuple[Resource, frozenset[str]]:
    """Per resource the largest of the lists (spec left out when the resize is
    infeasible), and the names present in any of them."""
    lists = (actuated, allocated) if infeasible else (spec, actuated, allocated)
    total = ZERO
    for item in lists:
        if item:
            total = total.max(Resource.from_list(item))
    return total, frozenset(name for item in lists for name in item)


def _container_requests(
    container: Mapping[str, Any],
    non_zero: bool,
    container_status: Mapping[str, Any] | None = None,
    infeasible: bool = False,
) -> Resource:
    requests = (container.get("resources") or {}).get("requests") or _EMPTY
    try:
        actuated = (container_status or _NO_FIELDS).get("resources")
        if container_status is not None and actuated is not None:
            resource, present = _effective(
                requests,
                actuated.get("requests") or _EMPTY,
                container_status.get("allocatedResources") or _EMPTY,
                infeasible,
            )
            requests = dict.fromkeys(present, "")
        else:
            resource = Resource.from_list(requests)
    except QuantityError as error:
        name = container.get("name") or "?"
        raise QuantityError(f"container {name!r} requests {error}") from None
    if non_zero and (CPU not in requests or MEMORY not in requests):
        resource = Resource(
            resource.milli_cpu if CPU in requests else DEFAULT_MILLI_CPU_REQUEST,
            resource.memory if MEMORY in requests else DEFAULT_MEMORY_REQUEST,
            resource.ephemeral_storage,
            resource.allowed_pods,
            resource.scalar,
        )
    return resource


def _statuses_by_name(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    by_name: dict[str, Mapping[str, Any]] = {}
    for field_name in ("containerStatuses", "initContainerStatuses"):
        for item in status.get(field_name) or ():
            by_name[item.get("name") or ""] = item
    return by_name


def _with_pod_level(total: Resource, level: Resource, pod_level: Mapping[str, Any]) -> Resource:
    """``total`` with the pod-level values set in ``pod_level`` winning."""
    scalar = dict(total.scalar)
    scalar.update(
        (name, level.get(name)) for name in pod_level if name.startswith(_HUGEPAGES_PREFIX)
    )
    return Resource(
        level.milli_cpu if CPU in pod_level else total.milli_cpu,
        level.memory if MEMORY in pod_level else total.memory,
        total.ephemeral_storage,
        total.allowed_pods,
        scalar,
    )


def pod_requests(
    spec: Mapping[str, Any],
    *,
    non_zero: bool = False,
    status: Mapping[str, Any] | None = None,
) -> Resource:
    """The pod's effective request, by the upstream rule (module docstring).
    Without ``status`` only the spec counts."""
    status = status or _NO_FIELDS
    statuses = _statuses_by_name(status) if status else {}
    infeasible = bool(statuses or status.get("resources")) and resize_infeasible(status)
    total = ZERO
    for container in spec.get("containers") or ():
        total = total + _container_requests(
            container, non_zero, statuses.get(container.get("name") or ""), infeasible
        )
    sidecars = ZERO
    init_peak = ZERO
    for container in spec.get("initContainers") or ():
        sidecar = container.get("restartPolicy") == "Always"
        container_status = statuses.get(container.get("name") or "") if sidecar else None
        request = _container_requests(container, non_zero, container_status, infeasible)
        if sidecar:
            sidecars = sidecars + request
            init_peak = init_peak.max(sidecars)
        else:
            init_peak = init_peak.max(request + sidecars)
    total = (total + sidecars).max(init_peak)
    pod_level = {
        name: value
        for name, value in (((spec.get("resources") or {}).get("requests")) or _EMPTY).items()
        if is_pod_level_resource_name(name)
    }
    if pod_level:
        try:
            level = Resource.from_list(pod_level)
        except QuantityError as error:
            raise QuantityError(f"pod-level resources requests {error}") from None
        actuated = status.get("resources")
        if actuated is not None:
            level, _ = _effective(
                pod_level,
                {
                    k: v
                    for k, v in (actuated.get("requests") or _NO_FIELDS).items()
                    if k in pod_level
                },
                {
                    k: v
                    for k, v in (status.get("allocatedResources") or _NO_FIELDS).items()
                    if k in pod_level
                },
                infeasible,
            )
        total = _with_pod_level(total, level, pod_level)
    overhead = spec.get("overhead")
    if overhead:
        try:
            total = total + Resource.from_list(overhead)
        except QuantityError as error:
            raise QuantityError(f"overhead {error}") from None
    return total


def _limits(container: Mapping[str, Any]) -> Resource:
    try:
        return Resource.from_list((container.get("resources") or {}).get("limits"))
    except QuantityError as error:
        name = container.get("name") or "?"
        raise QuantityError(f"container {name!r} limits {error}") from None


def pod_limits(spec: Mapping[str, Any]) -> Resource:
    """The pod's effective limits from its spec, by upstream's ``PodLimits``:
    the same max(sum, init peak) rule as the requests, pod-level
    ``spec.resources.limits`` winning for the resources upstream supports
    there, and the overhead added to the resources that have a limit."""
    total = ZERO
    for container in spec.get("containers") or ():
        total = total + _limits(container)
    sidecars = ZERO
    init_peak = ZERO
    for container in spec.get("initContainers") or ():
        limit = _limits(container)
        if container.get("restartPolicy") == "Always":
            total = total + limit
            sidecars = sidecars + limit
            init_peak = init_peak.max(sidecars)
        else:
            init_peak = init_peak.max(limit + sidecars)
    total = total.max(init_peak)
    pod_level = {
        name: value
        for name, value in (((spec.get("resources") or {}).get("limits")) or _EMPTY).items()
        if is_pod_level_resource_name(name)
    }
    if pod_level:
        try:
            level = Resource.from_list(pod_level)
        except QuantityError as error:
            raise QuantityError(f"pod-level resources limits {error}") from None
        total = _with_pod_level(total, level, pod_level)
    overhead = spec.get("overhead")
    if overhead:
        try:
            Resource.from_list(overhead)
        except QuantityError as error:
            raise QuantityError(f"overhead {error}") from None
        limited = set(total.names())
        addition = {name: value for name, value in overhead.items() if name in limited}
        if addition:
            total = total + Resource.from_list(addition)
    return total
