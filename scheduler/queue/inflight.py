"""Pods being scheduled, and the cluster events that arrived meanwhile.

A pod popped from the queue is "in flight" until ``done``. An event that
arrives while any pod is in flight is recorded; when a pod comes back as
unschedulable, the events recorded after its pop are replayed through the
queueing hints, so an event that came too late for the attempt (say, a node
added while Filter ran) still wakes the pod instead of being lost.

Invariants:
- every pod and event gets a strictly increasing sequence number; ``_events``
  is sorted by it and ``_pods`` (keyed by pod UID) is in insertion order, so its
  first entry is the oldest in-flight pod;
- an event is kept only while some in-flight pod was popped before it:
  ``done`` drops the events older than the oldest remaining pod.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass
from typing import Any

from scheduler.framework.events import ClusterEvent
from scheduler.framework.types import QueuedPodInfo
from scheduler.queue.metrics import POD_POPPED, QueueMetrics


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    seq: int
    event: ClusterEvent
    old: Any
    new: Any


def _seq(recorded: RecordedEvent) -> int:
    return recorded.seq


class InFlight:
    def __init__(self, metrics: QueueMetrics) -> None:
        self._metrics = metrics
        self._pods: dict[str, tuple[int, QueuedPodInfo]] = {}
        self._events: list[RecordedEvent] = []
        self._seq = 0

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def pods(self) -> list[QueuedPodInfo]:
        return [pinfo for _, pinfo in self._pods.values()]

    def event_count(self) -> int:
        return len(self._events)

    def start(self, pinfo: QueuedPodInfo) -> bool:
        """Mark the pod in flight; False if it already is (a duplicate pop)."""
        uid = pinfo.pod.uid
        if uid in self._pods:
            return False
        self._seq += 1
        self._pods[uid] = (self._seq, pinfo)
        self._metrics.inflight_events(POD_POPPED, 1)
        return True

    def record(self, event: ClusterEvent, old: Any, new: Any) -> bool:
        """Keep the event if any pod is in flight; returns whether it was kept."""
        if not self._pods:
            return False
        self._seq += 1
        self._events.append(RecordedEvent(self._seq, event, old, new))
        self._metrics.inflight_events(event.label, 1)
        return True

    def record_for(self, uid: str, events: list[ClusterEvent], old: Any, new: Any) -> bool:
        """Keep the events if the pod ``uid`` is in flight (its own updates)."""
        if uid not in self._pods:
            return False
        for event in events:
            self.record(event, old, new)
        return True

    def events_since_pop(self, uid: str) -> list[RecordedEvent] | None:
        """Events recorded after the pod was popped; None if it is not in flight."""
        entry = self._pods.get(uid)
        if entry is None:
            return None
        start = bisect.bisect_right(self._events, entry[0], key=_seq)
        return self._events[start:]

    def done(self, uid: str) -> None:
        """The pod's attempt is over; forget it and the events nobody needs now."""
        if self._pods.pop(uid, None) is None:
            return
        self._metrics.inflight_events(POD_POPPED, -1)
        oldest = next(iter(self._pods.values()))[0] if self._pods else self._seq + 1
        cut = bisect.bisect_left(self._events, oldest, key=_seq)
        if cut == 0:
            return
        dropped = Counter(recorded.event.label for recorded in self._events[:cut])
        del self._events[:cut]
        for label, count in dropped.items():
            self._metrics.inflight_events(label, -count)

    def clear(self) -> None:
        for uid in list(self._pods):
            self.done(uid)
