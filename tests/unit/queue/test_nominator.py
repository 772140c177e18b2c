"""The nominator (upstream ``nominator.go``) and how the queue keeps it."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from scheduler.framework import NominatingInfo, NominatingMode, Pod
from scheduler.queue.nominator import Nominator
from tests.support.builders import PodBuilder
from tests.unit.queue.fakes import Gate, make_queue, pod, pop

OVERRIDE = NominatingMode.OVERRIDE
NOOP = NominatingMode.NOOP


def nominated_pod(name: str, node: str = "", priority: int = 0) -> Pod:
    def edit(builder: PodBuilder) -> PodBuilder:
        builder = builder.priority(priority)
        return builder.nominated(node) if node else builder

    return pod(name, edit)


def names(pods: Iterable[Pod]) -> list[str]:
    return [p.name for p in pods]


@pytest.mark.parametrize(
    ("target", "info", "expected"),
    [
        pytest.param(nominated_pod("p", "n1"), None, {"n1": ["p"]}, id="no info: the pod's status"),
        pytest.param(
            nominated_pod("p", "n1"), NominatingInfo("", NOOP), {"n1": ["p"]}, id="Noop: status"
        ),
        pytest.param(nominated_pod("p"), None, {}, id="no status, no info: not nominated"),
        pytest.param(
            nominated_pod("p", "n1"),
            NominatingInfo("n2", OVERRIDE),
            {"n2": ["p"]},
            id="Override wins over the status",
        ),
        pytest.param(
            nominated_pod("p", "n1"),
            NominatingInfo("", OVERRIDE),
            {},
            id="Override with no node clears",
        ),
    ],
)
def test_add(target: Pod, info: NominatingInfo | None, expected: dict[str, list[str]]) -> None:
    nominator = Nominator()
    nominator.add(target, info)
    assert {node: names(pods) for node, pods in nominator.by_node().items()} == expected


def test_add_replaces_the_previous_nomination() -> None:
    nominator = Nominator()
    p = nominated_pod("p")
    nominator.add(p, NominatingInfo("n1", OVERRIDE))
    assert names(nominator.pods_for_node("n1")) == ["p"]
    nominator.add(p, NominatingInfo("n2", OVERRIDE))
    assert nominator.pods_for_node("n1") == []
    assert names(nominator.pods_for_node("n2")) == ["p"]
    assert len(nominator) == 1


@pytest.mark.parametrize(
    ("old_node", "new_node", "expected_node"),
    [
        pytest.param("", "", "n9", id="neither has a status: the in-memory nomination stays"),
        pytest.param("", "n2", "n2", id="the status gained a node: it wins"),
        pytest.param("n9", "", "", id="the status lost its node: cleared"),
        pytest.param("n9", "n3", "n3", id="the status changed node: it wins"),
    ],
)
def test_update(old_node: str, new_node: str, expected_node: str) -> None:
    nominator = Nominator()
    old, new = nominated_pod("p", old_node), nominated_pod("p", new_node, priority=5)
    nominator.add(old, NominatingInfo("n9", OVERRIDE))
    assert nominator.node_of(old.uid) == "n9"
    nominator.update(old, new)
    assert nominator.node_of(new.uid) == expected_node
    if expected_node:
        (stored,) = nominator.pods_for_node(expected_node)
        assert stored.priority == 5, "the newest version is kept"


def test_delete_leaves_other_pods_nominated() -> None:
    nominator = Nominator()
    a, b = nominated_pod("a", "n1"), nominated_pod("b", "n1")
    nominator.add(a, None)
    nominator.add(b, None)
    nominator.delete(a)
    nominator.delete(a)  # idempotent
    assert names(nominator.pods_for_node("n1")) == ["b"]
    nominator.delete(b)
    assert nominator.by_node() == {}


# ------------------------------------------------------------- in the queue


def test_queue_nominates_added_pods_from_their_status_and_forgets_deleted_ones() -> None:
    queue = make_queue()
    p = nominated_pod("p", "n1")
    queue.add(p)
    assert names(queue.nominated_pods_for_node("n1")) == ["p"]
    queue.delete(p)
    assert queue.nominated_pods_for_node("n1") == []


def test_queue_does_not_nominate_gated_pods() -> None:
    queue = make_queue(pre_enqueue=[Gate("G", closed={"default/p"})])
    queue.add(nominated_pod("p", "n1"))
    assert queue.nominated_pods_for_node("n1") == []


def test_queue_update_of_a_queued_pod_keeps_the_in_memory_nomination() -> None:
    queue = make_queue()
    old = nominated_pod("p")
    queue.add(old)
    queue.add_nominated_pod(old, NominatingInfo("n1", OVERRIDE))
    new = nominated_pod("p", priority=3)
    queue.update(old, new)
    (stored,) = queue.nominated_pods_for_node("n1")
    assert stored.priority == 3


def test_queue_assume_and_binding_end_the_nomination() -> None:
    queue = make_queue()
    p = nominated_pod("p", "n1")
    queue.add(p)
    popped = pop(queue)
    queue.delete_nominated_pod_if_exists(popped.pod)
    assert queue.nominated_by_node() == {}
    queue.add_nominated_pod(p, None)
    bound = pod("p", lambda b: b.node("n1"))
    queue.update(p, bound)
    assert queue.nominated_by_node() == {}
