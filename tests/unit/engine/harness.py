"""A Scheduler wired to fakes: a queue that records, a recorder, a status
writer that keeps what it is given, metrics and a fake clock; the cache and
the framework are real."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.cache import Cache
from scheduler.cycle.concurrency import BindConcurrency
from scheduler.cycle.contracts import AttemptResult
from scheduler.cycle.randomness import CycleRandomness
from scheduler.cycle.reporting import StatusWriter
from scheduler.cycle.scheduler import Scheduler
from scheduler.framework import ClusterEvent, Pod, QueuedPodInfo
from scheduler.framework.types import NominatingInfo
from scheduler.queue.nominator import Nominator
from scheduler.runtime.framework import Framework
from tests.support.clock import FakeClock
from tests.support.objects import node
from tests.unit.engine.plugins import PROFILE


@dataclass(frozen=True)
class Requeued:
    key: str
    unschedulable: frozenset[str]
    pending: frozenset[str]


@dataclass
class FakeQueue:
    """Hands out ``pods`` in order, then None (closed); records every call."""

    pods: list[QueuedPodInfo] = field(default_factory=list)
    cycle: int = 0
    finished: list[str] = field(default_factory=list)  # UIDs passed to ``done``
    requeued: list[Requeued] = field(default_factory=list)
    activated: list[Any] = field(default_factory=list)
    moves: list[tuple[ClusterEvent, Callable[[Pod], bool] | None]] = field(default_factory=list)
    journal: list[str] = field(default_factory=list)  # requeues and moves, in order
    nominator: Nominator = field(default_factory=Nominator)

    @property
    def scheduling_cycle(self) -> int:
        return self.cycle

    async def pop(self) -> QueuedPodInfo | None:
        if not self.pods:
            return None
        self.cycle += 1
        pinfo = self.pods.pop(0)
        pinfo.attempts += 1
        return pinfo

    def done(self, uid: str) -> None:
        self.finished.append(uid)

    def add_unschedulable_if_not_present(
        self, pinfo: QueuedPodInfo, pod_scheduling_cycle: int
    ) -> None:
        self.journal.append(f"requeue {pinfo.pod.key}")
        self.requeued.append(
            Requeued(
                pinfo.pod.key,
                frozenset(pinfo.unschedulable_plugins),
                frozenset(pinfo.pending_plugins),
            )
        )
        self.done(pinfo.pod.uid)  # as the real queue does

    def activate(self, pods: Any) -> None:
        self.activated.extend(pods)

    def add_nominated_pod(self, pod: Pod, info: NominatingInfo | None) -> None:
        self.nominator.add(pod, info)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        self.nominator.delete(pod)

    def nominated_by_node(self) -> Mapping[str, Sequence[Pod]]:
        return self.nominator.by_node()

    def move_all_to_active_or_backoff(
        self,
        event: Any,
        old: object,
        new: object,
        pre_check: Callable[[Pod], bool] | None = None,
    ) -> None:
        self.journal.append(f"move {event.label}")
        self.moves.append((event, pre_check))


@dataclass(frozen=True)
class Event:
    type_: str
    reason: str
    action: str
    note: str


@dataclass
class FakeRecorder:
    events: list[Event] = field(default_factory=list)

    def event(
        self, regarding: Mapping[str, Any], type_: str, reason: str, action: str, note: str
    ) -> None:
        self.events.append(Event(type_, reason, action, note))


class KeptStatusWriter(StatusWriter):
    """Keeps submitted patches instead of writing them."""

    def __init__(self) -> None:
        super().__init__(self._never, FakeClock())
        self.submitted: list[tuple[str, str, Mapping[str, Any]]] = []
        self.uids: list[str] = []
        self.settled: list[str] = []

    @staticmethod
    async def _never(namespace: str, name: str, patch: Mapping[str, Any]) -> object:
        raise AssertionError("the test writer never writes")

    def submit(self, namespace: str, name: str, patch: Mapping[str, Any], uid: str = "") -> None:
        self.submitted.append((namespace, name, patch))
        self.uids.append(uid)

    async def settle(self, namespace: str, name: str) -> None:
        self.settled.append(f"{namespace}/{name}")
        await super().settle(namespace, name)


@dataclass
class FakeMetrics:
    attempts: list[AttemptResult] = field(default_factory=list)
    goroutine_deltas: list[int] = field(default_factory=list)
    sli_attempts: list[int] = field(default_factory=list)
    after_flush: int = 0
    bind_limits: list[int] = field(default_factory=list)  # each limit reported, in order

    def attempt(self, result: AttemptResult, profile: str, seconds: float) -> None:
        self.attempts.append(result)

    def algorithm(self, seconds: float) -> None:
        return None

    def sli(self, attempts: int, seconds: float) -> None:
        self.sli_attempts.append(attempts)

    def pod_attempts(self, attempts: int) -> None:
        return None

    def scheduled_after_flush(self) -> None:
        self.after_flush += 1

    def goroutines(self, operation: str, delta: int) -> None:
        self.goroutine_deltas.append(delta)

    def bind_concurrency_limit(self, limit: int) -> None:
        self.bind_limits.append(limit)


@dataclass
class FakeAttempts:
    records: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def record(self, pod_key: str, attempt: dict[str, Any]) -> None:
        self.records.append((pod_key, attempt))


@dataclass
class Harness:
    scheduler: Scheduler
    cache: Cache
    queue: FakeQueue
    recorder: FakeRecorder
    status: KeptStatusWriter
    metrics: FakeMetrics
    attempts: FakeAttempts
    clock: FakeClock
    informer: dict[str, Pod]

    def queued(self, pod: Pod) -> QueuedPodInfo:
        """The pod as popped from the queue, and known to the informer."""
        self.informer[pod.key] = pod
        now = self.clock.now()
        return QueuedPodInfo(pod, timestamp=now, attempts=1, initial_attempt_timestamp=now)

    def cpu_on(self, node_name: str) -> int:
        info = self.cache.node_info(node_name)
        assert info is not None
        return info.requested.milli_cpu


def harness(
    framework: Framework,
    *,
    nodes: Iterable[str] = ("n1",),
    lister: Callable[[str], Pod | None] | None = None,
    randomness: CycleRandomness | None = None,
    max_binding: int = 64,
    adaptive: bool = True,
) -> Harness:
    cache = Cache()
    for name in nodes:
        cache.add_node(node(name))
    queue = FakeQueue()
    recorder = FakeRecorder()
    status = KeptStatusWriter()
    metrics = FakeMetrics()
    attempts = FakeAttempts()
    clock = FakeClock()
    informer: dict[str, Pod] = {}
    scheduler = Scheduler(
        queue=queue,
        cache=cache,
        frameworks={PROFILE: framework},
        recorders={PROFILE: recorder},
        status_writer=status,
        pod_lister=lister or informer.get,
        clock=clock,
        metrics=metrics,
        attempts=attempts,
        randomness=randomness or CycleRandomness.split(random.Random(0)),
        binds=BindConcurrency(max_binding, adaptive=adaptive),
    )
    return Harness(scheduler, cache, queue, recorder, status, metrics, attempts, clock, informer)
