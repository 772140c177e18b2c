"""VolumeBinding: PreFilter, Filter, Reserve/Unreserve and PreBind over claims.

The thin adapter over the pure ``binder`` (decisions) and ``prebind`` (the
API writes and the wait):

- PreFilter skips pods without claims; fails UnschedulableAndUnresolvable
  when a claim is missing, lost or being deleted (upstream messages, e.g.
  ``persistentvolumeclaim "x" not found``) or when an unbound claim binds
  immediately (``pod has unbound immediate PersistentVolumeClaims``: the PV
  controller binds those, not the scheduler); else records the claims.
- Filter: per node, the bindings and provisions the pod would need there,
  or the upstream reasons (UnschedulableAndUnresolvable). No API call.
- Reserve assumes the chosen node's bindings (later cycles see the volumes
  taken and the claims' selected node); Unreserve reverts them.
- PreBind writes them (PV claimRef, claim ``volume.kubernetes.io/selected-node``)
  and waits, at most ``bindTimeoutSeconds``, until the claims are bound.

No Score: upstream scores only with the StorageCapacityScoring gate (alpha,
off). In-tree volumes are not translated to CSI (upstream CSI migration).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from plugins.volume_binding.args import VolumeBindingArgs
from plugins.volume_binding.assume import AssumeCache
from plugins.volume_binding.binder import (
    REASON_UNBOUND_IMMEDIATE,
    BindingError,
    ClaimError,
    PodVolumeClaims,
    PodVolumes,
    VolumeBinder,
)
from plugins.volume_binding.prebind import NODES, PODS, VolumeBindingWriter
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EnqueueExtensions,
    EventResource,
    FilterPlugin,
    Handle,
    NodeInfo,
    PluginMetrics,
    Pod,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    QuantityError,
    QueueingHint,
    ReservePlugin,
    SignPlugin,
    StateKey,
    Status,
)
from scheduler.framework.quantity import to_units
from scheduler.framework.volumes import (
    ANN_MIGRATED_PLUGINS,
    CSI_DRIVERS,
    CSI_NODES,
    CSI_STORAGE_CAPACITIES,
    PVCS,
    PVS,
    STORAGE_CLASSES,
    StorageLister,
    annotations_of,
    meta,
    pod_claims,
    pod_volumes,
    spec,
)

NAME = "VolumeBinding"

# The stores read, opened by the factory so the first cycle sees them synced.
WATCHED = (PVCS, PVS, STORAGE_CLASSES, CSI_NODES, CSI_DRIVERS, CSI_STORAGE_CAPACITIES, NODES, PODS)

Raw = Mapping[str, Any]


@dataclass(slots=True)
class BindingState:
    """Shared, not copied, by clones (as upstream): Filter adds to it per node."""

    claims: PodVolumeClaims | None = None
    volumes_by_node: dict[str, PodVolumes] = field(default_factory=dict)
    all_bound: bool = False

    def clone(self) -> BindingState:
        return self


STATE_KEY: StateKey[BindingState] = StateKey(NAME)


def _missing_state() -> Status:
    return Status.as_error(f"reading {STATE_KEY.name!r} from cycle state: not found")


class VolumeBinding(
    PreFilterPlugin, FilterPlugin, ReservePlugin, PreBindPlugin, SignPlugin, EnqueueExtensions
):
    name = NAME

    def __init__(
        self,
        binder: VolumeBinder,
        writer: VolumeBindingWriter,
        metrics: PluginMetrics | None = None,
    ) -> None:
        self._binder = binder
        self._writer = writer
        self._metrics = metrics

    def _stage_failed(self, stage: str) -> None:
        """``scheduler_volume_scheduling_stage_error_total{operation}``, counted
        where upstream's binder counts it (predicate, assume, bind)."""
        if self._metrics is not None:
            self._metrics.volume_scheduling_stage_error(stage)

    def sign_pod(self, pod: Pod) -> Hashable | None:
        # Reads claims and volumes, which the node's generation does not cover.
        return None if pod_volumes(pod) else ()

    # ----------------------------------------------------------------- events
    def events_to_register(self) -> list[ClusterEventWithHint]:
        add_or_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, add_or_update),
                self.is_schedulable_after_storage_class_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, add_or_update),
                self.is_schedulable_after_claim_change,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME, add_or_update)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, add_or_update),
                self.is_schedulable_after_csi_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_DRIVER, ActionType.UPDATE),
                self.is_schedulable_after_csi_driver_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_STORAGE_CAPACITY, add_or_update),
                self.is_schedulable_after_capacity_change,
            ),
        ]

    def is_schedulable_after_claim_change(
        self, pod: Pod, old: Raw | None, new: Raw | None
    ) -> QueueingHint:
        if new is None or meta(new).get("namespace") != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        name = meta(new).get("name")
        if any(ref.claim == name for ref in pod_claims(pod)):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_storage_class_change(
        self, pod: Pod, old: Raw | None, new: Raw | None
    ) -> QueueingHint:
        if old is None:
            return QueueingHint.QUEUE
        if new is not None and new.get("allowedTopologies") != old.get("allowedTopologies"):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_node_change(
        self, pod: Pod, old: Raw | None, new: Raw | None
    ) -> QueueingHint:
        if old is None:
            return QueueingHint.QUEUE
        if new is not None and annotations_of(old).get(ANN_MIGRATED_PLUGINS) != annotations_of(
            new
        ).get(ANN_MIGRATED_PLUGINS):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_csi_driver_change(
        self, pod: Pod, old: Raw | None, new: Raw | None
    ) -> QueueingHint:
        if old is None or new is None:
            return QueueingHint.QUEUE
        driver = meta(new).get("name")
        for volume in pod_volumes(pod):
            csi = volume.get("csi")
            if csi is None or csi.get("driver") != driver:
                continue
            if spec(old).get("storageCapacity") and not spec(new).get("storageCapacity"):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_capacity_change(
        self, pod: Pod, old: Raw | None, new: Raw | None
    ) -> QueueingHint:
        if old is None:
            return QueueingHint.QUEUE
        old_limit, new_limit = _volume_limit(old), _volume_limit(new)
        if new_limit is not None and (old_limit is None or new_limit > old_limit):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # ------------------------------------------------------- scheduling cycle
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            has_claims = self._binder.pod_has_claims(pod)
        except ClaimError as error:
            return None, Status.unresolvable(str(error))
        if not has_claims:
            state.write(STATE_KEY, BindingState())
            return None, Status.skip()
        try:
            claims = self._binder.pod_volume_claims(pod)
        except BindingError as error:
            return None, Status.as_error(error)
        if claims.unbound_immediate:
            return None, Status.unresolvable(REASON_UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, BindingState(claims=claims))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        current = state.get(STATE_KEY)
        if current is None:
            return _missing_state()
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        try:
            volumes, reasons = self._binder.find_pod_volumes(
                pod, current.claims or PodVolumeClaims(), node
            )
        except BindingError as error:
            self._stage_failed("predicate")
            return Status.as_error(error)
        if reasons:
            return Status.unresolvable(*reasons)
        current.volumes_by_node[node.name] = volumes
        return None

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        current = state.get(STATE_KEY)
        if current is None:
            return _missing_state()
        volumes = current.volumes_by_node.get(node_name)
        if volumes is None:
            current.all_bound = True
            return None
        try:
            current.all_bound, assumed = self._binder.assume_pod_volumes(pod, node_name, volumes)
        except BindingError as error:
            self._stage_failed("assume")
            return Status.as_error(error)
        current.volumes_by_node[node_name] = assumed
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        current = state.get(STATE_KEY)
        if current is None:
            return
        volumes = current.volumes_by_node.get(node_name)
        if volumes is not None:
            self._binder.revert(volumes)

    # --------------------------------------------------------- binding cycle
    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        current = state.get(STATE_KEY)
        if current is None:
            return _missing_state()
        if current.all_bound:
            return Status.skip()
        if node_name not in current.volumes_by_node:
            return Status.as_error(f'no pod volume found for node "{node_name}"')
        return None

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        current = state.get(STATE_KEY)
        if current is None:
            return _missing_state()
        if current.all_bound:
            return None
        volumes = current.volumes_by_node.get(node_name)
        if volumes is None:
            return Status.as_error(f'no pod volume found for node "{node_name}"')
        try:
            await self._writer.bind_pod_volumes(pod, node_name, volumes)
        except Exception as error:  # BindingError or the API's refusal
            self._stage_failed("bind")
            return Status.as_error(error)
        return None


def _volume_limit(capacity: Raw | None) -> int | None:
    if capacity is None:
        return None
    value = capacity.get("maximumVolumeSize")
    if value is None:
        value = capacity.get("capacity")
    if value is None:
        return None
    try:
        return to_units(str(value))
    except QuantityError:
        return None


def new(args: object, handle: Handle) -> VolumeBinding:
    if args is None:
        args = VolumeBindingArgs()
    if not isinstance(args, VolumeBindingArgs):
        raise TypeError(f"{NAME} wants VolumeBindingArgs, got {type(args).__name__}")
    lister = StorageLister(handle.informers, WATCHED)
    binder = VolumeBinder(
        lister,
        AssumeCache(lister.store(PVS), PVS),
        AssumeCache(lister.store(PVCS), PVCS),
    )
    writer = VolumeBindingWriter(
        handle.api, binder, lister, handle.clock, float(args.bind_timeout_seconds)
    )
    return VolumeBinding(binder, writer, handle.metrics)
