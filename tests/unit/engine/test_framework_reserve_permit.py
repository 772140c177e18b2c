"""Framework: Reserve stops at the first failure, Unreserve runs every plugin
in reverse; Permit rejects, fails or makes the pod wait (capped at 15 min)."""

from __future__ import annotations

import asyncio

import pytest

from scheduler.framework import Code, CycleState, ExtensionPoint, Status
from scheduler.runtime.waiting import WaitingPods
from tests.support.clock import LoopTime
from tests.support.objects import pod
from tests.unit.engine.plugins import (
    PermitStub,
    RecordingFrameworkMetrics,
    ReserveStub,
    make_framework,
)

POD = pod("p")


@pytest.mark.parametrize(
    ("statuses", "code", "message", "plugin", "ran"),
    [
        pytest.param([None, None], Code.SUCCESS, "", "", ["A", "B"], id="all reserve"),
        pytest.param(
            [None, Status.unschedulable("no room"), None],
            Code.UNSCHEDULABLE,
            "no room",
            "B",
            ["A", "B"],
            id="a rejection stops and keeps its code",
        ),
        pytest.param(
            [Status.pending("later"), None],
            Code.PENDING,
            "later",
            "A",
            ["A"],
            id="pending is a rejection",
        ),
        pytest.param(
            [None, Status.as_error("boom")],
            Code.ERROR,
            'running Reserve plugin "B": boom',
            "B",
            ["A", "B"],
            id="an error is wrapped",
        ),
        pytest.param(
            [Status.skip()],
            Code.ERROR,
            'running Reserve plugin "A": ',
            "A",
            ["A"],
            id="skip is not a Reserve answer: an error",
        ),
    ],
)
def test_reserve(
    statuses: list[Status | None], code: Code, message: str, plugin: str, ran: list[str]
) -> None:
    log: list[str] = []
    plugins = [ReserveStub(name, s, log=log) for name, s in zip("ABC", statuses, strict=False)]
    status = make_framework(reserve=plugins).run_reserve(CycleState(), POD, "n1")
    assert (Code.SUCCESS if status is None else status.code) == code
    assert ("" if status is None else status.message()) == message
    assert ("" if status is None else status.plugin) == plugin
    assert log == [f"Reserve:{name}@n1" for name in ran]


def test_raising_reserve_plugin_is_an_error() -> None:
    framework = make_framework(reserve=[ReserveStub("A", raises=KeyError("k"))])
    status = framework.run_reserve(CycleState(), POD, "n1")
    assert status is not None
    assert (status.code, status.message()) == (Code.ERROR, "running Reserve plugin \"A\": 'k'")


def test_unreserve_runs_all_in_reverse_even_when_one_raises() -> None:
    log: list[str] = []
    plugins = [
        ReserveStub("A", log=log),
        ReserveStub("B", log=log, unreserve_raises=RuntimeError("oops")),
        ReserveStub("C", log=log),
    ]
    make_framework(reserve=plugins).run_unreserve(CycleState(), POD, "n1")
    assert log == ["Unreserve:C@n1", "Unreserve:B@n1", "Unreserve:A@n1"]


@pytest.mark.parametrize(
    ("plugins", "code", "message", "plugin", "waiting"),
    [
        pytest.param(
            [PermitStub("A"), PermitStub("B")], Code.SUCCESS, "", "", set(), id="all allow"
        ),
        pytest.param(
            [PermitStub("A", Status.wait(), 10), PermitStub("B", Status.unschedulable("no"))],
            Code.UNSCHEDULABLE,
            "no",
            "B",
            set(),
            id="a rejection wins over an earlier wait: nothing waits",
        ),
        pytest.param(
            [PermitStub("A", Status.as_error("boom")), PermitStub("B", Status.wait(), 1)],
            Code.ERROR,
            'running Permit plugin "A": boom',
            "A",
            set(),
            id="an error is wrapped and stops",
        ),
        pytest.param(
            [PermitStub("A", raises=RuntimeError("kaput"))],
            Code.ERROR,
            'running Permit plugin "A": kaput',
            "A",
            set(),
            id="a raising plugin is an error",
        ),
        pytest.param(
            [PermitStub("A", Status.wait(), 10), PermitStub("B"), PermitStub("C", Status.wait())],
            Code.WAIT,
            'one or more plugins asked to wait and no plugin rejected pod "p"',
            "",
            {"A", "C"},
            id="waits are collected",
        ),
    ],
)
async def test_permit(
    plugins: list[PermitStub], code: Code, message: str, plugin: str, waiting: set[str]
) -> None:
    pods = WaitingPods()
    status = make_framework(permit=plugins, waiting=pods).run_permit(CycleState(), POD, "n1")
    assert (Code.SUCCESS if status is None else status.code) == code
    assert ("" if status is None else status.message()) == message
    assert ("" if status is None else status.plugin) == plugin
    found = pods.get(POD.uid)
    assert set(found.pending_plugins() if found else ()) == waiting
    if found is not None:
        found.reject("", "test over")  # stop its timers


@pytest.mark.parametrize(
    ("asked", "fires_after", "rendered"),
    [
        pytest.param(10.0, 10.0, "10s", id="as asked"),
        pytest.param(0.25, 0.25, "250ms", id="sub-second"),
        pytest.param(3600.0, 900.0, "15m0s", id="capped at 15 minutes"),
    ],
)
async def test_wait_times_out_with_upstream_message(
    loop_time: LoopTime, asked: float, fires_after: float, rendered: str
) -> None:
    pods = WaitingPods()
    framework = make_framework(permit=[PermitStub("Gang", Status.wait(), asked)], waiting=pods)
    assert framework.run_permit(CycleState(), POD, "n1") == Status.wait(
        'one or more plugins asked to wait and no plugin rejected pod "p"'
    )
    waiter = asyncio.ensure_future(framework.wait_on_permit(POD))

    await loop_time.advance(fires_after - 0.001)
    assert not waiter.done()
    await loop_time.advance(0.002)

    status = waiter.result()
    assert status is not None
    assert (status.code, status.plugin) == (Code.UNSCHEDULABLE, "Gang")
    assert status.message() == f"rejected due to timeout after waiting {rendered} at plugin Gang"
    assert pods.get(POD.uid) is None


def test_permit_metric_is_recorded_per_run() -> None:
    metrics = RecordingFrameworkMetrics()
    make_framework(permit=[PermitStub("A")], metrics=metrics).run_permit(CycleState(), POD, "n")
    assert metrics.points == [(ExtensionPoint.PERMIT, Code.SUCCESS)]
