"""VolumeRestrictions: PreFilter and Filter over volumes that can't be shared.

- Disk conflicts (node-local): a GCE PD, iSCSI or RBD disk used read-write by
  the pod or by a pod on the node, or an AWS EBS volume used at all by both,
  rejects the node (Unschedulable, ``node(s) had no available disk``).
- ReadWriteOncePod: a claim of the pod with that access mode that some
  scheduled pod already uses rejects every node (Unschedulable); PreFilter
  counts such claims over the snapshot, AddPod/RemovePod keep the count right
  for preemption's what-ifs.

PreFilter fails UnschedulableAndUnresolvable with the lister message when a
claim is missing, and skips the plugin for pods with neither kind of volume.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

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
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    SignPlugin,
    SnapshotLister,
    StateKey,
    Status,
)
from scheduler.framework.volumes import (
    PVCS,
    READ_WRITE_ONCE_POD,
    NotFound,
    StorageLister,
    access_modes,
    pod_volumes,
)

NAME = "VolumeRestrictions"
REASON_DISK_CONFLICT = "node(s) had no available disk"
REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)

Raw = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class PreFilterState:
    # Names of the pod's claims with the ReadWriteOncePod access mode.
    read_write_once_pod_claims: frozenset[str]
    # How many references to those claims scheduled pods hold.
    conflicting_references: int

    def clone(self) -> PreFilterState:
        return self  # immutable; AddPod/RemovePod write a new one


PRE_FILTER_KEY: StateKey[PreFilterState] = StateKey(f"PreFilter{NAME}")


class VolumeRestrictions(
    PreFilterPlugin, PreFilterExtensions, FilterPlugin, SignPlugin, EnqueueExtensions
):
    name = NAME

    def __init__(self, lister: StorageLister, snapshot: Callable[[], SnapshotLister]) -> None:
        self._lister = lister
        self._snapshot = snapshot  # the current cycle's snapshot

    def sign_pod(self, pod: Pod) -> Hashable | None:
        # The ReadWriteOncePod check reads the whole cluster: not node-local.
        return None if pod_volumes(pod) else ()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                self.is_schedulable_after_claim_added,
            ),
        ]

    def is_schedulable_after_claim_added(
        self, pod: Pod, old: Raw | None, new: Raw | None
    ) -> QueueingHint:
        metadata = (new or {}).get("metadata") or {}
        if metadata.get("namespace") != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        if metadata.get("name") in claim_names(pod):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_deleted(
        self, pod: Pod, old: Pod | None, new: Pod | None
    ) -> QueueingHint:
        if old is None or old.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        if not satisfies_disk_conflicts(pod, (old,)):
            return QueueingHint.QUEUE
        if claim_names(pod) & claim_names(old):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        needs_check = any(needs_restrictions_check(volume) for volume in pod_volumes(pod))
        try:
            rwop = self._read_write_once_pod_claims(pod)
        except NotFound as error:
            return None, Status.unresolvable(str(error))
        conflicts = 0
        if rwop:
            used = claims_used_by_pods(info.pods.values() for info in self._snapshot().node_infos())
            conflicts = sum(1 for name in rwop if f"{pod.namespace}/{name}" in used)
        if not needs_check and conflicts == 0:
            return None, Status.skip()
        state.write(PRE_FILTER_KEY, PreFilterState(rwop, conflicts))
        return None, None

    def _read_write_once_pod_claims(self, pod: Pod) -> frozenset[str]:
        names = set()
        for volume in pod_volumes(pod):
            source = volume.get("persistentVolumeClaim")
            if source is None:
                continue
            claim = self._lister.pvc(pod.namespace, source.get("claimName") or "")
            if READ_WRITE_ONCE_POD in access_modes(claim):
                names.add(str(claim["metadata"]["name"]))
        return frozenset(names)

    def pre_filter_extensions(self) -> PreFilterExtensions:
        return self

    def add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._update(state, pod_to_add, 1)

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._update(state, pod_to_remove, -1)

    def _update(self, state: CycleState, other: Pod, multiplier: int) -> Status | None:
        current = state.get(PRE_FILTER_KEY)
        if current is None:
            return Status.as_error(f"cannot read {PRE_FILTER_KEY.name!r} from cycleState")
        references = sum(
            1
            for volume in pod_volumes(other)
            if (volume.get("persistentVolumeClaim") or {}).get("claimName")
            in current.read_write_once_pod_claims
        )
        if references:
            state.write(
                PRE_FILTER_KEY,
                replace(
                    current,
                    conflicting_references=current.conflicting_references + multiplier * references,
                ),
            )
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not satisfies_disk_conflicts(pod, node_info.pods.values()):
            return Status.unschedulable(REASON_DISK_CONFLICT)
        current = state.get(PRE_FILTER_KEY)
        if current is None:
            return Status.as_error(f"cannot read {PRE_FILTER_KEY.name!r} from cycleState")
        if current.conflicting_references > 0:
            return Status.unschedulable(REASON_READ_WRITE_ONCE_POD_CONFLICT)
        return None


def claim_names(pod: Pod) -> set[str]:
    """Names of the claims the pod's ``persistentVolumeClaim`` volumes use."""
    return {
        source.get("claimName") or ""
        for volume in pod_volumes(pod)
        if (source := volume.get("persistentVolumeClaim")) is not None
    }


def claims_used_by_pods(groups: Iterable[Iterable[Pod]]) -> set[str]:
    """``namespace/claim`` of every claim some pod uses (upstream's usedPVCSet)."""
    return {
        f"{pod.namespace}/{name}" for pods in groups for pod in pods for name in claim_names(pod)
    }


def needs_restrictions_check(volume: Raw) -> bool:
    return any(volume.get(source) is not None for source, _ in _CONFLICT_RULES)


def _both_read_only(a: Raw, b: Raw) -> bool:
    return bool(a.get("readOnly")) and bool(b.get("readOnly"))


def _gce_conflict(disk: Raw, other: Raw) -> bool:
    return disk.get("pdName") == other.get("pdName") and not _both_read_only(disk, other)


def _ebs_conflict(disk: Raw, other: Raw) -> bool:
    return bool(disk.get("volumeID") == other.get("volumeID"))


def _iscsi_conflict(disk: Raw, other: Raw) -> bool:
    return disk.get("iqn") == other.get("iqn") and not _both_read_only(disk, other)


def _rbd_conflict(disk: Raw, other: Raw) -> bool:
    return (
        bool(set(disk.get("monitors") or ()) & set(other.get("monitors") or ()))
        and disk.get("pool") == other.get("pool")
        and disk.get("image") == other.get("image")
        and not _both_read_only(disk, other)
    )


_CONFLICT_RULES = (
    ("gcePersistentDisk", _gce_conflict),
    ("awsElasticBlockStore", _ebs_conflict),
    ("iscsi", _iscsi_conflict),
    ("rbd", _rbd_conflict),
)


def is_volume_conflict(volume: Raw, other: Pod) -> bool:
    """Upstream ``isVolumeConflict``: ``volume`` clashes with a volume of ``other``."""
    for existing in pod_volumes(other):
        for source, conflicts in _CONFLICT_RULES:
            disk, other_disk = volume.get(source), existing.get(source)
            if disk is not None and other_disk is not None and conflicts(disk, other_disk):
                return True
    return False


def satisfies_disk_conflicts(pod: Pod, others: Iterable[Pod]) -> bool:
    restricted = [volume for volume in pod_volumes(pod) if needs_restrictions_check(volume)]
    if not restricted:
        return True
    return not any(is_volume_conflict(volume, other) for other in others for volume in restricted)


def new(args: object, handle: Handle) -> VolumeRestrictions:
    return VolumeRestrictions(StorageLister(handle.informers, (PVCS,)), handle.snapshot)
