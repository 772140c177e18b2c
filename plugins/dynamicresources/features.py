"""The DRA feature gates as DynamicResources reads them (upstream's
``feature.Features`` fields and ``AllocatorFeatures``).

Read once from ``handle.feature_gates`` when the plugin is built and passed
to the parts that switch on them, so no gate is looked up per pod and the
switches live in one place:

- ``admin_access`` (DRAAdminAccess, GA and locked on in 1.36): an
  ``adminAccess`` request is an error when off.
- ``prioritized_list`` (DRAPrioritizedList): a ``firstAvailable`` request is
  unschedulable in PreFilter and an error in the allocator when off.
- ``partitionable_devices`` (DRAPartitionableDevices): when off, slices with
  ``sharedCounters`` or ``perDeviceNodeSelection`` are ignored and a device
  consuming counters is never selected.
- ``device_taints`` (DRADeviceTaints): when off, device taints are ignored.
- ``device_taint_rules`` (DRADeviceTaintRules, beta and off in 1.36): when
  on, DeviceTaintRule objects (``resource.k8s.io/v1beta2``, which the API
  server must serve) add their taint to the devices they select, as
  upstream's ResourceSlice tracker does (``applyPatches``).
- ``binding_conditions`` (DRADeviceBindingConditions *and*
  DRAResourceClaimDeviceStatus, upstream's ``DeviceBindingAndStatus``): when
  off, a device with binding conditions is never selected, Filter does not
  check allocated claims' binding state, PreBind neither waits nor stamps
  ``allocationTimestamp``, and ``bindingTimeout`` may not be configured.
- ``consumable_capacity`` (DRAConsumableCapacity): when off, every device is
  exclusive (``allowMultipleAllocations`` is ignored by the allocator, so
  is a result's ``shareID`` in the devices in use; CEL still reads the
  field, as upstream's scheduler), capacity is not checked, and a
  capacity request is an error; with binding conditions off as well,
  upstream runs its *stable* allocator, which refuses ``distinctAttribute``
  as an unsupported constraint and ignores capacity requests.
- ``extended_resource`` (DRAExtendedResource): when off, extended resources
  are never backed by a DeviceClass (NodeResourcesFit counts them as usual).
- ``filter_timeout`` (DRASchedulerFilterTimeout): when off, Filter has no
  deadline and ``filterTimeout`` may not be configured.
- ``list_type_attributes`` (DRAListTypeAttributes, alpha and off in 1.36):
  when on, list attributes (``ints``, ``bools``, ``strings``, ``versions``)
  are CEL lists (upstream's ``cel.Features``); when off, a device with a
  list attribute fails every selector evaluated on it (``unsupported
  attribute value``). ``x.includes(y)`` exists in both positions (the
  scheduler's stored-expressions CEL environment ignores gates). The
  constraints do not change: kube-scheduler 1.36's ``AllocatorFeatures``
  does not pass the gate to the allocator, so ``matchAttribute`` /
  ``distinctAttribute`` keep comparing scalars (a list attribute has no
  value: it may be the first device, never a second), which the
  differential test against the pinned kube-scheduler shows.
- ``list_type_constraints`` (the allocator's own ``ListTypeAttributes``,
  never set from a gate): the *experimental* allocator's set semantics for
  those constraints, for when upstream's scheduler turns it on.

Gates are process-wide, so one ``Features`` holds for every profile and for
the shared DRA state (``manager``).
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.framework import FeatureGates

ADMIN_ACCESS = "DRAAdminAccess"
PRIORITIZED_LIST = "DRAPrioritizedList"
PARTITIONABLE_DEVICES = "DRAPartitionableDevices"
DEVICE_TAINTS = "DRADeviceTaints"
DEVICE_BINDING_CONDITIONS = "DRADeviceBindingConditions"
RESOURCE_CLAIM_DEVICE_STATUS = "DRAResourceClaimDeviceStatus"
CONSUMABLE_CAPACITY = "DRAConsumableCapacity"
EXTENDED_RESOURCE = "DRAExtendedResource"
SCHEDULER_FILTER_TIMEOUT = "DRASchedulerFilterTimeout"
DEVICE_TAINT_RULES = "DRADeviceTaintRules"
LIST_TYPE_ATTRIBUTES = "DRAListTypeAttributes"

# Every gate read here, each of which must be in the framework's KNOWN_GATES.
GATES = (
    ADMIN_ACCESS,
    PRIORITIZED_LIST,
    PARTITIONABLE_DEVICES,
    DEVICE_TAINTS,
    DEVICE_BINDING_CONDITIONS,
    RESOURCE_CLAIM_DEVICE_STATUS,
    CONSUMABLE_CAPACITY,
    EXTENDED_RESOURCE,
    SCHEDULER_FILTER_TIMEOUT,
    DEVICE_TAINT_RULES,
    LIST_TYPE_ATTRIBUTES,
)


@dataclass(frozen=True, slots=True)
class Features:
    """The defaults are v1.36's (every one of these gates on but
    DRADeviceTaintRules and DRAListTypeAttributes)."""

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    binding_conditions: bool = True
    consumable_capacity: bool = True
    extended_resource: bool = True
    filter_timeout: bool = True
    device_taint_rules: bool = False
    list_type_attributes: bool = False
    list_type_constraints: bool = False

    @property
    def stable_allocator(self) -> bool:
        """Upstream picks its stable allocator (``structured.NewAllocator``,
        the first whose supported features cover the enabled ones) when
        neither consumable capacity, binding conditions nor the list-type
        constraints are on (those need *incubating* or *experimental*)."""
        return (
            not self.consumable_capacity
            and not self.binding_conditions
            and not self.list_type_constraints
        )

    @classmethod
    def from_gates(cls, gates: FeatureGates) -> Features:
        return cls(
            admin_access=gates.enabled(ADMIN_ACCESS),
            prioritized_list=gates.enabled(PRIORITIZED_LIST),
            partitionable_devices=gates.enabled(PARTITIONABLE_DEVICES),
            device_taints=gates.enabled(DEVICE_TAINTS),
            binding_conditions=gates.enabled(DEVICE_BINDING_CONDITIONS)
            and gates.enabled(RESOURCE_CLAIM_DEVICE_STATUS),
            consumable_capacity=gates.enabled(CONSUMABLE_CAPACITY),
            extended_resource=gates.enabled(EXTENDED_RESOURCE),
            filter_timeout=gates.enabled(SCHEDULER_FILTER_TIMEOUT),
            device_taint_rules=gates.enabled(DEVICE_TAINT_RULES),
            list_type_attributes=gates.enabled(LIST_TYPE_ATTRIBUTES),
        )


DEFAULT_FEATURES = Features()
