"""The concrete Handle given to each profile's plugins.

Late-bound where the object graph is circular: the queue is built from the
plugins' registered events, and plugins get the handle before the queue
exists, so ``activate`` and the nominator reach the queue through
``bind_queue``; likewise the profile's Framework (for the what-if filter and
PreFilter-extension runs of PostFilter plugins) through ``bind_framework``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, Protocol, TypeVar

from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.randomness import PluginRandomness
from scheduler.framework.clock import Clock
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.features import FeatureGates
from scheduler.framework.handle import (
    ApiWriter,
    EventRecorder,
    InformerAccess,
    PluginMetrics,
    SnapshotLister,
    WaitingPod,
)
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.objects import Pod
from scheduler.framework.services import PluginServices
from scheduler.framework.shared import SharedKey, SharedObjects
from scheduler.framework.status import Status
from scheduler.runtime.background import BackgroundTasks
from scheduler.runtime.framework import Framework
from scheduler.runtime.nominated import run_filter_plugins_with_nominated_pods
from scheduler.runtime.waiting import WaitingPods

T = TypeVar("T")


class Activator(Protocol):
    def activate(self, pods: Iterable[Pod]) -> None: ...


class QueueAccess(Activator, Protocol):
    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]: ...


class NoPluginMetrics:
    def preemption_attempt(self) -> None:
        return None

    def preemption_victims(self, count: int) -> None:
        return None

    def resourceclaim_create(self, status: str) -> None:
        return None

    def binding_conditions(self, profile: str, driver: str, status: str, seconds: float) -> None:
        return None

    def volume_scheduling_stage_error(self, operation: str) -> None:
        return None


class ProfileHandle:
    def __init__(
        self,
        *,
        profile_name: str,
        clock: Clock,
        snapshot: Snapshot,
        informers: InformerAccess,
        events: EventRecorder,
        api: ApiWriter,
        waiting_pods: WaitingPods,
        background: BackgroundTasks | None = None,
        metrics: PluginMetrics | None = None,
        services: PluginServices | None = None,
        feature_gates: FeatureGates | None = None,
        randomness: PluginRandomness | None = None,
        shared: SharedObjects | None = None,
    ) -> None:
        # One per process, given to every profile's handle by the engine; a
        # handle built alone (tests) shares with nobody.
        self._shared = shared if shared is not None else SharedObjects()
        self._randomness = randomness if randomness is not None else PluginRandomness()
        self._generators: dict[str, random.Random] = {}
        self._services = services
        self._feature_gates = feature_gates if feature_gates is not None else FeatureGates()
        self._profile_name = profile_name
        self._clock = clock
        self._snapshot = snapshot
        self._informers = informers
        self._events = events
        self._api = api
        self._waiting = waiting_pods
        self._queue: QueueAccess | None = None
        self._framework: Framework | None = None
        self._background = background if background is not None else BackgroundTasks()
        self._metrics: PluginMetrics = metrics if metrics is not None else NoPluginMetrics()

    def bind_queue(self, queue: QueueAccess) -> None:
        self._queue = queue

    def bind_framework(self, framework: Framework) -> None:
        self._framework = framework

    def _bound_framework(self) -> Framework:
        if self._framework is None:
            raise RuntimeError("the handle's framework is not bound yet")
        return self._framework

    @property
    def profile_name(self) -> str:
        return self._profile_name

    @property
    def feature_gates(self) -> FeatureGates:
        return self._feature_gates

    @property
    def clock(self) -> Clock:
        return self._clock

    def rng_for(self, plugin: str) -> random.Random:
        generator = self._generators.get(plugin)
        if generator is None:
            generator = self._randomness.generator(self._profile_name, plugin)
            self._generators[plugin] = generator
        return generator

    def snapshot(self) -> SnapshotLister:
        return self._snapshot

    @property
    def informers(self) -> InformerAccess:
        return self._informers

    @property
    def events(self) -> EventRecorder:
        return self._events

    @property
    def api(self) -> ApiWriter:
        return self._api

    def activate(self, pods: Iterable[Pod]) -> None:
        if self._queue is not None:
            self._queue.activate(pods)

    def waiting_pod(self, uid: str) -> WaitingPod | None:
        return self._waiting.get(uid)

    def waiting_pods(self) -> Sequence[WaitingPod]:
        return self._waiting.all()

    # ------------------------------------------------ for PostFilter plugins
    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]:
        if self._queue is None:
            return ()
        return self._queue.nominated_pods_for_node(node_name)

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None:
        return run_filter_plugins_with_nominated_pods(
            self._bound_framework(), self._queue, state, pod, node_info
        )

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._bound_framework().run_pre_filter_add_pod(state, pod, pod_to_add, node_info)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._bound_framework().run_pre_filter_remove_pod(
            state, pod, pod_to_remove, node_info
        )

    def spawn(self, name: str, work: Coroutine[Any, Any, None]) -> None:
        self._background.spawn(name, work)

    @property
    def metrics(self) -> PluginMetrics:
        return self._metrics

    @property
    def services(self) -> PluginServices:
        if self._services is None:
            raise RuntimeError("this handle was built without plugin services")
        return self._services

    def shared(self, key: SharedKey[T], build: Callable[[], T]) -> T:
        return self._shared.get_or_build(key, build)
