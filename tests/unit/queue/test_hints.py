"""Queueing hints decide which pooled pods a cluster event moves, and where."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from scheduler.framework import ClusterEvent, ClusterEventWithHint, QueuedPodInfo, QueueingHint
from scheduler.framework.events import FORCE_ACTIVATE, UNSCHEDULABLE_TIMEOUT, ActionType, Resource
from scheduler.queue import QueueName, QueueProfile, Strategy
from scheduler.queue.hints import HintEvaluator
from tests.support.clock import FakeClock
from tests.unit.queue.fakes import (
    NODE_ADD,
    NODE_LABEL,
    NODE_TAINT,
    PROFILE,
    QUEUE,
    SKIP,
    RecordingMetrics,
    make_queue,
    on,
    pod,
    raising,
    rejected,
    where,
)

NODE_UPDATE = ClusterEvent(Resource.NODE, ActionType.UPDATE)
Events = Mapping[str, Sequence[ClusterEventWithHint]]


@pytest.mark.parametrize(
    ("events", "unschedulable", "pending", "event", "expected"),
    [
        pytest.param(
            {"Fit": [on(NODE_ADD, QUEUE)]}, ["Fit"], [], NODE_ADD, QueueName.BACKOFF,
            id="rejector says Queue: after backoff",
        ),
        pytest.param(
            {"Fit": [on(NODE_ADD, SKIP)]}, ["Fit"], [], NODE_ADD, QueueName.UNSCHEDULABLE,
            id="rejector says Skip: stays",
        ),
        pytest.param(
            {"Fit": [on(NODE_ADD)]}, ["Fit"], [], NODE_ADD, QueueName.BACKOFF,
            id="no hint function means Queue",
        ),
        pytest.param(
            {"Fit": [on(NODE_ADD, raising)]}, ["Fit"], [], NODE_ADD, QueueName.BACKOFF,
            id="a failing hint means Queue",
        ),
        pytest.param(
            {"Fit": [on(NODE_LABEL, QUEUE)]}, ["Fit"], [], NODE_ADD, QueueName.UNSCHEDULABLE,
            id="event the rejector did not register",
        ),
        pytest.param(
            {"Fit": [on(NODE_TAINT, QUEUE)], "Taints": [on(NODE_ADD, QUEUE)]},
            ["Fit"], [], NODE_ADD, QueueName.UNSCHEDULABLE,
            id="other plugins' hints are not consulted",
        ),
        pytest.param(
            {"Fit": [on(NODE_LABEL, QUEUE)]}, ["Fit"], [], NODE_UPDATE, QueueName.UNSCHEDULABLE,
            id="generic update does not match a specific registration",
        ),
        pytest.param(
            {"Dra": [on(NODE_ADD, QUEUE)]}, [], ["Dra"], NODE_ADD, QueueName.ACTIVE,
            id="Pending plugin says Queue: immediately",
        ),
        pytest.param(
            {"Fit": [on(NODE_ADD, QUEUE)], "Dra": [on(NODE_ADD, SKIP)]},
            ["Fit"], ["Dra"], NODE_ADD, QueueName.BACKOFF,
            id="Unschedulable plugin Queue, Pending plugin Skip",
        ),
        pytest.param(
            {"Fit": [on(NODE_ADD, SKIP)], "Dra": [on(NODE_ADD, QUEUE)]},
            ["Fit"], ["Dra"], NODE_ADD, QueueName.ACTIVE,
            id="Pending plugin Queue wins over an Unschedulable Skip",
        ),
        pytest.param(
            {"Fit": [on(NODE_ADD, SKIP)]}, ["Fit"], [], UNSCHEDULABLE_TIMEOUT, QueueName.BACKOFF,
            id="wildcard event: after backoff, hints aside",
        ),
        pytest.param(
            {}, ["Legacy"], [], NODE_LABEL, QueueName.BACKOFF,
            id="plugin that registered no events is woken by every event",
        ),
        pytest.param(
            {"Quiet": []}, ["Quiet"], [], NODE_ADD, QueueName.UNSCHEDULABLE,
            id="plugin that registered an empty list is not",
        ),
        pytest.param(
            {"Fit": [on(NODE_ADD, SKIP), on(NODE_ADD, QUEUE)]}, ["Fit"], [], NODE_ADD,
            QueueName.BACKOFF,
            id="any Queue among a plugin's registrations",
        ),
    ],
)  # fmt: skip
def test_event_moves_pooled_pod(
    events: Events,
    unschedulable: list[str],
    pending: list[str],
    event: ClusterEvent,
    expected: QueueName,
) -> None:
    queue = make_queue(events=events)
    rejected(queue, "p", *unschedulable, pending=pending)
    assert where(queue, "p") == QueueName.UNSCHEDULABLE
    queue.move_all_to_active_or_backoff(event, None, None)
    assert where(queue, "p") == expected


def test_only_pods_rejected_by_interested_plugins_move() -> None:
    queue = make_queue(events={"Fit": [on(NODE_ADD, QUEUE)], "Affinity": [on(NODE_LABEL, QUEUE)]})
    rejected(queue, "needs-cpu", "Fit")
    rejected(queue, "needs-label", "Affinity")
    rejected(queue, "needs-both", "Fit", "Affinity")
    queue.move_all_to_active_or_backoff(NODE_LABEL, None, None)
    assert [where(queue, name) for name in ("needs-cpu", "needs-label", "needs-both")] == [
        QueueName.UNSCHEDULABLE,
        QueueName.BACKOFF,
        QueueName.BACKOFF,
    ]


def test_hint_sees_the_pod_and_the_objects() -> None:
    seen = []

    def hint(pod: object, old: object, new: object) -> QueueingHint:
        seen.append((pod, old, new))
        return QueueingHint.QUEUE

    queue = make_queue(events={"Fit": [on(NODE_ADD, hint)]})
    pinfo = rejected(queue, "p", "Fit")
    queue.move_all_to_active_or_backoff(NODE_ADD, None, "node-object")
    assert seen == [(pinfo.pod, None, "node-object")]


def test_pre_check_narrows_the_pods_considered() -> None:
    queue = make_queue(events={"Fit": [on(NODE_ADD, QUEUE)]})
    rejected(queue, "a", "Fit")
    rejected(queue, "b", "Fit")
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None, pre_check=lambda p: p.name == "b")
    assert (where(queue, "a"), where(queue, "b")) == (QueueName.UNSCHEDULABLE, QueueName.BACKOFF)


def test_after_backoff_goes_to_active_once_backoff_is_over() -> None:
    clock = FakeClock()
    queue = make_queue(clock, events={"Fit": [on(NODE_ADD, QUEUE)]})
    rejected(queue, "p", "Fit")
    clock.advance(2)
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert where(queue, "p") == QueueName.ACTIVE


def test_hint_metrics_are_recorded() -> None:
    metrics = RecordingMetrics()
    queue = make_queue(
        events={"Fit": [on(NODE_ADD, SKIP)], "Ports": [on(NODE_ADD, raising)]}, metrics=metrics
    )
    rejected(queue, "p", "Fit", "Ports")
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert sorted(metrics.hints) == [("Fit", "NodeAdd", "QueueSkip"), ("Ports", "NodeAdd", "Error")]
    assert (QueueName.BACKOFF, "NodeAdd") in metrics.incoming_events


@pytest.mark.parametrize(
    ("unschedulable", "event", "new", "expected"),
    [
        pytest.param(set(), NODE_ADD, None, Strategy.AFTER_BACKOFF, id="no rejector: error"),
        pytest.param({"Fit"}, FORCE_ACTIVATE, None, Strategy.AFTER_BACKOFF, id="untargeted"),
        pytest.param(
            {"Fit"}, FORCE_ACTIVATE, pod("p"), Strategy.AFTER_BACKOFF, id="targeted at the pod"
        ),
        pytest.param({"Fit"}, FORCE_ACTIVATE, pod("other"), Strategy.SKIP, id="at another pod"),
    ],
)
def test_worth_requeuing_special_cases(
    unschedulable: set[str], event: ClusterEvent, new: object, expected: Strategy
) -> None:
    evaluator = HintEvaluator(
        {PROFILE: QueueProfile(events_by_plugin={"Fit": [on(NODE_ADD, SKIP)]})},
        RecordingMetrics(),
        FakeClock(),
    )
    pinfo = QueuedPodInfo(pod=pod("p"), timestamp=0.0, unschedulable_plugins=unschedulable)
    assert evaluator.worth_requeuing(pinfo, event, None, new) is expected
