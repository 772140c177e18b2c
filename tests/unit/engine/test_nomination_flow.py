"""The scheduling loop keeps the nominator as upstream does: the failure
handler records PostFilter's nomination (or clears it), assume ends it."""

from __future__ import annotations

from scheduler.framework import Pod, Status
from tests.support.objects import pod
from tests.unit.engine.harness import Harness, harness
from tests.unit.engine.plugins import BindStub, FilterStub, PostFilterStub, make_framework

P = pod("p")


async def schedule(h: Harness, target: Pod = P) -> None:
    h.scheduler.schedule_one(h.queued(target))
    assert await h.scheduler.drain(5.0) == 0


async def test_post_filter_nomination_is_recorded_before_the_api_write() -> None:
    framework = make_framework(
        filter=[FilterStub("F", {"n1": Status.unschedulable("full")})],
        post_filter=[PostFilterStub("Preempt", None, nominate="n1")],
    )
    h = harness(framework)
    assert h.queue.nominator.node_of(P.uid) == ""
    await schedule(h)
    assert h.queue.nominator.node_of(P.uid) == "n1"
    (_, _, patch), *_ = h.status.submitted
    assert patch["status"]["nominatedNodeName"] == "n1"


async def test_a_failure_without_post_filter_clears_the_nomination() -> None:
    framework = make_framework(filter=[FilterStub("F", {"n1": Status.unschedulable("full")})])
    h = harness(framework)
    nominated = pod("p", lambda b: b.nominated("n1"))
    h.queue.nominator.add(nominated, None)
    assert h.queue.nominator.node_of(nominated.uid) == "n1"
    await schedule(h, nominated)
    assert h.queue.nominator.node_of(nominated.uid) == ""


async def test_post_filter_without_result_keeps_the_pods_own_nomination() -> None:
    framework = make_framework(
        filter=[FilterStub("F", {"n1": Status.unschedulable("full")})],
        post_filter=[PostFilterStub("Preempt", Status.unschedulable("not eligible"))],
    )
    h = harness(framework)
    nominated = pod("p", lambda b: b.nominated("n1"))
    await schedule(h, nominated)
    assert h.queue.nominator.node_of(nominated.uid) == "n1"


async def test_assume_ends_the_nomination() -> None:
    h = harness(make_framework(filter=[FilterStub("F")], bind=[BindStub("B")]))
    nominated = pod("p", lambda b: b.nominated("n1"))
    h.queue.nominator.add(nominated, None)
    await schedule(h, nominated)
    assert h.queue.nominator.node_of(nominated.uid) == ""
