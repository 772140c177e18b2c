"""The structured allocator: which devices of one node satisfy a pod's claims.

Upstream ``k8s.io/dynamic-resource-allocation/structured`` (the *incubating*
variant used with 1.36 defaults; *stable* and *experimental*, which adds
list-type attributes, differ only where ``features`` says): a deterministic first-fit depth-first
search over device slots (claim -> request -> device), with backtracking and
an undo per device. An ``Allocator`` is built once per scheduling cycle over
the in-use snapshot, the classes and the slices; ``solve(node, claims)`` is
called per node (Filter) and returns a ``Solution`` whose ``results()`` are
one allocation (the API's ``status.allocation`` as a dict) per claim, built
only when read (Reserve needs one node's); ``allocate`` is both at once.
Either returns None when there is no solution, or raises:

- ``AllocationError`` for a broken claim or class (missing class, bad CEL,
  more than 32 devices...): the plugin fails the attempt, whatever the node;
- ``NodeAllocationError`` when no solution exists and some pool visible from
  this node is invalid: unschedulable on this node only;
- ``AllocationTimeout`` past the deadline (``filterTimeout``).

Search order and checks (cheap first): pools (``pools.gather_pools``) ->
slices -> devices; in use (the snapshot, or picked earlier in this call);
class then request selectors (CEL, cached per device) and per-device node
selection; consumable capacity; counters; taints vs. tolerations;
constraints. ExactCount requests pick devices in increasing position only
(combinations, not permutations). ``firstAvailable`` tries subrequests in
order, each with everything after it. Admin-access requests ignore devices
in use elsewhere but never take one twice inside a claim.

Per-cycle shortcuts, each giving exactly the full search's answer: the
claims' preparation is shared by every node when it cannot depend on the
node (``_Plan``), and a node whose usable pools have every device in
exclusive use is rejected without a search when the first slot needs a free
device (``_quick_reject``). Across cycles: a single-device plan's first-fit
pick on a node is kept in the plugin's ``FirstFits`` (``firstfit.py``) and
reused while the node's pools and its devices in use are unchanged.

Invariants: the allocator never mutates its inputs; all per-call state lives
in ``_Run`` (a ``_Plan`` is read-only); results are byte-for-byte
predictable except ``shareID``, which comes from the injected
``new_share_id``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Container, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from plugins.dynamicresources.capacity import consumed_capacity, fits_capacity
from plugins.dynamicresources.cel import CelEnvironment, SelectorError
from plugins.dynamicresources.constraints import Constraint, DistinctAttribute, MatchAttribute
from plugins.dynamicresources.features import DEFAULT_FEATURES, Features
from plugins.dynamicresources.firstfit import FirstFits
from plugins.dynamicresources.model import (
    ALLOCATION_RESULTS_MAX_SIZE,
    MODE_ALL,
    MODE_EXACT_COUNT,
    TAINT_NO_EXECUTE,
    TAINT_NO_SCHEDULE,
    Claim,
    ClaimRequest,
    Device,
    DeviceClass,
    DeviceID,
    DeviceTaint,
    Request,
    Slice,
)
from plugins.dynamicresources.pools import (
    Pool,
    PoolCache,
    PoolID,
    device_matches_node,
    gather_pools,
)
from plugins.dynamicresources.results import Picked, allocation_result, node_selector

_ZERO = Decimal(0)
_HARD_TAINTS = frozenset({TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE})


class AllocationError(Exception):
    """The claims cannot be allocated anywhere as written (fails the attempt)."""


class NodeAllocationError(AllocationError):
    """No solution on this node, and some pool visible from it is invalid."""


class AllocationTimeout(AllocationError):
    """The search ran past its deadline."""


class _MaxSizeExceeded(Exception):
    """A choice would put more than 32 devices into one claim."""


# (claim, request, subrequest, device) indices of one device slot
_At = tuple[int, int, int, int]
# (pool, slice, device) indices where the search for a slot starts
_Location = tuple[int, int, int]
_START: _Location = (0, 0, 0)


@dataclass(frozen=True, slots=True)
class AllocatedState:
    """Devices in use: exclusive allocations (admin access excluded), shared
    allocations by (device, shareID), and the capacity consumed per shared
    device. Built by the plugin's in-use index as views over it (no copy
    per pod), so it is read only during the synchronous scheduling cycle
    that built it, in which the index does not change.

    ``shared_devices`` is the set of devices with a shared allocation;
    without it, it is derived from ``shared`` once (never per device: the
    counter bookkeeping asks for every device of a pool, on every node)."""

    devices: AbstractSet[DeviceID] = frozenset()
    shared: AbstractSet[tuple[DeviceID, str]] = frozenset()
    capacity: Mapping[DeviceID, Mapping[str, Decimal]] = field(default_factory=dict)
    shared_devices: Container[DeviceID] | None = None

    def __post_init__(self) -> None:
        if self.shared_devices is None:
            object.__setattr__(
                self, "shared_devices", frozenset(device_id for device_id, _ in self.shared)
            )

    def is_allocated(self, device_id: DeviceID) -> bool:
        """In use in any way (the counter bookkeeping's view); O(1)."""
        shared_devices = self.shared_devices
        return (
            device_id in self.devices
            or device_id in self.capacity
            or (shared_devices is not None and device_id in shared_devices)
        )


@dataclass(slots=True)
class _RequestData:
    request: Request
    device_class: DeviceClass
    num_devices: int
    all_devices: list[tuple[Device, Slice, Pool]] | None = None


@dataclass(frozen=True, slots=True)
class _Plan:
    """``_Run.prepare``'s outcome when it is the same on every node; read-only
    during the search. ``quick_reject``: on a node where every device is in
    exclusive use the search fails at its first slot without evaluating
    anything (``_quick_reject``)."""

    data: dict[tuple[int, int, int], _RequestData]
    has_subrequests: dict[tuple[int, int], bool]
    constraints: list[list[Constraint]]
    quick_reject: bool
    # one claim asking for one device (one ``exactly`` request, count 1, no
    # admin access): the search is a first-fit scan (``_Run._first_fit``)
    single: bool = False


def _quick_reject(claims: Sequence[Claim]) -> bool:
    """Every alternative of the first claim's first request takes at least
    one device without admin access: such a slot only takes a device not in
    use, and the search skips in-use devices before any selector, capacity or
    constraint check."""
    if not claims or not claims[0].requests:
        return False
    first = claims[0].requests[0]
    alternatives = first.first_available or ((first.exactly,) if first.exactly is not None else ())
    return bool(alternatives) and not any(r.admin_access or r.count < 1 for r in alternatives)


class Allocator:
    def __init__(
        self,
        allocated: AllocatedState,
        classes: Mapping[str, DeviceClass],
        slices: Sequence[Slice],
        cel: CelEnvironment,
        *,
        new_share_id: Callable[[], str] = lambda: str(uuid.uuid4()),
        clock: Callable[[], float] | None = None,
        pool_cache: PoolCache | None = None,
        features: Features = DEFAULT_FEATURES,
        first_fits: FirstFits | None = None,
    ) -> None:
        self.allocated = allocated
        # Single-device picks across cycles: only with the pool cache, whose
        # stable pool lists the picks are checked against.
        self.first_fits = first_fits if pool_cache is not None else None
        self.features = features
        self.pool_cache = pool_cache
        self.classes = classes
        self.cel = cel
        self.new_share_id = new_share_id
        self.clock = clock
        self._slices = slices
        self._indexed: tuple[dict[str, list[Slice]], list[Slice], dict[PoolID, list[Slice]]] | None
        self._indexed = None
        self._available_counters: dict[PoolID, dict[str, dict[str, Decimal]]] = {}
        # id(claims) -> (claims, their node-independent preparation)
        self._plans: dict[int, tuple[Sequence[Claim], _Plan | None]] = {}
        self.invocations = 0  # allocate_one calls, for search-efficiency tests

    def _index(self) -> tuple[dict[str, list[Slice]], list[Slice], dict[PoolID, list[Slice]]]:
        """Slices by node, node-less slices, slices by pool; built on the
        first pool-cache miss only (most cycles never need them)."""
        if self._indexed is None:
            by_node: dict[str, list[Slice]] = {}
            shared: list[Slice] = []
            by_pool: dict[PoolID, list[Slice]] = {}
            for slice_ in self._slices:
                if slice_.node_name:
                    by_node.setdefault(slice_.node_name, []).append(slice_)
                else:
                    shared.append(slice_)
                by_pool.setdefault(slice_.pool_id, []).append(slice_)
            self._indexed = (by_node, shared, by_pool)
        return self._indexed

    def solve(
        self,
        node_name: str,
        labels: Mapping[str, str],
        claims: Sequence[Claim],
        deadline: float | None = None,
    ) -> Solution | None:
        """The devices for ``claims`` on this node, or None; raises as
        described in the module docstring. The API objects are built only
        when asked (``Solution.results``): the plugin keeps a solution per
        node and needs the objects of the chosen node only."""

        def gather() -> list[Pool]:
            by_node, shared, by_pool = self._index()
            return gather_pools(
                [*by_node.get(node_name, ()), *shared],
                node_name,
                labels,
                by_pool,
                partitionable=self.features.partitionable_devices,
            )

        cache = self.pool_cache
        pools = gather() if cache is None else cache.get(node_name, labels, gather)
        plan = self._plan(claims)
        if plan is not None and plan.quick_reject and not self._any_free(pools):
            # exactly what the search concludes, without running it
            if any(pool.invalid for pool in pools):
                raise NodeAllocationError("invalid resource pools were encountered")
            return None
        run = _Run(
            self, node_name=node_name, labels=labels, claims=claims, pools=pools, deadline=deadline
        )
        return run.solve(plan)

    def allocate(
        self,
        node_name: str,
        labels: Mapping[str, str],
        claims: Sequence[Claim],
        deadline: float | None = None,
    ) -> list[dict[str, Any]] | None:
        """One allocation (``status.allocation``) per claim, or None."""
        solution = self.solve(node_name, labels, claims, deadline)
        return None if solution is None else solution.results()

    def _any_free(self, pools: Sequence[Pool]) -> bool:
        """Some device of a usable pool is not in exclusive use."""
        in_use = self.allocated.devices
        for pool in pools:
            if not pool.incomplete and not pool.invalid and not in_use >= pool.device_ids:
                return True
        return False

    def _plan(self, claims: Sequence[Claim]) -> _Plan | None:
        """The preparation of ``claims`` shared by every node, or None when it
        depends on the node (a request for ``All`` devices reads the node's
        pools), raises (the full path raises it, node by node) or keeps
        state (constraints). Cached per claims list: the same list object
        for every node of a cycle, unless a node needs an extended-resource
        claim of its own."""
        entry = self._plans.get(id(claims))
        if entry is not None and entry[0] is claims:
            return entry[1]
        plan = self._make_plan(claims)
        self._plans[id(claims)] = (claims, plan)
        return plan

    def _make_plan(self, claims: Sequence[Claim]) -> _Plan | None:
        for claim in claims:
            if claim.constraints:
                return None
            for entry in claim.requests:
                for request in entry.first_available or (entry.exactly,):
                    if request is not None and request.mode != MODE_EXACT_COUNT:
                        return None
        run = _Run(self, node_name="", labels={}, claims=claims, pools=[], deadline=None)
        try:
            run.prepare()
        except AllocationError:
            return None
        single = len(claims) == 1 and len(claims[0].requests) == 1
        if single:
            request = claims[0].requests[0].exactly
            single = request is not None and request.count == 1 and not request.admin_access
        return _Plan(run.data, run.has_subrequests, run.constraints, _quick_reject(claims), single)

    def available_counters(self, pool: Pool) -> dict[str, dict[str, Decimal]]:
        """Counter sets minus what already-allocated devices consume (cached)."""
        cached = self._available_counters.get(pool.id)
        if cached is not None:
            return cached
        available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
        for slice_ in (*pool.slices, *pool.other_slices):
            for device in slice_.devices:
                if not self.allocated.is_allocated(device.id):
                    continue
                for set_name, counters in device.consumes_counters:
                    target = available.get(set_name, {})
                    for counter, value in counters.items():
                        if counter in target:
                            target[counter] -= value
        self._available_counters[pool.id] = available
        return available


class Solution:
    """A successful search on one node; ``results`` builds its allocations
    (once: later calls return the same objects)."""

    __slots__ = ("_built", "_run")

    def __init__(self, run: _Run) -> None:
        self._run = run
        self._built: list[dict[str, Any]] | None = None

    def results(self) -> list[dict[str, Any]]:
        """One ``status.allocation`` per claim, in claim order."""
        if self._built is None:
            run = self._run
            self._built = [run.result(i) for i in range(len(run.claims))]
        return self._built


class _Run:
    """One ``solve`` call: the search state and its undo bookkeeping."""

    def __init__(
        self,
        allocator: Allocator,
        *,
        node_name: str,
        labels: Mapping[str, str],
        claims: Sequence[Claim],
        pools: list[Pool],
        deadline: float | None,
    ) -> None:
        self.a = allocator
        self.node_name = node_name
        self.labels = labels
        self.claims = claims
        self.pools = pools
        self.deadline = deadline
        self.data: dict[tuple[int, int, int], _RequestData] = {}
        self.has_subrequests: dict[tuple[int, int], bool] = {}
        self.selected_sub: dict[tuple[int, int], int] = {}
        self.constraints: list[list[Constraint]] = []
        self.results: list[list[Picked]] = [[] for _ in claims]
        self.allocating: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, dict[str, Decimal]] = {}
        self.consumed_counters: dict[PoolID, dict[str, dict[str, Decimal]]] = {}
        self.selectable: dict[tuple[DeviceID, int, int, int], bool] = {}

    # ------------------------------------------------------------ preparation
    def solve(self, plan: _Plan | None) -> Solution | None:
        if plan is None:
            self.prepare()
        else:
            self.data, self.has_subrequests = plan.data, plan.has_subrequests
            self.constraints = plan.constraints
        done = self._first_fit() if plan is not None and plan.single else None
        if done is None:
            try:
                done = self._allocate_one((0, 0, 0, 0), False)
            except _MaxSizeExceeded:
                done = False
        if not done:
            if any(pool.invalid for pool in self.pools):
                raise NodeAllocationError("invalid resource pools were encountered")
            return None
        # the one part of the result that can fail is checked now, as upstream's
        # Filter does; the objects are built on demand
        for claim_index in range(len(self.claims)):
            self._node_selector(claim_index, build=False)
        return Solution(self)

    def prepare(self) -> None:
        """Validate the claims and build the per-request data and constraints;
        reads the node's pools only for ``All`` requests."""
        features = self.a.features
        for claim_index, claim in enumerate(self.claims):
            minimum = 0
            for request_index, entry in enumerate(claim.requests):
                _check_gated_fields(claim, entry, features)
                if entry.first_available:
                    self.has_subrequests[(claim_index, request_index)] = True
                    counts = []
                    for sub_index, sub in enumerate(entry.first_available):
                        data = self._validate(claim, sub, (claim_index, request_index, sub_index))
                        self.data[(claim_index, request_index, sub_index)] = data
                        counts.append(data.num_devices)
                    minimum += min(counts)
                elif entry.exactly is not None:
                    data = self._validate(claim, entry.exactly, (claim_index, request_index, 0))
                    self.data[(claim_index, request_index, 0)] = data
                    minimum += data.num_devices
                else:
                    raise AllocationError(
                        f"claim {claim.key}, request {entry.name}: "
                        "missing device class name (unsupported request type?)"
                    )
            if minimum > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {claim.key}: number of requested devices {minimum} exceeds the "
                    f"claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
                )
            constraints: list[Constraint] = []
            sets = features.list_type_constraints
            for index, constraint in enumerate(claim.constraints):
                if constraint.match_attribute:
                    constraints.append(
                        MatchAttribute(constraint.requests, constraint.match_attribute, sets=sets)
                    )
                elif constraint.distinct_attribute and not features.stable_allocator:
                    constraints.append(
                        DistinctAttribute(
                            constraint.requests, constraint.distinct_attribute, sets=sets
                        )
                    )
                else:
                    raise AllocationError(
                        f"claim {claim.key}, constraint #{index}: "
                        "empty constraint (unsupported constraint type?)"
                    )
            self.constraints.append(constraints)

    def _node_selector(self, claim_index: int, *, build: bool) -> dict[str, Any] | None:
        claim, picked = self.claims[claim_index], self.results[claim_index]
        try:
            return node_selector(claim, picked, self.node_name, build=build)
        except ValueError as error:
            raise AllocationError(str(error)) from None

    def result(self, claim_index: int) -> dict[str, Any]:
        def chosen(request_index: int) -> tuple[Request, DeviceClass]:
            sub = self.selected_sub.get((claim_index, request_index), 0)
            data = self.data[(claim_index, request_index, sub)]
            return data.request, data.device_class

        claim = self.claims[claim_index]
        selector = self._node_selector(claim_index, build=True)
        return allocation_result(claim, self.results[claim_index], chosen, selector)

    def _validate(self, claim: Claim, request: Request, key: tuple[int, int, int]) -> _RequestData:
        name = request.name
        if request.admin_access and not self.a.features.admin_access:
            raise AllocationError(
                f"claim {claim.key}, request {name}: admin access is requested, "
                "but the feature is disabled"
            )
        for index, selector in enumerate(request.selectors):
            if selector is None:
                raise AllocationError(
                    f"claim {claim.key}, request {name}, selector #{index}: "
                    "CEL expression empty (unsupported selector type?)"
                )
        if not request.class_name:
            raise AllocationError(
                f"claim {claim.key}, request {name}: "
                "missing device class name (unsupported request type?)"
            )
        device_class = self.a.classes.get(request.class_name)
        if device_class is None:
            raise AllocationError(
                f"claim {claim.key}, request {name}: could not retrieve device class "
                f"{request.class_name}: deviceclass.resource.k8s.io "
                f'"{request.class_name}" not found'
            )
        data = _RequestData(request, device_class, 0)
        if request.mode == MODE_EXACT_COUNT:
            data.num_devices = request.count
        elif request.mode == MODE_ALL:
            data.all_devices = []
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {claim.key}, request {name}: asks for all devices, but "
                        f"resource pool {pool} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"claim {claim.key}, request {name}: asks for all devices, but "
                        f"resource pool {pool} is currently invalid"
                    )
                for slice_ in pool.slices:
                    for device in slice_.devices:
                        if not self._is_selectable(key, data, slice_, device):
                            continue
                        if not self._fits_capacity(request, device):
                            continue
                        data.all_devices.append((device, slice_, pool))
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(
                f"claim {claim.key}, request {name}: unsupported count mode {request.mode}"
            )
        return data

    # ----------------------------------------------------------------- search
    def _allocate_one(self, at: _At, in_subrequest: bool, start: _Location = _START) -> bool:
        """Fill the device slot ``at`` and everything after it; True if all fit.
        ``start`` is where the previous slot of the same request stopped, so
        a request's devices are combined in increasing position only."""
        self._tick()
        claim_index, request_index, sub_index, device_index = at
        if claim_index >= len(self.claims):
            return True
        if request_index >= len(self.claims[claim_index].requests):
            try:
                return self._allocate_one((claim_index + 1, 0, 0, 0), False)
            except _MaxSizeExceeded:
                return False
        if not in_subrequest and self.has_subrequests.get((claim_index, request_index)):
            return self._allocate_subrequests(claim_index, request_index)
        data = self.data[(claim_index, request_index, sub_index)]
        if data.all_devices is not None and not data.all_devices:
            return False
        if device_index >= data.num_devices:
            return self._allocate_one((claim_index, request_index + 1, 0, 0), False)
        remaining = data.num_devices - device_index
        if len(self.results[claim_index]) + remaining > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded
        if data.all_devices is not None:
            device, slice_, pool = data.all_devices[device_index]
            return self._try(at, data, (device, slice_, pool), in_subrequest, _START, must=True)
        return self._allocate_exact(at, data, in_subrequest, start)

    def _first_fit(self) -> bool | None:
        """The search for a single-device plan (``_Plan.single``) without its
        recursion: the first device, in search order, that is free,
        selectable and fits takes the slot, which completes the search.
        None when that device has counters, taints or shared capacity: the
        full search decides then (nothing was changed). Counts invocations and
        checks the deadline as the recursion would: once for the slot, three
        more times (next device, next request, next claim) after a take."""
        self._tick()
        data = self.data[(0, 0, 0)]
        request = data.request
        in_use = self.a.allocated.devices
        memo = self.a.first_fits
        if memo is not None and request.capacity_requests is None:
            shape = (request.class_name, request.selectors, data.device_class.selectors)
            key = (self.node_name, *shape)
            used = memo.in_use(self.pools, in_use)
            kept = memo.get(key, self.pools, used)
            if kept is not None:
                return self._take_kept(kept[0], request)
            done = self._scan_first_fit(data, request, in_use)
            if done is not None:
                picked = self.results[0][0] if done else None
                pick = None if picked is None else (picked.device, picked.slice)
                memo.keep(key, self.pools, used, pick)
            return done
        return self._scan_first_fit(data, request, in_use)

    def _take_kept(self, pick: tuple[Device, Slice] | None, request: Request) -> bool:
        """A kept first-fit pick taken as the scan would take it."""
        if pick is None:
            return False
        self._take(*pick, request)
        self.a.invocations += 3  # the scan's three ticks after a take
        return True

    def _take(self, device: Device, slice_: Slice, request: Request) -> None:
        """The single slot's device: taken by this claim's only request."""
        self.allocating[device.id] = {0}
        self.results[0].append(Picked(device, slice_, request))

    def _scan_first_fit(
        self, data: _RequestData, request: Request, in_use: AbstractSet[DeviceID]
    ) -> bool | None:
        slot = (0, 0, 0)
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            for slice_ in pool.slices:
                for device in slice_.devices:
                    if device.id in in_use:
                        continue
                    if not self._is_selectable(slot, data, slice_, device):
                        continue
                    if not self._fits_capacity(request, device):
                        continue
                    if device.allow_multiple or device.consumes_counters or device.taints:
                        return None
                    self._take(device, slice_, request)
                    for _ in range(3):
                        self._tick()
                    return True
        return False

    def _tick(self) -> None:
        """One search step: counted, and past the deadline it raises."""
        self.a.invocations += 1
        clock = self.a.clock
        if self.deadline is not None and clock is not None and clock() > self.deadline:
            raise AllocationTimeout(f"node {self.node_name}: timed out trying to allocate devices")

    def _allocate_subrequests(self, claim_index: int, request_index: int) -> bool:
        """First-fit over ``firstAvailable``: each candidate with everything after it."""
        all_exceeded = True
        for candidate in range(
            len(self.claims[claim_index].requests[request_index].first_available)
        ):
            try:
                done = self._allocate_one((claim_index, request_index, candidate, 0), True)
            except _MaxSizeExceeded:
                continue
            all_exceeded = False
            if done:
                self.selected_sub[(claim_index, request_index)] = candidate
                return True
        if all_exceeded:
            raise _MaxSizeExceeded
        return False

    def _allocate_exact(
        self, at: _At, data: _RequestData, in_subrequest: bool, start: _Location
    ) -> bool:
        claim_index = at[0]
        slot = at[:3]
        request = data.request
        admin = request.admin_access
        in_use = self.a.allocated.devices
        allocating = self.allocating
        pools = self.pools
        start_pool, start_slice, start_device = start
        for pool_index in range(start_pool, len(pools)):
            pool = pools[pool_index]
            if pool.incomplete or pool.invalid:
                continue
            slices = pool.slices
            slice_start = start_slice if pool_index == start_pool else 0
            for slice_index in range(slice_start, len(slices)):
                slice_ = slices[slice_index]
                devices = slice_.devices
                first = (
                    start_device if pool_index == start_pool and slice_index == start_slice else 0
                )
                for position in range(first, len(devices)):
                    device = devices[position]
                    device_id = device.id
                    if admin:
                        if claim_index in allocating.get(device_id, ()):
                            continue
                    elif device_id in in_use or allocating.get(device_id):
                        continue  # _in_use
                    if not self._is_selectable(slot, data, slice_, device):
                        continue
                    if not self._fits_capacity(request, device):
                        continue
                    location = (pool_index, slice_index, position + 1)
                    if self._try(at, data, (device, slice_, pool), in_subrequest, location):
                        return True
        return False

    def _try(
        self,
        at: _At,
        data: _RequestData,
        candidate: tuple[Device, Slice, Pool],
        in_subrequest: bool,
        location: _Location,
        *,
        must: bool = False,
    ) -> bool:
        """Take the candidate for slot ``at`` and continue; undo unless that succeeds."""
        undo = self._allocate_device(at[:3], data, *candidate, must=must)
        if undo is None:
            return False
        claim_index, request_index, sub_index, device_index = at
        try:
            done = self._allocate_one(
                (claim_index, request_index, sub_index, device_index + 1), in_subrequest, location
            )
        except BaseException:
            undo()
            raise
        if not done:
            undo()
        return done

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.a.allocated.devices or bool(self.allocating.get(device_id))

    def _is_selectable(
        self, slot: tuple[int, int, int], data: _RequestData, slice_: Slice, device: Device
    ) -> bool:
        key = (device.id, *slot)
        cached = self.selectable.get(key)
        if cached is not None:
            return cached
        if device.binding_conditions and not self.a.features.binding_conditions:
            self.selectable[key] = False
            return False  # upstream isSelectable: not supported with the feature off
        result = self._selectors_match(slot, data, data.device_class.selectors, device, True)
        if result:
            result = self._selectors_match(slot, data, data.request.selectors, device, False)
        if result and slice_.per_device_node_selection:
            result = device_matches_node(device, self.node_name, self.labels)
        self.selectable[key] = result
        return result

    def _selectors_match(
        self,
        slot: tuple[int, int, int],
        data: _RequestData,
        selectors: Sequence[str | None],
        device: Device,
        of_class: bool,
    ) -> bool:
        compile_ = self.a.cel.compile
        known = device.cel.results  # CompiledSelector.matches' cache, read directly
        for index, expression in enumerate(selectors):
            if expression is None:
                continue  # rejected by _validate for requests; classes are validated by the API
            try:
                compiled = compile_(expression)
                outcome = known.get(compiled.key)
                if outcome is True:
                    continue
                if outcome is False:
                    return False
                if not compiled.matches(device.cel):
                    return False
            except SelectorError as error:
                prefix = f"claim {self.claims[slot[0]].key}, request {data.request.full_name}: "
                if of_class:
                    prefix += f"class {data.device_class.name}: "
                raise AllocationError(
                    f"{prefix}selector #{index}: {error} (expression: {expression})"
                ) from None
        return True

    def _fits_capacity(self, request: Request, device: Device) -> bool:
        if not self.a.features.consumable_capacity:
            return True  # upstream checks capacity only with the feature on
        if (
            device.whole_capacity_fits
            and not request.capacity_requests
            and device.id not in self.allocating_capacity
            and device.id not in self.a.allocated.capacity
        ):
            return True  # nothing else consumes it, and taking it all is allowed
        allocated = self.a.allocated.capacity.get(device.id, {})
        allocating = self.allocating_capacity.get(device.id, {})
        return fits_capacity(request.capacity_requests, device.capacity, allocated, allocating)

    def _allocate_device(
        self,
        slot: tuple[int, int, int],
        data: _RequestData,
        device: Device,
        slice_: Slice,
        pool: Pool,
        *,
        must: bool,
    ) -> Callable[[], None] | None:
        claim_index = slot[0]
        claim = self.claims[claim_index]
        request = data.request
        multiple, taints = self._traits(device)
        if (
            not multiple
            and request.admin_access
            and claim_index in self.allocating.get(device.id, ())
        ):
            return None
        if not request.admin_access and self._in_use(device.id):
            return None
        if device.consumes_counters and not self.a.features.partitionable_devices:
            return None  # upstream allocateDevice: counters need the feature
        if (
            not multiple
            and not device.consumes_counters
            and not taints
            and not self.constraints[claim_index]
        ):
            return self._take_plain(claim_index, request, device, slice_)
        undo_steps: list[Callable[[], None]] = []

        def undo() -> None:
            for step in reversed(undo_steps):
                step()

        shared_in_use = multiple and (
            device.id in self.a.allocated.capacity or device.id in self.allocating_capacity
        )
        if device.consumes_counters and not shared_in_use:
            if not self._reserve_counters(pool, device):
                return None
            undo_steps.append(lambda: self._release_counters(pool, device))
        if any(
            taint.effect in _HARD_TAINTS
            and not any(t.tolerates(taint) for t in request.tolerations)
            for taint in taints
        ):
            undo()
            return None
        base = request.parent or request.name
        sub = request.name if request.parent else ""
        for constraint in self.constraints[claim_index]:
            if not constraint.add(base, sub, device):
                undo()
                if must:
                    raise AllocationError(
                        f"claim {claim.key}, request {request.name}: cannot add device "
                        f"{'/'.join(device.id)} because a claim constraint would not be satisfied"
                    )
                return None
            undo_steps.append(lambda c=constraint: c.remove(base, sub))  # type: ignore[misc]
        if not multiple:
            holders = self.allocating.setdefault(device.id, set())
            holders.add(claim_index)
            undo_steps.append(lambda: holders.discard(claim_index))
        picked = Picked(device, slice_, request)
        if not self._fits_capacity(request, device):
            undo()
            return None
        if multiple:
            consumed = consumed_capacity(request.capacity_requests, device.capacity)
            picked.consumed = consumed
            picked.share_id = self.a.new_share_id()
            existed = device.id in self.allocating_capacity
            totals = self.allocating_capacity.setdefault(device.id, {})
            for name, value in consumed.items():
                totals[name] = totals.get(name, _ZERO) + value

            def release_capacity() -> None:
                for name, value in consumed.items():
                    totals[name] -= value
                if not existed:
                    del self.allocating_capacity[device.id]

            undo_steps.append(release_capacity)
        results = self.results[claim_index]
        size = len(results)
        results.append(picked)

        def drop_result() -> None:
            del results[size:]

        undo_steps.append(drop_result)
        return undo

    def _traits(self, device: Device) -> tuple[bool, tuple[DeviceTaint, ...]]:
        """Whether the device is shareable and the taints that count, as the
        features say (no sharing without DRAConsumableCapacity, no taints
        without DRADeviceTaints)."""
        features = self.a.features
        return (
            device.allow_multiple and features.consumable_capacity,
            device.taints if features.device_taints else (),
        )

    def _take_plain(
        self, claim_index: int, request: Request, device: Device, slice_: Slice
    ) -> Callable[[], None] | None:
        """``_allocate_device`` for an exclusive device without counters or
        taints, in a claim without constraints: the same steps, fewer closures."""
        if not self._fits_capacity(request, device):
            return None
        holders = self.allocating.setdefault(device.id, set())
        holders.add(claim_index)
        results = self.results[claim_index]
        size = len(results)
        results.append(Picked(device, slice_, request))

        def undo() -> None:
            del results[size:]
            holders.discard(claim_index)

        return undo

    def _reserve_counters(self, pool: Pool, device: Device) -> bool:
        available = self.a.available_counters(pool)
        consumed = self.consumed_counters.setdefault(pool.id, {})
        for set_name, counters in device.consumes_counters:
            target = consumed.setdefault(set_name, {})
            for counter, value in counters.items():
                target[counter] = target.get(counter, _ZERO) + value
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for counter, value in counters.items():
                if value < used.get(counter, _ZERO):
                    self._release_counters(pool, device)
                    return False
        return True

    def _release_counters(self, pool: Pool, device: Device) -> None:
        consumed = self.consumed_counters[pool.id]
        for set_name, counters in device.consumes_counters:
            for counter, value in counters.items():
                consumed[set_name][counter] -= value


def _check_gated_fields(claim: Claim, entry: ClaimRequest, features: Features) -> None:
    """Fields whose feature is off are an error, as upstream's allocator
    (``Allocate``: subrequests without DRAPrioritizedList; capacity requests
    without DRAConsumableCapacity, in the incubating allocator only: the
    stable one, used when consumable capacity, binding conditions and
    list-type constraints are all off, ignores them)."""
    if entry.first_available and not features.prioritized_list:
        raise AllocationError(
            f"claim {claim.key}, request {entry.name}: has subrequests, "
            "but the DRAPrioritizedList feature is disabled"
        )
    if features.consumable_capacity or features.stable_allocator:
        return
    if entry.exactly is not None and entry.exactly.capacity_requests is not None:
        raise AllocationError(
            f"claim {claim.key}, request {entry.name}: has capacity requests, "
            "but the DRAConsumableCapacity feature is disabled"
        )
    for sub in entry.first_available:
        if sub.capacity_requests is not None:
            raise AllocationError(
                f"claim {claim.key}, subrequest {sub.name}: has capacity requests, "
                "but the DRAConsumableCapacity feature is disabled"
            )
