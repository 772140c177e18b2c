"""resource.k8s.io/v1 objects as the allocator sees them: parsed once, immutable.

``parse_slice``, ``parse_class`` and ``parse_claim`` turn the raw informer
dicts into slotted objects with quantities already exact (``Decimal``) and
each device's CEL input prepared (``CelDevice``, which also caches selector
outcomes). The raw dicts are never mutated; a parsed object lives as long as
the object version it came from, so caches hanging off it never go stale.

List attributes (DRAListTypeAttributes) are kept as they are, for CEL and
the constraints to read when the gate is on; other alpha fields
(node-allocatable mappings, compatibility groups) are tolerated and
ignored. Malformed quantities raise
``ModelError`` naming the object and field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from plugins.dynamicresources.cel import CelDevice
from scheduler.framework import QuantityError, parse_quantity

Raw = Mapping[str, Any]
DeviceID = tuple[str, str, str]  # (driver, pool, device)
_EMPTY: Mapping[str, Any] = MappingProxyType({})

MODE_EXACT_COUNT = "ExactCount"
MODE_ALL = "All"
ALLOCATION_RESULTS_MAX_SIZE = 32
RESERVED_FOR_MAX_SIZE = 256
FIRST_AVAILABLE_MAX_SIZE = 8
TAINT_NO_SCHEDULE = "NoSchedule"
TAINT_NO_EXECUTE = "NoExecute"


class ModelError(ValueError):
    """An object that cannot be interpreted (a malformed quantity, say)."""


def _quantity(text: Any, where: str) -> Decimal:
    try:
        return parse_quantity(str(text))
    except QuantityError as error:
        raise ModelError(f"{where}: {error}") from None


def format_quantity(value: Decimal) -> str:
    """A quantity string for the API (the server canonicalizes it)."""
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


# --------------------------------------------------------------- slices
@dataclass(frozen=True, slots=True)
class CapacityPolicy:
    default: Decimal | None = None
    valid_values: tuple[Decimal, ...] = ()
    min: Decimal | None = None
    max: Decimal | None = None
    step: Decimal | None = None
    has_range: bool = False


@dataclass(frozen=True, slots=True)
class Capacity:
    value: Decimal
    policy: CapacityPolicy | None = None


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    key: str
    value: str
    effect: str


@dataclass(eq=False, slots=True)
class Device:
    id: DeviceID
    name: str
    attributes: Mapping[str, Raw]
    capacity: Mapping[str, Capacity]
    consumes_counters: tuple[tuple[str, Mapping[str, Decimal]], ...]
    taints: tuple[DeviceTaint, ...]
    allow_multiple: bool
    binds_to_node: bool
    binding_conditions: tuple[str, ...]
    binding_failure_conditions: tuple[str, ...]
    node_name: str
    all_nodes: bool
    node_selector: Raw | None
    cel: CelDevice
    # no capacity has a request policy: a request without capacity requests
    # consumes each whole, which always fits a device nobody else consumes
    whole_capacity_fits: bool = True


@dataclass(eq=False, slots=True)
class Slice:
    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str
    node_selector: Raw | None
    all_nodes: bool
    per_device_node_selection: bool
    devices: tuple[Device, ...]
    # counter set -> counter -> value
    shared_counters: tuple[tuple[str, Mapping[str, Decimal]], ...]
    resource_version: str = ""

    @property
    def pool_id(self) -> tuple[str, str]:
        return (self.driver, self.pool)


def _capacity(name: str, raw: Raw, where: str) -> Capacity:
    value = _quantity(raw.get("value", "0"), f"{where} capacity {name}")
    policy_raw = raw.get("requestPolicy")
    if not policy_raw:
        return Capacity(value)
    valid_range = policy_raw.get("validRange") or _EMPTY
    policy = CapacityPolicy(
        default=_quantity(policy_raw["default"], where) if "default" in policy_raw else None,
        valid_values=tuple(_quantity(v, where) for v in policy_raw.get("validValues") or ()),
        min=_quantity(valid_range["min"], where) if "min" in valid_range else None,
        max=_quantity(valid_range["max"], where) if "max" in valid_range else None,
        step=_quantity(valid_range["step"], where) if "step" in valid_range else None,
        has_range=bool(valid_range),
    )
    return Capacity(value, policy)


def _counters(raw: Raw | None, where: str) -> Mapping[str, Decimal]:
    return {
        name: _quantity((entry or _EMPTY).get("value", "0"), f"{where} counter {name}")
        for name, entry in (raw or _EMPTY).items()
    }


def parse_slice(raw: Raw) -> Slice:
    metadata = raw.get("metadata") or _EMPTY
    spec = raw.get("spec") or _EMPTY
    name = metadata.get("name") or ""
    driver = spec.get("driver") or ""
    pool = spec.get("pool") or _EMPTY
    pool_name = pool.get("name") or ""
    devices = []
    for device in spec.get("devices") or ():
        device_name = device.get("name") or ""
        where = f"ResourceSlice {name} device {device_name}"
        capacity = {
            key: _capacity(key, value or _EMPTY, where)
            for key, value in (device.get("capacity") or _EMPTY).items()
        }
        attributes = device.get("attributes") or _EMPTY
        allow_multiple = bool(device.get("allowMultipleAllocations"))
        devices.append(
            Device(
                id=(driver, pool_name, device_name),
                name=device_name,
                attributes=attributes,
                capacity=capacity,
                consumes_counters=tuple(
                    (entry.get("counterSet") or "", _counters(entry.get("counters"), where))
                    for entry in device.get("consumesCounters") or ()
                ),
                taints=tuple(
                    DeviceTaint(t.get("key") or "", t.get("value") or "", t.get("effect") or "")
                    for t in device.get("taints") or ()
                ),
                allow_multiple=allow_multiple,
                binds_to_node=bool(device.get("bindsToNode")),
                binding_conditions=tuple(device.get("bindingConditions") or ()),
                binding_failure_conditions=tuple(device.get("bindingFailureConditions") or ()),
                node_name=device.get("nodeName") or "",
                all_nodes=bool(device.get("allNodes")),
                node_selector=device.get("nodeSelector"),
                cel=CelDevice(
                    driver,
                    attributes,
                    {k: v or _EMPTY for k, v in (device.get("capacity") or _EMPTY).items()},
                    allow_multiple,
                ),
                whole_capacity_fits=all(c.policy is None for c in capacity.values()),
            )
        )
    return Slice(
        name=name,
        driver=driver,
        pool=pool_name,
        generation=int(pool.get("generation") or 0),
        slice_count=int(pool.get("resourceSliceCount") or 0),
        node_name=spec.get("nodeName") or "",
        node_selector=spec.get("nodeSelector"),
        all_nodes=bool(spec.get("allNodes")),
        per_device_node_selection=bool(spec.get("perDeviceNodeSelection")),
        devices=tuple(devices),
        shared_counters=tuple(
            (entry.get("name") or "", _counters(entry.get("counters"), f"ResourceSlice {name}"))
            for entry in spec.get("sharedCounters") or ()
        ),
        resource_version=metadata.get("resourceVersion") or "",
    )


# -------------------------------------------------------------- classes
@dataclass(frozen=True, slots=True)
class DeviceClass:
    name: str
    selectors: tuple[str | None, ...]  # None: a selector without ``cel``
    config: tuple[Raw, ...]
    extended_resource_name: str
    creation_timestamp: str
    raw: Raw = field(repr=False, compare=False)


def _selectors(raw: Sequence[Raw] | None) -> tuple[str | None, ...]:
    return tuple(((s.get("cel") or _EMPTY).get("expression")) for s in raw or ())


def parse_class(raw: Raw) -> DeviceClass:
    metadata = raw.get("metadata") or _EMPTY
    spec = raw.get("spec") or _EMPTY
    return DeviceClass(
        name=metadata.get("name") or "",
        selectors=_selectors(spec.get("selectors")),
        config=tuple(spec.get("config") or ()),
        extended_resource_name=spec.get("extendedResourceName") or "",
        creation_timestamp=metadata.get("creationTimestamp") or "",
        raw=raw,
    )


# --------------------------------------------------------------- claims
@dataclass(frozen=True, slots=True)
class DeviceToleration:
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: DeviceTaint) -> bool:
        """Upstream ``resourceclaim.ToleratesTaint``."""
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            if self.operator != "Exists":
                return False
        elif self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.operator in ("", "Equal") and self.value == taint.value


@dataclass(frozen=True, slots=True)
class Request:
    """An ``exactly`` request or one ``firstAvailable`` subrequest."""

    name: str
    parent: str  # the request's name for a subrequest, else ""
    class_name: str
    selectors: tuple[str | None, ...]
    mode: str
    count: int
    admin_access: bool
    has_admin_access: bool
    tolerations: tuple[DeviceToleration, ...]
    raw_tolerations: tuple[Raw, ...]
    capacity_requests: Mapping[str, Decimal] | None

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent else self.name


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    name: str
    exactly: Request | None
    first_available: tuple[Request, ...]


@dataclass(frozen=True, slots=True)
class ClaimConstraint:
    requests: frozenset[str]
    match_attribute: str
    distinct_attribute: str


@dataclass(frozen=True, slots=True)
class Claim:
    namespace: str
    name: str
    uid: str
    requests: tuple[ClaimRequest, ...]
    constraints: tuple[ClaimConstraint, ...]
    config: tuple[Raw, ...]
    raw: Raw = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _request(raw: Raw, parent: str, where: str) -> Request:
    tolerations = tuple(raw.get("tolerations") or ())
    capacity = raw.get("capacity")
    admin = raw.get("adminAccess")
    return Request(
        name=raw.get("name") or "",
        parent=parent,
        class_name=raw.get("deviceClassName") or "",
        selectors=_selectors(raw.get("selectors")),
        mode=raw.get("allocationMode") or MODE_EXACT_COUNT,
        count=int(raw.get("count") or 1),
        admin_access=bool(admin),
        has_admin_access=admin is not None,
        tolerations=tuple(
            DeviceToleration(
                t.get("key") or "",
                t.get("operator") or "Equal",
                t.get("value") or "",
                t.get("effect") or "",
            )
            for t in tolerations
        ),
        raw_tolerations=tolerations,
        capacity_requests=(
            {
                name: _quantity(value, f"{where} capacity {name}")
                for name, value in (capacity.get("requests") or _EMPTY).items()
            }
            if capacity
            else None
        ),
    )


def parse_claim(raw: Raw) -> Claim:
    metadata = raw.get("metadata") or _EMPTY
    devices = (raw.get("spec") or _EMPTY).get("devices") or _EMPTY
    namespace, name = metadata.get("namespace") or "", metadata.get("name") or ""
    requests = []
    for entry in devices.get("requests") or ():
        request_name = entry.get("name") or ""
        where = f"claim {namespace}/{name} request {request_name}"
        exactly = entry.get("exactly")
        requests.append(
            ClaimRequest(
                name=request_name,
                exactly=(
                    _request({**exactly, "name": request_name}, "", where) if exactly else None
                ),
                first_available=tuple(
                    _request(sub, request_name, where) for sub in entry.get("firstAvailable") or ()
                ),
            )
        )
    return Claim(
        namespace=namespace,
        name=name,
        uid=metadata.get("uid") or "",
        requests=tuple(requests),
        constraints=tuple(
            ClaimConstraint(
                requests=frozenset(c.get("requests") or ()),
                match_attribute=c.get("matchAttribute") or "",
                distinct_attribute=c.get("distinctAttribute") or "",
            )
            for c in devices.get("constraints") or ()
        ),
        config=tuple(devices.get("config") or ()),
        raw=raw,
    )
