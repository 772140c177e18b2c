"""Waiting pods: allow by every waiting plugin, reject by any, timeouts as
rejections; WaitOnPermit hands the outcome to the binding cycle."""

from __future__ import annotations

import asyncio

import pytest

from scheduler.framework import Code, CycleState, Status
from scheduler.runtime.waiting import WaitingPodImpl, WaitingPods, go_duration
from tests.support.clock import LoopTime
from tests.support.objects import pod
from tests.unit.engine.plugins import PermitStub, RecordingFrameworkMetrics, make_framework

POD = pod("p")


@pytest.mark.parametrize(
    ("seconds", "rendered"),
    [
        pytest.param(0, "0s", id="zero"),
        pytest.param(1e-9, "1ns", id="nanosecond"),
        pytest.param(1.5e-6, "1.5µs", id="microseconds"),
        pytest.param(0.5, "500ms", id="milliseconds"),
        pytest.param(1.5, "1.5s", id="fractional seconds"),
        pytest.param(10, "10s", id="seconds"),
        pytest.param(90, "1m30s", id="minutes"),
        pytest.param(900, "15m0s", id="the Permit cap"),
        pytest.param(3661, "1h1m1s", id="hours"),
        pytest.param(-2, "-2s", id="negative"),
    ],
)
def test_go_duration(seconds: float, rendered: str) -> None:
    assert go_duration(seconds) == rendered


async def test_allowed_by_every_waiting_plugin(loop_time: LoopTime) -> None:
    waiting = WaitingPodImpl(POD, {"A": 10, "B": 10})
    result = asyncio.ensure_future(waiting.wait())

    waiting.allow("A")
    await loop_time.settle()
    assert not result.done()
    assert waiting.pending_plugins() == ["B"]

    waiting.allow("B")
    await loop_time.settle()
    assert result.result() == Status.success()
    await loop_time.advance(60)  # no timer left to reject it afterwards
    assert result.result() == Status.success()


async def test_allow_by_a_plugin_that_is_not_waiting_changes_nothing(
    loop_time: LoopTime,
) -> None:
    waiting = WaitingPodImpl(POD, {"A": 10})
    result = asyncio.ensure_future(waiting.wait())
    waiting.allow("Other")
    await loop_time.settle()
    assert not result.done()
    waiting.reject("A", "stop")
    await loop_time.settle()


async def test_rejected_by_any_plugin_first_answer_wins(loop_time: LoopTime) -> None:
    waiting = WaitingPodImpl(POD, {"A": 10, "B": 10})
    result = asyncio.ensure_future(waiting.wait())
    waiting.reject("B", "gang incomplete")
    waiting.allow("A")
    await loop_time.advance(20)
    status = result.result()
    assert (status.code, status.plugin, status.message()) == (
        Code.UNSCHEDULABLE,
        "B",
        "gang incomplete",
    )


async def test_first_timeout_rejects_for_its_plugin(loop_time: LoopTime) -> None:
    waiting = WaitingPodImpl(POD, {"Slow": 30, "Fast": 5})
    result = asyncio.ensure_future(waiting.wait())
    await loop_time.advance(5.5)
    status = result.result()
    assert (status.plugin, status.message()) == (
        "Fast",
        "rejected due to timeout after waiting 5s at plugin Fast",
    )


async def test_cancelled_waiter_leaves_no_timer(loop_time: LoopTime) -> None:
    waiting = WaitingPodImpl(POD, {"A": 10})
    waiter = asyncio.ensure_future(waiting.wait())
    await loop_time.settle()
    waiter.cancel()
    await loop_time.settle()
    assert waiter.cancelled()
    assert waiting.pending_plugins() == []


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        pytest.param("allow", None, id="allowed: success"),
        pytest.param(
            "reject",
            Status.unschedulable("pod was deleted").with_plugin("Gang"),
            id="rejected: the rejection",
        ),
    ],
)
async def test_wait_on_permit(loop_time: LoopTime, answer: str, expected: Status | None) -> None:
    pods = WaitingPods()
    metrics = RecordingFrameworkMetrics()
    framework = make_framework(
        permit=[PermitStub("Gang", Status.wait(), 60)], waiting=pods, metrics=metrics
    )
    framework.run_permit(CycleState(), POD, "n1")
    result = asyncio.ensure_future(framework.wait_on_permit(POD))
    await loop_time.settle()
    waiting = pods.get(POD.uid)
    assert waiting is not None
    if answer == "allow":
        waiting.allow("Gang")
    else:
        waiting.reject("Gang", "pod was deleted")
    await loop_time.settle()
    assert result.result() == expected
    assert pods.get(POD.uid) is None
    assert metrics.permit_waits == [Code.SUCCESS if expected is None else expected.code]


async def test_wait_on_permit_for_a_pod_that_does_not_wait() -> None:
    assert await make_framework().wait_on_permit(POD) is None
