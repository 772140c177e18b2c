"""Cluster events of resources other than pods and nodes reach the queue."""

from __future__ import annotations

from typing import Any, cast

from scheduler.engine.core import object_event_resources
from scheduler.engine.eventhandlers import ObjectEventHandlers
from scheduler.framework import ActionType, ClusterEvent, ClusterEventWithHint
from scheduler.framework.events import Resource
from scheduler.runtime.framework import Framework
from tests.support.storage import make_pvc


class RecordingQueue:
    def __init__(self) -> None:
        self.moves: list[tuple[ClusterEvent, object, object]] = []

    def move_all_to_active_or_backoff(
        self, event: ClusterEvent, old: object, new: object, pre_check: Any = None
    ) -> None:
        self.moves.append((event, old, new))


def test_changes_become_add_update_delete_events_with_the_raw_objects() -> None:
    queue = RecordingQueue()
    handlers = ObjectEventHandlers(cast(Any, queue), Resource.PERSISTENT_VOLUME_CLAIM)
    old, new = make_pvc("c").obj(), make_pvc("c").bound_to("pv").obj()
    handlers.added(old)
    handlers.updated(old, new)
    handlers.deleted(new)
    assert [(event.label, o, n) for event, o, n in queue.moves] == [
        ("PersistentVolumeClaimAdd", None, old),
        ("PersistentVolumeClaimUpdate", old, new),
        ("PersistentVolumeClaimDelete", new, None),
    ]
    registered = ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE)
    assert registered.matches(queue.moves[1][0])
    assert not registered.matches(queue.moves[2][0])


class FakeFramework:
    def __init__(self, *resources: Resource) -> None:
        self._events = {
            "P": [ClusterEventWithHint(ClusterEvent(r, ActionType.ADD)) for r in resources]
        }

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        return self._events


def test_only_other_registered_resources_are_watched_each_once() -> None:
    frameworks = [
        FakeFramework(Resource.NODE, Resource.PERSISTENT_VOLUME_CLAIM, Resource.CSI_NODE),
        FakeFramework(Resource.ASSIGNED_POD, Resource.PERSISTENT_VOLUME_CLAIM, Resource.WILDCARD),
    ]
    assert object_event_resources(cast(list[Framework], frameworks)) == [
        Resource.PERSISTENT_VOLUME_CLAIM,
        Resource.CSI_NODE,
    ]
