"""The scheduling loop with a real cache and framework: the success path, the
failure paths (requeue, event, condition), rollback after assume, shutdown
cancelling binding cycles, and a loop that survives crashes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from scheduler.cycle.contracts import AttemptResult
from scheduler.framework import Pod, Status
from scheduler.framework.events import ASSIGNED_POD_DELETE
from scheduler.runtime.framework import Framework
from scheduler.runtime.waiting import WaitingPods
from tests.support.objects import bound, pod
from tests.unit.engine.harness import Event, Harness, Requeued, harness
from tests.unit.engine.plugins import (
    BindStub,
    FilterStub,
    PermitStub,
    PostBindStub,
    PostFilterStub,
    PreBindStub,
    ReserveStub,
    make_framework,
)

P = pod("p", lambda b: b.requests(cpu="500m"))
UNSCHEDULABLE = "Unschedulable"
SCHEDULER_ERROR = "SchedulerError"
NOW_TEXT = "2023-11-14T22:13:20Z"  # FakeClock's wall time


def failed(note: str) -> Event:
    return Event("Warning", "FailedScheduling", "Scheduling", note)


def condition_patch(reason: str, message: str) -> dict[str, object]:
    return {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": NOW_TEXT,
                    "lastProbeTime": None,
                }
            ]
        }
    }


def conditions(h: Harness) -> list[tuple[str, str]]:
    """(pod name, PodScheduled reason) of every status patch submitted."""
    return [
        (name, patch["status"]["conditions"][0]["reason"]) for _, name, patch in h.status.submitted
    ]


async def schedule(h: Harness, target: Pod = P) -> bool:
    """One scheduling cycle, then wait for its binding cycle to end."""
    started = h.scheduler.schedule_one(h.queued(target))
    assert await h.scheduler.drain(5.0) == 0
    return started


async def test_success_binds_and_reports() -> None:
    log: list[str] = []
    binder = BindStub("Bind", log=log)
    framework = make_framework(
        filter=[FilterStub("F", log=log)],
        reserve=[ReserveStub("R", log=log)],
        permit=[PermitStub("P", log=log)],
        pre_bind=[PreBindStub("PB", log=log)],
        bind=[binder],
        post_bind=[PostBindStub("Post", log=log)],
    )
    h = harness(framework)

    assert await schedule(h)

    assert log == [
        "Filter:F@n1",
        "Reserve:R@n1",
        "Permit:P@n1",
        "PreBindPreFlight:PB@n1",
        "PreBind:PB@n1",
        "Bind:Bind@n1",
        "PostBind:Post@n1",
    ]
    assert binder.bound == [("default/p", "n1")]
    assert h.recorder.events == [
        Event("Normal", "Scheduled", "Binding", "Successfully assigned default/p to n1")
    ]
    assert (h.queue.finished, h.queue.requeued) == ([P.uid], [])
    # A PreBind plugin has work to do: the intended node is published first.
    assert h.status.submitted == [("default", "p", {"status": {"nominatedNodeName": "n1"}})]
    assert h.metrics.attempts == [AttemptResult.SCHEDULED]
    assert h.metrics.sli_attempts == [1]
    assert h.metrics.goroutine_deltas == [1, -1]
    assert h.cache.is_assumed(P.uid), "assumed until the informer confirms the binding"
    assert h.cpu_on("n1") == 500
    assert h.attempts.records[-1][1]["result"] == "Scheduled"


async def test_filter_failure_requeues_with_the_rejectors_and_tells_the_user() -> None:
    rejected = Status.unschedulable("node(s) didn't match Pod's node affinity/selector")
    framework = make_framework(
        filter=[FilterStub("Affinity", {"n1": rejected, "n2": rejected})], bind=[BindStub("B")]
    )
    h = harness(framework, nodes=("n1", "n2"))
    message = "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."

    assert not await schedule(h)

    assert h.queue.requeued == [Requeued("default/p", frozenset({"Affinity"}), frozenset())]
    assert h.queue.finished == [P.uid]
    assert h.recorder.events == [failed(message)]
    assert h.status.submitted == [
        ("default", "p", condition_patch(UNSCHEDULABLE, message)),
    ]
    assert h.metrics.attempts == [AttemptResult.UNSCHEDULABLE]
    assert h.cache.pod_count() == 0


async def test_no_nodes_at_all_is_a_rejection_without_rejectors() -> None:
    h = harness(make_framework(bind=[BindStub("B")]), nodes=())
    assert not await schedule(h)
    message = "no nodes available to schedule pods"
    assert h.queue.requeued == [Requeued("default/p", frozenset(), frozenset())]
    assert h.recorder.events == [failed(message)]
    assert h.status.submitted == [("default", "p", condition_patch(UNSCHEDULABLE, message))]


async def test_failure_without_post_filter_clears_the_nominated_node() -> None:
    framework = make_framework(filter=[FilterStub("F", {"n1": Status.unschedulable("full")})])
    h = harness(framework)
    nominated = pod("p", lambda b: b.nominated("n1"))
    await schedule(h, nominated)
    (_, _, patch), *_ = h.status.submitted
    assert patch["status"]["nominatedNodeName"] is None


async def test_post_filter_message_and_nomination_are_reported() -> None:
    framework = make_framework(
        filter=[FilterStub("F", {"n1": Status.unschedulable("full")})],
        post_filter=[
            PostFilterStub("Preempt", Status.unschedulable("preemption: wait"), nominate="n1")
        ],
    )
    h = harness(framework)
    await schedule(h)
    message = "0/1 nodes are available: 1 full. preemption: wait"
    assert h.recorder.events == [failed(message)]
    (_, _, patch), *_ = h.status.submitted
    assert patch["status"]["nominatedNodeName"] == "n1"
    assert patch["status"]["conditions"][0]["message"] == message


@pytest.mark.parametrize(
    ("reserve", "rejectors", "reason", "message"),
    [
        pytest.param(
            Status.unschedulable("no room"),
            {"R2"},
            UNSCHEDULABLE,
            "0/1 nodes are available: 1 no room.",
            id="rejected",
        ),
        pytest.param(
            Status.as_error("boom"),
            set(),
            SCHEDULER_ERROR,
            'running Reserve plugin "R2": boom',
            id="an error",
        ),
    ],
)
async def test_reserve_failure_unreserves_and_forgets(
    reserve: Status, rejectors: set[str], reason: str, message: str
) -> None:
    log: list[str] = []
    framework = make_framework(
        reserve=[ReserveStub("R1", log=log), ReserveStub("R2", reserve, log=log)],
        bind=[BindStub("B", log=log)],
    )
    h = harness(framework)

    assert not await schedule(h)

    assert log == ["Reserve:R1@n1", "Reserve:R2@n1", "Unreserve:R2@n1", "Unreserve:R1@n1"]
    assert (h.cache.pod_count(), h.cpu_on("n1")) == (0, 0)
    assert h.queue.requeued == [Requeued("default/p", frozenset(rejectors), frozenset())]
    assert h.recorder.events == [failed(message)]
    assert h.status.submitted == [("default", "p", condition_patch(reason, message))]


async def test_permit_rejection_unreserves_and_forgets() -> None:
    log: list[str] = []
    framework = make_framework(
        reserve=[ReserveStub("R", log=log)],
        permit=[PermitStub("Gate", Status.unschedulable("closed"), log=log)],
        bind=[BindStub("B", log=log)],
    )
    h = harness(framework)
    assert not await schedule(h)
    assert log == ["Reserve:R@n1", "Permit:Gate@n1", "Unreserve:R@n1"]
    assert h.cache.pod_count() == 0
    assert h.queue.requeued == [Requeued("default/p", frozenset({"Gate"}), frozenset())]
    assert h.recorder.events == [failed("0/1 nodes are available: 1 closed.")]


async def test_bind_error_forgets_and_retries_pods_waiting_for_room() -> None:
    log: list[str] = []
    framework = make_framework(
        reserve=[ReserveStub("R", log=log)],
        bind=[BindStub("B", Status.as_error("conflict"), log=log)],
    )
    h = harness(framework)

    assert await schedule(h)

    assert log == ["Reserve:R@n1", "Bind:B@n1", "Unreserve:R@n1"]
    assert (h.cache.pod_count(), h.cpu_on("n1")) == (0, 0)
    assert h.queue.moves == [(ASSIGNED_POD_DELETE, None)]
    assert h.queue.requeued == [Requeued("default/p", frozenset(), frozenset())]
    assert h.queue.finished == [P.uid, P.uid], "done after Permit, then by the requeue"
    assert h.recorder.events == [failed('running Bind plugin "B": conflict')]
    assert h.metrics.attempts == [AttemptResult.ERROR]


async def test_pre_bind_rejection_retries_others_but_not_the_pod_itself() -> None:
    framework = make_framework(
        pre_bind=[PreBindStub("Volumes", Status.unschedulable("volume node affinity conflict"))],
        bind=[BindStub("B")],
    )
    h = harness(framework)

    await schedule(h)

    assert h.cache.pod_count() == 0
    [(event, pre_check)] = h.queue.moves
    assert event == ASSIGNED_POD_DELETE
    assert pre_check is not None
    assert (pre_check(P), pre_check(pod("other"))) == (False, True)
    assert h.queue.requeued == [Requeued("default/p", frozenset({"Volumes"}), frozenset())]
    assert h.recorder.events == [
        failed("0/1 nodes are available: 1 volume node affinity conflict.")
    ]


async def test_all_binders_skipping_is_an_error() -> None:
    h = harness(make_framework(bind=[BindStub("B", Status.skip())]))
    await schedule(h)
    assert h.recorder.events == [failed("no bind plugin bound the pod")]
    assert h.cache.pod_count() == 0


async def test_pod_waiting_on_permit_binds_once_allowed() -> None:
    waiting = WaitingPods()
    binder = BindStub("B")
    framework = make_framework(
        permit=[PermitStub("Gang", Status.wait(), 600)], bind=[binder], waiting=waiting
    )
    h = harness(framework)

    assert h.scheduler.schedule_one(h.queued(P))
    await asyncio.sleep(0)
    assert binder.bound == []
    assert h.queue.finished == [], "not done while waiting on Permit"
    waiter = waiting.get(P.uid)
    assert waiter is not None
    waiter.allow("Gang")
    assert await h.scheduler.drain(5.0) == 0

    assert binder.bound == [("default/p", "n1")]
    assert waiting.get(P.uid) is None


def blocked_at_bind() -> tuple[Framework, BindStub, list[str]]:
    log: list[str] = []
    binder = BindStub("B", block=asyncio.Event(), log=log)
    framework = make_framework(reserve=[ReserveStub("R", log=log)], bind=[binder])
    return framework, binder, log


async def test_shutdown_cancels_a_binding_cycle_and_rolls_it_back() -> None:
    framework, binder, log = blocked_at_bind()
    h = harness(framework)
    assert h.scheduler.schedule_one(h.queued(P))
    await binder.entered.wait()
    assert h.scheduler.binding_in_flight() == 1

    assert await h.scheduler.drain(0.0) == 1

    assert log == ["Reserve:R@n1", "Bind:B@n1", "Unreserve:R@n1"]
    assert (h.cache.pod_count(), h.cpu_on("n1")) == (0, 0)
    assert h.queue.finished == [P.uid, P.uid]
    assert (h.queue.requeued, h.recorder.events) == ([], [])
    assert h.scheduler.binding_in_flight() == 0


async def test_a_bind_under_way_is_listed_as_sending_until_it_ends() -> None:
    """What the chaos suite reads when it deletes a node: the binds already
    past the node check (their pod and node), and only while they run."""
    framework, binder, _ = blocked_at_bind()
    h = harness(framework)
    assert h.scheduler.binds_sending() == {}
    assert h.scheduler.schedule_one(h.queued(P))
    await binder.entered.wait()

    assert h.scheduler.binds_sending() == {"default/p": "n1"}

    assert binder.block is not None
    binder.block.set()
    assert await h.scheduler.drain(5.0) == 0
    assert h.scheduler.binds_sending() == {}


async def test_shutdown_cancels_a_pod_waiting_on_permit() -> None:
    waiting = WaitingPods()
    log: list[str] = []
    framework = make_framework(
        reserve=[ReserveStub("R", log=log)],
        permit=[PermitStub("Gang", Status.wait(), 600)],
        bind=[BindStub("B", log=log)],
        waiting=waiting,
    )
    h = harness(framework)
    assert h.scheduler.schedule_one(h.queued(P))
    await asyncio.sleep(0)
    waiter = waiting.get(P.uid)
    assert waiter is not None

    assert await h.scheduler.drain(0.0) == 1

    assert log == ["Reserve:R@n1", "Unreserve:R@n1"]
    assert h.cache.pod_count() == 0
    assert waiting.get(P.uid) is None
    assert waiter.pending_plugins() == [], "its timer is cancelled"
    assert h.queue.finished == [P.uid]


@pytest.mark.parametrize(
    "target",
    [
        pytest.param(pod("p", lambda b: b.deleting()), id="being deleted"),
        pytest.param(pod("p", lambda b: b.scheduler("someone-else")), id="not our profile"),
    ],
)
async def test_pods_that_are_not_scheduled(target: Pod) -> None:
    log: list[str] = []
    h = harness(make_framework(filter=[FilterStub("F", log=log)], bind=[BindStub("B")]))
    assert not await schedule(h, target)
    assert (log, h.queue.finished, h.queue.requeued) == ([], [target.uid], [])


async def test_an_already_assumed_pod_is_not_scheduled_again() -> None:
    h = harness(make_framework(bind=[BindStub("B")]))
    h.cache.assume_pod(bound("p", "n1", "500m"))
    assert not await schedule(h)
    assert h.queue.finished == [P.uid]
    assert h.cache.pod_count() == 1


@pytest.mark.parametrize(
    "informer_view",
    [
        pytest.param(None, id="deleted meanwhile"),
        pytest.param(bound("p", "n2"), id="bound by someone else meanwhile"),
    ],
)
async def test_failed_pod_that_changed_meanwhile_is_not_requeued(
    informer_view: Pod | None,
) -> None:
    h = harness(
        make_framework(filter=[FilterStub("F", {"n1": Status.unschedulable("full")})]),
        lister=lambda key: informer_view,
    )
    await schedule(h)
    assert (h.queue.finished, h.queue.requeued) == ([P.uid], [])
    assert (h.recorder.events, h.status.submitted) == ([], [])


async def test_a_crashing_plugin_costs_one_attempt_not_the_loop() -> None:
    binder = BindStub("B")
    framework = make_framework(
        filter=[FilterStub("F", raises=RuntimeError("plugin bug"), raises_for=["p1"])],
        bind=[binder],
    )
    h = harness(framework)
    p1, p2 = pod("p1"), pod("p2")
    h.queue.pods = [h.queued(p1), h.queued(p2)]

    await asyncio.wait_for(h.scheduler.run(), 5.0)
    assert await h.scheduler.drain(5.0) == 0

    assert h.queue.requeued == [Requeued("default/p1", frozenset(), frozenset())]
    assert h.recorder.events[0] == failed('running "F" filter plugin: plugin bug')
    assert binder.bound == [("default/p2", "n1")]


async def test_a_crash_outside_the_plugins_is_recovered_by_the_loop() -> None:
    binder = BindStub("B")
    framework = make_framework(
        filter=[FilterStub("F", {"n1": Status.unschedulable("full")})], bind=[binder]
    )

    def lister(key: str) -> Pod | None:
        raise RuntimeError("informer store broken")

    h = harness(framework, lister=lister)
    h.queue.pods = [h.queued(pod("p1")), h.queued(pod("p2"))]

    await asyncio.wait_for(h.scheduler.run(), 5.0)

    assert [r.key for r in h.queue.requeued] == ["default/p1", "default/p2"]
    assert all(not r.unschedulable for r in h.queue.requeued), "requeued with error backoff"
    # Even the failure report needs the broken lister: the popped copy tells the user.
    crashed = "scheduling cycle crashed: RuntimeError: informer store broken"
    assert h.recorder.events == [failed(crashed), failed(crashed)]
    assert conditions(h) == [("p1", SCHEDULER_ERROR), ("p2", SCHEDULER_ERROR)]


def crash_before_assume(h: Harness) -> None:
    def broken_snapshot(snapshot: object) -> None:
        raise RuntimeError("snapshot bug")

    h.cache.update_snapshot = broken_snapshot  # type: ignore[method-assign,assignment]


def crash_after_reserve(h: Harness) -> None:
    record = h.attempts.record

    def broken_record(pod_key: str, attempt: dict[str, object]) -> None:
        if attempt["result"] == "Scheduled":
            raise KeyError()
        record(pod_key, attempt)

    h.attempts.record = broken_record  # type: ignore[method-assign]


@pytest.mark.parametrize(
    ("crash", "plugin_log", "message"),
    [
        pytest.param(
            crash_before_assume,
            [],
            "scheduling cycle crashed: RuntimeError: snapshot bug",
            id="crash before assume",
        ),
        pytest.param(
            crash_after_reserve,
            ["Reserve:R@n1", "Unreserve:R@n1"],
            "scheduling cycle crashed: KeyError",
            id="crash after reserve, exception without text",
        ),
    ],
)
async def test_a_crashed_cycle_is_failed_as_a_scheduler_error(
    crash: Callable[[Harness], None], plugin_log: list[str], message: str
) -> None:
    log: list[str] = []
    framework = make_framework(reserve=[ReserveStub("R", log=log)], bind=[BindStub("B")])
    h = harness(framework)
    crash(h)
    h.queue.pods = [h.queued(P)]
    assert (h.recorder.events, h.status.submitted, h.metrics.attempts) == ([], [], [])

    await asyncio.wait_for(h.scheduler.run(), 5.0)

    assert h.queue.requeued == [Requeued("default/p", frozenset(), frozenset())], "error backoff"
    assert h.queue.finished == [P.uid]
    assert h.recorder.events == [failed(message)]
    assert h.status.submitted == [("default", "p", condition_patch(SCHEDULER_ERROR, message))]
    assert h.metrics.attempts == [AttemptResult.ERROR]
    assert h.attempts.records[-1][1]["result"] == SCHEDULER_ERROR
    assert (h.cache.pod_count(), h.cpu_on("n1")) == (0, 0), "no assume or Reserve is left over"
    assert log == plugin_log


# Known differences from upstream in scheduler/cycle/scheduler.py, kept as
# strict xfails: each turns into a failure once fixed, so the marker goes.


async def test_rejected_binding_moves_other_pods_after_requeueing_itself() -> None:
    framework = make_framework(
        pre_bind=[PreBindStub("Volumes", Status.unschedulable("conflict"))], bind=[BindStub("B")]
    )
    h = harness(framework)
    await schedule(h)
    # Upstream defers the AssignedPodDelete move after the failure handler, so
    # that the event is not recorded as in flight for the pod itself.
    assert h.queue.journal == ["requeue default/p", "move AssignedPodDelete"]


async def test_post_filter_without_result_leaves_the_nomination_alone() -> None:
    framework = make_framework(
        filter=[FilterStub("F", {"n1": Status.unschedulable("full")})],
        post_filter=[PostFilterStub("Preempt", Status.unschedulable("preemption: not eligible"))],
    )
    h = harness(framework)
    await schedule(h, pod("p", lambda b: b.nominated("n1")))
    (_, _, patch), *_ = h.status.submitted
    assert "nominatedNodeName" not in patch["status"]


async def test_post_filter_error_message_is_reported() -> None:
    framework = make_framework(
        filter=[FilterStub("F", {"n1": Status.unschedulable("full")})],
        post_filter=[PostFilterStub("Preempt", Status.as_error("cannot list PDBs"))],
    )
    h = harness(framework)
    await schedule(h)
    assert h.recorder.events == [failed("0/1 nodes are available: 1 full. cannot list PDBs")]


async def test_a_deleting_pod_is_reported_as_skipped() -> None:
    h = harness(make_framework(bind=[BindStub("B")]))
    await schedule(h, pod("p", lambda b: b.deleting()))
    assert h.recorder.events == [failed("skip schedule deleting pod: default/p")]


@pytest.mark.parametrize(
    ("flushed", "counted"),
    [
        pytest.param(False, 0, id="bound normally"),
        pytest.param(True, 1, id="bound after the 5-minute flush"),
    ],
)
async def test_a_pod_bound_after_the_flush_is_counted(flushed: bool, counted: int) -> None:
    h = harness(make_framework(bind=[BindStub("B")]))
    pinfo = h.queued(P)
    pinfo.was_flushed_from_unschedulable = flushed
    assert h.scheduler.schedule_one(pinfo)
    await h.scheduler.drain(5.0)
    assert h.metrics.after_flush == counted


async def test_a_pod_that_cannot_be_interpreted_is_told_what_and_where() -> None:
    malformed = pod("bad", lambda b: b.requests(cpu="lots"))
    h = harness(make_framework(bind=[BindStub("B")]))
    assert not await schedule(h, malformed)
    message = "invalid pod: container 'main' requests cpu: invalid quantity 'lots'"
    assert h.recorder.events == [failed(message)]
    assert h.status.submitted[0][2] == condition_patch(UNSCHEDULABLE, message)
    (requeued,) = h.queue.requeued
    assert requeued.unschedulable == {"PodSpec"}, "retried when the pod changes"
    assert h.cache.pod_count() == 0


async def test_a_failure_patch_is_guarded_by_uid_and_settled_before_the_bind() -> None:
    framework = make_framework(
        filter=[FilterStub("F", {"n1": Status.unschedulable("no")})], bind=[BindStub("B")]
    )
    h = harness(framework)
    assert not await schedule(h)
    assert h.status.uids == [P.uid], "the patch carries the pod's uid as a precondition"

    h2 = harness(make_framework(bind=[BindStub("B")]))
    h2.status.submit("default", "p", condition_patch(UNSCHEDULABLE, "stale"), uid=P.uid)
    assert h2.status.settled == []
    assert await schedule(h2)
    assert h2.status.settled == ["default/p"], "settled before Bind: no stale patch after it"


async def test_a_pod_deleted_during_its_bind_is_released_at_once_and_not_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = asyncio.Event()
    log: list[str] = []
    framework = make_framework(
        reserve=[ReserveStub("R", log=log)],
        bind=[BindStub("B", Status.as_error('pods "p" not found'), block=release, log=log)],
    )
    h = harness(framework)
    assert h.scheduler.schedule_one(h.queued(P))
    await asyncio.sleep(0)
    assert h.cache.is_assumed(P.uid)
    assert h.cpu_on("n1") == 500

    # The event handlers release the assumed pod as soon as the delete arrives.
    del h.informer[P.key]
    h.cache.remove_pod(P)
    assert h.cpu_on("n1") == 0
    release.set()
    assert await h.scheduler.drain(5.0) == 0

    assert log == ["Reserve:R@n1", "Bind:B@n1", "Unreserve:R@n1"]
    assert h.queue.requeued == [], "a deleted pod is not retried"
    assert h.queue.moves == [], "nothing more to free: the handler already moved pods"
    assert "cannot forget" not in caplog.text
