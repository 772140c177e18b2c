"""Assigned-pod events reach only the pooled pods they may concern."""

from __future__ import annotations

import pytest

from scheduler.framework import ClusterEvent, EventResource
from scheduler.framework.events import ActionType
from scheduler.queue import QueueName, SchedulingQueue
from scheduler.queue.crosstopology import selector_matches
from tests.unit.queue.fakes import QUEUE, fail, make_queue, on, pod, pop, where

ANY_POD = ClusterEvent(EventResource.POD, ActionType.ALL)
EVENTS = {
    "InterPodAffinity": [on(ANY_POD, QUEUE)],
    "PodTopologySpread": [on(ANY_POD, QUEUE)],
    "NodeResourcesFit": [on(ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCALE_DOWN))],
}


def _pooled(
    queue: SchedulingQueue, name: str, plugin: str, namespace: str = "default", **labels: str
) -> None:
    """A pod rejected by ``plugin``, with a pod-affinity term for ``labels`` if any."""
    builder = (lambda b: b.required_pod_affinity("zone", **labels)) if labels else None
    queue.add(pod(name, builder, namespace=namespace))
    fail(queue, pop(queue), plugin)


def test_assigned_pod_add_moves_matching_affinity_and_spread_pods() -> None:
    queue = make_queue(events=EVENTS)
    _pooled(queue, "wants-web", "InterPodAffinity", app="web")
    _pooled(queue, "wants-db", "InterPodAffinity", app="db")
    _pooled(queue, "spread-here", "PodTopologySpread")
    _pooled(queue, "spread-elsewhere", "PodTopologySpread", namespace="other")
    queue.assigned_pod_added(pod("web-1", lambda b: b.node("n1").label("app", "web")))
    assert {
        name: where(queue, name, ns)
        for name, ns in [
            ("wants-web", "default"),
            ("wants-db", "default"),
            ("spread-here", "default"),
            ("spread-elsewhere", "other"),
        ]
    } == {
        "wants-web": QueueName.BACKOFF,
        "wants-db": QueueName.UNSCHEDULABLE,
        "spread-here": QueueName.BACKOFF,
        "spread-elsewhere": QueueName.UNSCHEDULABLE,
    }


def test_assigned_pod_scale_down_considers_every_pooled_pod() -> None:
    queue = make_queue(events=EVENTS)
    _pooled(queue, "needs-cpu", "NodeResourcesFit")
    old = pod("big", lambda b: b.node("n1").requests(cpu="2"))
    queue.assigned_pod_updated(old, pod("big", lambda b: b.node("n1").requests(cpu="1")))
    assert where(queue, "needs-cpu") == QueueName.BACKOFF


def test_assigned_pod_label_update_is_prefiltered() -> None:
    queue = make_queue(events=EVENTS)
    _pooled(queue, "wants-web", "InterPodAffinity", app="web")
    _pooled(queue, "needs-cpu", "NodeResourcesFit")
    old = pod("web-1", lambda b: b.node("n1"))
    queue.assigned_pod_updated(old, pod("web-1", lambda b: b.node("n1").label("app", "web")))
    assert (where(queue, "wants-web"), where(queue, "needs-cpu")) == (
        QueueName.BACKOFF,
        QueueName.UNSCHEDULABLE,
    )


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        pytest.param(None, False, id="nil selects nothing"),
        pytest.param({}, True, id="empty selects everything"),
        pytest.param({"matchLabels": {"app": "web"}}, True, id="matchLabels"),
        pytest.param({"matchLabels": {"app": "db"}}, False, id="matchLabels mismatch"),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db", "web"]}]},
            True,
            id="In",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]},
            False,
            id="NotIn",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
            True,
            id="DoesNotExist",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, False, id="Exists"
        ),
    ],
)
def test_selector_matches(selector: dict[str, object] | None, matches: bool) -> None:
    assert selector_matches(selector, {"app": "web"}) is matches
