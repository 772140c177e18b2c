"""NeonVM VirtualMachines (``vm.neon.tech/v1``) as the plugin sees them.

``vm_info(raw)`` extracts a VM's cpu (millicores) and memory (bytes) bounds
and current use from the raw object; it never mutates it and raises
``VmError`` with the field's path when something is missing or malformed.
``spec.guest.cpus`` values may be whole vCPUs (old NeonVM) or millicpu
quantities (``"250m"``, ``0.5``); memory is ``memorySlots`` times ``memorySlotSize``.
A missing ``use`` means ``min``, as NeonVM defaults it. ``spec.overcommit``
(Neon HEAD) gives per-resource factors (milli) by which the node discounts
the VM's reservation. ``min <= use <= max``
is enforced by NeonVM; here a violation only widens the bounds (later
upstream only warns too), so a VM is always reserved at its real ``use``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework.quantity import QuantityError, to_milli, to_units

LABEL_VM = "vm.neon.tech/name"
# Only VMs with this label set to "true" have an autoscaler-agent (Neon's
# ``api.HasAutoscalingEnabled``); the others never change but by hand.
LABEL_AUTOSCALING_ENABLED = "autoscaling.neon.tech/enabled"
LABEL_AUTO_MIGRATION = "autoscaling.neon.tech/auto-migration-enabled"
LABEL_ALWAYS_MIGRATE = "autoscaling.neon.tech/testing-only-always-migrate"
LABEL_ALWAYS_MIGRATE_OLD = "autoscaler/testing-only-always-migrate"

VM_RESOURCE = "virtualmachines"
MIGRATION_RESOURCE = "virtualmachinemigrations"


NO_OVERCOMMIT = 1000  # an overcommit factor of 1.0, in milli


class VmError(ValueError):
    """A VirtualMachine this plugin cannot use."""


@dataclass(frozen=True, slots=True)
class VmInfo:
    namespace: str
    name: str
    cpu_min: int
    cpu_max: int
    cpu_use: int
    mem_min: int
    mem_max: int
    mem_use: int
    slot_bytes: int
    migratable: bool
    always_migrate: bool
    autoscaling_enabled: bool = False
    # Neon's ``spec.overcommit`` factors (HEAD, 10dabd0e), in milli: the node
    # counts a reservation of x as x * 1000 / factor (1000: none).
    cpu_overcommit: int = NO_OVERCOMMIT
    mem_overcommit: int = NO_OVERCOMMIT

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its fields: several times cheaper than a slotted
        dataclass's default (the authority sends VMs in every node copy)."""
        return (
            VmInfo,
            (
                self.namespace,
                self.name,
                self.cpu_min,
                self.cpu_max,
                self.cpu_use,
                self.mem_min,
                self.mem_max,
                self.mem_use,
                self.slot_bytes,
                self.migratable,
                self.always_migrate,
                self.autoscaling_enabled,
                self.cpu_overcommit,
                self.mem_overcommit,
            ),
        )


def _number(value: Any, path: str, *, milli: bool) -> int:
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        raise VmError(f"{path}: expected a number, got {value!r}")
    try:
        result = to_milli(value) if milli else to_units(value)
    except QuantityError as error:
        raise VmError(f"{path}: {error}") from None
    if result < 0:
        raise VmError(f"{path}: must not be negative")
    return result


def _bounds(spec: Any, path: str, *, milli: bool) -> tuple[int, int, int]:
    if not isinstance(spec, Mapping):
        raise VmError(f"{path}: missing")
    low = _number(spec.get("min"), f"{path}.min", milli=milli)
    high = _number(spec.get("max"), f"{path}.max", milli=milli)
    raw_use = spec.get("use")
    use = low if raw_use is None else _number(raw_use, f"{path}.use", milli=milli)
    if low > high:
        raise VmError(f"{path}: min {spec.get('min')} > max {spec.get('max')}")
    if use == 0:
        raise VmError(f"{path}.use: must be non-zero")
    return min(low, use), max(high, use), use


def vm_info(raw: Mapping[str, Any]) -> VmInfo:
    metadata = raw.get("metadata") or {}
    guest = (raw.get("spec") or {}).get("guest") or {}
    labels = metadata.get("labels") or {}
    cpu_min, cpu_max, cpu_use = _bounds(guest.get("cpus"), "spec.guest.cpus", milli=True)
    slot_min, slot_max, slot_use = _bounds(
        guest.get("memorySlots"), "spec.guest.memorySlots", milli=False
    )
    slot_bytes = _number(guest.get("memorySlotSize"), "spec.guest.memorySlotSize", milli=False)
    if slot_bytes == 0:
        raise VmError("spec.guest.memorySlotSize: must be non-zero")
    cpu_overcommit, mem_overcommit = _overcommit((raw.get("spec") or {}).get("overcommit"))
    return VmInfo(
        namespace=metadata.get("namespace") or "",
        name=metadata.get("name") or "",
        cpu_min=cpu_min,
        cpu_max=cpu_max,
        cpu_use=cpu_use,
        mem_min=slot_min * slot_bytes,
        mem_max=slot_max * slot_bytes,
        mem_use=slot_use * slot_bytes,
        slot_bytes=slot_bytes,
        migratable=labels.get(LABEL_AUTO_MIGRATION) == "true",
        always_migrate=LABEL_ALWAYS_MIGRATE in labels or LABEL_ALWAYS_MIGRATE_OLD in labels,
        autoscaling_enabled=labels.get(LABEL_AUTOSCALING_ENABLED) == "true",
        cpu_overcommit=cpu_overcommit,
        mem_overcommit=mem_overcommit,
    )


def _overcommit(spec: Any) -> tuple[int, int]:
    """``spec.overcommit {cpu, memory}`` (quantities, each optional) as milli
    factors; absent: 1.0. Neon divides by the factor's milli value, so a zero
    panics there; here it is an error."""
    if spec is None:
        return NO_OVERCOMMIT, NO_OVERCOMMIT
    if not isinstance(spec, Mapping):
        raise VmError("spec.overcommit: must be an object")
    factors = []
    for key in ("cpu", "memory"):
        value = spec.get(key)
        if value is None:
            factors.append(NO_OVERCOMMIT)
            continue
        factor = _number(value, f"spec.overcommit.{key}", milli=True)
        if factor == 0:
            raise VmError(f"spec.overcommit.{key}: must be > 0")
        factors.append(factor)
    return factors[0], factors[1]


def vm_name_of_pod(labels: Mapping[str, str]) -> str | None:
    """The VM a pod runs, from the ``vm.neon.tech/name`` label (None: not a VM pod)."""
    return labels.get(LABEL_VM) or None


MAX_CACHED_VMS = 100_000


class VmInfoCache:
    """``vm_info`` parsed once per object version: informer objects are
    replaced on change, never changed, so identity is the version (Filter and
    Score size the same VM once per node per cycle). Bounded."""

    def __init__(self) -> None:
        self._infos: dict[str, tuple[Mapping[str, Any], VmInfo]] = {}

    def parse(self, raw: Mapping[str, Any]) -> VmInfo:
        """The VM's info; raises ``VmError``."""
        metadata = raw.get("metadata") or {}
        key = f"{metadata.get('namespace')}/{metadata.get('name')}"
        cached = self._infos.get(key)
        if cached is not None and cached[0] is raw:
            return cached[1]
        info = vm_info(raw)
        if len(self._infos) > MAX_CACHED_VMS:
            self._infos.clear()
        self._infos[key] = (raw, info)
        return info


MIGRATION_KIND = "VirtualMachineMigration"
VM_API_VERSION = "vm.neon.tech/v1"


@dataclass(frozen=True, slots=True)
class MigrationRole:
    """The part a pod plays in a live migration, from its ownerReferences as
    NeonVM sets them (Neon's ``MigrationOwnerForPod``): the migration
    controls the target pod and merely owns the source."""

    migration: str  # the VirtualMachineMigration's name (the pod's namespace)
    target: bool


def migration_role(metadata: Mapping[str, Any]) -> MigrationRole | None:
    """The pod's role in a live migration, None if no migration owns it."""
    for ref in metadata.get("ownerReferences") or ():
        if (
            isinstance(ref, Mapping)
            and ref.get("apiVersion") == VM_API_VERSION
            and ref.get("kind") == MIGRATION_KIND
        ):
            return MigrationRole(str(ref.get("name") or ""), ref.get("controller") is True)
    return None
