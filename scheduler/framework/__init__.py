"""The framework's public API: what a plugin author imports.

Every name in ``__all__`` is public and pinned: ``tests/unit/framework/
test_public_api.py`` compares the names and their signatures with
``public_api.txt``, so a change here is a deliberate, reviewed act (see
ARCHITECTURE.md, "What is public"). The submodules of ``scheduler.framework``
hold helpers the in-tree plugins share (DRA device classes, node-affinity
parsing, quantity arithmetic, ...): importable, but internal and free to change.

Pure: no asyncio I/O, no client. Plugins import from here and from nothing
else in ``scheduler`` (import-linter contracts); their tests use
``scheduler.testing``.
"""

from scheduler.framework.clock import Clock
from scheduler.framework.cycle_state import CycleState, StateData, StateKey, StateNotFound
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    HintInterest,
    QueueingHint,
    QueueingHintFn,
)
from scheduler.framework.events import (
    Resource as EventResource,
)
from scheduler.framework.features import FeatureGates
from scheduler.framework.handle import (
    ApiWriter,
    EventRecorder,
    Handle,
    InformerAccess,
    ObjectStore,
    PluginMetrics,
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
    SignPlugin,
)
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.objects import (
    HostPort,
    Node,
    Pod,
    Taint,
    Toleration,
    object_key,
    parse_node,
    parse_pod,
)
from scheduler.framework.quantity import QuantityError, parse_quantity
from scheduler.framework.registry import PluginSpec, Registry, RegistryError
from scheduler.framework.resource import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    Resource,
    pod_requests,
)
from scheduler.framework.services import (
    ChannelError,
    ChildChannel,
    HttpHandler,
    HttpRequest,
    HttpResponse,
    ListenerLimits,
    PendingAnswer,
    PluginHttp,
    PluginServices,
    ProcessChannel,
    ProcessEndpoint,
    TokenReviewError,
    TokenUser,
)
from scheduler.framework.shared import SharedKey, SharedObjects
from scheduler.framework.status import Code, Status, is_success
from scheduler.framework.types import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    NodeScore,
    NodeToStatus,
    NominatingInfo,
    NominatingMode,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
    default_normalize,
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
    "ChannelError",
    "ChildChannel",
    "Clock",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "EnqueueExtensions",
    "EventRecorder",
    "EventResource",
    "ExtensionPoint",
    "FeatureGates",
    "FilterPlugin",
    "Handle",
    "HintInterest",
    "HostPort",
    "HttpHandler",
    "HttpRequest",
    "HttpResponse",
    "InformerAccess",
    "ListenerLimits",
    "Node",
    "NodeInfo",
    "NodeScore",
    "NodeToStatus",
    "NominatingInfo",
    "NominatingMode",
    "ObjectStore",
    "PendingAnswer",
    "PermitPlugin",
    "Plugin",
    "PluginFactory",
    "PluginHttp",
    "PluginMetrics",
    "PluginServices",
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
    "ProcessChannel",
    "ProcessEndpoint",
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
    "SharedKey",
    "SharedObjects",
    "SignPlugin",
    "SnapshotLister",
    "StateData",
    "StateKey",
    "StateNotFound",
    "Status",
    "Taint",
    "TokenReviewError",
    "TokenUser",
    "Toleration",
    "WaitingPod",
    "default_normalize",
    "is_success",
    "object_key",
    "parse_node",
    "parse_pod",
    "parse_quantity",
    "pod_requests",
]
