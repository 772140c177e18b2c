"""The plugin API: one abstract base class per extension point.

A plugin subclasses ``Plugin`` plus the extension-point classes it implements;
the framework finds its extension points with ``isinstance``. Every method of
the scheduling cycle is synchronous and pure over its arguments (the snapshot
NodeInfo, the CycleState); only PreBind and Bind are coroutines, because they
talk to the API server. Returning ``None`` means Success.

These signatures follow upstream kube-scheduler (``k8s.io/kube-scheduler/
framework``) minus the context argument: cancellation is the framework's job.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.objects import Pod
from scheduler.framework.status import Status
from scheduler.framework.types import (
    NodeScore,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
)

if TYPE_CHECKING:
    from scheduler.framework.handle import Handle


class ExtensionPoint(enum.StrEnum):
    PRE_ENQUEUE = "PreEnqueue"
    QUEUE_SORT = "QueueSort"
    PRE_FILTER = "PreFilter"
    FILTER = "Filter"
    POST_FILTER = "PostFilter"
    PRE_SCORE = "PreScore"
    SCORE = "Score"
    NORMALIZE_SCORE = "NormalizeScore"
    RESERVE = "Reserve"
    UNRESERVE = "Unreserve"
    PERMIT = "Permit"
    PRE_BIND_PRE_FLIGHT = "PreBindPreFlight"
    PRE_BIND = "PreBind"
    BIND = "Bind"
    POST_BIND = "PostBind"


class Plugin(abc.ABC):
    """Base of every plugin. ``name`` is the name used in the configuration."""

    name: ClassVar[str]


class PreEnqueuePlugin(Plugin):
    @abc.abstractmethod
    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Non-success gates the pod: it waits outside activeQ. Must be cheap."""


class QueueSortPlugin(Plugin):
    @abc.abstractmethod
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """True if ``a`` should be popped before ``b``: a strict weak order
        (one QueueSort plugin orders the whole queue, shared by all profiles)."""


class EnqueueExtensions(abc.ABC):
    """Optional: the cluster events that may make a pod rejected by this plugin
    schedulable. A rejecting plugin without it is woken by every event."""

    @abc.abstractmethod
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """The cluster events (with an optional queueing hint each) that may
        make a pod this plugin rejected schedulable; called once at start."""


class SignPlugin(abc.ABC):
    """Optional, for Filter and Score plugins whose result for a node depends
    only on part of the pod and on that node's NodeInfo ("node-local").

    ``sign_pod`` returns a hashable fragment that captures everything of the
    pod the plugin's PreFilter/Filter/PreScore/Score read, or None when this
    pod cannot be signed. Equal fragments promise equal results on an
    unchanged node, which lets the framework reuse them across cycles.
    """

    @abc.abstractmethod
    def sign_pod(self, pod: Pod) -> Hashable | None:
        """The hashable part of ``pod`` this plugin's results depend on, or None
        when the pod cannot be signed (its results are then never reused)."""


class PreFilterExtensions(abc.ABC):
    @abc.abstractmethod
    def add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        """Update what PreFilter stored in ``state`` as if ``pod_to_add`` ran on
        ``node_info`` (a what-if copy: nominated pods, preemption dry runs)."""

    @abc.abstractmethod
    def remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        """Update what PreFilter stored in ``state`` as if ``pod_to_remove`` left
        ``node_info`` (preemption's victims)."""


class PreFilterPlugin(Plugin):
    @abc.abstractmethod
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Once per cycle, before Filter: precompute into ``state``; a result
        may narrow the candidate nodes; Skip skips this plugin's Filter for
        the pod; a rejection fails the cycle for every node."""

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None


class FilterPlugin(Plugin):
    @abc.abstractmethod
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Use ``node_info``, never the snapshot: it may be a what-if copy."""


class PostFilterPlugin(Plugin):
    @abc.abstractmethod
    def post_filter(
        self, state: CycleState, pod: Pod, filtered: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        """Only when no node fits; ``filtered`` holds each node's rejection. May
        make room (preemption) and nominate a node in the result."""


class PreScorePlugin(Plugin):
    @abc.abstractmethod
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        """Once per cycle over the feasible ``nodes``, before Score; Skip skips
        this plugin's Score for the pod."""


class ScoreExtensions(abc.ABC):
    @abc.abstractmethod
    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        """Rewrite ``scores`` in place into 0..100."""

    def normalize_values(self, values: list[int]) -> list[int] | None:
        """Optional fast path for a normalization that depends on the scores
        only (not on node names, the pod or the cycle state): the normalized
        values in the same order, or None to use ``normalize_score``."""
        return None


class ScorePlugin(Plugin):
    @abc.abstractmethod
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        """Score a feasible node; receives its NodeInfo from the snapshot."""

    def score_extensions(self) -> ScoreExtensions | None:
        return None


class ReservePlugin(Plugin):
    @abc.abstractmethod
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """The pod is assumed on ``node_name``: claim what the plugin tracks.
        A failure unreserves every Reserve plugin, in reverse order."""

    @abc.abstractmethod
    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Idempotent; may run even if ``reserve`` did not."""


class PermitPlugin(Plugin):
    @abc.abstractmethod
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        """Success, reject, or Wait with a timeout in seconds (capped at 15 min)."""


class PreBindPlugin(Plugin):
    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Cheap check: Skip if ``pre_bind`` would have nothing to do."""
        return None

    @abc.abstractmethod
    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """In the binding cycle, before Bind: API writes the bind depends on
        (volumes, claims). A failure unreserves and requeues the pod."""


class BindPlugin(Plugin):
    @abc.abstractmethod
    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        """Skip hands the pod to the next binder."""


class PostBindPlugin(Plugin):
    @abc.abstractmethod
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Informational, after a successful bind; cannot fail the pod."""


# A factory builds a plugin from its validated arguments and the Handle.
PluginFactory = Callable[[Any, "Handle"], Plugin]

# The extension points a configuration can name, with the class implementing each.
EXTENSION_POINT_CLASSES: dict[ExtensionPoint, type[Plugin]] = {
    ExtensionPoint.PRE_ENQUEUE: PreEnqueuePlugin,
    ExtensionPoint.QUEUE_SORT: QueueSortPlugin,
    ExtensionPoint.PRE_FILTER: PreFilterPlugin,
    ExtensionPoint.FILTER: FilterPlugin,
    ExtensionPoint.POST_FILTER: PostFilterPlugin,
    ExtensionPoint.PRE_SCORE: PreScorePlugin,
    ExtensionPoint.SCORE: ScorePlugin,
    ExtensionPoint.RESERVE: ReservePlugin,
    ExtensionPoint.PERMIT: PermitPlugin,
    ExtensionPoint.PRE_BIND: PreBindPlugin,
    ExtensionPoint.BIND: BindPlugin,
    ExtensionPoint.POST_BIND: PostBindPlugin,
}


def extension_points_of(plugin: Plugin) -> Sequence[ExtensionPoint]:
    return [point for point, cls in EXTENSION_POINT_CLASSES.items() if isinstance(plugin, cls)]
