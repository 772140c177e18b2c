"""The concrete Handle given to each profile's plugins.

Late-bound where the object graph is circular: the queue is built from the
plugins' registered events, and plugins get the handle before the queue
exists, so ``activate`` reaches the queue through ``bind_queue``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from scheduler.cache.snapshot import Snapshot
from scheduler.clock import Clock
from scheduler.framework.handle import (
    ApiWriter,
    EventRecorder,
    InformerAccess,
    SnapshotLister,
    WaitingPod,
)
from scheduler.framework.objects import Pod
from scheduler.framework.services import PluginServices
from scheduler.runtime.waiting import WaitingPods


class Activator(Protocol):
    def activate(self, pods: Iterable[Pod]) -> None: ...


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
        services: PluginServices,
    ) -> None:
        self._services = services
        self._profile_name = profile_name
        self._clock = clock
        self._snapshot = snapshot
        self._informers = informers
        self._events = events
        self._api = api
        self._waiting = waiting_pods
        self._queue: Activator | None = None

    def bind_queue(self, queue: Activator) -> None:
        self._queue = queue

    @property
    def profile_name(self) -> str:
        return self._profile_name

    @property
    def clock(self) -> Clock:
        return self._clock

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

    @property
    def services(self) -> PluginServices:
        return self._services
