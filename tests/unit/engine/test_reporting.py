"""What users see: the PodScheduled condition patch, note truncation, and the
background status writer (newest patch per pod, 404 dropped, 5xx retried)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.cache import Cache
from scheduler.cycle.reporting import (
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    StatusWriter,
    scheduled_condition_patch,
)
from scheduler.engine.eventhandlers import EventHandlers
from scheduler.framework import Pod
from scheduler.kube.errors import ApiError
from tests.support.builders import PodBuilder, make_pod
from tests.support.clock import FakeClock, LoopTime
from tests.support.objects import node, pod
from tests.unit.queue.fakes import PROFILE, make_queue

NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z
NOW_TEXT = "2023-11-14T22:13:20Z"
EARLIER = "2023-01-01T00:00:00Z"
MESSAGE = "0/3 nodes are available: 3 Insufficient cpu."


def condition(
    reason: str = REASON_UNSCHEDULABLE,
    message: str = MESSAGE,
    transition: str = NOW_TEXT,
    generation: int | None = None,
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition,
        "lastProbeTime": None,
    }
    if generation is not None:
        result["observedGeneration"] = generation
    return result


def scheduled_false(builder: PodBuilder, **fields: Any) -> PodBuilder:
    return builder.condition(
        "PodScheduled",
        "False",
        reason=fields.get("reason", REASON_UNSCHEDULABLE),
        message=fields.get("message", MESSAGE),
        last_transition=EARLIER,
        observed_generation=fields.get("generation"),
    )


@pytest.mark.parametrize(
    ("target", "reason", "nominated", "patch"),
    [
        pytest.param(
            pod("p"),
            REASON_UNSCHEDULABLE,
            None,
            {"status": {"conditions": [condition()]}},
            id="first failure: a new condition",
        ),
        pytest.param(
            pod("p", scheduled_false),
            REASON_UNSCHEDULABLE,
            None,
            None,
            id="unchanged condition: nothing to write",
        ),
        pytest.param(
            pod("p", lambda b: scheduled_false(b, message="0/3 nodes are available: 3 taint.")),
            REASON_UNSCHEDULABLE,
            None,
            {"status": {"conditions": [condition(transition=EARLIER)]}},
            id="new message: lastTransitionTime kept while still False",
        ),
        pytest.param(
            pod("p", lambda b: scheduled_false(b, reason=REASON_UNSCHEDULABLE)),
            REASON_SCHEDULER_ERROR,
            None,
            {"status": {"conditions": [condition(REASON_SCHEDULER_ERROR, transition=EARLIER)]}},
            id="new reason: lastTransitionTime kept",
        ),
        pytest.param(
            pod("p", lambda b: b.condition("PodScheduled", "True", last_transition=EARLIER)),
            REASON_UNSCHEDULABLE,
            None,
            {"status": {"conditions": [condition()]}},
            id="flipped from True: a new lastTransitionTime",
        ),
        pytest.param(
            pod("p", lambda b: scheduled_false(b.generation(3), generation=2)),
            REASON_UNSCHEDULABLE,
            None,
            {"status": {"conditions": [condition(transition=EARLIER, generation=3)]}},
            id="a newer pod generation is observed",
        ),
        pytest.param(
            pod("p", lambda b: scheduled_false(b.generation(3), generation=3)),
            REASON_UNSCHEDULABLE,
            None,
            None,
            id="same generation observed: nothing to write",
        ),
        pytest.param(
            pod("p", scheduled_false),
            REASON_UNSCHEDULABLE,
            "n2",
            {"status": {"nominatedNodeName": "n2"}},
            id="nominated node set",
        ),
        pytest.param(
            pod("p", lambda b: scheduled_false(b.nominated("n2"))),
            REASON_UNSCHEDULABLE,
            "",
            {"status": {"nominatedNodeName": None}},
            id="nominated node cleared",
        ),
        pytest.param(
            pod("p", lambda b: scheduled_false(b.nominated("n2"))),
            REASON_UNSCHEDULABLE,
            None,
            None,
            id="nominated node left alone",
        ),
        pytest.param(
            pod("p", lambda b: scheduled_false(b.nominated("n2"))),
            REASON_UNSCHEDULABLE,
            "n2",
            None,
            id="nominated node already set",
        ),
        pytest.param(
            pod("p"),
            REASON_UNSCHEDULABLE,
            "",
            {"status": {"conditions": [condition()]}},
            id="clearing an absent nomination writes nothing for it",
        ),
    ],
)
def test_scheduled_condition_patch(
    target: Pod, reason: str, nominated: str | None, patch: dict[str, Any] | None
) -> None:
    assert scheduled_condition_patch(target, reason, MESSAGE, NOW, nominated) == patch


class FakeApi:
    """Answers each patch with the next scripted outcome (None = success)."""

    def __init__(self, *outcomes: Exception | None) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[tuple[str, str, Mapping[str, Any]]] = []
        self.release = asyncio.Event()
        self.release.set()

    async def patch(self, namespace: str, name: str, body: Mapping[str, Any]) -> object:
        self.calls.append((namespace, name, body))
        await self.release.wait()
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if outcome is not None:
            raise outcome
        return {}


def body(message: str) -> dict[str, Any]:
    return {"status": {"conditions": [condition(message=message)]}}


async def finish(writer: StatusWriter, task: asyncio.Task[None], loop_time: LoopTime) -> None:
    writer.close()
    await loop_time.settle()
    assert task.done()
    await task


async def test_writer_coalesces_by_pod_newest_wins(loop_time: LoopTime) -> None:
    api = FakeApi()
    writer = StatusWriter(api.patch, FakeClock())
    writer.submit("default", "a", body("a1"))
    writer.submit("default", "b", body("b1"))
    writer.submit("default", "a", body("a2"))
    assert writer.pending() == 2

    task = asyncio.create_task(writer.run())
    await finish(writer, task, loop_time)

    assert api.calls == [("default", "a", body("a2")), ("default", "b", body("b1"))]
    assert (writer.written, writer.failed, writer.pending()) == (2, 0, 0)


async def test_a_patch_submitted_during_a_write_is_written_after_it(loop_time: LoopTime) -> None:
    api = FakeApi()
    api.release.clear()
    writer = StatusWriter(api.patch, FakeClock())
    task = asyncio.create_task(writer.run())
    writer.submit("default", "a", body("a1"))
    await loop_time.settle()
    writer.submit("default", "a", body("a2"))
    api.release.set()
    await finish(writer, task, loop_time)
    assert [call[2] for call in api.calls] == [body("a1"), body("a2")]


@pytest.mark.parametrize(
    ("outcomes", "calls", "written", "failed"),
    [
        pytest.param([ApiError(404, "NotFound", "gone")], 1, 0, 0, id="404: pod gone, dropped"),
        pytest.param([ApiError(422, "Invalid", "bad")], 1, 0, 1, id="4xx: not retried"),
        pytest.param(
            [ApiError(503, "ServiceUnavailable", "busy"), ApiError(500, "Internal", "oops")],
            3,
            1,
            0,
            id="5xx: retried until it works",
        ),
        pytest.param([ApiError(429, "TooManyRequests", "slow down")], 2, 1, 0, id="429: retried"),
        pytest.param([ConnectionResetError("reset")], 2, 1, 0, id="no answer: retried"),
        pytest.param(
            [ApiError(503, "ServiceUnavailable", "busy")] * 3, 4, 1, 0, id="rides out 3 failures"
        ),
        pytest.param(
            [ApiError(503, "ServiceUnavailable", "busy")] * 10, 10, 0, 1, id="gives up after 10"
        ),
    ],
)
async def test_writer_retries_transient_failures(
    loop_time: LoopTime,
    outcomes: list[Exception],
    calls: int,
    written: int,
    failed: int,
) -> None:
    api = FakeApi(*outcomes)
    writer = StatusWriter(api.patch, FakeClock())
    writer.submit("default", "p", body("m"))
    task = asyncio.create_task(writer.run())
    for _ in range(70):  # backoff 0.1 s, 0.2 s, ... 3.2 s: 15.9 s for 10 attempts
        await loop_time.advance(0.25)
    await finish(writer, task, loop_time)
    assert (len(api.calls), writer.written, writer.failed) == (calls, written, failed)


# ------------------------------------------- stale patches (issue 6 defect 4)
async def test_each_patch_is_guarded_by_the_pod_uid(loop_time: LoopTime) -> None:
    api = FakeApi()
    writer = StatusWriter(api.patch, FakeClock())
    writer.submit("default", "a", body("a1"), uid="uid-a")
    task = asyncio.create_task(writer.run())
    await finish(writer, task, loop_time)
    assert api.calls == [("default", "a", {"metadata": {"uid": "uid-a"}, **body("a1")})]


@pytest.mark.parametrize(
    "deliver",
    [
        pytest.param(
            lambda h, raw: h.pod_updated(raw, {**raw, "spec": {**raw["spec"], "nodeName": "n1"}}),
            id="the pod was bound",
        ),
        pytest.param(lambda h, raw: h.pod_deleted(raw), id="the pod was deleted"),
    ],
)
async def test_a_pending_failure_patch_is_dropped_when_the_pod_binds_or_goes(
    loop_time: LoopTime, deliver: Any
) -> None:
    api = FakeApi()
    writer = StatusWriter(api.patch, FakeClock())
    cache = Cache()
    cache.add_node(node("n1"))
    handlers = EventHandlers(cache, make_queue(), [PROFILE], status=writer)
    raw = make_pod("a").uid("uid-a").scheduler(PROFILE).obj()
    handlers.pod_added(raw)
    writer.submit("default", "a", body("unschedulable"), uid="uid-a")
    writer.submit("default", "b", body("another pod"), uid="uid-b")
    assert writer.pending() == 2

    deliver(handlers, raw)

    task = asyncio.create_task(writer.run())
    await finish(writer, task, loop_time)
    assert [call[1] for call in api.calls] == ["b"]


async def test_settle_drops_the_pending_patch_and_waits_for_the_one_in_flight(
    loop_time: LoopTime,
) -> None:
    api = FakeApi()
    api.release.clear()
    writer = StatusWriter(api.patch, FakeClock())
    task = asyncio.create_task(writer.run())
    writer.submit("default", "a", body("a1"), uid="uid-a")
    await loop_time.settle()
    assert len(api.calls) == 1, "a1 is being written"
    writer.submit("default", "a", body("a2"), uid="uid-a")

    settled = asyncio.create_task(writer.settle("default", "a"))
    await loop_time.settle()
    assert not settled.done(), "the bind waits for the write in flight"
    api.release.set()
    await loop_time.settle()
    assert settled.done()

    await finish(writer, task, loop_time)
    assert [call[2]["status"] for call in api.calls] == [body("a1")["status"]]
