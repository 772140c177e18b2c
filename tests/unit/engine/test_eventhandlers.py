"""Informer events to cache and queue: node update classification and the
routing of pods (assigned to the cache, ours and unassigned to the queue)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.cache import Cache
from scheduler.engine import eventhandlers
from scheduler.engine.eventhandlers import EventHandlers, node_update_action
from scheduler.framework import ActionType, ClusterEvent, Pod, parse_node
from scheduler.framework.events import ASSIGNED_POD_DELETE, NODE_ADD, NODE_DELETE, Resource
from scheduler.framework.objects import parse_pod as real_parse_pod
from tests.support.builders import NodeBuilder, make_node, make_pod

Obj = dict[str, Any]
OURS = "pysched"


def raw_node(edit: Callable[[NodeBuilder], NodeBuilder] | None = None) -> Obj:
    builder = make_node("n1")
    return (edit(builder) if edit else builder).obj()


@pytest.mark.parametrize(
    ("edit", "action"),
    [
        pytest.param(lambda b: b, ActionType.NONE, id="nothing relevant"),
        pytest.param(
            lambda b: b.resource_version("2"), ActionType.NONE, id="only the resourceVersion"
        ),
        pytest.param(
            lambda b: b.capacity(cpu="8", memory="8Gi", pods="110"),
            ActionType.UPDATE_NODE_ALLOCATABLE,
            id="allocatable",
        ),
        pytest.param(lambda b: b.label("disk", "ssd"), ActionType.UPDATE_NODE_LABEL, id="label"),
        pytest.param(lambda b: b.taint("dedicated"), ActionType.UPDATE_NODE_TAINT, id="taint"),
        pytest.param(
            lambda b: b.unschedulable(), ActionType.UPDATE_NODE_TAINT, id="cordoned: a taint"
        ),
        pytest.param(
            lambda b: b.condition("Ready", "False"),
            ActionType.UPDATE_NODE_CONDITION,
            id="condition status",
        ),
        pytest.param(
            lambda b: b.annotation("note", "x"), ActionType.UPDATE_NODE_ANNOTATION, id="annotation"
        ),
        pytest.param(
            lambda b: b.label("disk", "ssd").taint("t").annotation("a", "b"),
            ActionType.UPDATE_NODE_LABEL
            | ActionType.UPDATE_NODE_TAINT
            | ActionType.UPDATE_NODE_ANNOTATION,
            id="several at once",
        ),
    ],
)
def test_node_update_action(edit: Callable[[NodeBuilder], NodeBuilder], action: ActionType) -> None:
    assert node_update_action(parse_node(raw_node()), parse_node(raw_node(edit))) == action


@dataclass
class RecordingQueue:
    calls: list[tuple[str, str]] = field(default_factory=list)
    moves: list[tuple[ClusterEvent, bool]] = field(default_factory=list)

    def add(self, pod: Pod) -> None:
        self.calls.append(("add", pod.key))

    def update(self, old: Pod, new: Pod) -> None:
        self.calls.append(("update", new.key))

    def delete(self, pod: Pod) -> None:
        self.calls.append(("delete", pod.key))

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old: object,
        new: object,
        pre_check: Callable[[Pod], bool] | None = None,
    ) -> None:
        self.moves.append((event, pre_check is not None))

    def assigned_pod_added(self, pod: Pod) -> None:
        self.calls.append(("assigned_pod_added", pod.key))

    def assigned_pod_updated(self, old: Pod, new: Pod) -> None:
        self.calls.append(("assigned_pod_updated", new.key))


def raw_pod(
    node_name: str = "", scheduler: str = OURS, cpu: str = "1", phase: str = "Pending"
) -> Obj:
    builder = make_pod("p").uid("uid-p").scheduler(scheduler).requests(cpu=cpu).phase(phase)
    return (builder.node(node_name) if node_name else builder).obj()


def cache_with_n1() -> Cache:
    cache = Cache()
    cache.add_node(parse_node(raw_node()))
    return cache


def handlers() -> tuple[EventHandlers, Cache, RecordingQueue]:
    cache = cache_with_n1()
    queue = RecordingQueue()
    return EventHandlers(cache, queue, [OURS]), cache, queue


def cpu_on_n1(cache: Cache) -> int:
    info = cache.node_info("n1")
    assert info is not None
    return info.requested.milli_cpu


POD_DELETE = (ASSIGNED_POD_DELETE, False)


@pytest.mark.parametrize(
    ("raw", "calls", "cpu"),
    [
        pytest.param(raw_pod(), [("add", "default/p")], 0, id="ours, unassigned: queued"),
        pytest.param(raw_pod(scheduler="other"), [], 0, id="another scheduler's: ignored"),
        pytest.param(
            raw_pod(phase="Succeeded"), [], 0, id="ours but terminal: nothing to schedule"
        ),
        pytest.param(
            raw_pod("n1"),
            [("assigned_pod_added", "default/p")],
            1000,
            id="assigned: counted in the cache",
        ),
        pytest.param(
            raw_pod("n1", scheduler="other"),
            [("assigned_pod_added", "default/p")],
            1000,
            id="assigned by anyone: counted",
        ),
        pytest.param(raw_pod("n1", phase="Failed"), [], 0, id="assigned but terminal: not counted"),
    ],
)
def test_pod_added(raw: Obj, calls: list[tuple[str, str]], cpu: int) -> None:
    handler, cache, queue = handlers()
    handler.pod_added(raw)
    assert queue.calls == calls
    assert cpu_on_n1(cache) == cpu


@pytest.mark.parametrize(
    ("old", "new", "calls", "moves", "cpu"),
    [
        pytest.param(
            raw_pod(),
            raw_pod(cpu="2"),
            [("update", "default/p")],
            [],
            0,
            id="ours, still unassigned: updated in the queue",
        ),
        pytest.param(
            raw_pod(scheduler="other"),
            raw_pod(scheduler="other", cpu="2"),
            [],
            [],
            0,
            id="another scheduler's, unassigned: ignored",
        ),
        pytest.param(
            raw_pod(),
            raw_pod("n1"),
            [("delete", "default/p"), ("assigned_pod_added", "default/p")],
            [],
            1000,
            id="bound: leaves the queue, enters the cache",
        ),
        pytest.param(
            raw_pod(scheduler="other"),
            raw_pod("n1", scheduler="other"),
            [("assigned_pod_added", "default/p")],
            [],
            1000,
            id="bound by another scheduler: only the cache",
        ),
        pytest.param(
            raw_pod("n1"),
            raw_pod("n1", cpu="2"),
            [("assigned_pod_updated", "default/p")],
            [],
            2000,
            id="assigned, updated",
        ),
        pytest.param(
            raw_pod("n1"),
            raw_pod("n1", phase="Succeeded"),
            [],
            [POD_DELETE],
            0,
            id="finished: resources freed, waiting pods retried",
        ),
        pytest.param(
            raw_pod(),
            raw_pod(phase="Failed"),
            [("delete", "default/p")],
            [],
            0,
            id="ours failed before scheduling: leaves the queue",
        ),
    ],
)
def test_pod_updated(
    old: Obj, new: Obj, calls: list[tuple[str, str]], moves: list[object], cpu: int
) -> None:
    handler, cache, queue = handlers()
    handler.pod_added(old)
    queue.calls.clear()
    handler.pod_updated(old, new)
    assert queue.calls == calls
    assert queue.moves == moves
    assert cpu_on_n1(cache) == cpu


@pytest.mark.parametrize(
    ("raw", "calls", "moves"),
    [
        pytest.param(raw_pod(), [("delete", "default/p")], [], id="ours, unassigned"),
        pytest.param(raw_pod(scheduler="other"), [], [], id="another's, unassigned: ignored"),
        pytest.param(raw_pod("n1"), [], [POD_DELETE], id="assigned: freed, others retried"),
    ],
)
def test_pod_deleted(raw: Obj, calls: list[tuple[str, str]], moves: list[object]) -> None:
    deleted: list[str] = []
    cache = cache_with_n1()
    queue = RecordingQueue()
    handler = EventHandlers(cache, queue, [OURS], on_pod_deleted=lambda p: deleted.append(p.key))
    handler.pod_added(raw)
    queue.calls.clear()

    handler.pod_deleted(raw)

    assert queue.calls == calls
    assert queue.moves == moves
    assert cpu_on_n1(cache) == 0
    assert deleted == ["default/p"]


def test_node_events_reach_cache_and_queue() -> None:
    cache = Cache()
    queue = RecordingQueue()
    handler = EventHandlers(cache, queue, [OURS])

    handler.node_added(raw_node())
    old, new = raw_node(), raw_node(lambda b: b.label("disk", "ssd").taint("t"))
    handler.node_updated(old, new)
    handler.node_deleted(new)

    assert queue.moves == [
        (NODE_ADD, False),
        (ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL), False),
        (ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_TAINT), False),
        (NODE_DELETE, False),
    ]
    assert cache.node_count() == 0


def test_node_update_without_relevant_change_moves_nothing() -> None:
    cache = Cache()
    queue = RecordingQueue()
    handler = EventHandlers(cache, queue, [OURS])
    handler.node_added(raw_node())
    queue.moves.clear()
    handler.node_updated(raw_node(), raw_node(lambda b: b.resource_version("9")))
    assert queue.moves == []


# ------------------------------------- the previous copy's parse, reused
def counting_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    parsed: list[str] = []

    def parse(raw: Obj) -> Pod:
        parsed.append(raw["metadata"]["name"])
        return real_parse_pod(raw)

    monkeypatch.setattr(eventhandlers, "parse_pod", parse)
    return parsed


def test_the_bind_update_does_not_parse_the_old_copy_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    handler, cache, queue = handlers()
    parsed = counting_parses(monkeypatch)
    pending = raw_pod()
    handler.pod_added(pending)
    handler.pod_updated(pending, raw_pod("n1"))
    assert len(parsed) == 2, "the added copy, then only the bound one"
    assert queue.calls == [
        ("add", "default/p"),
        ("delete", "default/p"),
        ("assigned_pod_added", "default/p"),
    ]
    assert cpu_on_n1(cache) == 1000
    assert not handler._unassigned, "assigned: forgotten"


def test_status_updates_of_a_bound_pod_parse_only_the_new_copies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A kubelet's status updates: the old copy is the one the cache holds."""
    handler, cache, _ = handlers()
    parsed = counting_parses(monkeypatch)
    copies = [raw_pod("n1", cpu="1") for _ in range(4)]
    handler.pod_added(copies[0])
    for old, new in itertools.pairwise(copies):
        handler.pod_updated(old, new)
    assert len(parsed) == 4, "each copy once"
    stored = cache.get_pod(parsed_uid(copies[0]))
    assert stored is not None
    assert stored.raw is copies[-1]
    assert cpu_on_n1(cache) == 1000


def parsed_uid(raw: Obj) -> str:
    return str(raw["metadata"]["uid"])


def test_an_old_copy_that_is_another_object_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    handler, _, queue = handlers()
    parsed = counting_parses(monkeypatch)
    handler.pod_added(raw_pod(cpu="1"))
    handler.pod_updated(raw_pod(cpu="2"), raw_pod(cpu="3"))
    assert len(parsed) == 3
    assert queue.calls == [("add", "default/p"), ("update", "default/p")]


def test_a_deleted_pending_pod_is_forgotten_whatever_copy_the_deletion_carries() -> None:
    handler, _, queue = handlers()
    handler.pod_added(raw_pod())
    handler.pod_deleted(raw_pod())  # the watch's final state: another object
    assert not handler._unassigned
    assert queue.calls == [("add", "default/p"), ("delete", "default/p")]
