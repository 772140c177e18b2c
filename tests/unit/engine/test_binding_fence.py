"""Binding cycles hold nothing the loop needs while they wait (Permit,
PreBind past its grace), the loop waits while the cap of cycles are writing,
and once fenced (leadership lost) none sends PreBind or Bind; as a leader's
work they have rolled back before the lease is released."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from scheduler.framework import CycleState, Pod, QueuedPodInfo, Status
from scheduler.runtime.framework import Framework
from scheduler.runtime.waiting import WaitingPods
from tests.support.objects import pod
from tests.support.wait import eventually
from tests.unit.engine.harness import Harness, harness
from tests.unit.engine.plugins import (
    BindStub,
    PermitStub,
    PreBindStub,
    ReserveStub,
    make_framework,
)
from tests.unit.test_leaderelection import (
    FakeLeaseStore,
    elector_for,
    holder_of,
    make_timeline,
)

CAP = 2
DEADLINE = 5.0


class HoldingPreBind(PreBindStub):
    """PreBind that waits for ``release`` for pods named ``slow-*`` (as
    VolumeBinding waits for a volume to be provisioned)."""

    def __init__(self, log: list[str] | None = None) -> None:
        super().__init__("Volumes", log=log)
        self.release = asyncio.Event()
        self.holding = 0

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        await super().pre_bind(state, pod, node_name)
        if pod.name.startswith("slow"):
            self.holding += 1
            await self.release.wait()
        return None


def pods(prefix: str, count: int) -> list[Pod]:
    return [pod(f"{prefix}-{i}") for i in range(count)]


async def until(condition: Callable[[], bool]) -> None:
    async def probe() -> bool:
        return condition()

    await eventually(probe, timeout=DEADLINE, interval=0.001)


def enqueue(h: Harness, targets: list[Pod]) -> None:
    h.queue.pods.extend(h.queued(target) for target in targets)


async def test_more_pods_held_in_pre_bind_than_the_cap_do_not_stop_other_pods() -> None:
    pre_bind, binder = HoldingPreBind(), BindStub("B")
    h = harness(make_framework(pre_bind=[pre_bind], bind=[binder]), max_binding=CAP)
    enqueue(h, [*pods("slow", CAP + 2), *pods("fast", 3)])

    await asyncio.wait_for(h.scheduler.run(), DEADLINE)
    await until(lambda: len(binder.bound) == 3)

    assert sorted(key for key, _ in binder.bound) == [f"default/fast-{i}" for i in range(3)]
    assert pre_bind.holding == CAP + 2
    pre_bind.release.set()
    assert await h.scheduler.drain(DEADLINE) == 0
    assert len(binder.bound) == CAP + 5


async def test_the_loop_pops_no_further_while_the_cap_of_cycles_are_writing() -> None:
    """Pods wait in the queue, not assumed behind slow writes."""
    binder = BindStub("B", block=asyncio.Event())
    h = harness(make_framework(bind=[binder]), max_binding=CAP)
    enqueue(h, pods("p", CAP + 3))
    loop = asyncio.create_task(h.scheduler.run())
    await asyncio.wait_for(binder.entered.wait(), DEADLINE)
    await until(lambda: h.scheduler.binding_in_flight() == CAP)
    for _ in range(10):
        await asyncio.sleep(0)

    assert (h.scheduler.binding_in_flight(), len(h.queue.pods)) == (CAP, 3)
    assert h.cache.pod_count() == CAP  # assumed: only the pods being written
    binder.block.set()  # type: ignore[union-attr]
    await asyncio.wait_for(loop, DEADLINE)
    assert await h.scheduler.drain(DEADLINE) == 0
    assert len(binder.bound) == CAP + 3


async def test_a_stopping_loop_does_not_wait_for_room() -> None:
    binder = BindStub("B", block=asyncio.Event())
    h = harness(make_framework(bind=[binder]), max_binding=1)
    enqueue(h, pods("p", 3))
    loop = asyncio.create_task(h.scheduler.run())
    await asyncio.wait_for(binder.entered.wait(), DEADLINE)

    h.scheduler.stop_popping()
    await asyncio.wait_for(loop, DEADLINE)
    assert len(h.queue.pods) == 2
    assert await h.scheduler.drain(0.0) == 1


async def test_a_permit_gang_larger_than_the_cap_completes() -> None:
    waiting, binder = WaitingPods(), BindStub("B")
    framework = make_framework(
        permit=[PermitStub("Gang", Status.wait(), 600)], bind=[binder], waiting=waiting
    )
    h = harness(framework, max_binding=CAP)
    gang = pods("member", CAP * 3)
    enqueue(h, gang)

    await asyncio.wait_for(h.scheduler.run(), DEADLINE)
    waiters = [waiting.get(member.uid) for member in gang]
    assert all(waiter is not None for waiter in waiters), "every member waits at Permit"
    for waiter in waiters:
        assert waiter is not None
        waiter.allow("Gang")
    assert await h.scheduler.drain(DEADLINE) == 0

    assert len(binder.bound) == len(gang)


async def held_at_permit_then_allowed(h: Harness, waiting: WaitingPods, target: Pod) -> None:
    waiter = waiting.get(target.uid)
    assert waiter is not None
    waiter.allow("Gang")  # the cycle is runnable: it must not reach PreBind


async def in_pre_bind(h: Harness, waiting: WaitingPods, target: Pod) -> None:
    await until(lambda: h.scheduler.binding_in_flight() == 1 and waiting.get(target.uid) is None)


@pytest.mark.parametrize(
    ("permit", "slow", "position"),
    [
        pytest.param(True, False, held_at_permit_then_allowed, id="allowed at Permit just before"),
        pytest.param(False, True, in_pre_bind, id="in the middle of PreBind"),
    ],
)
async def test_a_fenced_binding_cycle_sends_no_pre_bind_or_bind_and_rolls_back(
    permit: bool, slow: bool, position: Callable[[Harness, WaitingPods, Pod], Any]
) -> None:
    log: list[str] = []
    waiting, pre_bind = WaitingPods(), HoldingPreBind(log)
    binder = BindStub("B", log=log)
    framework: Framework = make_framework(
        reserve=[ReserveStub("R", log=log)],
        permit=[PermitStub("Gang", Status.wait(), 600)] if permit else [],
        pre_bind=[pre_bind],
        bind=[binder],
        waiting=waiting,
    )
    h = harness(framework)
    target = pod("slow-0" if slow else "p")
    assert h.scheduler.schedule_one(h.queued(target))
    await asyncio.sleep(0)
    await position(h, waiting, target)

    h.scheduler.fence()
    pre_bind.release.set()
    await until(lambda: h.scheduler.binding_in_flight() == 0)

    sends = [entry for entry in log if entry.startswith(("Bind:", "PreBind:"))]
    assert sends == (["PreBind:Volumes@n1"] if slow else [])
    assert log[-1] == "Unreserve:R@n1"
    assert (h.cache.pod_count(), h.queue.requeued) == (0, [])


async def test_a_binding_cycle_started_after_the_fence_is_rolled_back_at_once() -> None:
    log: list[str] = []
    h = harness(make_framework(reserve=[ReserveStub("R", log=log)], bind=[BindStub("B", log=log)]))
    h.scheduler.fence()

    h.scheduler.schedule_one(h.queued(pod("p")))

    assert log == ["Reserve:R@n1", "Unreserve:R@n1"]
    assert (h.scheduler.binding_in_flight(), h.cache.pod_count()) == (0, 0)


class ReleaseLoggingStore(FakeLeaseStore):
    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self._log = log

    async def replace(self, namespace: str, name: str, lease: dict[str, Any]) -> dict[str, Any]:
        if lease["spec"]["holderIdentity"] == "":
            self._log.append("release lease")
        return await super().replace(namespace, name, lease)


async def test_a_fatal_error_elsewhere_rolls_binding_cycles_back_before_the_lease_is_released() -> (
    None
):
    log: list[str] = []
    binder = BindStub("B", block=asyncio.Event(), log=log)
    h = harness(make_framework(reserve=[ReserveStub("R", log=log)], bind=[binder]))
    queued: asyncio.Queue[QueuedPodInfo | None] = asyncio.Queue()
    queued.put_nowait(h.queued(pod("p")))
    h.queue.pop = queued.get  # type: ignore[method-assign]  # blocks once empty, as the real queue
    store, timeline = ReleaseLoggingStore(log), make_timeline()
    elector = elector_for(store, timeline)
    leading = asyncio.create_task(
        elector.run(h.scheduler.lead, on_stopped_leading=h.scheduler.fence)
    )
    await asyncio.wait_for(binder.entered.wait(), DEADLINE)

    leading.cancel()  # what the TaskGroup does when another task raises
    with pytest.raises(asyncio.CancelledError):
        await leading

    assert log == ["Reserve:R@n1", "Bind:B@n1", "Unreserve:R@n1", "release lease"]
    assert holder_of(store) == ""
    assert binder.bound == []


@pytest.mark.parametrize(
    ("deleted", "bound", "requeued"),
    [
        pytest.param(False, ["default/slow-0"], [], id="node still there: bound"),
        pytest.param(True, [], ["default/slow-0"], id="node deleted in PreBind: requeued"),
    ],
)
async def test_a_pod_whose_node_was_deleted_while_it_waited_is_not_bound(
    deleted: bool, bound: list[str], requeued: list[str]
) -> None:
    pre_bind, binder = HoldingPreBind(), BindStub("B")
    h = harness(make_framework(pre_bind=[pre_bind], bind=[binder]))
    enqueue(h, pods("slow", 1))
    await asyncio.wait_for(h.scheduler.run(), DEADLINE)
    await until(lambda: pre_bind.holding == 1)
    assert h.cache.assumed_count() == 1

    if deleted:
        h.cache.remove_node("n1")
    pre_bind.release.set()
    assert await h.scheduler.drain(DEADLINE) == 0

    assert [key for key, _ in binder.bound] == bound
    assert [r.key for r in h.queue.requeued] == requeued
    assert h.cache.assumed_count() == 0 if deleted else 1
