"""Event writing: note truncation, event bodies, series aggregation, buffer and retries."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from unittest.mock import ANY

import pytest

from scheduler.framework.handle import EventRecorder
from scheduler.kube.errors import ApiError, TransportError
from scheduler.kube.events import EventSink, EventType, micro_time, retry_wait, truncate_note
from scheduler.kube.eventseries import CreateEvent, EventKey, PatchSeries, SeriesCache
from tests.support.builders import make_node, make_pod
from tests.support.clock import FakeClock
from tests.support.wait import eventually

WALL0 = 1_800_000_000.0


@dataclass
class FakeWriter:
    """Records writes; ``failures`` are raised, one per call, before succeeding."""

    creates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    patches: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    failures: list[Exception] = field(default_factory=list)
    patch_failures: list[Exception] = field(default_factory=list)

    async def create_event(self, namespace: str, event: Mapping[str, Any]) -> None:
        if self.failures:
            raise self.failures.pop(0)
        self.creates.append((namespace, dict(event)))

    async def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        if self.patch_failures:
            raise self.patch_failures.pop(0)
        self.patches.append((namespace, name, dict(patch)))

    core_creates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    core_patches: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    async def create_core_event(self, namespace: str, event: Mapping[str, Any]) -> None:
        self.core_creates.append((namespace, dict(event)))

    async def patch_core_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self.core_patches.append((namespace, name, dict(patch)))


def make_sink(writer: FakeWriter, clock: FakeClock, **kwargs: Any) -> EventSink:
    return EventSink(writer, hostname="host-a", clock=clock, **kwargs)


POD = make_pod("p1", "ns1").uid("u1").resource_version("7").obj()


# ----------------------------------------------------------------- pure parts
@pytest.mark.parametrize(
    ("note", "expected"),
    [
        pytest.param("short", "short", id="short note kept"),
        pytest.param("x" * 1024, "x" * 1024, id="exactly 1024 bytes kept"),
        pytest.param("x" * 1025, "x" * 1020 + " ...", id="1025 bytes cut to 1020 and ellipsis"),
        pytest.param("é" * 600, "é" * 510 + " ...", id="multibyte cut at byte 1020"),
        pytest.param("a" + "é" * 600, "a" + "é" * 509 + " ...", id="never splits a character"),
    ],
)
def test_truncate_note(note: str, expected: str) -> None:
    result = truncate_note(note)
    assert result == expected
    assert len(result.encode()) <= 1024


def test_micro_time_is_rfc3339_with_microseconds() -> None:
    assert micro_time(1_700_000_000.25) == "2023-11-14T22:13:20.250000Z"


def _key(note: str = "n") -> EventKey:
    return EventKey(("v1", "Pod", "ns", "p", "u", "1"), "Warning", "R", "A", note, "sched")


def _body(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}}


@dataclass(frozen=True)
class Seen:
    at: float
    note: str = "n"


@pytest.mark.parametrize(
    ("observations", "expected"),
    [
        pytest.param([Seen(0)], ["create e0"], id="first occurrence is created"),
        pytest.param(
            [Seen(0), Seen(1)], ["create e0", "patch e0 x2"], id="second starts a series at once"
        ),
        pytest.param(
            [Seen(0), Seen(1), Seen(2), Seen(3)],
            ["create e0", "patch e0 x2", "-", "-"],
            id="later repeats only count",
        ),
        pytest.param(
            [Seen(0), Seen(1000)], ["create e0", "create e1"], id="after the window: a new event"
        ),
        pytest.param(
            [Seen(0), Seen(1, note="other")],
            ["create e0", "create e1"],
            id="a different note is a different event",
        ),
    ],
)
def test_series_cache_observe(observations: list[Seen], expected: list[str]) -> None:
    cache = SeriesCache(window=360, refresh=60)
    got = []
    for i, seen in enumerate(observations):
        action = cache.observe(_key(seen.note), "ns", _body(f"e{i}"), seen.at, WALL0 + seen.at)
        match action:
            case CreateEvent(body=body):
                got.append(f"create {body['metadata']['name']}")
            case PatchSeries(name=name, count=count):
                got.append(f"patch {name} x{count}")
            case None:
                got.append("-")
    assert got == expected


def test_series_cache_writes_pending_counts_when_due_and_forgets_idle_series() -> None:
    cache = SeriesCache(window=360, refresh=60)
    for at in (0, 1, 2, 3):
        cache.observe(_key(), "ns", _body("e"), at, WALL0 + at)
    assert cache.next_due_in(3) == pytest.approx(58)
    assert cache.due(30) == []
    [patch] = cache.due(61)
    assert (patch.count, patch.last_observed_wall) == (4, WALL0 + 3)
    assert cache.next_due_in(61) is None
    cache.observe(_key(), "ns", _body("e"), 100, WALL0 + 100)
    [final] = cache.due(500)  # idle past the window: last count written, then forgotten
    assert final.count == 5
    assert len(cache) == 0


# ------------------------------------------------------------------- the sink
async def test_event_body_follows_events_k8s_io_v1() -> None:
    writer, clock = FakeWriter(), FakeClock(now=100.0, wall=WALL0)
    sink = make_sink(writer, clock)
    recorder: EventRecorder = sink.recorder("my-scheduler")
    recorder.event(
        POD, EventType.WARNING, "FailedScheduling", "Scheduling", "0/3 nodes are available"
    )
    await sink.drain()
    [(namespace, body)] = writer.creates
    assert namespace == "ns1"
    assert body["metadata"]["name"].startswith("p1.")
    assert body == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": body["metadata"]["name"], "namespace": "ns1"},
        "eventTime": micro_time(WALL0),
        "reportingController": "my-scheduler",
        "reportingInstance": "my-scheduler-host-a",
        "action": "Scheduling",
        "reason": "FailedScheduling",
        "type": "Warning",
        "note": "0/3 nodes are available",
        "regarding": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "p1",
            "namespace": "ns1",
            "uid": "u1",
            "resourceVersion": "7",
        },
    }


async def test_cluster_scoped_object_events_go_to_default_namespace() -> None:
    writer, clock = FakeWriter(), FakeClock(now=100.0, wall=WALL0)
    sink = make_sink(writer, clock)
    sink.recorder("s").event(make_node("n1").obj(), EventType.NORMAL, "R", "A", "note")
    await sink.drain()
    [(namespace, body)] = writer.creates
    assert namespace == "default"
    assert body["regarding"]["kind"] == "Node"


async def test_repeated_events_become_a_series_instead_of_duplicates() -> None:
    writer, clock = FakeWriter(), FakeClock(now=100.0, wall=WALL0)
    sink = make_sink(writer, clock, series_refresh=60)
    recorder = sink.recorder("s")
    for _ in range(5):
        recorder.event(POD, EventType.WARNING, "FailedScheduling", "Scheduling", "same")
        clock.advance(1)
    await sink.drain()
    assert len(writer.creates) == 1
    name = writer.creates[0][1]["metadata"]["name"]
    assert [(p[1], p[2]["series"]["count"]) for p in writer.patches] == [(name, 2)]
    clock.advance(60)
    await sink.drain()
    assert writer.patches[-1][2] == {
        "series": {"count": 5, "lastObservedTime": micro_time(WALL0 + 4)}
    }


async def test_full_buffer_drops_and_counts() -> None:
    writer, clock = FakeWriter(), FakeClock(now=100.0, wall=WALL0)
    sink = make_sink(writer, clock, capacity=2)
    recorder = sink.recorder("s")
    for i in range(5):
        recorder.event(POD, EventType.NORMAL, "R", "A", f"note {i}")
    assert (sink.queued(), sink.dropped) == (2, 3)
    await sink.drain()
    assert [body["note"] for _, body in writer.creates] == ["note 0", "note 1"]


@pytest.mark.parametrize(
    ("failures", "written", "failed", "creates"),
    [
        pytest.param([TransportError("reset")], 1, 0, 1, id="retried after no answer"),
        pytest.param([ApiError(503, "ServiceUnavailable", "")] * 2, 1, 0, 1, id="retried on 5xx"),
        pytest.param([ApiError(503, "ServiceUnavailable", "")] * 3, 0, 1, 0, id="gives up"),
        pytest.param([ApiError(422, "Invalid", "")], 0, 1, 0, id="not retried on 422"),
    ],
)
async def test_write_retries_only_retriable_failures(
    failures: list[Exception], written: int, failed: int, creates: int
) -> None:
    writer, clock = FakeWriter(failures=list(failures)), FakeClock(now=100.0, wall=WALL0)
    sink = make_sink(writer, clock, max_attempts=3)
    sink.recorder("s").event(POD, EventType.NORMAL, "R", "A", "n")
    await sink.drain()
    assert (sink.written, sink.failed, len(writer.creates)) == (written, failed, creates)


@pytest.mark.parametrize(
    ("failures", "written", "failed"),
    [
        pytest.param(11, 1, 0, id="written after eleven 503s (an API server restart)"),
        pytest.param(12, 0, 1, id="dropped after twelve tries, as upstream"),
    ],
)
async def test_default_retry_budget_is_upstreams_twelve_tries(
    failures: int, written: int, failed: int
) -> None:
    writer = FakeWriter(failures=[ApiError(503, "ServiceUnavailable", "")] * failures)
    sink = make_sink(writer, FakeClock(now=100.0, wall=WALL0))
    sink.recorder("s").event(POD, EventType.NORMAL, "R", "A", "n")
    await sink.drain()
    assert (sink.written, sink.failed) == (written, failed)


@pytest.mark.parametrize(
    ("attempt", "wait"),
    [
        pytest.param(1, 1.0, id="first retry after the first delay"),
        pytest.param(3, 4.0, id="doubles"),
        pytest.param(5, 10.0, id="capped at upstream's 10 s"),
        pytest.param(10_000, 10.0, id="no overflow on a huge attempt"),
    ],
)
def test_retry_wait(attempt: int, wait: float) -> None:
    assert retry_wait(1.0, attempt) == wait


async def test_series_of_an_expired_event_is_created_again() -> None:
    writer, clock = (
        FakeWriter(patch_failures=[ApiError(404, "NotFound", "")]),
        FakeClock(now=100.0, wall=WALL0),
    )
    sink = make_sink(writer, clock)
    recorder = sink.recorder("s")
    recorder.event(POD, EventType.NORMAL, "R", "A", "n")
    recorder.event(POD, EventType.NORMAL, "R", "A", "n")
    await sink.drain()
    assert len(writer.creates) == 2
    assert writer.creates[1][1]["series"]["count"] == 2
    assert writer.creates[1][1]["metadata"] == writer.creates[0][1]["metadata"]


async def test_run_writes_in_the_background_until_cancelled() -> None:
    writer, clock = FakeWriter(), FakeClock(now=100.0, wall=WALL0)
    sink = make_sink(writer, clock)
    task = asyncio.create_task(sink.run())
    sink.recorder("s").event(POD, EventType.NORMAL, "Scheduled", "Binding", "ok")

    async def written() -> int:
        return len(writer.creates)

    await eventually(written, timeout=5, what="event written")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@dataclass
class SlowWriter(FakeWriter):
    """Every write waits for ``release``; records how many were in flight at once."""

    release: asyncio.Event = field(default_factory=asyncio.Event)
    reached: asyncio.Event = field(default_factory=asyncio.Event)
    target: int = 1
    in_flight: int = 0
    most_in_flight: int = 0

    async def create_event(self, namespace: str, event: Mapping[str, Any]) -> None:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        if self.in_flight >= self.target:
            self.reached.set()
        await self.release.wait()
        self.in_flight -= 1
        await super().create_event(namespace, event)


@pytest.mark.parametrize(
    ("concurrency", "events", "most"),
    [
        pytest.param(1, 5, 1, id="one at a time"),
        pytest.param(4, 10, 4, id="bounded by the limit"),
        pytest.param(32, 5, 5, id="all at once when fewer than the limit"),
    ],
)
async def test_events_are_written_concurrently_up_to_the_limit(
    concurrency: int, events: int, most: int
) -> None:
    writer, clock = SlowWriter(target=min(concurrency, events)), FakeClock(now=100.0, wall=WALL0)
    sink = make_sink(writer, clock, concurrency=concurrency)
    recorder = sink.recorder("s")
    for i in range(events):
        recorder.event(POD, EventType.NORMAL, "R", "A", f"note {i}")
    draining = asyncio.create_task(sink.drain())
    await asyncio.wait_for(writer.reached.wait(), 5)
    writer.release.set()
    await draining
    assert writer.most_in_flight == most
    assert sorted(body["note"] for _, body in writer.creates) == [
        f"note {i}" for i in range(events)
    ]


@dataclass
class OrderedWriter(FakeWriter):
    """Creates are slow; records the order in which writes complete."""

    order: list[str] = field(default_factory=list)

    async def create_event(self, namespace: str, event: Mapping[str, Any]) -> None:
        for _ in range(5):
            await asyncio.sleep(0)
        await super().create_event(namespace, event)
        self.order.append("create")

    async def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        await super().patch_event(namespace, name, patch)
        self.order.append("patch")


async def test_series_patch_waits_for_the_create_of_its_event() -> None:
    writer, clock = OrderedWriter(), FakeClock(now=100.0, wall=WALL0)
    sink = make_sink(writer, clock, concurrency=8)
    recorder = sink.recorder("s")
    recorder.event(POD, EventType.WARNING, "FailedScheduling", "Scheduling", "same")
    recorder.event(POD, EventType.WARNING, "FailedScheduling", "Scheduling", "same")
    await sink.drain()
    assert writer.order == ["create", "patch"]
    assert writer.patches[0][2] == {"series": {"count": 2, "lastObservedTime": ANY}}


NOT_SERVED = ApiError(404, "NotFound", "the server could not find the requested resource")


@pytest.mark.parametrize(
    ("refusal", "falls_back"),
    [
        pytest.param(
            ApiError(403, "Forbidden", "events.events.k8s.io is forbidden"),
            True,
            id="forbidden by RBAC",
        ),
        pytest.param(NOT_SERVED, True, id="group not served"),
        pytest.param(
            ApiError(404, "NotFound", 'namespaces "gone" not found'),
            False,
            id="a missing namespace is not a refusal",
        ),
        pytest.param(ApiError(422, "Invalid", "bad"), False, id="invalid event"),
    ],
)
async def test_events_fall_back_to_core_v1_when_events_k8s_io_is_refused(
    refusal: ApiError, falls_back: bool
) -> None:
    writer, clock = FakeWriter(failures=[refusal]), FakeClock(now=100.0, wall=WALL0)
    sink = make_sink(writer, clock, series_refresh=60)
    recorder = sink.recorder("sched")
    recorder.event(POD, EventType.WARNING, "FailedScheduling", "Scheduling", "first")
    await sink.drain()

    assert sink.core_v1 == falls_back
    if not falls_back:
        assert (sink.failed, writer.core_creates) == (1, [])
        return
    recorder.event(POD, EventType.NORMAL, "Scheduled", "Binding", "second")
    await sink.drain()
    assert writer.creates == []  # no second try of events.k8s.io
    (namespace, first), (_, second) = writer.core_creates
    assert namespace == "ns1"
    assert first["apiVersion"] == "v1"
    assert first["kind"] == "Event"
    assert first["involvedObject"]["name"] == "p1"
    assert first["involvedObject"]["uid"] == "u1"
    assert (first["type"], first["reason"], first["message"]) == (
        "Warning",
        "FailedScheduling",
        "first",
    )
    assert first["source"] == {"component": "sched"}
    assert first["reportingInstance"] == "sched-host-a"
    assert first["count"] == 1
    assert first["firstTimestamp"] == first["lastTimestamp"] == "2027-01-15T08:00:00Z"
    assert second["reason"] == "Scheduled"
    assert sink.written == 2


async def test_a_core_v1_series_patches_count_and_last_timestamp() -> None:
    writer, clock = FakeWriter(failures=[NOT_SERVED]), FakeClock(now=100.0, wall=WALL0)
    sink = make_sink(writer, clock, series_refresh=60)
    recorder = sink.recorder("s")
    for _ in range(3):
        recorder.event(POD, EventType.WARNING, "FailedScheduling", "Scheduling", "same")
        clock.advance(1)
    await sink.drain()
    clock.advance(60)
    await sink.drain()

    ((_, created),) = writer.core_creates
    assert writer.core_patches[-1] == (
        "ns1",
        created["metadata"]["name"],
        {"count": 3, "lastTimestamp": "2027-01-15T08:00:02Z"},
    )
