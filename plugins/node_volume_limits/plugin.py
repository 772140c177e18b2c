"""NodeVolumeLimits: PreFilter and Filter over CSI attach limits.

PreFilter skips pods without claim-backed volumes and otherwise indexes the
VolumeAttachments by node once per cycle. Filter counts, per CSI driver, the
unique volumes already attached to the node and the pod's new ones, against
the node's CSINode ``allocatable.count`` (``limits``); too many is
Unschedulable ``node(s) exceed max volume count``. A claim of the pod that is
missing fails the node UnschedulableAndUnresolvable with
``looking up PVC <ns>/<name>: persistentvolumeclaim "<name>" not found``.
"""

from __future__ import annotations

import secrets
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from plugins.node_volume_limits.limits import (
    AttachableVolumes,
    VolumeLookupError,
    attachments_by_node,
    exceeds_limits,
    node_limits,
)
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
    Pod,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    SignPlugin,
    StateKey,
    Status,
)
from scheduler.framework.volumes import (
    CSI_DRIVERS,
    CSI_NODES,
    PVCS,
    PVS,
    STORAGE_CLASSES,
    VOLUME_ATTACHMENTS,
    StorageLister,
    meta,
    pod_claims,
    spec,
)

NAME = "NodeVolumeLimits"
REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

Raw = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class PreFilterState:
    # node name -> {unique volume name: driver} of its VolumeAttachments
    attachments: Mapping[str, Mapping[str, str]]

    def clone(self) -> PreFilterState:
        return self  # immutable


PRE_FILTER_KEY: StateKey[PreFilterState] = StateKey(f"PreFilter{NAME}")


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin, SignPlugin, EnqueueExtensions):
    name = NAME

    def __init__(self, lister: StorageLister, volume_id_prefix: str) -> None:
        self._lister = lister
        self._volumes = AttachableVolumes(lister, volume_id_prefix)

    def sign_pod(self, pod: Pod) -> Hashable | None:
        # Reads CSINodes and claims, which the node's generation does not cover.
        return None if pod_claims(pod) else ()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, ActionType.UPDATE),
                self.is_schedulable_after_csi_node_updated,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                self.is_schedulable_after_claim_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.VOLUME_ATTACHMENT, ActionType.DELETE),
                self.is_schedulable_after_attachment_deleted,
            ),
        ]

    def is_schedulable_after_csi_node_updated(
        self, pod: Pod, old: Raw | None, new: Raw | None
    ) -> QueueingHint:
        old_limits = _counts(old)
        for driver, count in _counts(new).items():
            if count > old_limits.get(driver, 0):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_deleted(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        if old is None or not (old.node_name or old.nominated_node_name):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if pod_claims(old) else QueueingHint.QUEUE_SKIP

    def is_schedulable_after_claim_added(
        self, pod: Pod, old: Raw | None, new: Raw | None
    ) -> QueueingHint:
        if new is None or meta(new).get("namespace") != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        name = meta(new).get("name")
        if any(ref.claim == name for ref in pod_claims(pod)):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_attachment_deleted(
        self, pod: Pod, old: Raw | None, new: Raw | None
    ) -> QueueingHint:
        # Inline in-tree volumes are not translated, so only claims can gain.
        if any(not ref.ephemeral for ref in pod_claims(pod)):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod_claims(pod):
            return None, Status.skip()
        attachments = attachments_by_node(self._lister, self._lister.list(VOLUME_ATTACHMENTS))
        state.write(PRE_FILTER_KEY, PreFilterState(attachments))
        return None, None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        csi_node = self._lister.csi_node(node.name)
        new_volumes: dict[str, str] = {}
        try:
            self._volumes.of_pod(pod, csi_node, new_pod=True, into=new_volumes)
        except VolumeLookupError as error:
            if error.not_found:
                return Status.unresolvable(str(error))
            return Status.as_error(error)
        if not new_volumes:
            return None
        limits = node_limits(csi_node)
        if not limits:
            return None
        attached: dict[str, str] = {}
        try:
            for other in node_info.pods.values():
                self._volumes.of_pod(other, csi_node, new_pod=False, into=attached)
        except VolumeLookupError as error:
            return Status.as_error(error)
        current = state.get(PRE_FILTER_KEY)
        attachments = current.attachments.get(node.name, {}) if current is not None else {}
        if exceeds_limits(new_volumes, attached, attachments, limits):
            return Status.unschedulable(REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None


def _counts(csi_node: Raw | None) -> dict[str, int]:
    """Every driver of a CSINode with its count (0 when unset), as the hint compares."""
    if csi_node is None:
        return {}
    return {
        str(driver.get("name") or ""): int((driver.get("allocatable") or {}).get("count") or 0)
        for driver in spec(csi_node).get("drivers") or ()
    }


def new(args: object, handle: Handle) -> NodeVolumeLimits:
    # Upstream: a random 32-character prefix makes unbound claims' handles unique.
    lister = StorageLister(
        handle.informers,
        (PVCS, PVS, STORAGE_CLASSES, CSI_NODES, CSI_DRIVERS, VOLUME_ATTACHMENTS),
    )
    return NodeVolumeLimits(lister, secrets.token_hex(16))
