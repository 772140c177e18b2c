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

This module is the adapter only: each extension point reads its
``CycleData`` and calls the module that implements it (``hints``,
``prefilter``, ``filtering``, ``postfilter``, ``reservation``, ``prebind``)
with the plugin's injected ``Parts``; the status strings live in
``reasons``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from plugins.dynamicresources.args import DynamicResourcesArgs, validate_args_for_features
from plugins.dynamicresources.claims import ClaimNotReady, pod_claims
from plugins.dynamicresources.cycledata import NAME, STATE_KEY, CycleData
from plugins.dynamicresources.features import Features
from plugins.dynamicresources.filtering import filter_node
from plugins.dynamicresources.hints import ClaimHints
from plugins.dynamicresources.inventory import prioritized_list_score
from plugins.dynamicresources.manager import shared_manager
from plugins.dynamicresources.model import Raw
from plugins.dynamicresources.parts import Parts
from plugins.dynamicresources.postfilter import post_filter
from plugins.dynamicresources.prebind import ClaimBinder
from plugins.dynamicresources.prefilter import extended_requests, prepare
from plugins.dynamicresources.reasons import REASON_CANNOT_ALLOCATE, REASON_NOT_AVAILABLE
from plugins.dynamicresources.reservation import reserve, unreserve_claims
from plugins.dynamicresources.state import claim_key
from scheduler.framework import (
    ClusterEventWithHint,
    CycleState,
    EnqueueExtensions,
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
from scheduler.framework.deviceclasses import ExtendedResourceClasses

__all__ = [
    "REASON_CANNOT_ALLOCATE",
    "REASON_NOT_AVAILABLE",
    "DynamicResources",
    "new",
    "validate_args_for_features",
]


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
        self.features = features if features is not None else Features()
        # One claim tracker, inventory and writer for every profile (upstream's
        # shared DRA manager): profiles never allocate one device twice.
        manager = shared_manager(handle)
        self.tracker = manager.tracker
        self.inventory = manager.inventory
        self.writes = manager.writes
        self._parts = Parts(
            args=args,
            handle=handle,
            features=self.features,
            tracker=manager.tracker,
            inventory=manager.inventory,
            cel=manager.cel,
            writes=manager.writes,
            extended=ExtendedResourceClasses.subscribe(handle.informers),
        )
        self._hints = ClaimHints(self.tracker)
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
        return self._hints.events()

    def is_schedulable_after_claim_change(
        self, pod: Pod, old: Raw | None, new: Raw | None
    ) -> QueueingHint:
        return self._hints.after_claim_change(pod, old, new)

    def is_schedulable_after_pod_change(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        return self._hints.after_pod_change(pod, old, new)

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
        if pod.spec.get("resourceClaims") or extended_requests(self._parts, pod):
            return None
        return ()

    # -------------------------------------------------------------- PreFilter
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        data = CycleData()
        state.write(STATE_KEY, data)
        status = prepare(self._parts, data, pod)
        if status is not None and not status.is_skip():
            # Upstream records the claims in its cycle state only once PreFilter
            # succeeds: after a rejection PostFilter has none ("no new claims
            # to deallocate"), not "still not schedulable".
            data.claims = []
            data.extended_index = None
        return None, status

    # ----------------------------------------------------------------- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        data = state.get(STATE_KEY)
        if data is None:
            return Status.as_error(f"reading {STATE_KEY.name!r} from cycle state: not found")
        return filter_node(self._parts, data, pod, node_info)

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
        return None, post_filter(self._parts, data, pod)

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
        return reserve(self._parts, data, node_name)

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        data = state.get(STATE_KEY)
        if data is None:
            return
        unreserve_claims(self._parts, data, pod, node_name)

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
