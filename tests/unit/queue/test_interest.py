"""A registration's HintInterest narrows which pooled pods an event asks,
without changing where any pod goes."""

from __future__ import annotations

from collections.abc import Collection, Hashable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework import ClusterEvent, HintInterest, Pod, QueueingHint
from scheduler.framework.events import ActionType, Resource
from scheduler.queue import QueueName, SchedulingQueue
from tests.support.builders import PodBuilder
from tests.unit.queue.fakes import QUEUE, fail, make_queue, on, pod, pop, rejected, where

CLAIM_ADD = ClusterEvent(Resource.RESOURCE_CLAIM, ActionType.ADD)
OTHER = ClusterEvent(Resource.NODE, ActionType.ADD)


def claims_of(subject: Pod) -> set[str]:
    """The claims a test pod names: its ``claims`` label, comma separated."""
    if subject.labels.get("broken"):
        raise ValueError("unreadable pod")
    text = subject.labels.get("claims", "")
    return set(text.split(",")) if text else set()


def event_keys(old: Any, new: Any) -> Collection[Hashable] | None:
    if new is None:
        return ()
    if new.get("broken"):
        raise ValueError("unreadable claim")
    return None if new.get("freed") else {new["name"]}


CLAIMS = HintInterest("test/claims", event_keys, claims_of)


class Hint:
    """Queue a pod when the claim is one it names or the claim freed devices
    (the interest's promise holds); records whom it was asked about."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, subject: Pod, old: Any, new: Any) -> QueueingHint:
        self.asked.append(subject.name)
        if new is not None and (new.get("freed") or new["name"] in claims_of(subject)):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


def naming(name: str, claims: str = "", **labels: str) -> Pod:
    def edit(builder: PodBuilder) -> PodBuilder:
        for key, value in {"claims": claims, **labels}.items():
            builder = builder.label(key, value) if value else builder
        return builder

    return pod(name, edit)


def claim_queue(hint: Hint, *, with_interest: bool = True) -> SchedulingQueue:
    registration = on(CLAIM_ADD, hint)
    if with_interest:
        registration = type(registration)(CLAIM_ADD, hint, CLAIMS)
    return make_queue(events={"Claims": [registration], "Other": [on(CLAIM_ADD, QUEUE)]})


def pooled(queue: SchedulingQueue, subject: Pod, *plugins: str) -> None:
    queue.add(subject)
    fail(queue, pop(queue), *plugins)


@pytest.mark.parametrize(
    ("pods", "claim", "asked", "moved"),
    [
        pytest.param(
            [("a", "c1", ["Claims"]), ("b", "c2", ["Claims"]), ("c", "c3", ["Claims"])],
            {"name": "c2"},
            ["b"],
            ["b"],
            id="an event about one claim asks only the pod naming it",
        ),
        pytest.param(
            [("a", "c1", ["Claims"]), ("b", "", ["Claims"])],
            {"name": "c1", "freed": True},
            ["a", "b"],
            ["a", "b"],
            id="an event without keys asks every pod of the plugin",
        ),
        pytest.param(
            [("a", "c1", ["Claims"]), ("e", "", [])],
            {"name": "c9"},
            [],
            ["e"],
            id="a pod without rejectors (an error) moves on any event",
        ),
        pytest.param(
            [("a", "c1", ["Claims"]), ("o", "", ["Other"])],
            {"name": "c9"},
            [],
            ["o"],
            id="a plugin registered without an interest keeps its pods asked",
        ),
        pytest.param(
            [("a", "c1", ["Claims"]), ("n", "", ["Unregistered"])],
            {"name": "c9"},
            [],
            ["n"],
            id="a plugin that registered no events at all matches every event",
        ),
        pytest.param(
            [("a", "c1", ["Claims"]), ("x", "broken", ["Claims"])],
            {"name": "c1"},
            ["a", "x"],
            ["a", "x"],
            id="a pod whose keys fail is asked",
        ),
        pytest.param(
            [("a", "c1", ["Claims"]), ("b", "c2", ["Claims"])],
            {"name": "c1", "broken": True},
            ["a", "b"],
            ["a"],
            id="an event whose keys fail asks every pod",
        ),
    ],
)
def test_an_event_asks_only_the_pods_its_keys_concern(
    pods: list[tuple[str, str, list[str]]],
    claim: dict[str, Any],
    asked: list[str],
    moved: list[str],
) -> None:
    hint = Hint()
    queue = claim_queue(hint)
    for name, claims, plugins in pods:
        labels = {"broken": "yes"} if claims == "broken" else {}
        pooled(queue, naming(name, "" if claims == "broken" else claims, **labels), *plugins)
    queue.move_all_to_active_or_backoff(CLAIM_ADD, None, claim)
    assert sorted(hint.asked) == asked
    assert sorted(
        name for name, _, _ in pods if where(queue, name) != QueueName.UNSCHEDULABLE
    ) == sorted(moved)


def test_a_pooled_pod_is_indexed_as_it_is_now() -> None:
    """A pod that comes to name a claim while it waits (its generated claim's
    name written to its status) is asked when that claim appears."""
    hint = Hint()
    queue = claim_queue(hint)
    before = naming("p")
    pooled(queue, before, "Claims")
    queue.update(before, naming("p", "c1"))
    queue.move_all_to_active_or_backoff(CLAIM_ADD, None, {"name": "c1"})
    assert hint.asked == ["p"]
    assert where(queue, "p") == QueueName.BACKOFF


def test_thousands_of_waiting_pods_cost_one_hint_call_per_claim() -> None:
    hint = Hint()
    queue = claim_queue(hint)
    for index in range(1000):
        pooled(queue, naming(f"p{index}", f"c{index}"), "Claims")
    for index in range(1000):
        queue.move_all_to_active_or_backoff(CLAIM_ADD, None, {"name": f"c{index}"})
    assert len(hint.asked) == 1000
    assert all(where(queue, f"p{index}") == QueueName.BACKOFF for index in range(1000))


_POD = st.tuples(
    st.sampled_from(["", "c1", "c2", "c1,c2", "c3"]),
    st.sampled_from([("Claims",), ("Other",), ("Claims", "Other"), (), ("Unregistered",)]),
)
_EVENT = st.one_of(
    st.builds(lambda name: (CLAIM_ADD, {"name": name}), st.sampled_from(["c1", "c2", "c4"])),
    st.just((CLAIM_ADD, {"name": "c2", "freed": True})),
    st.just((CLAIM_ADD, None)),
    st.just((OTHER, None)),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_POD, min_size=1, max_size=8), st.lists(_EVENT, min_size=1, max_size=5))
def test_the_index_moves_the_same_pods_as_asking_every_pod(
    pods: list[tuple[str, tuple[str, ...]]], events: list[tuple[ClusterEvent, Any]]
) -> None:
    queues = [claim_queue(Hint(), with_interest=flag) for flag in (True, False)]
    for queue in queues:
        for index, (claims, plugins) in enumerate(pods):
            pooled(queue, naming(f"p{index}", claims), *plugins)
        for event, claim in events:
            queue.move_all_to_active_or_backoff(event, None, claim)
    indexed, walked = ([where(q, f"p{i}") for i in range(len(pods))] for q in queues)
    assert indexed == walked


def test_rejected_helper_pods_without_interest_still_move() -> None:
    queue = claim_queue(Hint())
    rejected(queue, "plain", "Other")
    queue.move_all_to_active_or_backoff(CLAIM_ADD, None, {"name": "c1"})
    assert where(queue, "plain") == QueueName.BACKOFF
