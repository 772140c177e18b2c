"""Aggregation of repeated Events into an ``EventSeries``. Pure (``now`` passed in).

As client-go's events.k8s.io broadcaster does: the first occurrence of an
event is created; the second, within ``window`` seconds of the previous one,
turns it into a series (patched at once with ``count: 2``); later repeats
only bump the count and ``lastObservedTime`` in memory, and the pending count
is written at most every ``refresh`` seconds. A series idle for longer than
``window`` is forgotten (its last pending count written first), and the next
occurrence starts a new event.

Deviation, on purpose: events are "identical" only if every field the user
reads matches (regarding, including its resourceVersion, type, reason,
action, note, reporting controller); client-go leaves note and type out of the
key, so a changed message would hide in an old event's series. ``refresh``
defaults to 60 s instead of client-go's 30 min, so counts stay current.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

DEFAULT_WINDOW = 360.0  # client-go's finishTime: 6 minutes
DEFAULT_REFRESH = 60.0


@dataclass(frozen=True, slots=True)
class EventKey:
    regarding: tuple[str, ...]  # apiVersion, kind, namespace, name, uid, resourceVersion
    type_: str
    reason: str
    action: str
    note: str
    reporting_controller: str


@dataclass(frozen=True, slots=True)
class CreateEvent:
    namespace: str
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PatchSeries:
    """Write the series; ``body`` is the full event, to create it again if the
    original was already garbage-collected (404)."""

    namespace: str
    name: str
    count: int
    last_observed_wall: float
    body: dict[str, Any]


@dataclass(slots=True)
class _Series:
    body: dict[str, Any]
    namespace: str
    name: str
    count: int
    last_observed: float  # monotonic
    last_observed_wall: float
    written_count: int
    written_at: float  # monotonic
    pending: bool = field(default=False)


class SeriesCache:
    def __init__(self, *, window: float = DEFAULT_WINDOW, refresh: float = DEFAULT_REFRESH) -> None:
        self._window = window
        self._refresh = refresh
        self._series: dict[EventKey, _Series] = {}
        # Series with an unwritten count, and series in the order they may
        # expire: ``due`` touches only these, never the whole cache (which holds
        # every distinct event of the window: one per bound pod).
        self._pending: dict[EventKey, None] = {}
        self._expiry: deque[tuple[float, EventKey]] = deque()

    def __len__(self) -> int:
        return len(self._series)

    def observe(
        self, key: EventKey, namespace: str, body: dict[str, Any], now: float, wall: float
    ) -> CreateEvent | PatchSeries | None:
        """One occurrence of ``key``; ``body`` is the event to create if it is new
        (the cache keeps it; callers must not change it afterwards)."""
        series = self._series.get(key)
        if series is None or now - series.last_observed > self._window:
            name = str(body["metadata"]["name"])
            self._series[key] = _Series(body, namespace, name, 1, now, wall, 1, now)
            self._pending.pop(key, None)
            self._expiry.append((now, key))
            return CreateEvent(namespace, body)
        series.count += 1
        series.last_observed = now
        series.last_observed_wall = wall
        if series.written_count == 1:
            return self._written(key, series, now)
        series.pending = True
        self._pending[key] = None
        return None

    def due(self, now: float) -> list[PatchSeries]:
        """Series updates to write now; forgets series idle past the window."""
        out: list[PatchSeries] = []
        for key in list(self._pending):
            series = self._series[key]
            if now - series.written_at >= self._refresh:
                out.append(self._written(key, series, now))
        while self._expiry and now - self._expiry[0][0] > self._window:
            _, key = self._expiry.popleft()
            idle = self._series.get(key)
            if idle is None:
                continue
            if now - idle.last_observed <= self._window:
                self._expiry.append((idle.last_observed, key))  # still active
                continue
            if idle.pending:
                out.append(self._written(key, idle, now))
            del self._series[key]
        return out

    def next_due_in(self, now: float) -> float | None:
        """Seconds until ``due`` has a pending count to write; None if none is pending.
        (Idle series are forgotten lazily, on the next ``due``.)"""
        times = [self._series[key].written_at + self._refresh for key in self._pending]
        return max(0.0, min(times) - now) if times else None

    def _written(self, key: EventKey, series: _Series, now: float) -> PatchSeries:
        self._pending.pop(key, None)
        series.written_count = series.count
        series.written_at = now
        series.pending = False
        return PatchSeries(
            series.namespace, series.name, series.count, series.last_observed_wall, series.body
        )
