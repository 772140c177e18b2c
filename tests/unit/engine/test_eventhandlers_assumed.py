"""Informer events about pods the scheduler has assumed (bind in flight or not
yet confirmed), and deletes delivered with a stale copy after a relist.

Real cache, real queue, fake clock: each case sets the state the bind leaves
behind, checks it, delivers the event, and checks what is left."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from scheduler.cache import Cache
from scheduler.engine.eventhandlers import EventHandlers
from scheduler.framework import QueuedPodInfo, QueueingHint
from scheduler.framework.events import ActionType, ClusterEvent, Resource
from scheduler.queue import QueueName, SchedulingQueue
from tests.support.builders import PodBuilder, make_node, make_pod
from tests.support.clock import FakeClock
from tests.unit.queue.fakes import PROFILE, fail, make_queue, on, pop, where

Obj = dict[str, Any]
NODE_DELETE = ClusterEvent(Resource.NODE, ActionType.DELETE)


def raw_pod(edit: Callable[[PodBuilder], PodBuilder] = lambda b: b) -> Obj:
    builder = make_pod("p1").uid("uid-1").scheduler(PROFILE).requests(cpu="3")
    return edit(builder.resource_version("1")).obj()


@dataclasses.dataclass
class World:
    cache: Cache
    queue: SchedulingQueue
    handlers: EventHandlers
    clock: FakeClock
    rejected_waiting: list[str]

    def cpu_on_n1(self) -> int:
        info = self.cache.node_info("n1")
        assert info is not None
        return info.requested.milli_cpu


def world(**queue_options: Any) -> World:
    clock = FakeClock()
    cache = Cache()
    queue = make_queue(clock, **queue_options)
    rejected: list[str] = []
    handlers = EventHandlers(
        cache, queue, [PROFILE], on_pod_deleted=lambda pod: rejected.append(pod.key)
    )
    handlers.node_added(make_node("n1").capacity(cpu="4", memory="8Gi", pods="110").obj())
    return World(cache, queue, handlers, clock, rejected)


def assume_and_bind(w: World, raw: Obj) -> QueuedPodInfo:
    """The informer saw ``raw`` unassigned; the scheduler popped it, assumed it
    on n1 and passed Permit (the binding cycle calls ``done``)."""
    w.handlers.pod_added(raw)
    pinfo = pop(w.queue)
    w.cache.assume_pod(dataclasses.replace(pinfo.pod, node_name="n1"))
    w.queue.done(pinfo.pod.uid)
    assert w.cache.is_assumed("uid-1")
    assert w.cpu_on_n1() == 3000
    return pinfo


# ---------------------------------------------------------------- defect 1
@pytest.mark.parametrize(
    "confirmed",
    [
        pytest.param(False, id="bound by us, never confirmed by the watch"),
        pytest.param(True, id="bound and confirmed, then the watch lost the delete"),
    ],
)
def test_a_delete_with_a_stale_unassigned_copy_frees_the_node(confirmed: bool) -> None:
    w = world(events={"Fit": [on(ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE))]})
    stale = raw_pod()
    assume_and_bind(w, stale)
    if confirmed:
        w.handlers.pod_updated(stale, raw_pod(lambda b: b.node("n1").resource_version("2")))
        assert not w.cache.is_assumed("uid-1")
        assert w.cpu_on_n1() == 3000
    # A pod that does not fit while p1 holds 3 of the node's 4 cpus.
    waiting = make_pod("w").uid("uid-w").scheduler(PROFILE).requests(cpu="2").obj()
    w.handlers.pod_added(waiting)
    fail(w.queue, pop(w.queue), "Fit")
    assert where(w.queue, "w") == QueueName.UNSCHEDULABLE

    w.handlers.pod_deleted(stale)  # the relist's last known copy: unassigned

    assert w.cpu_on_n1() == 0
    assert w.cache.get_pod("uid-1") is None
    assert w.cache.assumed_count() == 0
    assert where(w.queue, "w") != QueueName.UNSCHEDULABLE, "freed room wakes waiting pods"


# ---------------------------------------------------------------- defect 5
def test_an_update_during_the_bind_keeps_the_queued_pod_info() -> None:
    w = world()
    raw = raw_pod()
    pinfo = assume_and_bind(w, raw)
    assert where(w.queue, "p1") is None

    w.handlers.pod_updated(raw, raw_pod(lambda b: b.label("team", "a").resource_version("2")))

    assert where(w.queue, "p1") is None, "no fresh QueuedPodInfo while the bind runs"
    w.cache.forget_pod(dataclasses.replace(pinfo.pod, node_name="n1"))  # the bind failed
    fail(w.queue, pinfo)  # an error: error backoff, counters kept
    found = w.queue.get("default/p1")
    assert found is not None
    assert found[0] == QueueName.BACKOFF
    assert found[1] is pinfo
    assert (pinfo.attempts, pinfo.consecutive_errors_count) == (1, 1)


@pytest.mark.parametrize(
    "deliver",
    [
        pytest.param(
            lambda h, raw: h.pod_deleted(raw),
            id="deleted",
        ),
        pytest.param(
            lambda h, raw: h.pod_updated(
                raw, raw_pod(lambda b: b.deleting().resource_version("2"))
            ),
            id="got a deletionTimestamp",
        ),
    ],
)
def test_an_assumed_pod_is_forgotten_as_soon_as_it_goes(
    deliver: Callable[[EventHandlers, Obj], None],
) -> None:
    w = world(events={"Fit": [on(ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE))]})
    raw = raw_pod()
    assume_and_bind(w, raw)
    waiting = make_pod("w").uid("uid-w").scheduler(PROFILE).requests(cpu="2").obj()
    w.handlers.pod_added(waiting)
    fail(w.queue, pop(w.queue), "Fit")
    assert where(w.queue, "w") == QueueName.UNSCHEDULABLE

    deliver(w.handlers, raw)

    assert not w.cache.is_assumed("uid-1")
    assert w.cpu_on_n1() == 0
    assert w.rejected_waiting == ["default/p1"], "a pod waiting at Permit is rejected"
    assert where(w.queue, "w") != QueueName.UNSCHEDULABLE, "freed room wakes waiting pods"
    assert where(w.queue, "p1") is None


# ------------------------------------------------------------- node delete
def test_a_node_delete_moves_pods_as_upstream() -> None:
    moved: list[ClusterEvent] = []
    w = world(events={"NodeAffinity": [on(NODE_DELETE, lambda pod, old, new: _record(moved))]})
    w.handlers.pod_added(make_pod("w").uid("uid-w").scheduler(PROFILE).obj())
    fail(w.queue, pop(w.queue), "NodeAffinity")
    assert where(w.queue, "w") == QueueName.UNSCHEDULABLE

    w.handlers.node_deleted(make_node("n1").obj())

    assert moved == [NODE_DELETE]
    assert where(w.queue, "w") != QueueName.UNSCHEDULABLE
    assert w.cache.node_count() == 0


def _record(moved: list[ClusterEvent]) -> QueueingHint:
    moved.append(NODE_DELETE)
    return QueueingHint.QUEUE
