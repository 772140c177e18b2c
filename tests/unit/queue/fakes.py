"""Fakes and small helpers shared by the queue tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework import (
    ClusterEvent,
    ClusterEventWithHint,
    Pod,
    PreEnqueuePlugin,
    QueuedPodInfo,
    QueueingHint,
    Status,
)
from scheduler.framework.clock import Clock
from scheduler.framework.events import ActionType, Resource
from scheduler.queue import QueueProfile, SchedulingQueue
from tests.support.clock import FakeClock
from tests.support.objects import pod

PROFILE = "default-scheduler"
NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD)
NODE_LABEL = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL)
NODE_TAINT = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_TAINT)
POD_DELETE = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE)

Hint = Callable[[Any, Any, Any], QueueingHint]


def priority_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """PrioritySort: higher priority first, then the earlier timestamp."""
    if a.pod.priority != b.pod.priority:
        return a.pod.priority > b.pod.priority
    return a.timestamp < b.timestamp


def always(hint: QueueingHint) -> Hint:
    return lambda _pod, _old, _new: hint


QUEUE = always(QueueingHint.QUEUE)
SKIP = always(QueueingHint.QUEUE_SKIP)


def raising(_pod: Any, _old: Any, _new: Any) -> QueueingHint:
    raise RuntimeError("hint blew up")


def on(event: ClusterEvent, hint: Hint | None = None) -> ClusterEventWithHint:
    return ClusterEventWithHint(event, hint)


class Gate(PreEnqueuePlugin):
    """Gates the pods whose keys are in ``closed``; records every call."""

    def __init__(self, name: str, closed: Iterable[str] = ()) -> None:
        self.name = name  # type: ignore[misc]
        self.closed = set(closed)
        self.calls: list[str] = []

    def pre_enqueue(self, pod: Pod) -> Status | None:
        self.calls.append(pod.key)
        if pod.key in self.closed:
            return Status.unresolvable(f"gated by {self.name}")
        return None


@dataclass
class RecordingMetrics:
    incoming_events: list[tuple[str, str]] = field(default_factory=list)
    pending_counts: dict[str, int] = field(default_factory=dict)
    unschedulable: Counter[tuple[str, str]] = field(default_factory=Counter)
    hints: list[tuple[str, str, str]] = field(default_factory=list)
    inflight: Counter[str] = field(default_factory=Counter)

    def incoming(self, queue: str, event: str) -> None:
        self.incoming_events.append((queue, event))

    def pending(self, queue: str, count: int) -> None:
        self.pending_counts[queue] = count

    def unschedulable_plugin(self, plugin: str, profile: str, delta: int) -> None:
        self.unschedulable[(plugin, profile)] += delta

    def hint(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        self.hints.append((plugin, event, hint))

    def inflight_events(self, event: str, delta: int) -> None:
        self.inflight[event] += delta


def make_queue(
    clock: Clock | None = None,
    *,
    events: Mapping[str, Sequence[ClusterEventWithHint]] | None = None,
    pre_enqueue: Sequence[PreEnqueuePlugin] = (),
    metrics: RecordingMetrics | None = None,
    **options: Any,
) -> SchedulingQueue:
    profile = QueueProfile(pre_enqueue=pre_enqueue, events_by_plugin=dict(events or {}))
    return SchedulingQueue(
        less=priority_less,
        clock=clock or FakeClock(),
        profiles={PROFILE: profile},
        metrics=metrics,
        **options,
    )


def fail(
    queue: SchedulingQueue,
    pinfo: QueuedPodInfo,
    *plugins: str,
    pending: Iterable[str] = (),
) -> None:
    """End the attempt as the failure handler does: rejectors, then requeue."""
    pinfo.unschedulable_plugins = set(plugins)
    pinfo.pending_plugins = set(pending)
    queue.add_unschedulable_if_not_present(pinfo, queue.scheduling_cycle)


def pop(queue: SchedulingQueue) -> QueuedPodInfo:
    pinfo = queue.pop_nowait()
    assert pinfo is not None, "expected a pod to pop"
    return pinfo


def where(queue: SchedulingQueue, name: str, namespace: str = "default") -> str | None:
    found = queue.get(f"{namespace}/{name}")
    return None if found is None else found[0]


def rejected(
    queue: SchedulingQueue, name: str, *plugins: str, pending: Iterable[str] = ()
) -> QueuedPodInfo:
    """Add a pod, pop it and fail it with these rejectors: it lands in the pool
    (no event happened meanwhile)."""
    queue.add(pod(name))
    pinfo = pop(queue)
    fail(queue, pinfo, *plugins, pending=pending)
    return pinfo
