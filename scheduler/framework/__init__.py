"""The framework's public API: what plugins may import.

Pure: no asyncio I/O, no client. Plugins import from here (``scheduler.framework``)
and from nothing else in ``scheduler`` (an import-linter contract).
"""

from scheduler.clock import Clock
from scheduler.framework.cycle_state import CycleState, StateData, StateKey, StateNotFound
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    QueueingHintFn,
)
from scheduler.framework.events import (
    Resource as EventResource,
)
from scheduler.framework.handle import (
    ApiWriter,
    EventRecorder,
    Handle,
    InformerAccess,
    ObjectStore,
    SnapshotLister,
    WaitingPod,
)
from scheduler.framework.interfaces import (
    BindPlugin,
    EnqueueExtensions,
    ExtensionPoint,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PluginFactory,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
)
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.objects import (
    HostPort,
    Node,
    Pod,
    Taint,
    Toleration,
    parse_node,
    parse_pod,
)
from scheduler.framework.quantity import QuantityError, parse_quantity, to_milli, to_units
from scheduler.framework.registry import PluginSpec, Registry, RegistryError
from scheduler.framework.resource import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    Resource,
    pod_requests,
)
from scheduler.framework.status import Code, Status, is_success, status_code
from scheduler.framework.types import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    NodeScore,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
)

__all__ = [
    "CPU",
    "EPHEMERAL_STORAGE",
    "MAX_NODE_SCORE",
    "MEMORY",
    "MIN_NODE_SCORE",
    "PODS",
    "ActionType",
    "ApiWriter",
    "BindPlugin",
    "Clock",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "EnqueueExtensions",
    "EventRecorder",
    "EventResource",
    "ExtensionPoint",
    "FilterPlugin",
    "Handle",
    "HostPort",
    "InformerAccess",
    "Node",
    "NodeInfo",
    "NodeScore",
    "NodeToStatus",
    "ObjectStore",
    "PermitPlugin",
    "Plugin",
    "PluginFactory",
    "PluginSpec",
    "Pod",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterExtensions",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QuantityError",
    "QueueSortPlugin",
    "QueuedPodInfo",
    "QueueingHint",
    "QueueingHintFn",
    "Registry",
    "RegistryError",
    "ReservePlugin",
    "Resource",
    "ScoreExtensions",
    "ScorePlugin",
    "SnapshotLister",
    "StateData",
    "StateKey",
    "StateNotFound",
    "Status",
    "Taint",
    "Toleration",
    "WaitingPod",
    "is_success",
    "parse_node",
    "parse_pod",
    "parse_quantity",
    "pod_requests",
    "status_code",
    "to_milli",
    "to_units",
]
