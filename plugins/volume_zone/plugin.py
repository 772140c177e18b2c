"""VolumeZone: PreFilter and Filter over the zone and region labels of bound volumes.

PreFilter collects, for each bound PersistentVolume of the pod's claims
(``persistentVolumeClaim`` volumes only, as upstream), the topology labels it
carries (GA and beta zone/region keys; a value may list several zones
joined by ``__``). Unbound WaitForFirstConsumer claims are VolumeBinding's
business and are left out. A node that has any topology label must carry,
for each collected key (or its GA twin), one of the volume's values; else
UnschedulableAndUnresolvable ``node(s) had no available volume zone``. A node
without topology labels passes.

PreFilter errors are UnschedulableAndUnresolvable with upstream's messages:
a missing claim, volume or class (``persistentvolumeclaim "x" not found``), a
claim without volume and class, an unbound claim of an Immediate class.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
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
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
    SignPlugin,
    StateKey,
    Status,
)
from scheduler.framework.volumes import (
    PVCS,
    PVS,
    STORAGE_CLASSES,
    WAIT_FOR_FIRST_CONSUMER,
    NotFound,
    StorageLister,
    claim_class,
    meta,
    pod_volumes,
    spec,
)

NAME = "VolumeZone"
REASON_CONFLICT = "node(s) had no available volume zone"

Raw = Mapping[str, Any]

LABEL_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (LABEL_BETA_ZONE, LABEL_BETA_REGION, LABEL_ZONE, LABEL_REGION)
_GA_LABEL = {LABEL_BETA_REGION: LABEL_REGION, LABEL_BETA_ZONE: LABEL_ZONE}
MULTI_ZONE_DELIMITER = "__"


@dataclass(frozen=True, slots=True)
class VolumeTopology:
    volume: str
    key: str
    values: frozenset[str]


@dataclass(frozen=True, slots=True)
class PreFilterState:
    topologies: tuple[VolumeTopology, ...]

    def clone(self) -> PreFilterState:
        return self  # immutable


PRE_FILTER_KEY: StateKey[PreFilterState] = StateKey(f"PreFilter{NAME}")


class _Rejected(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


class VolumeZone(PreFilterPlugin, FilterPlugin, SignPlugin, EnqueueExtensions):
    name = NAME

    def __init__(self, lister: StorageLister) -> None:
        self._lister = lister

    def sign_pod(self, pod: Pod) -> Hashable | None:
        # Reads PersistentVolumes, which the node's generation does not cover.
        return None if pod_volumes(pod) else ()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD),
                self.is_schedulable_after_storage_class_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE
                ),
                self.is_schedulable_after_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_volume_change,
            ),
        ]

    def is_schedulable_after_claim_change(
        self, pod: Pod, old: Raw | None, new: Raw | None
    ) -> QueueingHint:
        if new is None or meta(new).get("namespace") != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        if meta(new).get("name") in claim_names(pod):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_storage_class_added(
        self, pod: Pod, old: Raw | None, new: Raw | None
    ) -> QueueingHint:
        if new is not None and new.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_volume_change(
        self, pod: Pod, old: Raw | None, new: Raw | None
    ) -> QueueingHint:
        if old is None or new is None:
            return QueueingHint.QUEUE
        if volume_topologies(old) != volume_topologies(new):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            topologies = self._pod_topologies(pod)
        except _Rejected as rejected:
            return None, rejected.status
        if not topologies:
            return None, Status.skip()
        state.write(PRE_FILTER_KEY, PreFilterState(topologies))
        return None, None

    def _pod_topologies(self, pod: Pod) -> tuple[VolumeTopology, ...]:
        topologies: list[VolumeTopology] = []
        for claim_name in pod_claim_names(pod):
            if not claim_name:
                raise _Rejected(Status.unresolvable("PersistentVolumeClaim had no name"))
            try:
                claim = self._lister.pvc(pod.namespace, claim_name)
                volume_name = spec(claim).get("volumeName") or ""
                if not volume_name:
                    class_name = claim_class(claim)
                    if not class_name:
                        raise _Rejected(
                            Status.unresolvable(
                                "PersistentVolumeClaim had no pv name and storageClass name"
                            )
                        )
                    storage_class = self._lister.storage_class(class_name)
                    mode = storage_class.get("volumeBindingMode")
                    if mode is None:
                        raise _Rejected(
                            Status.unresolvable(
                                f'VolumeBindingMode not set for StorageClass "{class_name}"'
                            )
                        )
                    if mode == WAIT_FOR_FIRST_CONSUMER:
                        continue
                    raise _Rejected(Status.unresolvable("PersistentVolume had no name"))
                topologies.extend(volume_topologies(self._lister.pv(volume_name)))
            except NotFound as error:
                raise _Rejected(Status.unresolvable(str(error))) from None
        return tuple(topologies)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod_volumes(pod):
            return None
        current = state.get(PRE_FILTER_KEY)
        if current is None:
            try:
                topologies = self._pod_topologies(pod)
            except _Rejected as rejected:
                return rejected.status
        else:
            topologies = current.topologies
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        if not fits_zones(topologies, node.labels):
            return Status.unresolvable(REASON_CONFLICT)
        return None


def pod_claim_names(pod: Pod) -> list[str]:
    return [
        source.get("claimName") or ""
        for volume in pod_volumes(pod)
        if (source := volume.get("persistentVolumeClaim")) is not None
    ]


def claim_names(pod: Pod) -> set[str]:
    return set(pod_claim_names(pod))


def label_zones(value: str) -> frozenset[str] | None:
    """Upstream ``LabelZonesToSet``: None when an element is empty."""
    zones = [zone.strip() for zone in value.split(MULTI_ZONE_DELIMITER)]
    if any(not zone for zone in zones):
        return None
    return frozenset(zones)


def volume_topologies(pv: Raw) -> tuple[VolumeTopology, ...]:
    labels = meta(pv).get("labels") or {}
    name = str(meta(pv).get("name") or "")
    result = []
    for key in TOPOLOGY_LABELS:
        if key in labels:
            zones = label_zones(str(labels[key]))
            if zones is not None:
                result.append(VolumeTopology(name, key, zones))
    return tuple(result)


def fits_zones(topologies: Sequence[VolumeTopology], node_labels: Mapping[str, str]) -> bool:
    if not any(label in node_labels for label in TOPOLOGY_LABELS):
        return True
    for topology in topologies:
        value = node_labels.get(topology.key)
        if value is None:
            value = node_labels.get(_GA_LABEL.get(topology.key, topology.key))
        if value is None or value not in topology.values:
            return False
    return True


def new(args: object, handle: Handle) -> VolumeZone:
    return VolumeZone(StorageLister(handle.informers, (PVCS, PVS, STORAGE_CLASSES)))
