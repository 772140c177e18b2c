"""The Handle: what the framework offers to plugins, as protocols.

Plugins depend on these protocols only, never on the scheduler's concrete
cache, queue or client; the composition root supplies the implementations.
Everything synchronous here is safe inside the scheduling cycle; the
coroutines (API writes) belong to PreBind/Bind or background tasks.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from scheduler.framework.clock import Clock
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.features import FeatureGates
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.objects import Pod
from scheduler.framework.services import PluginServices
from scheduler.framework.shared import SharedKey
from scheduler.framework.status import Status

RawObject = Mapping[str, Any]
T = TypeVar("T")


class SnapshotLister(Protocol):
    """The current cycle's immutable snapshot. Valid only inside the scheduling
    cycle (PreFilter through Permit)."""

    def node_infos(self) -> Sequence[NodeInfo]: ...

    def get(self, node_name: str) -> NodeInfo | None: ...

    def have_pods_with_affinity(self) -> Sequence[NodeInfo]: ...


class ObjectStore(Protocol):
    """Read access to one informer's store of raw API objects."""

    def get(self, key: str) -> RawObject | None:
        """By ``namespace/name`` (namespaced) or ``name`` (cluster-scoped)."""

    def list(self) -> Iterable[RawObject]: ...


class InformerAccess(Protocol):
    def store(self, resource: str, *, field_selector: str | None = None) -> ObjectStore:
        """The shared store for a resource such as ``resourceclaims`` or ``nodes``;
        one watch per resource in the process, however many ask for it. A
        ``field_selector`` narrows that one watch (e.g. to one ConfigMap); asking
        for a different selector on the same resource later is an error."""

    def on_change(
        self,
        resource: str,
        handler: Callable[[RawObject | None, RawObject | None], None],
        *,
        field_selector: str | None = None,
    ) -> None:
        """Call ``handler(old, new)`` for every change to the resource."""


class EventRecorder(Protocol):
    def event(self, regarding: RawObject, type_: str, reason: str, action: str, note: str) -> None:
        """Queue a Kubernetes Event (never blocks; written in the background)."""


class ApiWriter(Protocol):
    """The API writes a plugin may make, from PreBind/Bind or background tasks."""

    async def bind(self, pod: Pod, node_name: str) -> None:
        """POST pods/binding; raises ``ApiError`` on failure."""

    async def request(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> Any:
        """Any API call by path, returning the decoded JSON body; raises ``ApiError``."""


class WaitingPod(Protocol):
    @property
    def pod(self) -> Pod: ...

    def pending_plugins(self) -> Sequence[str]: ...

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, message: str) -> None: ...


class PluginMetrics(Protocol):
    """Upstream metrics that in-tree plugins record themselves."""

    def preemption_attempt(self) -> None:
        """``scheduler_preemption_attempts_total``."""

    def preemption_victims(self, count: int) -> None:
        """``scheduler_preemption_victims``."""

    def resourceclaim_create(self, status: str) -> None:
        """``scheduler_resourceclaim_creates_total{status}`` (DynamicResources)."""

    def binding_conditions(self, profile: str, driver: str, status: str, seconds: float) -> None:
        """``scheduler_dra_bindingconditions_wait_duration_seconds`` and
        ``scheduler_dra_bindingconditions_allocations_total`` (DynamicResources)."""

    def volume_scheduling_stage_error(self, operation: str) -> None:
        """``scheduler_volume_scheduling_stage_error_total{operation}``
        (VolumeBinding: ``predicate``, ``assume``, ``bind``)."""


class Handle(Protocol):
    @property
    def profile_name(self) -> str: ...

    @property
    def feature_gates(self) -> FeatureGates:
        """The feature gates in force (``--feature-gates`` over v1.36 defaults)."""

    @property
    def clock(self) -> Clock: ...

    def rng_for(self, plugin: str) -> random.Random:
        """The plugin's own random generator (ask once, in the factory or
        constructor): derived from the scheduler's seed when it has one, so a
        seeded run draws the same numbers; its draws move no other plugin's
        sequence nor the scheduling loop's. The same object on every call."""

    def snapshot(self) -> SnapshotLister: ...

    @property
    def informers(self) -> InformerAccess: ...

    @property
    def events(self) -> EventRecorder: ...

    @property
    def api(self) -> ApiWriter: ...

    def activate(self, pods: Iterable[Pod]) -> None:
        """Move these pods from backoff or unschedulable to activeQ."""

    def waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def waiting_pods(self) -> Sequence[WaitingPod]: ...

    # ------------------------------------------------ for PostFilter plugins
    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]:
        """Pods nominated to run on ``node_name`` (waiting for room freed by
        preemption), newest versions."""

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None:
        """The profile's Filter plugins on ``node_info`` (may be a what-if
        copy), counting nominated pods of greater or equal priority."""

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        """Every PreFilter plugin's ``add_pod`` extension (what-if: a pod added)."""

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        """Every PreFilter plugin's ``remove_pod`` extension (what-if: a pod removed)."""

    def spawn(self, name: str, work: Coroutine[Any, Any, None]) -> None:
        """Run API work in the background, outside the scheduling cycle; the
        scheduler owns the task and stops it at shutdown."""

    @property
    def metrics(self) -> PluginMetrics: ...

    @property
    def services(self) -> PluginServices:
        """HTTP endpoints, metrics and start-up steps (``framework.services``)."""

    def shared(self, key: SharedKey[T], build: Callable[[], T]) -> T:
        """The process-wide object for ``key``, the same for every profile:
        built by ``build`` when a plugin first asks (``framework.shared``).
        For state that must be one per process however many profiles run a
        plugin, such as DynamicResources' claim tracker (upstream's shared
        DRA manager)."""
