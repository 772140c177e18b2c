"""Kubernetes Events from the scheduler, written in the background.

``EventSink`` is one per process; ``sink.recorder(scheduler_name)`` gives each
profile a ``Recorder`` implementing the framework's ``EventRecorder``. As
kube-scheduler does, events are events.k8s.io/v1 with
``reportingController = <schedulerName>`` and ``reportingInstance =
<schedulerName>-<hostname>``; the note is cut to 1024 bytes (the first 1020
and " ..."), at a UTF-8 character boundary.

Invariants:
- ``Recorder.event`` never blocks and never raises: it builds the event and
  appends it to a bounded buffer; when the buffer is full the event is dropped,
  counted in ``dropped`` and logged (once per run of drops).
- ``run()`` is the only writer: events are written one at a time, in order,
  through ``EventWriter`` (``KubeClient`` implements it; its rate limiter
  gives events the lowest priority). Repeats become a series (``eventseries``).
- A failed write is retried when retriable (no answer, 429, 5xx) up to 12
  tries, as upstream's broadcaster (``maxTriesPerEvent``), with a delay that
  doubles from ``retry_delay`` up to 10 s (upstream's sleep between tries), so
  an API server restart of a minute loses no event; then it is dropped and
  counted in ``failed``: events are best-effort.
- When the API server refuses events.k8s.io (403: RBAC allows only core
  events; 404 for the collection: the group is not served), the sink falls back
  to core/v1 Events for the rest of its life, as upstream's broadcaster
  adapter does: ``involvedObject``, ``message``, ``source.component``,
  ``firstTimestamp``/``lastTimestamp`` and ``count`` carry the same content,
  and a series becomes a ``count``/``lastTimestamp`` patch. The refused write
  itself is written again the core way.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from scheduler.framework.clock import Clock
from scheduler.kube.errors import HTTP_FORBIDDEN, HTTP_NOT_FOUND, ApiError, TransportError
from scheduler.kube.eventseries import (
    DEFAULT_REFRESH,
    DEFAULT_WINDOW,
    CreateEvent,
    EventKey,
    PatchSeries,
    SeriesCache,
)
from scheduler.kube.resources import EVENTS

log = logging.getLogger(__name__)

MAX_TRIES = 12  # upstream's maxTriesPerEvent
MAX_RETRY_WAIT = 10.0  # seconds; upstream's sleep between tries


def retry_wait(first: float, attempt: int) -> float:
    """The wait after failed try ``attempt`` (1-based): doubling from
    ``first``, capped at ``MAX_RETRY_WAIT``."""
    return min(MAX_RETRY_WAIT, first * (1 << max(0, min(attempt - 1, 16))))


NOTE_LIMIT_BYTES = 1024
_NOTE_ELLIPSIS = " ..."
_FIELD_LIMIT = 128  # reportingInstance, reason and action are at most 128 characters
DEFAULT_NAMESPACE = "default"


class EventType(enum.StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


class EventWriter(Protocol):
    async def create_event(self, namespace: str, event: Mapping[str, Any]) -> None: ...

    async def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None: ...

    async def create_core_event(self, namespace: str, event: Mapping[str, Any]) -> None: ...

    async def patch_core_event(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> None: ...


# The API server's message for a path it does not serve (vs. a missing object).
_NOT_SERVED = "could not find the requested resource"


def events_api_refused(error: ApiError) -> bool:
    """events.k8s.io cannot be used: forbidden, or the group is not served."""
    if error.status == HTTP_FORBIDDEN:
        return True
    return error.status == HTTP_NOT_FOUND and _NOT_SERVED in error.message


def _seconds(micro: str) -> str:
    """RFC 3339 seconds (core/v1 timestamps) from a MicroTime string."""
    return micro[:19] + "Z"


def core_event(body: Mapping[str, Any], count: int = 1, last: str | None = None) -> dict[str, Any]:
    """The core/v1 Event saying what the events.k8s.io/v1 ``body`` says."""
    first = _seconds(str(body["eventTime"]))
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": dict(body["metadata"]),
        "involvedObject": dict(body["regarding"]),
        "reason": body["reason"],
        "message": body["note"],
        "type": body["type"],
        "action": body["action"],
        "source": {"component": body["reportingController"]},
        "reportingComponent": body["reportingController"],
        "reportingInstance": body["reportingInstance"],
        "firstTimestamp": first,
        "lastTimestamp": last or first,
        "count": count,
    }


def truncate_note(note: str) -> str:
    """At most 1024 bytes of UTF-8: longer notes keep their first 1020 bytes
    (never splitting a character) and end with " ..."."""
    encoded = note.encode()
    if len(encoded) <= NOTE_LIMIT_BYTES:
        return note
    head = encoded[: NOTE_LIMIT_BYTES - len(_NOTE_ELLIPSIS)].decode(errors="ignore")
    return head + _NOTE_ELLIPSIS


def micro_time(wall: float) -> str:
    """``metav1.MicroTime`` in RFC 3339 with microseconds."""
    return datetime.fromtimestamp(wall, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def object_reference(obj: Mapping[str, Any]) -> dict[str, str]:
    metadata = obj.get("metadata") or {}
    # Objects from list responses may lack kind/apiVersion; the scheduler's
    # events are about pods.
    reference = {
        "apiVersion": str(obj.get("apiVersion") or "v1"),
        "kind": str(obj.get("kind") or "Pod"),
        "name": str(metadata.get("name") or ""),
        "namespace": str(metadata.get("namespace") or ""),
        "uid": str(metadata.get("uid") or ""),
        "resourceVersion": str(metadata.get("resourceVersion") or ""),
    }
    return {key: value for key, value in reference.items() if value}


@dataclass(frozen=True, slots=True)
class _Pending:
    key: EventKey
    namespace: str
    regarding: dict[str, str]
    wall: float
    now: float


class Recorder:
    """The framework's ``EventRecorder`` for one scheduler name."""

    def __init__(self, sink: EventSink, controller: str, instance: str) -> None:
        self._sink = sink
        self.controller = controller
        self.instance = instance

    def event(
        self, regarding: Mapping[str, Any], type_: str, reason: str, action: str, note: str
    ) -> None:
        reference = object_reference(regarding)
        key = EventKey(
            regarding=tuple(reference.get(f, "") for f in _REFERENCE_FIELDS),
            type_=type_,
            reason=reason[:_FIELD_LIMIT],
            action=action[:_FIELD_LIMIT],
            note=truncate_note(note),
            reporting_controller=self.controller,
        )
        self._sink.enqueue(
            _Pending(
                key=key,
                namespace=reference.get("namespace") or DEFAULT_NAMESPACE,
                regarding=reference,
                wall=self._sink.clock.wall(),
                now=self._sink.clock.now(),
            ),
            self.instance,
        )


_REFERENCE_FIELDS = ("apiVersion", "kind", "namespace", "name", "uid", "resourceVersion")


class EventSink:
    def __init__(
        self,
        writer: EventWriter,
        *,
        hostname: str,
        clock: Clock,
        capacity: int = 10000,
        series_window: float = DEFAULT_WINDOW,
        series_refresh: float = DEFAULT_REFRESH,
        max_attempts: int = MAX_TRIES,
        retry_delay: float = 1.0,
        concurrency: int = 32,
    ) -> None:
        self._writer = writer
        # Writes in flight at once: one at a time cannot keep up with a
        # scheduler binding hundreds of pods a second (each bind is an event).
        self._slots = asyncio.Semaphore(max(1, concurrency))
        self._writing: set[asyncio.Task[None]] = set()
        self._last_write: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._hostname = hostname
        self.clock = clock
        self._capacity = capacity
        self._queue: deque[tuple[_Pending, str]] = deque()
        self._series = SeriesCache(window=series_window, refresh=series_refresh)
        self._max_attempts = max(1, max_attempts)
        self._retry_delay = retry_delay
        self._wake = asyncio.Event()
        self._dropping = False
        self._last_nanos = 0
        self.dropped = 0
        self.failed = 0
        self.written = 0
        self.core_v1 = False  # set once events.k8s.io is refused

    def recorder(self, scheduler_name: str) -> Recorder:
        instance = f"{scheduler_name}-{self._hostname}"[:_FIELD_LIMIT]
        return Recorder(self, scheduler_name, instance)

    def queued(self) -> int:
        return len(self._queue)

    def enqueue(self, pending: _Pending, instance: str) -> None:
        if len(self._queue) >= self._capacity:
            self.dropped += 1
            if not self._dropping:
                self._dropping = True
                log.warning(
                    "event buffer full (%d); dropping events (%d dropped so far)",
                    self._capacity,
                    self.dropped,
                )
            return
        self._dropping = False
        self._queue.append((pending, instance))
        self._wake.set()

    async def run(self) -> None:
        """Write events until cancelled (queued events are then lost, and
        writes in flight are cancelled: no task outlives the sink)."""
        try:
            while True:
                if not self._queue:
                    self._wake.clear()
                    wait = self._series.next_due_in(self.clock.now())
                    try:
                        async with asyncio.timeout(wait):
                            await self._wake.wait()
                    except TimeoutError:
                        pass
                # Not ``drain``: a write waiting to retry must not hold back
                # the events queued behind it (slots still bound the writes).
                await self._start_queued()
        finally:
            for task in list(self._writing):
                task.cancel()

    async def drain(self) -> None:
        """Write everything queued now, then any series counts that are due;
        returns once all of those writes have finished."""
        await self._start_queued()
        if self._writing:
            await asyncio.gather(*self._writing, return_exceptions=True)

    async def _start_queued(self) -> None:
        """Start the writes of everything queued now and of the series counts
        that are due, without waiting for them to finish."""
        while self._queue:
            pending, instance = self._queue.popleft()
            body = self._body(pending, instance)
            action = self._series.observe(
                pending.key, pending.namespace, body, pending.now, pending.wall
            )
            if action is not None:
                await self._start_write(action)
        for patch in self._series.due(self.clock.now()):
            await self._start_write(patch)

    async def _start_write(self, action: CreateEvent | PatchSeries) -> None:
        """Start a write once a slot is free; at most ``concurrency`` at once.
        Writes to the same event stay in order: a series patch waits for the
        create (or the previous patch) of its event."""
        await self._slots.acquire()
        key = (action.namespace, str(action.body["metadata"]["name"]))
        before = self._last_write.get(key)
        task = asyncio.get_running_loop().create_task(self._write_after(before, action))
        self._last_write[key] = task
        self._writing.add(task)

        def finished(done: asyncio.Task[None]) -> None:
            self._writing.discard(done)
            if self._last_write.get(key) is done:
                del self._last_write[key]

        task.add_done_callback(finished)

    async def _write_after(
        self, before: asyncio.Task[None] | None, action: CreateEvent | PatchSeries
    ) -> None:
        try:
            if before is not None:
                await asyncio.wait({before})
            await self._write(action)
        finally:
            self._slots.release()

    # ------------------------------------------------------------- plumbing
    def _body(self, pending: _Pending, instance: str) -> dict[str, Any]:
        key = pending.key
        return {
            "apiVersion": EVENTS.api_version,
            "kind": EVENTS.kind,
            "metadata": {"name": self._name(pending), "namespace": pending.namespace},
            "eventTime": micro_time(pending.wall),
            "reportingController": key.reporting_controller,
            "reportingInstance": instance,
            "action": key.action,
            "reason": key.reason,
            "type": key.type_,
            "note": key.note,
            "regarding": pending.regarding,
        }

    def _name(self, pending: _Pending) -> str:
        # <regarding name>.<hex unix nanoseconds>, as client-go; kept strictly
        # increasing so two events in one clock tick still get distinct names.
        nanos = max(int(pending.wall * 1e9), self._last_nanos + 1)
        self._last_nanos = nanos
        return f"{pending.regarding.get('name', 'event')}.{nanos:x}"

    async def _write(self, action: CreateEvent | PatchSeries) -> None:
        for attempt in range(1, self._max_attempts + 1):
            try:
                await self._write_once(action)
            except (ApiError, TransportError) as err:
                retriable = isinstance(err, TransportError) or err.retriable
                if retriable and attempt < self._max_attempts:
                    await self.clock.sleep(retry_wait(self._retry_delay, attempt))
                    continue
                self.failed += 1
                log.warning("could not write event: %s", err)
                return
            self.written += 1
            return

    async def _write_once(self, action: CreateEvent | PatchSeries) -> None:
        if self.core_v1:
            await self._write_core(action)
            return
        try:
            await self._write_events_v1(action)
        except ApiError as err:
            if not events_api_refused(err):
                raise
            log.warning("events.k8s.io refused (%s); writing core/v1 events from now on", err)
            self.core_v1 = True
            await self._write_core(action)

    async def _write_core(self, action: CreateEvent | PatchSeries) -> None:
        if isinstance(action, CreateEvent):
            await self._writer.create_core_event(action.namespace, core_event(action.body))
            return
        last = _seconds(micro_time(action.last_observed_wall))
        try:
            await self._writer.patch_core_event(
                action.namespace, action.name, {"count": action.count, "lastTimestamp": last}
            )
        except ApiError as err:
            if err.status != HTTP_NOT_FOUND:
                raise
            await self._writer.create_core_event(
                action.namespace, core_event(action.body, action.count, last)
            )

    async def _write_events_v1(self, action: CreateEvent | PatchSeries) -> None:
        if isinstance(action, CreateEvent):
            await self._writer.create_event(action.namespace, action.body)
            return
        series = {"count": action.count, "lastObservedTime": micro_time(action.last_observed_wall)}
        try:
            await self._writer.patch_event(action.namespace, action.name, {"series": series})
        except ApiError as err:
            if err.status != HTTP_NOT_FOUND:
                raise
            # The event expired (events have a TTL): write it again with its series.
            await self._writer.create_event(action.namespace, {**action.body, "series": series})
