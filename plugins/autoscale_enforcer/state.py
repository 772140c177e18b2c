"""The pure node-capacity state of the AutoscaleEnforcer: no I/O, no asyncio.

Per node and per resource (cpu in millicores, memory in bytes):

- ``total``: what pods may reserve (allocatable minus the config's ``system``);
- ``watermark``: the level above which the node sheds VMs (migration);
- ``reserved``: the sum of every pod's ``reserved`` on the node. A VM pod's
  reservation is the upper bound its agent may use; any other pod counts by
  its requests (whoever scheduled it, requests of zero included);
- ``buffer``: the part of ``reserved`` that only exists because the plugin
  does not know yet what a VM uses (a VM with autoscaling enabled first seen
  bound, e.g. after a restart, is reserved at its maximum until its agent
  reports; a VM without it has no agent and is reserved at its ``use``);
- ``pressure``: increases asked for by agents and denied for lack of room;
- ``pressure_accounted_for``: ``reserved + pressure`` of migrating pods;
- ``migrating``: ``reserved`` of migrating pods.

Node counters are in node units: a VM with overcommit factors (Neon HEAD's
``spec.overcommit``) contributes its reservation divided by them
(``node_amount``, Neon's ``applyOvercommit``), while a pod's own fields stay
in its units; ``fits``/``reserved_if`` take node units, ``reserve`` and
agent grants convert (``pod_room`` for an increase's room).

Invariants (``check_invariants`` proves them in tests):
- every node counter equals the sum of its pods' contributions, so no
  counter is ever negative; a pod's ``buffer`` never exceeds its ``reserved``;
- a pod is on exactly one node and is keyed by ``namespace/name``;
- a pod changes only by detach, change, attach (``replace_pod``), so the
  node's sums stay exact; arithmetic on remaining room saturates at zero;
- ``reserved`` may exceed ``total`` only through events the plugin does not
  decide (pods bound by others, a node shrinking, start-up buffers, an
  agent's ``lastPermit``, reservations carried over a restart of the
  authority by ``hold``), never through ``reserve`` or a granted increase.

``fits``/``what_if`` answer Filter and Score without changing anything;
``reserve``/``unreserve`` are symmetric and idempotent: ``unreserve`` drops
only a pod that Reserve added and no informer has confirmed bound.

Mirrors: every change to a node (its budget, counters or pods) goes through
``upsert_node``, ``remove_node``, ``set_config`` or a pod's attach/detach,
and each marks the node in ``dirty``. ``take_dirty`` hands the changed nodes
over and ``apply_nodes`` makes another state hold them, so a mirror fed every
``take_dirty`` (copied, e.g. pickled across processes) equals this state,
pod and VM indexes included (a property test proves it). This is the first
step of the agent-process design in ARCHITECTURE.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from plugins.autoscale_enforcer.config import Config, NodeBudget, derive_node
from plugins.autoscale_enforcer.vm import NO_OVERCOMMIT, VmInfo


@dataclass(frozen=True, slots=True)
class Amounts:
    """cpu (millicores) and memory (bytes); never negative."""

    cpu: int = 0
    mem: int = 0

    def __add__(self, other: Amounts) -> Amounts:
        return Amounts(self.cpu + other.cpu, self.mem + other.mem)

    def minus(self, other: Amounts) -> Amounts:
        """Saturating subtraction: never below zero."""
        return Amounts(max(0, self.cpu - other.cpu), max(0, self.mem - other.mem))

    def fits_in(self, other: Amounts) -> bool:
        return self.cpu <= other.cpu and self.mem <= other.mem

    def has_zero(self) -> bool:
        return self.cpu == 0 or self.mem == 0

    def __reduce__(self) -> tuple[Any, ...]:
        return (Amounts, (self.cpu, self.mem))


ZERO = Amounts()


@dataclass(slots=True)
class PodState:
    key: str  # namespace/name
    uid: str
    node: str
    reserved: Amounts
    vm: VmInfo | None = None
    buffer: Amounts = ZERO
    pressure: Amounts = ZERO
    confirmed: bool = False  # seen bound by the informer (else: only Reserved)
    migrating: bool = False  # a migration object exists for it
    migrate_told: bool = False  # its agent has been answered ``migrate``
    metrics: float | None = None  # the agent's last loadAvg1M
    agent_contact: bool = False  # has had a successful agent request
    # The target of a live migration (its pod is controlled by the migration):
    # never migrating, never a migration candidate, and its VM's pod only when
    # no other pod of that VM is known.
    migration_target: bool = False
    # The compute unit last sent to its agent (Neon's mostRecentComputeUnit):
    # what a v1.0-v1.1 request must divide by; None before the first answer.
    told_unit: Amounts | None = None
    # In Neon's per-node migration queue: entered with each agent request
    # while not migrating, left when a migration begins (so after a failed
    # migration only the next request puts it back).
    queued: bool = False
    # The permit last answered to its agent: what the VM may use, so the
    # floor the reservation returns to when the VM's ``use`` drops.
    permit: Amounts | None = None

    @property
    def vm_key(self) -> str | None:
        return f"{self.vm.namespace}/{self.vm.name}" if self.vm is not None else None

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled flat (see ``Mirrors`` in the module docstring)."""
        reserved, buffer, pressure = self.reserved, self.buffer, self.pressure
        return (
            _restore_pod,
            (
                (
                    self.key,
                    self.uid,
                    self.node,
                    reserved.cpu,
                    reserved.mem,
                    self.vm,
                    buffer.cpu,
                    buffer.mem,
                    pressure.cpu,
                    pressure.mem,
                    self.confirmed,
                    self.migrating,
                    self.migrate_told,
                    self.metrics,
                    self.agent_contact,
                    self.migration_target,
                    self.told_unit,
                    self.queued,
                    self.permit,
                ),
            ),
        )


def _updated_limits(
    reserved: Amounts, buffer: Amounts, old: VmInfo, new: VmInfo
) -> tuple[Amounts, Amounts]:
    """Neon's ``handleUpdatedLimits`` per resource whose maximum changed:
    using = reserved - buffer; reserved = max(new maximum, using) (never
    below what the VM may be using); buffer = reserved - using. A
    best-effort guard against an agent scaling up to an old, larger permit."""
    using = reserved.minus(buffer)
    cpu, mem = reserved.cpu, reserved.mem
    if new.cpu_max != old.cpu_max:
        cpu = max(new.cpu_max, using.cpu)
    if new.mem_max != old.mem_max:
        mem = max(new.mem_max, using.mem)
    moved = Amounts(cpu, mem)
    return moved, moved.minus(using)


def _held_at_max(pod: PodState, vm: VmInfo) -> bool:
    """Whether an autoscaled VM's pod with no agent contact is held at the
    VM's maximum after this VM event (see ``State.observe_vm``)."""
    old = pod.vm
    if old is None or not old.autoscaling_enabled or pod.buffer != ZERO:
        return True
    old_max = Amounts(old.cpu_max, old.mem_max)
    return pod.reserved == old_max or old_max != Amounts(vm.cpu_max, vm.mem_max)


def _restore_pod(fields: tuple[Any, ...]) -> PodState:
    (
        key,
        uid,
        node,
        reserved_cpu,
        reserved_mem,
        vm,
        buffer_cpu,
        buffer_mem,
        pressure_cpu,
        pressure_mem,
        confirmed,
        migrating,
        migrate_told,
        metrics,
        agent_contact,
        migration_target,
        told_unit,
        queued,
        permit,
    ) = fields
    return PodState(
        key,
        uid,
        node,
        Amounts(reserved_cpu, reserved_mem),
        vm,
        Amounts(buffer_cpu, buffer_mem) if buffer_cpu or buffer_mem else ZERO,
        Amounts(pressure_cpu, pressure_mem) if pressure_cpu or pressure_mem else ZERO,
        confirmed,
        migrating,
        migrate_told,
        metrics,
        agent_contact,
        migration_target,
        told_unit,
        queued,
        permit,
    )


@dataclass(slots=True)
class NodeState:
    name: str
    allocatable: Amounts = ZERO
    budget: NodeBudget | None = None  # None: node unknown or deleted (total 0)
    reserved: Amounts = ZERO
    buffer: Amounts = ZERO
    pressure: Amounts = ZERO
    pressure_accounted_for: Amounts = ZERO
    migrating: Amounts = ZERO
    pods: dict[str, PodState] = field(default_factory=dict)

    @property
    def total(self) -> Amounts:
        budget = self.budget
        return ZERO if budget is None else Amounts(budget.cpu_total, budget.mem_total)

    @property
    def watermark(self) -> Amounts:
        budget = self.budget
        return ZERO if budget is None else Amounts(budget.cpu_watermark, budget.mem_watermark)

    @property
    def unit(self) -> Amounts:
        """The node's configured compute unit (cpu millicores, memory bytes)."""
        budget = self.budget
        return Amounts(1, 1) if budget is None else Amounts(budget.cpu_unit, budget.mem_unit)

    @property
    def remaining(self) -> Amounts:
        return self.total.minus(self.reserved)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled flat: the authority sends a node after every change to it."""
        counters = (
            self.reserved,
            self.buffer,
            self.pressure,
            self.pressure_accounted_for,
            self.migrating,
        )
        flat = tuple(value for amounts in counters for value in (amounts.cpu, amounts.mem))
        allocatable = self.allocatable
        return (
            _restore_node,
            (
                (
                    self.name,
                    allocatable.cpu,
                    allocatable.mem,
                    self.budget,
                    flat,
                    tuple(self.pods.values()),
                ),
            ),
        )


def _restore_node(fields: tuple[Any, ...]) -> NodeState:
    name, allocatable_cpu, allocatable_mem, budget, flat, pods = fields
    return NodeState(
        name,
        Amounts(allocatable_cpu, allocatable_mem),
        budget,
        Amounts(flat[0], flat[1]),
        Amounts(flat[2], flat[3]),
        Amounts(flat[4], flat[5]),
        Amounts(flat[6], flat[7]),
        Amounts(flat[8], flat[9]),
        {pod.key: pod for pod in pods},
    )


def at_least_use(amount: Amounts, vm: VmInfo | None) -> Amounts:
    """``amount``, raised to the VM object's use for a VM: what a VM pod is
    reserved at whatever its container requests say (issue 25 #7)."""
    if vm is None:
        return amount
    return Amounts(max(amount.cpu, vm.cpu_use), max(amount.mem, vm.mem_use))


def node_amount(amount: Amounts, vm: VmInfo | None) -> Amounts:
    """What a pod's ``amount`` takes of its node: Neon's ``applyOvercommit``
    (state/node.go, HEAD), ``amount * 1000 / factor`` rounded down per
    resource with the VM's overcommit factors (milli); a plain pod, or a VM
    without overcommit, takes what it reserves."""
    if vm is None:
        return amount
    cpu, mem = vm.cpu_overcommit, vm.mem_overcommit
    if cpu == NO_OVERCOMMIT and mem == NO_OVERCOMMIT:
        return amount
    return Amounts(amount.cpu * NO_OVERCOMMIT // cpu, amount.mem * NO_OVERCOMMIT // mem)


def pod_room(reserved: Amounts, remaining: Amounts, vm: VmInfo | None) -> Amounts:
    """How far a pod reserved at ``reserved`` may grow (pod units) while what
    it takes of its node grows by at most ``remaining`` (node units): Neon's
    ``reconcilePod`` scales the node's room by the factor; here exactly, so a
    grant never takes the node above its total through rounding."""
    if vm is None or (vm.cpu_overcommit == NO_OVERCOMMIT and vm.mem_overcommit == NO_OVERCOMMIT):
        return remaining
    taken = node_amount(reserved, vm)

    def room(value: int, node_value: int, free: int, factor: int) -> int:
        # the largest t with floor(t * 1000 / factor) <= node_value + free
        return ((node_value + free + 1) * factor - 1) // NO_OVERCOMMIT - value

    return Amounts(
        room(reserved.cpu, taken.cpu, remaining.cpu, vm.cpu_overcommit),
        room(reserved.mem, taken.mem, remaining.mem, vm.mem_overcommit),
    )


def _contribution(pod: PodState) -> tuple[Amounts, Amounts, Amounts, Amounts, Amounts]:
    """(reserved, buffer, pressure, migrating, accounted-for) the pod adds to
    its node: after its VM's overcommit (``node_amount``); the buffer is what
    the reservation takes beyond the part that is not buffer."""
    vm = pod.vm
    reserved = node_amount(pod.reserved, vm)
    buffer = (
        pod.buffer
        if reserved is pod.reserved
        else (reserved.minus(node_amount(pod.reserved.minus(pod.buffer), vm)))
    )
    pressure = node_amount(pod.pressure, vm)
    migrating = reserved if pod.migrating else ZERO
    accounted = reserved + pressure if pod.migrating else ZERO
    return reserved, buffer, pressure, migrating, accounted


class State:
    """Every node and pod the plugin accounts for. Not thread-safe: the
    authority changes its state from one thread, and the daemon's mirror is
    changed only on the event loop (scrapes from another thread read it
    under the plugin's scrape lock)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.nodes: dict[str, NodeState] = {}
        self.pods: dict[str, PodState] = {}
        self._pods_by_vm: dict[str, str] = {}
        self._vm_pods: dict[str, set[str]] = {}  # every pod of each VM (a migration: two)
        self._max_total: Amounts | None = None  # cached; None after node changes
        # Names of the nodes changed since the last ``take_dirty`` (a node's
        # counters, budget or pods): what a mirror must copy to stay equal.
        self.dirty: set[str] = set()

    # ------------------------------------------------------------ config
    def set_config(self, config: Config) -> None:
        """Replace the config; every node's budget is recomputed at once."""
        self.config = config
        self._max_total = None
        for node in self.nodes.values():
            if node.budget is not None:
                node.budget = self._budget(node.name, node.allocatable)
        self.dirty.update(self.nodes)

    def _budget(self, name: str, allocatable: Amounts) -> NodeBudget:
        config = self.config
        return derive_node(
            config.node_config(name), config.slot_bytes, allocatable.cpu, allocatable.mem
        )

    def max_total(self) -> Amounts:
        """The largest node total of each resource among current nodes
        (cached: Score asks once per node per cycle)."""
        if self._max_total is not None:
            return self._max_total
        cpu = mem = 0
        for node in self.nodes.values():
            total = node.total
            cpu, mem = max(cpu, total.cpu), max(mem, total.mem)
        self._max_total = Amounts(cpu, mem)
        return self._max_total

    # ------------------------------------------------------------- nodes
    def upsert_node(self, name: str, allocatable: Amounts) -> None:
        node = self.nodes.get(name)
        if node is None:
            node = self.nodes[name] = NodeState(name)
        node.allocatable = allocatable
        node.budget = self._budget(name, allocatable)
        self._max_total = None
        self.dirty.add(name)

    def remove_node(self, name: str) -> None:
        """The node is gone: it has no budget any more (total 0). Its pods
        stay held on it until they go (as a pod seen before its node is),
        so the state is the one a restart builds from the same objects,
        and a node that comes back under the same name counts them again;
        the record goes with its last pod."""
        node = self.nodes.get(name)
        if node is None:
            return
        self._max_total = None
        self.dirty.add(name)
        if not node.pods:
            del self.nodes[name]
            return
        node.budget, node.allocatable = None, ZERO

    def _node(self, name: str) -> NodeState:
        node = self.nodes.get(name)
        if node is None:  # a pod seen before its node: holds nothing until it comes
            node = self.nodes[name] = NodeState(name)
        return node

    # --------------------------------------------------- pod bookkeeping
    def _attach(self, pod: PodState) -> None:
        node = self._node(pod.node)
        self.dirty.add(node.name)
        reserved, buffer, pressure, migrating, accounted = _contribution(pod)
        node.reserved += reserved
        node.buffer += buffer
        node.pressure += pressure
        node.migrating += migrating
        node.pressure_accounted_for += accounted
        node.pods[pod.key] = pod
        self.pods[pod.key] = pod
        self._index(pod)

    def _index(self, pod: PodState) -> None:
        vm_key = pod.vm_key
        if vm_key is not None:
            self._vm_pods.setdefault(vm_key, set()).add(pod.key)
            self._reindex(vm_key)

    def _unindex(self, pod: PodState) -> None:
        vm_key = pod.vm_key
        if vm_key is None:
            return
        keys = self._vm_pods.get(vm_key)
        if keys is not None:
            keys.discard(pod.key)
            if not keys:
                del self._vm_pods[vm_key]
        self._reindex(vm_key)

    def _reindex(self, vm_key: str) -> None:
        """The VM's pod: one that is no migration target if any (the source
        during a live migration), else a target; the same whatever the order
        pods came in, so a mirror's index equals the authority's."""
        candidates = [
            pod
            for key in self._vm_pods.get(vm_key, ())
            if (pod := self.pods.get(key)) is not None and pod.vm_key == vm_key
        ]
        if not candidates:
            self._pods_by_vm.pop(vm_key, None)
            return
        best = min(candidates, key=lambda pod: (pod.migration_target, pod.key))
        self._pods_by_vm[vm_key] = best.key

    def _detach(self, pod: PodState) -> None:
        node = self.nodes[pod.node]
        self.dirty.add(node.name)
        reserved, buffer, pressure, migrating, accounted = _contribution(pod)
        node.reserved = node.reserved.minus(reserved)
        node.buffer = node.buffer.minus(buffer)
        node.pressure = node.pressure.minus(pressure)
        node.migrating = node.migrating.minus(migrating)
        node.pressure_accounted_for = node.pressure_accounted_for.minus(accounted)
        del node.pods[pod.key]
        del self.pods[pod.key]
        self._unindex(pod)
        if node.budget is None and not node.pods:
            del self.nodes[node.name]

    def replace_pod(self, old: PodState, new: PodState) -> None:
        """Swap a pod's record, keeping the node sums exact."""
        self._detach(old)
        self._attach(new)

    def remove_pod(self, key: str) -> None:
        """A pod deleted or terminal: release everything it held. Idempotent."""
        pod = self.pods.get(key)
        if pod is not None:
            self._detach(pod)

    def set_migrating(self, key: str, migrating: bool) -> None:
        """A migration of the pod (its source) began (True) or ended (False);
        a migration's target is never migrating."""
        pod = self.pods.get(key)
        if pod is None or pod.migrating == migrating or (migrating and pod.migration_target):
            return
        told = pod.migrate_told and migrating
        queued = pod.queued and not migrating  # Neon: removeIfPresent at the start
        self.replace_pod(
            pod,
            dataclasses.replace(pod, migrating=migrating, migrate_told=told, queued=queued),
        )

    def pod_index(self) -> Mapping[str, str]:
        """VM (namespace/name) -> the key of the pod running it (read-only view)."""
        return self._pods_by_vm

    def pod_of_vm(self, vm_key: str) -> PodState | None:
        key = self._pods_by_vm.get(vm_key)
        return None if key is None else self.pods.get(key)

    # --------------------------------------------------------- decisions
    def reserved_if(
        self, node_name: str, add: Amounts, *, without: Iterable[str] = (), extra: Amounts = ZERO
    ) -> Amounts:
        """What the node would reserve with ``add`` (node units) on top, leaving out the pods
        ``without`` and counting ``extra`` for pods we do not know. Pure."""
        node = self.nodes.get(node_name)
        reserved = ZERO if node is None else node.reserved
        for key in without:
            pod = None if node is None else node.pods.get(key)
            if pod is not None:
                reserved = reserved.minus(node_amount(pod.reserved, pod.vm))
        return reserved + extra + add

    def fits(
        self, node_name: str, add: Amounts, *, without: Iterable[str] = (), extra: Amounts = ZERO
    ) -> bool:
        """Would ``add`` fit on the node (reserved <= total for both resources)?"""
        node = self.nodes.get(node_name)
        if node is None or node.budget is None:
            return False
        return self.reserved_if(node_name, add, without=without, extra=extra).fits_in(node.total)

    def reserve(
        self, key: str, uid: str, node_name: str, amount: Amounts, vm: VmInfo | None
    ) -> bool:
        """Reserve a pod being scheduled at ``amount`` (a VM at its current use:
        never below it, whatever ``amount`` says, as an agent's grant is not).

        Idempotent: a pod already held on this node is left as it is. False,
        and nothing changes, when it does not fit. A pod in an ignored
        namespace is allowed and not held (Neon's Reserve)."""
        if self.config.ignored(key):
            return True
        amount = at_least_use(amount, vm)
        current = self.pods.get(key)
        if current is not None and current.node == node_name:
            return True
        if current is not None:
            self._detach(current)
        if not self.fits(node_name, node_amount(amount, vm)):
            if current is not None:
                self._attach(current)
            return False
        self._attach(PodState(key=key, uid=uid, node=node_name, reserved=amount, vm=vm))
        return True

    def hold(self, key: str, uid: str, node_name: str, amount: Amounts, vm: VmInfo | None) -> None:
        """Carry over a reservation made before this state existed (the
        authority's process restarted while the pod was being bound): held
        as ``reserve`` would, without the fit check (it fitted when it was
        made). A pod already known (seen bound) is left as it is."""
        if key not in self.pods and not self.config.ignored(key):
            reserved = at_least_use(amount, vm)
            self._attach(PodState(key=key, uid=uid, node=node_name, reserved=reserved, vm=vm))

    def unreserve(self, key: str, node_name: str) -> None:
        """Undo ``reserve``: only a pod no informer has confirmed bound there.
        Callable any number of times, with or without a prior Reserve."""
        pod = self.pods.get(key)
        if pod is not None and pod.node == node_name and not pod.confirmed:
            self._detach(pod)

    # ----------------------------------------------------- what we observe
    def observe_pod(
        self,
        key: str,
        uid: str,
        node_name: str,
        requests: Amounts,
        vm: VmInfo | None,
        *,
        migration_target: bool = False,
    ) -> None:
        """A pod the informer shows bound to ``node_name``.

        Known on that node: confirmed; a non-VM pod follows its requests (in-place
        resize). New (bound by someone else, or before a restart): a non-VM pod
        counts its requests; a VM pod with autoscaling enabled is assumed at its
        maximum, the excess over its use held as buffer until its agent reports;
        one without (no agent will come) at its use. A pod in an ignored
        namespace is not held (Neon's pod watch drops it)."""
        current = self.pods.get(key)
        if self.config.ignored(key):
            if current is not None:
                self._detach(current)
            return
        if current is not None and current.uid != uid:
            self._detach(current)  # same name, new pod
            current = None
        if current is not None and current.node == node_name:
            target = current.migration_target == migration_target
            if (
                target
                and current.confirmed
                and (current.vm is not None or current.reserved == requests)
            ):
                return
            new = dataclasses.replace(
                current,
                confirmed=True,
                migration_target=migration_target,
                migrating=(current.migrating and not migration_target),
            )
            if current.vm is None:
                new.reserved = requests
            self.replace_pod(current, new)
            return
        if current is not None:
            self._detach(current)
        if vm is None:
            pod = PodState(key=key, uid=uid, node=node_name, reserved=requests, confirmed=True)
        elif not vm.autoscaling_enabled:
            use = Amounts(vm.cpu_use, vm.mem_use)
            pod = PodState(key=key, uid=uid, node=node_name, reserved=use, vm=vm, confirmed=True)
            pod.migration_target = migration_target
        else:
            maximum = Amounts(vm.cpu_max, vm.mem_max)
            use = Amounts(vm.cpu_use, vm.mem_use)
            pod = PodState(
                key=key,
                uid=uid,
                node=node_name,
                reserved=maximum,
                buffer=maximum.minus(use),
                vm=vm,
                confirmed=True,
                migration_target=migration_target,
            )
        self._attach(pod)

    def observe_vm(self, vm: VmInfo) -> None:
        """A VM changed (resized by hand or by its agent, bounds, labels).

        Without autoscaling (no agent) the pod is reserved at exactly the VM's
        use, up or down, unless an agent did contact us (then it is treated as
        autoscaled: what was granted stays). With autoscaling, before any
        agent contact: held at its maximum, the buffer being the rest above
        ``use`` (what a restart builds from the same object), when it already
        was (first seen bound), its maximum changed (Neon's
        ``handleUpdatedLimits``), or autoscaling was just turned on; else (we
        reserved it at its use) it follows ``use``. After contact the
        reservation is the larger of ``use`` and the last permit (so it
        follows a hand resize above the permit and back, and a decrease the
        agent reported once the VM shows it), and a changed maximum moves
        reservation and buffer as ``handleUpdatedLimits`` (v0.41.0) does."""
        pod = self.pod_of_vm(f"{vm.namespace}/{vm.name}")
        if pod is None:
            return
        use = Amounts(vm.cpu_use, vm.mem_use)
        new = dataclasses.replace(pod, vm=vm)
        old = pod.vm
        if not vm.autoscaling_enabled and not pod.agent_contact:
            new.reserved, new.buffer = use, ZERO
        elif pod.agent_contact:
            if vm.autoscaling_enabled and old is not None:
                new.reserved, new.buffer = _updated_limits(pod.reserved, pod.buffer, old, vm)
            base = new.reserved
            if pod.permit is not None and new.buffer == ZERO:
                base = pod.permit  # what its agent holds: follow ``use`` down to it
            new.reserved = at_least_use(base, vm)
        elif _held_at_max(pod, vm):
            top = Amounts(max(vm.cpu_max, use.cpu), max(vm.mem_max, use.mem))
            new.reserved, new.buffer = top, top.minus(use)
        else:
            new.reserved, new.buffer = use, ZERO
        if new == pod:
            return
        self.replace_pod(pod, new)

    # ------------------------------------------------------------ mirrors
    def take_dirty(self) -> list[tuple[str, NodeState | None]]:
        """The nodes changed since the last call, each as it is now (None:
        gone), and forget them. The objects are this state's own: copy them
        (pickle does) before another state may hold them."""
        names, self.dirty = self.dirty, set()
        return [(name, self.nodes.get(name)) for name in sorted(names)]

    def apply_nodes(self, changed: Iterable[tuple[str, NodeState | None]]) -> None:
        """Make this state (a mirror) hold ``changed`` as another state's
        ``take_dirty`` gave them: each node replaced whole, with its pods. A
        pod that moved is dropped with its old node's copy and added with its
        new one's, in either order. The nodes must not be shared with
        another state."""
        for name, node in changed:
            old = self.nodes.pop(name, None)
            if old is not None:
                for key, pod in old.pods.items():
                    if self.pods.get(key) is pod:
                        del self.pods[key]
                        self._unindex(pod)
            if node is not None:
                self.nodes[name] = node
                for key, pod in node.pods.items():
                    previous = self.pods.get(key)
                    if previous is not None and previous is not pod:
                        del self.pods[key]  # moved here; its old node's copy follows
                        self._unindex(previous)
                    self.pods[key] = pod
                    self._index(pod)
            self._max_total = None

    # --------------------------------------------------------------- tests
    def check_invariants(self) -> None:
        """Raise AssertionError if a counter differs from its pods' sum."""
        for node in self.nodes.values():
            sums = [ZERO] * 5
            for pod in node.pods.values():
                assert pod.node == node.name, pod
                assert self.pods.get(pod.key) is pod, pod
                assert pod.buffer.fits_in(pod.reserved), pod
                sums = [a + b for a, b in zip(sums, _contribution(pod), strict=True)]
            counters = (
                node.reserved,
                node.buffer,
                node.pressure,
                node.migrating,
                node.pressure_accounted_for,
            )
            assert tuple(sums) == counters, (node.name, sums, counters)
        assert sum(len(n.pods) for n in self.nodes.values()) == len(self.pods)
        cached, self._max_total = self._max_total, None
        assert cached is None or cached == self.max_total(), (cached, self.max_total())

    def dump(self) -> Mapping[str, object]:
        """A JSON-ready view for the debug endpoint."""
        return {
            "nodes": {name: _dump_node(node) for name, node in sorted(self.nodes.items())},
            "maxTotal": dataclasses.asdict(self.max_total()),
            "config": self.config.model_dump(mode="json", by_alias=True),
        }


def _dump_node(node: NodeState) -> dict[str, object]:
    fields = ("total", "watermark", "reserved", "buffer", "pressure", "migrating")
    dumped: dict[str, object] = {f: dataclasses.asdict(getattr(node, f)) for f in fields}
    dumped["pressureAccountedFor"] = dataclasses.asdict(node.pressure_accounted_for)
    dumped["pods"] = {
        key: {
            "reserved": dataclasses.asdict(pod.reserved),
            "buffer": dataclasses.asdict(pod.buffer),
            "pressure": dataclasses.asdict(pod.pressure),
            "vm": pod.vm_key,
            "confirmed": pod.confirmed,
            "migrating": pod.migrating,
            "migrateTold": pod.migrate_told,
            "agentContact": pod.agent_contact,
            "migrationTarget": pod.migration_target,
        }
        for key, pod in sorted(node.pods.items())
    }
    return dumped
