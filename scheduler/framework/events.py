"""Cluster events and queueing hints (upstream ``EventsToRegister``).

A plugin that can reject pods declares which cluster events might make such a
pod schedulable, each optionally with a hint function that looks at the
change and answers QUEUE or QUEUE_SKIP. The queue moves a rejected pod only
when an event that one of its rejector plugins registered for says QUEUE.

A registration may also carry a ``HintInterest``: an index the queue uses to
call the hint only for the pods an event can concern (see its docstring),
so that an event costs the pods it is about, not every pooled pod.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Hashable
from dataclasses import dataclass
from typing import Any


class Resource(enum.StrEnum):
    POD = "Pod"
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULED_POD = "UnschedulablePod"  # upstream spelling of the label
    NODE = "Node"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    STORAGE_CLASS = "storage.k8s.io/StorageClass"
    CSI_NODE = "storage.k8s.io/CSINode"
    CSI_DRIVER = "storage.k8s.io/CSIDriver"
    VOLUME_ATTACHMENT = "storage.k8s.io/VolumeAttachment"
    CSI_STORAGE_CAPACITY = "storage.k8s.io/CSIStorageCapacity"
    RESOURCE_CLAIM = "resource.k8s.io/ResourceClaim"
    RESOURCE_SLICE = "resource.k8s.io/ResourceSlice"
    DEVICE_CLASS = "resource.k8s.io/DeviceClass"
    WILDCARD = "*"


class ActionType(enum.IntFlag):
    NONE = 0
    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_NODE_DECLARED_FEATURE = 128
    UPDATE_POD_LABEL = 256
    UPDATE_POD_SCALE_DOWN = 512
    UPDATE_POD_TOLERATION = 1024
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 2048
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 4096
    UPDATE = 8188
    ALL = 8191


_ACTION_LABELS = {
    ActionType.ADD: "Add",
    ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_NODE_DECLARED_FEATURE: "UpdateNodeDeclaredFeature",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_TOLERATION: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.UPDATE: "Update",
    ActionType.ALL: "All",
}


def action_label(action: ActionType) -> str:
    return _ACTION_LABELS.get(action, str(int(action)))


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: Resource
    action: ActionType
    custom_label: str = ""

    @property
    def label(self) -> str:
        """``NodeAdd``, ``AssignedPodDelete``... or the custom label."""
        return self.custom_label or f"{self.resource.value}{action_label(self.action)}"

    def is_wildcard(self) -> bool:
        return self.resource is Resource.WILDCARD and self.action == ActionType.ALL

    def matches(self, incoming: ClusterEvent) -> bool:
        """Upstream ``MatchClusterEvents(registered=self, incoming)``."""
        if self.is_wildcard():
            return True
        if self.resource is not incoming.resource and not (
            self.resource is Resource.POD
            and incoming.resource in (Resource.ASSIGNED_POD, Resource.UNSCHEDULED_POD)
        ):
            return False
        return bool(self.action & incoming.action) and (incoming.action & ~self.action) == 0


class QueueingHint(enum.Enum):
    QUEUE_SKIP = 0
    QUEUE = 1


# hint(pod being considered, old object, new object) -> QUEUE or QUEUE_SKIP.
# Objects are the framework's parsed types (Pod, Node) or raw dicts for other
# resources; None stands for "absent" (old on Add, new on Delete).
QueueingHintFn = Callable[[Any, Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class HintInterest:
    """Which pooled pods a hint can queue on an event, as names on both sides.

    ``event_keys(old, new)`` names what the event is about (None: it may
    concern any pod); ``pod_keys(pod)`` names what the pod depends on. The
    promise: whenever ``event_keys`` returns names, the hint answers
    QUEUE_SKIP for every pod whose ``pod_keys`` hold none of them, so the
    queue need not call it for those pods (nor time it). ``name`` identifies
    the key space: registrations sharing it share one index. Either function
    raising makes the queue consider every pod, as without an interest."""

    name: str
    event_keys: Callable[[Any, Any], Collection[Hashable] | None]
    pod_keys: Callable[[Any], Collection[Hashable]]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None
    interest: HintInterest | None = None


# Special events (upstream names).
WILDCARD_EVENT = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "WildCardEvent")
UNSCHEDULABLE_TIMEOUT = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "ForceActivate")
NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD)
NODE_DELETE = ClusterEvent(Resource.NODE, ActionType.DELETE)
ASSIGNED_POD_ADD = ClusterEvent(Resource.ASSIGNED_POD, ActionType.ADD)
ASSIGNED_POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE)
