"""Pod updates: derived sub-events, irrelevant changes, and where the pod goes."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scheduler.framework import ClusterEvent, EventResource, parse_pod
from scheduler.framework.events import ActionType
from scheduler.queue import QueueName, is_pod_updated, pod_update_events
from tests.support.builders import PodBuilder
from tests.support.clock import FakeClock
from tests.unit.queue.fakes import QUEUE, make_queue, on, pod, pop, rejected, where

Edit = Callable[[PodBuilder], PodBuilder]


def _base(b: PodBuilder) -> PodBuilder:
    return (
        b.label("app", "web")
        .requests(cpu="500m", memory="1Gi")
        .toleration("a")
        .scheduling_gate("g")
        .resource_version("1")
    )


@pytest.mark.parametrize(
    ("edit", "actions"),
    [
        pytest.param(lambda b: b.label("tier", "1"), [ActionType.UPDATE_POD_LABEL], id="label"),
        pytest.param(
            lambda b: b.requests(cpu="100m", memory="1Gi"),
            [ActionType.UPDATE_POD_SCALE_DOWN],
            id="request lowered",
        ),
        pytest.param(
            lambda b: b.requests(cpu="500m"), [ActionType.UPDATE_POD_SCALE_DOWN], id="request gone"
        ),
        pytest.param(lambda b: b.requests(cpu="1", memory="1Gi"), [ActionType.UPDATE], id="raised"),
        pytest.param(
            lambda b: b.toleration("b"), [ActionType.UPDATE_POD_TOLERATION], id="toleration"
        ),
        pytest.param(lambda b: b.nominated("n1"), [ActionType.UPDATE], id="anything else"),
        pytest.param(
            lambda b: b.label("tier", "1").toleration("b"),
            [ActionType.UPDATE_POD_LABEL, ActionType.UPDATE_POD_TOLERATION],
            id="several",
        ),
    ],
)
def test_pod_update_events(edit: Edit, actions: list[ActionType]) -> None:
    old = pod("p", _base)
    new = pod("p", lambda b: edit(_base(b)))
    expected = [ClusterEvent(EventResource.UNSCHEDULED_POD, action) for action in actions]
    assert pod_update_events(old, new) == expected


def test_gates_eliminated_event() -> None:
    old = pod("p", lambda b: b.scheduling_gate("g").scheduling_gate("h"))
    assert pod_update_events(old, pod("p")) == [
        ClusterEvent(
            EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        )
    ]
    assert pod_update_events(old, pod("p", lambda b: b.scheduling_gate("g")))[0].action is (
        ActionType.UPDATE
    ), "one gate left"


def test_assigned_pod_events_use_the_assigned_resource() -> None:
    old = pod("p", lambda b: b.node("n1"))
    new = pod("p", lambda b: b.node("n1").label("a", "b"))
    assert pod_update_events(old, new) == [
        ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_LABEL)
    ]


@pytest.mark.parametrize(
    ("edit", "updated"),
    [
        pytest.param(lambda b: b.resource_version("2"), False, id="resourceVersion"),
        pytest.param(lambda b: b.nominated("n1"), False, id="status"),
        pytest.param(lambda b: b.label("x", "y"), True, id="label"),
        pytest.param(lambda b: b.priority(5), True, id="spec"),
    ],
)
def test_is_pod_updated(edit: Edit, updated: bool) -> None:
    old = pod("p", lambda b: b.resource_version("1"))
    new = pod("p", lambda b: edit(b.resource_version("1")))
    assert is_pod_updated(old, new) is updated


def test_managed_fields_and_finalizers_are_not_updates() -> None:
    old = pod("p")
    raw = {
        **old.raw,
        "metadata": {**old.raw["metadata"], "managedFields": [{}], "finalizers": ["x"]},
    }
    assert not is_pod_updated(old, parse_pod(raw))


LABELLED = ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_LABEL)
ANY_UPDATE = ClusterEvent(EventResource.POD, ActionType.UPDATE)


@pytest.mark.parametrize(
    ("registered", "edit", "expected"),
    [
        pytest.param(
            LABELLED, lambda b: b.label("app", "db"), QueueName.BACKOFF, id="registered sub-event"
        ),
        pytest.param(
            LABELLED, lambda b: b.toleration("x"), QueueName.UNSCHEDULABLE, id="other sub-event"
        ),
        pytest.param(
            ANY_UPDATE, lambda b: b.toleration("x"), QueueName.BACKOFF, id="any update registered"
        ),
        pytest.param(
            ANY_UPDATE, lambda b: b.nominated("n1"), QueueName.UNSCHEDULABLE, id="status only"
        ),
    ],
)
def test_update_in_pool_runs_hints_for_the_derived_events(
    registered: ClusterEvent, edit: Edit, expected: QueueName
) -> None:
    queue = make_queue(events={"Affinity": [on(registered, QUEUE)]})
    pinfo = rejected(queue, "p", "Affinity")
    queue.update(pinfo.pod, pod("p", edit))
    assert where(queue, "p") == expected
    found = queue.get("default/p")
    assert found is not None
    assert found[1].pod.raw == pod("p", edit).raw, "the stored pod is refreshed either way"


def test_update_in_active_reorders() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(pod("a"))
    clock.advance(1)
    queue.add(pod("b"))
    queue.update(pod("b"), pod("b", lambda b: b.priority(10)))
    assert pop(queue).pod.name == "b"


def test_update_of_unknown_pod_adds_it() -> None:
    queue = make_queue()
    queue.update(pod("p"), pod("p", lambda b: b.label("a", "b")))
    assert where(queue, "p") == QueueName.ACTIVE


def test_update_that_assigns_the_pod_removes_it() -> None:
    queue = make_queue()
    queue.add(pod("p"))
    queue.update(pod("p"), pod("p", lambda b: b.node("n1")))
    assert len(queue) == 0
