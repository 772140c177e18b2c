"""Agent requests against the state: grants, denials and the migration choice.

Pure and synchronous. ``handle_request`` applies one validated request (the
protocol module has already turned wire units into millicores and bytes):

- per resource, independently (the reference's deliberate choice): a request
  at or below the pod's reservation is a notification and always accepted
  (reservation := request, pressure cleared); an increase is granted up to
  the node's remaining room rounded down to whole compute units, and never
  less than the agent's ``lastPermit`` (a restarted plugin honours grants it
  made before); what is not granted becomes capacity pressure;
- a permit is always expressible in the request's protocol version
  (``granularity``: whole vCPUs before v2.0, whole memory slots before v4.0).
  The compute unit is a multiple of it, so whole units up from a reservation
  on that grid stay on it. A reservation off the grid (set by a finer
  version, e.g. bytes from v4.0, and now raised by an agent speaking slots)
  is first rounded up to the grid when the node has room for that: an
  increase never answers less than the old reservation (the reference's
  promise; agents reject a permit below what the VM uses, or zero), and the
  agent could not hold a fraction of a slot anyway. Without that room (and
  no ``lastPermit`` covering it) no answer keeps every promise, so the
  request is refused (400, nothing changed; a decrease is always accepted):
  no granted increase ever takes a node above its total;
- with a VM overcommit factor (Neon HEAD's ``spec.overcommit``) the node's
  room is scaled to the pod's units (``pod_room``): the node counts the
  reservation divided by the factor;
- the pod's start-up buffer is cleared: the agent has told us what it uses;
- the reservation is the permit but never below the VM object's ``use``
  (issue 25 #7; Neon reserves the permit): a decrease frees room once the
  VM shows it;
- a ``lastPermit`` counts only up to the VM's maximum (issue 25 #7; Neon
  shares the defect): a forged one cannot push a node above its total
  beyond what the VM could take; likewise an increase is granted at most up
  to the VM's maximum (the rest is neither granted nor pressure; Neon
  grants it), so a restart, which holds a VM at most at its maximum, never
  holds less than the long-running state did;
- the outcome is checked before it is committed: no permit field is zero,
  above the request, (for an increase) below the old reservation, or not
  expressible in the request's protocol version. A
  violation raises ``AgentRequestBug`` and leaves the state as it was.

``RequestError`` carries the documented 4xx answers (unknown pod, migrating
pod changing size, request not a multiple of the compute unit, an increase
from a reservation off the request's grid on a node with no room to round it
up).

Migration: a request from the pod to move asks for its migration
(``wants_migration``; the adapter creates the VirtualMachineMigration);
once the object exists the pod is migrating, and its agent's next answer
carries ``migrate`` (increases become pressure); after that the agent may
not change size. A node is under too much pressure when, for either resource,
what is above the watermark plus pressure exceeds what migrations already
account for plus slack. The pod to move is the first pod in
``migration_order`` (Neon's queue: every non-migrating VM pod whose agent
made a request): pods with metrics before pods without, then least loaded
(``loadAvg1M``) first. It moves only if it opted in
(``autoscaling.neon.tech/auto-migration-enabled=true``); a pod with the
testing label moves on any request once it has sent metrics.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

from plugins.autoscale_enforcer.state import (
    ZERO,
    Amounts,
    NodeState,
    PodState,
    State,
    at_least_use,
    pod_room,
)

ONE = Amounts(1, 1)

log = logging.getLogger(__name__)


class RequestError(Exception):
    """A request refused with a documented status (4xx) and text body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class AgentRequestBug(Exception):
    """The computed answer broke a promise to agents; nothing was changed."""


@dataclass(frozen=True, slots=True)
class AgentInput:
    pod_key: str
    resources: Amounts
    unit: Amounts  # the compute unit to grant in (the agent's from v4.0, else the node's)
    last_permit: Amounts | None
    metrics: float | None  # loadAvg1M
    check_unit: bool  # v1.0-v1.1: requests must be whole units of the unit last sent
    granularity: Amounts = ONE  # the permit must be expressible on the wire


@dataclass(frozen=True, slots=True)
class AgentOutcome:
    permit: Amounts
    migrate: bool
    unit: Amounts  # the node's compute unit (sent to agents before v3.0)
    node: str
    freed: bool = False  # the node's reservation went down (pending pods may fit)
    wants_migration: bool = False  # start migrating this pod (create the object)
    pod_key: str = ""


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step if step > 1 else value


def _round_down(value: int, step: int) -> int:
    return value // step * step if step > 1 else value


class _OffGrid(Exception):
    """The reservation is off the request's grid and rounding it up does not fit."""


def _grant(
    requested: int,
    reserved: int,
    remaining: int,
    unit: int,
    force_minimum: int,
    *,
    grain: int = 1,
    grow: bool = True,
) -> tuple[int, int]:
    """(new reservation, pressure) for one resource; ``remaining`` is the
    node's free room (total minus everything reserved, this pod included).

    ``requested`` and ``force_minimum`` come off the wire, so they are
    multiples of ``grain`` (what the version can express). An increase starts
    from the reservation rounded up to ``grain`` and adds whole units (whole
    grains too: the node's unit always is one) while they fit, so every
    answer is a multiple of ``grain``; ``grow`` False adds none (a migrating
    pod). Raises ``_OffGrid`` when the rounding itself does not fit the room
    and ``force_minimum`` does not cover it: no answer is both on the grid,
    at least the old reservation and within the node's total."""
    if requested <= reserved:
        return requested, 0
    base = _round_up(reserved, grain)  # <= requested: requested is on the grid
    room = reserved + remaining - base
    if room < 0 and force_minimum < base:
        raise _OffGrid
    most = base
    if grow and room > 0:
        step = math.lcm(unit, grain) if unit > 0 else grain
        most = base + (room // step) * step
    most = max(most, force_minimum)
    if requested > most:
        return most, requested - most
    return requested, 0


def _divides(requested: Amounts, unit: Amounts, pod: PodState | None = None) -> bool:
    vm = pod.vm if pod is not None else None
    if vm is not None and (
        requested.cpu in (vm.cpu_min, vm.cpu_max) or requested.mem in (vm.mem_min, vm.mem_max)
    ):
        return True  # the warning's exception at the bounds (free-tier VMs)
    if unit.has_zero() or requested.cpu % unit.cpu or requested.mem % unit.mem:
        return False
    return requested.cpu // unit.cpu == requested.mem // unit.mem


def too_much_pressure(node: NodeState) -> bool:
    """Neon's ``nodeState.tooMuchPressure`` (v0.41.0). Its early "clearly not"
    exit is asymmetric: cpu at or below its watermark but memory strictly
    below, so memory exactly at the watermark (a full node at watermark 1.0,
    say) with capacity pressure is too much pressure."""
    reserved, watermark = node.reserved, node.watermark
    if reserved.cpu <= watermark.cpu and reserved.mem < watermark.mem:
        return False
    for attr in ("cpu", "mem"):
        r, w = getattr(reserved, attr), getattr(watermark, attr)
        logical = max(0, r - w)
        slack = getattr(node.buffer, attr) + max(0, w - r)
        pressure = getattr(node.pressure, attr)
        if logical + pressure > getattr(node.pressure_accounted_for, attr) + slack:
            return True
    return False


def migration_order(node: NodeState) -> Sequence[PodState]:
    """Neon's per-node ``migrationQueue``: every VM pod whose agent has made a
    request since its last migration began (opted in to migration or not),
    not migrating, not a migration target; ``isBetterMigrationTarget``: pods
    with metrics first, least loaded first (ties by key, where Neon's heap has
    no defined order)."""
    candidates = [
        pod
        for pod in node.pods.values()
        if pod.vm is not None and pod.queued and not pod.migrating and not pod.migration_target
    ]
    candidates.sort(
        key=lambda pod: (pod.metrics is None, pod.metrics or 0.0, pod.key),
    )
    return candidates


def _first_to_migrate(node: NodeState) -> PodState | None:
    order = migration_order(node)
    return order[0] if order else None


def handle_request(state: State, request: AgentInput, *, migration_allowed: bool) -> AgentOutcome:
    """Apply one agent request; raises ``RequestError`` or ``AgentRequestBug``,
    and then nothing has changed (not even the stored metrics)."""
    pod = state.pods.get(request.pod_key)
    if pod is None or pod.vm is None:
        raise RequestError(404, "pod not found")
    node = state.nodes[pod.node]

    # The order (a sort of the node's pods) only matters under too much pressure.
    # updateMetricsAndCheckMustMigrate: the pod must be next in the queue (as
    # it stood before this request) and opted in; when the next one is not
    # opted in, nobody migrates.
    should_migrate = (
        pod.vm.migratable and too_much_pressure(node) and _first_to_migrate(node) is pod
    )
    forced = pod.vm.always_migrate and pod.metrics is not None and not pod.migration_target
    wants_migration = (should_migrate or forced) and not pod.migrating and migration_allowed
    # Tell the agent only once its migration object exists (the pod is migrating).
    migrate = pod.migrating and not pod.migrate_told

    requested = request.resources
    if pod.migrate_told and requested != pod.reserved:
        raise RequestError(
            400, "cannot change resources: agent has already been informed that pod is migrating"
        )
    told = pod.told_unit
    if told is not None and request.check_unit and not _divides(requested, told):
        # handleResources (v0.1.13): against the unit last sent to this pod,
        # with no exception at the VM's bounds.
        raise RequestError(
            400,
            f"requested resources {_show(requested)} do not divide cleanly by previous "
            f"compute unit {_show(told)}",
        )
    if told is not None and not request.check_unit and not _divides(requested, told, pod):
        # handleResources (v0.6.0-v0.25.x): only a warning, none at the bounds.
        log.warning(
            "pod %s requested resources %s do not divide cleanly by previous compute unit %s",
            pod.key,
            _show(requested),
            _show(told),
        )

    vm = pod.vm
    # node.reserved includes this pod's reservation; in pod units (overcommit)
    remaining = pod_room(pod.reserved, node.remaining, vm)
    last = request.last_permit or ZERO
    last = Amounts(min(last.cpu, vm.cpu_max), min(last.mem, vm.mem_max))
    grain, reserved = request.granularity, pod.reserved
    if migrate:  # no increase: the request is held at the reservation (on the grid)
        last = ZERO
    # Growth stops at the VM's maximum (on the grid, never below the
    # reservation): the VM cannot use more, and a restart, building from the
    # VM object, holds at most that (ours; Neon grants any size).
    asked = Amounts(
        min(
            requested.cpu,
            max(_round_down(vm.cpu_max, grain.cpu), _round_up(reserved.cpu, grain.cpu)),
        ),
        min(
            requested.mem,
            max(_round_down(vm.mem_max, grain.mem), _round_up(reserved.mem, grain.mem)),
        ),
    )
    try:
        cpu = _grant(
            asked.cpu,
            reserved.cpu,
            remaining.cpu,
            request.unit.cpu,
            last.cpu,
            grain=grain.cpu,
            grow=not migrate,
        )
        mem = _grant(
            asked.mem,
            reserved.mem,
            remaining.mem,
            request.unit.mem,
            last.mem,
            grain=grain.mem,
            grow=not migrate,
        )
    except _OffGrid:
        raise RequestError(
            400,
            f"cannot grant increase: reservation {_show(reserved)} is finer than the "
            "protocol version can express and the node has no room to round it up",
        ) from None
    permit = Amounts(cpu[0], mem[0])
    pressure = Amounts(cpu[1], mem[1])
    _check_permit(requested, pod.reserved, permit, request.granularity)
    # Never reserved below the VM object's use (issue 25 #7; Neon reserves the
    # permit): a decrease reported before the VM shows it, or a forged one,
    # frees nothing until the VM does (``State.observe_vm`` follows it down).
    reserved = at_least_use(permit, vm)
    new = dataclasses.replace(
        pod,
        reserved=reserved,
        permit=permit,
        pressure=pressure,
        buffer=ZERO,
        agent_contact=True,
        metrics=request.metrics,
        migrate_told=pod.migrate_told or migrate,
        told_unit=node.unit,
        queued=not pod.migrating,  # updateMetricsAndCheckMustMigrate: addOrUpdate
    )
    before = node.reserved
    state.replace_pod(pod, new)
    freed = not before.fits_in(node.reserved)
    return AgentOutcome(
        permit, migrate, node.unit, node.name, freed, wants_migration, request.pod_key
    )


def _check_permit(requested: Amounts, old: Amounts, permit: Amounts, step: Amounts) -> None:
    for attr in ("cpu", "mem"):
        q, r, p = getattr(requested, attr), getattr(old, attr), getattr(permit, attr)
        bad_step = p % getattr(step, attr) != 0
        if p == 0 or p > q or (q > r and p < r) or (q <= r and p != q) or bad_step:
            raise AgentRequestBug(
                f"refusing to answer permit {_show(permit)} to request {_show(requested)} "
                f"with reservation {_show(old)}"
            )


def _show(amounts: Amounts) -> str:
    return f"{{cpu: {amounts.cpu}m, mem: {amounts.mem}}}"


def choose_migration(state: State, node_name: str) -> PodState | None:
    """The pod to migrate off ``node_name`` now, if the node is over its watermark."""
    node = state.nodes.get(node_name)
    if node is None or not too_much_pressure(node):
        return None
    first = _first_to_migrate(node)
    return first if first is not None and first.vm is not None and first.vm.migratable else None
