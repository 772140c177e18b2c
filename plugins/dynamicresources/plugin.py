"""DynamicResources: the thin adapter between the framework and the DRA core.

Extension points in lifecycle order, as upstream 1.36 (``pkg/scheduler/
framework/plugins/dynamicresources``):

- PreEnqueue: every claim the pod uses exists, is not being deleted and, if
  generated from a template, is owned by the pod; else the pod waits gated.
- PreFilter: resolve the claims; Skip when there are none; a claim being
  allocated for another pod or naming a missing class rejects the pod; build
  one ``Allocator`` over the devices in use now (``ClaimTracker``).
- Filter: an allocated claim must allow the node (its allocation's node
  selector, its binding conditions); the others are allocated on the node and
  the result kept per node.
- PostFilter: deallocate one claim allocated for nodes that cannot serve the
  pod (in the background, conflicts retried, one write per claim at a time),
  so that the claim event requeues the pod; it reports the deallocation as
  started, never as completed, and a failed write is a Warning event on the
  pod, retried after the initial backoff.
- Score: prefer nodes where higher-priority ``firstAvailable`` alternatives
  were allocated (8 minus the chosen index, summed).
- Reserve: the node's allocations become in-flight (no API call); Unreserve
  drops them and un-reserves claims PreBind may have reserved.
- PreBind: after the background writes of the pod's own claims, the
  finalizer, then allocation and reservedFor in one status write; the
  written claim enters the assume cache before the in-flight entry goes, so
  its devices never look free in between. Then, if a device has binding
  conditions, wait until the driver reports it ready, at most
  ``bindingTimeout``.

The claim tracker, inventory, CEL environment and background writes are
one per process, shared by every profile (``manager``), so two profiles see
each other's in-flight allocations.

Every rejection is UnschedulableAndUnresolvable (preemption cannot free
devices), and a broken claim or class (bad CEL...) is an Error that fails the
attempt whatever the node. Extended resources backed by a DeviceClass get a
claim of their own on nodes that do not advertise them (``extended``).
Alpha features are not implemented.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Hashable, Sequence
from typing import Any

from plugins.dynamicresources import extended as extended_claims
from plugins.dynamicresources.allocator import (
    AllocationError,
    AllocationTimeout,
    Allocator,
    NodeAllocationError,
    Solution,
)
from plugins.dynamicresources.args import (
    DEFAULT_BINDING_TIMEOUT,
    DEFAULT_FILTER_TIMEOUT,
    DynamicResourcesArgs,
)
from plugins.dynamicresources.bindingconditions import (
    Binding,
    binding_state,
    has_binding_conditions,
)
from plugins.dynamicresources.claims import (
    FINALIZER,
    ClaimNotReady,
    editable,
    may_use,
    pod_claims,
    reserved_for_pod,
)
from plugins.dynamicresources.cycledata import NAME, STATE_KEY, CycleData
from plugins.dynamicresources.features import Features
from plugins.dynamicresources.inventory import (
    prioritized_list_score,
    validate_requests,
)
from plugins.dynamicresources.manager import shared_manager
from plugins.dynamicresources.model import (
    ModelError,
    Raw,
    parse_claim,
)
from plugins.dynamicresources.nodeselector import node_selector_matches
from plugins.dynamicresources.prebind import ClaimBinder
from plugins.dynamicresources.state import (
    allocation_of,
    claim_key,
    claim_uid,
)
from plugins.dynamicresources.writes import (
    DeallocateError,
    deallocate,
    delete_claim,
    unreserve,
)
from scheduler.framework import (
    ActionType,
    ApiWriter,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EnqueueExtensions,
    EventResource,
    FilterPlugin,
    Handle,
    NodeInfo,
    NodeScore,
    NodeToStatus,
    Pod,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
    SignPlugin,
    Status,
    default_normalize,
)
from scheduler.framework.deviceclasses import ExtendedResourceClasses, is_dra_extended_resource_name

log = logging.getLogger(__name__)

REASON_CANNOT_ALLOCATE = "cannot allocate all claims"
REASON_NOT_AVAILABLE = "resourceclaim not available on the node"
# Upstream says "deallocation of ResourceClaim completed" after its
# synchronous write; here the write runs after PostFilter returns.
REASON_DEALLOCATING = "deallocation of ResourceClaim started"
EVENT_DEALLOCATION_FAILED = "ResourceClaimDeallocationFailed"
# upstream's default podInitialBackoffSeconds: an Error in PostFilter backs off
RETRY_AFTER_FAILED_DEALLOCATION_SECONDS = 1.0
REASON_STILL_UNSCHEDULABLE = "still not schedulable"
REASON_NO_CLAIMS = "no new claims to deallocate"
REASON_STALE_EXTENDED_CLAIM = "cannot schedule extended resource claim"
REASON_DELETED = "deletion of ResourceClaim completed"

# Filter's per-node rejections: frozen, so shared (tagged with the plugin once)
_CANNOT_ALLOCATE = Status.unresolvable(REASON_CANNOT_ALLOCATE)
_NOT_AVAILABLE = Status.unresolvable(REASON_NOT_AVAILABLE)


class DynamicResources(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    ScorePlugin,
    ScoreExtensions,
    ReservePlugin,
    PreBindPlugin,
    EnqueueExtensions,
    SignPlugin,
):
    name = NAME

    def __init__(
        self, args: DynamicResourcesArgs, handle: Handle, features: Features | None = None
    ) -> None:
        self._args = args
        self._handle = handle
        self.features = features if features is not None else Features()
        # One claim tracker, inventory and writer for every profile (upstream's
        # shared DRA manager): profiles never allocate one device twice.
        manager = shared_manager(handle)
        self.tracker = manager.tracker
        self.inventory = manager.inventory
        self._cel = manager.cel
        self.writes = manager.writes
        self._extended = ExtendedResourceClasses.subscribe(handle.informers)
        self.binder = ClaimBinder(
            self.tracker,
            handle.api,
            handle.clock,
            args.binding_timeout,
            # a handle without metrics (unit tests) records nothing
            metrics=getattr(handle, "metrics", None),
            events=getattr(handle, "events", None),
            profile=handle.profile_name,
            binding_conditions=self.features.binding_conditions,
        )

    # ----------------------------------------------------------------- events
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE,
                    ActionType.ADD
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_ALLOCATABLE,
                )
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)
            ),
        ]

    def is_schedulable_after_claim_change(
        self, pod: Pod, old: Raw | None, new: Raw | None
    ) -> QueueingHint:
        if new is None:
            return QueueingHint.QUEUE_SKIP
        freed = old is not None and allocation_of(old) is not None and allocation_of(new) is None
        if not freed and not may_use(pod, new):
            # skipped below either way (not ready, or not one of its claims);
            # this spares the claim lookups for every waiting pod per event
            return QueueingHint.QUEUE_SKIP
        try:
            claims = pod_claims(pod, self.tracker.get)
        except ClaimNotReady:
            return QueueingHint.QUEUE_SKIP
        if freed:
            return QueueingHint.QUEUE  # devices were freed
        if not any(claim_uid(claim) == claim_uid(new) for claim in claims):
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        if (old.get("status") or {}) == (new.get("status") or {}):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_change(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        if new is None or new.uid != pod.uid:
            return QueueingHint.QUEUE_SKIP
        try:
            pod_claims(new, self.tracker.get)
        except ClaimNotReady:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # ------------------------------------------------------------- PreEnqueue
    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.spec.get("resourceClaims"):
            return None
        try:
            pod_claims(pod, self.tracker.get)
        except ClaimNotReady as error:
            return Status.unresolvable(str(error))
        return None

    # -------------------------------------------------------------- signature
    def sign_pod(self, pod: Pod) -> Hashable | None:
        """A pod without claims and without extended resources a DeviceClass
        serves is signed (upstream ``SignPod`` signs pods without claims): for
        it PreFilter skips Filter and Score is 0 on every node, whatever the
        node. Any other pod is never signed: its results read claims and
        slices, not only the NodeInfo."""
        if pod.spec.get("resourceClaims") or self._extended_requests(pod):
            return None
        return ()

    # -------------------------------------------------------------- PreFilter
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        data = CycleData()
        state.write(STATE_KEY, data)
        status = self._pre_filter(data, pod)
        if status is not None and not status.is_skip():
            # Upstream records the claims in its cycle state only once PreFilter
            # succeeds: after a rejection PostFilter has none ("no new claims
            # to deallocate"), not "still not schedulable".
            data.claims = []
            data.extended_index = None
        return None, status

    def _pre_filter(self, data: CycleData, pod: Pod) -> Status | None:
        extended = self._extended_requests(pod)
        if not pod.spec.get("resourceClaims") and not extended:
            return Status.skip()
        try:
            data.claims = pod_claims(pod, self.tracker.get)
        except ClaimNotReady as error:
            return Status.unresolvable(str(error))
        if extended:
            data.extended = extended
            found = extended_claims.find_claim(pod, self.tracker.claims())
            data.extended_index = len(data.claims)
            data.claims.append(
                found
                if found is not None
                else extended_claims.placeholder(pod, f"{pod.uid}-extended-{id(data)}")
            )
        if not data.claims:
            return Status.skip()
        data.prioritized = any(
            request.get("firstAvailable")
            for claim in data.claims
            for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()
        )
        for index, claim in enumerate(data.claims):
            allocation = allocation_of(claim)
            if allocation is not None:
                if allocation.get("nodeSelector") is not None:
                    data.selectors[index] = allocation["nodeSelector"]
                if self.features.binding_conditions and has_binding_conditions(claim):
                    data.conditioned.append(index)
                continue
            if index == data.extended_index:
                continue  # allocated per node in Filter
            if self.tracker.in_flight(claim_uid(claim)) is not None:
                return Status.unresolvable(
                    f"resource claim {claim_key(claim)} is in the process of being allocated"
                )
            status = validate_requests(
                claim, self.inventory.classes, prioritized_list=self.features.prioritized_list
            )
            if status is not None:
                return status
            try:
                data.parsed.append(parse_claim(claim))
            except ModelError as error:
                return Status.as_error(error)
            data.to_allocate.append(index)
        if data.to_allocate or (
            data.extended_index is not None and data.extended_index not in data.selectors
        ):
            data.allocator = Allocator(
                self.tracker.allocated_state(),
                self.inventory.classes,
                self.inventory.slices(),
                self._cel,
                clock=self._handle.clock.now,
                pool_cache=self.inventory.pools,
                features=self.features,
            )
        return None

    def _extended_requests(self, pod: Pod) -> dict[str, int]:
        """Requested extended resources some DeviceClass serves (none
        without DRAExtendedResource)."""
        if not self.features.extended_resource:
            return {}
        scalar = pod.requests.scalar
        if not scalar or not self._extended.any_backed(scalar):
            return {}
        return {
            name: value
            for name, value in scalar.items()
            if value and is_dra_extended_resource_name(name) and self._extended.class_for(name)
        }

    # ----------------------------------------------------------------- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        data = state.get(STATE_KEY)
        if data is None:
            return Status.as_error(f"reading {STATE_KEY.name!r} from cycle state: not found")
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        unavailable = {
            index
            for index, selector in data.selectors.items()
            if not node_selector_matches(selector, node.name, node.labels)
        }
        for index in data.conditioned:
            state_ = binding_state(
                data.claims[index], self._handle.clock.wall(), self._args.binding_timeout
            )
            if state_ in (Binding.FAILED, Binding.TIMED_OUT):
                unavailable.add(index)
        claims = data.parsed
        extended: tuple[dict[str, Any], list[dict[str, str]]] | None = None
        if data.extended_index is not None:
            status, extended = self._extended_for_node(data, pod, node_info)
            if status is not None:
                return status
            if extended is not None:
                try:
                    claims = [*data.parsed, parse_claim(extended[0])]
                except ModelError as error:
                    return Status.as_error(error)
        solution: Solution | None = None
        if data.allocator is not None and claims:
            timeout = self._args.filter_timeout if self.features.filter_timeout else 0
            deadline = self._handle.clock.now() + timeout if timeout > 0 else None
            try:
                solution = data.allocator.solve(node.name, node.labels, claims, deadline)
            except AllocationTimeout as error:
                return Status.as_error(error)
            except NodeAllocationError as error:
                return Status.unresolvable(str(error))
            except AllocationError as error:
                return Status.as_error(error)
            if solution is None:
                return _CANNOT_ALLOCATE
        if unavailable:
            data.unavailable |= unavailable
            return _NOT_AVAILABLE
        if extended is not None:
            results = [*solution.results()] if solution is not None else []
            claim, mappings = extended
            claim.setdefault("status", {})["allocation"] = results.pop()
            data.node_extended[node.name] = (claim, mappings)
            data.node_allocations[node.name] = results
            return None
        if data.node_extended:
            data.node_extended.pop(node.name, None)
        data.node_allocations[node.name] = solution if solution is not None else []
        return None

    def _extended_for_node(
        self, data: CycleData, pod: Pod, node_info: NodeInfo
    ) -> tuple[Status | None, tuple[dict[str, Any], list[dict[str, str]]] | None]:
        """The node-specific extended-resource claim, if this node needs one
        (upstream ``filterExtendedResources``)."""
        claim = data.extended_claim()
        assert claim is not None
        if ((claim.get("spec") or {}).get("devices") or {}).get("requests"):
            return Status.unresolvable(REASON_STALE_EXTENDED_CLAIM), None
        needed = []
        for name in data.extended:
            allocatable = node_info.allocatable.scalar.get(name)
            if allocatable is None or allocatable == 0:
                needed.append(name)
        if not needed or allocation_of(claim) is not None:
            return None, None
        requests, mappings = extended_claims.requests_and_mappings(pod, needed, self._extended)
        return None, (extended_claims.with_requests(claim, requests), mappings)

    # ------------------------------------------------------------- PostFilter
    def post_filter(
        self, state: CycleState, pod: Pod, filtered: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        data = state.get(STATE_KEY)
        if data is None:
            # PreFilter did not run (an earlier plugin rejected the pod);
            # upstream's message is its CycleState's ErrNotFound, and it ends
            # up in the pod's condition too.
            return None, Status.as_error("not found")
        if not data.claims:
            return None, Status.unschedulable(REASON_NO_CLAIMS)
        for index in sorted(data.unavailable):
            claim = data.claims[index]
            reserved = (claim.get("status") or {}).get("reservedFor") or ()
            if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == pod.uid):
                self._deallocate(claim, pod)
                return None, Status.unschedulable(REASON_DEALLOCATING)
        stale = data.extended_claim()
        if stale is not None and not extended_claims.is_placeholder(stale):

            async def delete(claim: Raw = stale, api: ApiWriter = self._handle.api) -> None:
                await delete_claim(api, claim)

            self.writes.submit(claim_key(stale), f"delete claim {claim_key(stale)}", delete)
            return None, Status.unschedulable(REASON_DELETED)
        return None, Status.unschedulable(REASON_STILL_UNSCHEDULABLE)

    def _deallocate(self, claim: Raw, pod: Pod) -> None:
        """Clear the claim's allocation in the background (upstream writes it
        inside PostFilter, which is synchronous here). Success needs no
        report: the claim's update requeues the pod. A failure is a Warning
        event on the pod, which is retried after the initial backoff (as an
        Error in upstream's PostFilter) rather than at the next flush of
        unschedulable pods."""
        key = claim_key(claim)
        if self.writes.busy(key):
            return  # an earlier attempt's deallocation is still being written
        handle = self._handle

        async def write() -> None:
            try:
                answer = await deallocate(handle.api, claim, pod)
            except DeallocateError as error:
                handle.events.event(
                    pod.raw,
                    "Warning",
                    EVENT_DEALLOCATION_FAILED,
                    "Scheduling",
                    f"deallocation of ResourceClaim failed: {error}",
                )
                await handle.clock.sleep(RETRY_AFTER_FAILED_DEALLOCATION_SECONDS)
                handle.activate([pod])
                return
            log.info(
                "DynamicResources: deallocation of ResourceClaim %s %s",
                key,
                "completed" if answer is not None else "not needed any more",
            )

        self.writes.submit(key, f"deallocate claim {key}", write)

    # ------------------------------------------------------------------ Score
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        data = state.get(STATE_KEY)
        if data is None or not data.prioritized:
            return 0, None  # only firstAvailable choices score
        allocations = data.node_allocations.get(node_info.name)
        if allocations is None:
            return 0, None
        by_claim = dict(zip(data.to_allocate, allocations, strict=True))
        return prioritized_list_score(data.claims, by_claim), None

    def score_extensions(self) -> ScoreExtensions:
        return self

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        normalized = default_normalize([entry.score for entry in scores], 100, reverse=False)
        for entry, value in zip(scores, normalized, strict=True):
            entry.score = value
        return None

    def normalize_values(self, values: list[int]) -> list[int]:
        return default_normalize(values, 100, reverse=False)

    # ---------------------------------------------------------------- Reserve
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        data = state.get(STATE_KEY)
        if data is None:
            return None
        extended = data.node_extended.get(node_name)
        if extended is not None:
            claim = copy.deepcopy(extended[0])
            claim["metadata"].setdefault("finalizers", []).append(FINALIZER)
            self.tracker.signal_in_flight(claim_uid(claim), claim)
        if not data.to_allocate:
            data.reserved_node = node_name
            return None
        allocations = data.node_allocations.get(node_name)
        if allocations is None or len(allocations) != len(data.to_allocate):
            return Status.as_error("claim allocation not found for node")
        for index, allocation in zip(data.to_allocate, allocations, strict=True):
            claim = editable(data.claims[index])
            finalizers = claim.setdefault("metadata", {}).setdefault("finalizers", [])
            if FINALIZER not in finalizers:
                finalizers.append(FINALIZER)
            claim.setdefault("status", {})["allocation"] = allocation
            self.tracker.signal_in_flight(claim_uid(claim), claim)
        data.reserved_node = node_name
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        data = state.get(STATE_KEY)
        if data is None:
            return
        extended = data.node_extended.get(node_name)
        if extended is not None:
            self.tracker.remove_in_flight(claim_uid(extended[0]))
        created = data.created_extended
        if created is not None:
            data.created_extended = None

            async def delete(claim: Raw = created, api: ApiWriter = self._handle.api) -> None:
                await delete_claim(api, claim)

            self.writes.submit(claim_key(created), f"delete claim {claim_key(created)}", delete)
        for index, claim in enumerate(data.claims):
            if index == data.extended_index and extended_claims.is_placeholder(claim):
                continue
            if index in data.to_allocate and self.tracker.remove_in_flight(claim_uid(claim)):
                metadata = claim.get("metadata") or {}
                self.tracker.restore(metadata.get("namespace", ""), metadata.get("name", ""))
            namespace, name = claim_key(claim).split("/", 1)
            current = self.tracker.get(namespace, name) or claim
            if allocation_of(current) is not None and reserved_for_pod(current, pod):

                async def write(current: Raw = current, api: ApiWriter = self._handle.api) -> None:
                    answer = await unreserve(api, current, pod)
                    if answer.get("metadata"):
                        self.tracker.assume(answer)

                key = claim_key(current)
                self.writes.submit(key, f"unreserve claim {key}", write)

    # ---------------------------------------------------------------- PreBind
    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        data = state.get(STATE_KEY)
        if data is None or not data.claims:
            return Status.skip()
        return None

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        data = state.get(STATE_KEY)
        if data is None or not data.claims:
            return None
        # An earlier attempt's Unreserve may still be removing this pod from a
        # claim's reservedFor: let it finish, so that "already reserved" below
        # is read after it (the answer is in the assume cache by then). Only
        # this pod's claims: other pods' writes never delay this binding.
        await self.writes.drain(claim_key(claim) for claim in data.claims)
        return await self.binder.bind(data, pod, node_name)


def new(args: object, handle: Handle) -> DynamicResources:
    if args is None:
        args = DynamicResourcesArgs()
    if not isinstance(args, DynamicResourcesArgs):
        raise TypeError(f"{NAME} wants DynamicResourcesArgs, got {type(args).__name__}")
    features = Features.from_gates(handle.feature_gates)
    validate_args_for_features(args, features)
    return DynamicResources(args, handle, features)


def validate_args_for_features(args: DynamicResourcesArgs, features: Features) -> None:
    """A timeout whose gate is off may not be configured (upstream
    ``ValidateDynamicResourcesArgs``). Unlike upstream, a value equal to the
    default passes: upstream leaves a gated-off timeout out of its defaults,
    while our configuration dump (``--write-config-to``) always writes the
    defaults, and that dump must load again with the gate off."""
    problems = []
    given = args.model_fields_set
    if (
        not features.filter_timeout
        and "filter_timeout" in given
        and args.filter_timeout != DEFAULT_FILTER_TIMEOUT
    ):
        problems.append(
            "filterTimeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled"
        )
    if (
        not features.binding_conditions
        and "binding_timeout" in given
        and args.binding_timeout != DEFAULT_BINDING_TIMEOUT
    ):
        problems.append(
            "bindingTimeout: Forbidden: DRADeviceBindingConditions or"
            " DRAResourceClaimDeviceStatus feature gate is disabled"
        )
    if problems:
        raise ValueError(", ".join(problems))
