"""Informer events -> cache and queue (upstream ``eventhandlers.go``).

Every pod in the cluster feeds the cache once it is assigned to a node,
whoever scheduled it; only unassigned pods whose ``schedulerName`` is one of
our profiles enter the queue. Node changes are classified into the upstream
action types so that queueing hints see exactly what changed.

Runs synchronously in the informer's delivery path: parse once, update the
cache, tell the queue. Never awaits, never mutates the raw objects.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol

from scheduler.cache.cache import Cache
from scheduler.framework.events import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_DELETE,
    ActionType,
    ClusterEvent,
    Resource,
)
from scheduler.framework.objects import Node, Pod, parse_node, parse_pod

log = logging.getLogger(__name__)

Raw = Mapping[str, Any]


class QueueEvents(Protocol):
    def add(self, pod: Pod) -> None: ...

    def update(self, old: Pod, new: Pod) -> None: ...

    def delete(self, pod: Pod) -> None: ...

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old: object,
        new: object,
        pre_check: Callable[[Pod], bool] | None = None,
    ) -> None: ...

    def assigned_pod_added(self, pod: Pod) -> None: ...

    def assigned_pod_updated(self, old: Pod, new: Pod) -> None: ...


class PendingStatus(Protocol):
    """The status writer's side: forget a pod's pending patch."""

    def drop(self, namespace: str, name: str) -> None: ...


class EventTimer(Protocol):
    def event_handling(self, event: str, seconds: float) -> None: ...


def node_update_action(old: Node, new: Node) -> ActionType:
    """Which parts of a node changed, as upstream's node update sub-events."""
    action = ActionType.NONE
    if old.allocatable != new.allocatable:
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if old.labels != new.labels:
        action |= ActionType.UPDATE_NODE_LABEL
    if old.taints != new.taints or old.unschedulable != new.unschedulable:
        action |= ActionType.UPDATE_NODE_TAINT
    old_status, new_status = old.raw.get("status") or {}, new.raw.get("status") or {}
    if _conditions(old_status) != _conditions(new_status):
        action |= ActionType.UPDATE_NODE_CONDITION
    old_meta, new_meta = old.raw.get("metadata") or {}, new.raw.get("metadata") or {}
    if (old_meta.get("annotations") or {}) != (new_meta.get("annotations") or {}):
        action |= ActionType.UPDATE_NODE_ANNOTATION
    # Kept sorted by the kubelet, so comparing the lists is enough (as upstream).
    if (old_status.get("declaredFeatures") or []) != (new_status.get("declaredFeatures") or []):
        action |= ActionType.UPDATE_NODE_DECLARED_FEATURE
    return action


_NODE_UPDATE_BITS = (
    ActionType.UPDATE_NODE_ALLOCATABLE,
    ActionType.UPDATE_NODE_LABEL,
    ActionType.UPDATE_NODE_TAINT,
    ActionType.UPDATE_NODE_CONDITION,
    ActionType.UPDATE_NODE_ANNOTATION,
    ActionType.UPDATE_NODE_DECLARED_FEATURE,
)


def _conditions(status: Raw) -> dict[str, str]:
    return {c.get("type", ""): c.get("status", "") for c in status.get("conditions") or ()}


class EventHandlers:
    def __init__(
        self,
        cache: Cache,
        queue: QueueEvents,
        scheduler_names: Collection[str],
        *,
        on_pod_deleted: Callable[[Pod], None] | None = None,
        timer: EventTimer | None = None,
        status: PendingStatus | None = None,
    ) -> None:
        self._cache = cache
        self._status = status
        self._queue = queue
        self._ours = frozenset(scheduler_names)
        self._on_pod_deleted = on_pod_deleted
        self._timer = timer
        # Our unassigned pods as last parsed (raw object, pod) by UID: an
        # update's old copy is usually that very object (the bind's update
        # above all), then not parsed again. Emptied as pods get assigned or
        # deleted, so it holds at most the pending pods.
        self._unassigned: dict[str, tuple[Raw, Pod]] = {}

    def _parse(self, raw: Raw) -> Pod:
        """``parse_pod``, remembered while the pod is ours and unassigned."""
        pod = parse_pod(raw)
        if not pod.assigned and pod.scheduler_name in self._ours and pod.uid:
            self._unassigned[pod.uid] = (raw, pod)
        return pod

    def _parse_old(self, raw: Raw) -> Pod:
        """The previous copy of an updated pod: its remembered parse when it
        is the very object parsed then (an unassigned pod of ours, or the
        assigned pod the cache holds), else a fresh parse."""
        uid = _uid(raw)
        known = self._unassigned.pop(uid, None)
        if known is not None and known[0] is raw:
            return known[1]
        stored = self._cache.get_pod(uid)
        if stored is not None and stored.raw is raw:
            return stored
        return parse_pod(raw)

    def _responsible(self, pod: Pod) -> bool:
        return pod.scheduler_name in self._ours and not pod.terminal

    def _timed(self, event: str, started: float) -> None:
        if self._timer is not None:
            self._timer.event_handling(event, time.perf_counter() - started)

    # ------------------------------------------------------------------ pods
    def pod_added(self, raw: Raw) -> None:
        started = time.perf_counter()
        pod = self._parse(raw)
        if pod.assigned:
            self._cache.add_pod(pod)
            if not pod.terminal:
                self._queue.assigned_pod_added(pod)
            self._timed("AssignedPodAdd", started)
        elif self._responsible(pod):
            self._queue.add(pod)
            self._timed("UnscheduledPodAdd", started)

    def pod_updated(self, old_raw: Raw, new_raw: Raw) -> None:
        started = time.perf_counter()
        old, new = self._parse_old(old_raw), self._parse(new_raw)
        if new.assigned:
            if not old.assigned and old.scheduler_name in self._ours:
                # Bound (by us or by someone else): it leaves the queue for good,
                # and a failure patch still pending would now be a lie.
                self._queue.delete(old)
                self._drop_status(new)
            if new.terminal:
                self._cache.remove_pod(new)
                if not old.terminal:
                    self._queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, old, None)
            elif not old.assigned:
                self._cache.add_pod(new)
                self._queue.assigned_pod_added(new)
            else:
                self._cache.update_pod(new)
                self._queue.assigned_pod_updated(old, new)
            self._timed("AssignedPodUpdate", started)
            return
        if self._cache.is_assumed(new.uid):
            # Its bind is in flight: the queue must not get a fresh
            # QueuedPodInfo (a failed bind requeues the one it has, with its
            # backoff and attempts). A deletion that starts frees it at once.
            if new.deleting and not old.deleting:
                self._assumed_pod_gone(new)
            self._timed("UnscheduledPodUpdate", started)
            return
        if self._responsible(new):
            if self._responsible(old):
                self._queue.update(old, new)
            else:
                self._queue.add(new)
        elif self._responsible(old):
            self._queue.delete(old)
        self._timed("UnscheduledPodUpdate", started)

    def pod_deleted(self, raw: Raw) -> None:
        """The copy may be stale (a relist reports a deletion with the last
        version it saw, which may predate the bind), so the cache is cleaned
        by UID whatever the copy says, as upstream's DeletedFinalStateUnknown."""
        started = time.perf_counter()
        pod = self._parse_old(raw)
        self._drop_status(pod)
        stored = self._cache.get_pod(pod.uid)
        if stored is not None and self._cache.is_assumed(pod.uid):
            if not pod.assigned and pod.scheduler_name in self._ours:
                self._queue.delete(pod)
            self._assumed_pod_gone(pod)
            self._timed("UnscheduledPodDelete", started)
            return
        if pod.assigned or stored is not None:
            self._cache.remove_pod(pod)
            self._queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, stored or pod, None)
            self._timed("AssignedPodDelete", started)
        if not pod.assigned and pod.scheduler_name in self._ours:
            self._queue.delete(pod)
            self._timed("UnscheduledPodDelete", started)
        if self._on_pod_deleted is not None:
            self._on_pod_deleted(pod)

    def _drop_status(self, pod: Pod) -> None:
        if self._status is not None:
            self._status.drop(pod.namespace, pod.name)

    def _assumed_pod_gone(self, pod: Pod) -> None:
        """Deleted, or deleting, while its bind is in flight (kubernetes#134157):
        reject it at Permit, release its assumed resources now (the binding
        cycle will fail and find nothing to forget) and wake pods that may fit."""
        if self._on_pod_deleted is not None:
            self._on_pod_deleted(pod)
        assumed = self._cache.get_pod(pod.uid)
        if assumed is None or not self._cache.is_assumed(pod.uid):
            return
        self._cache.remove_pod(assumed)
        self._queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, assumed, None)

    # ----------------------------------------------------------------- nodes
    def node_added(self, raw: Raw) -> None:
        started = time.perf_counter()
        node = parse_node(raw)
        if node.parse_error:
            log.warning(
                "node %s: %s; treating it as having nothing allocatable",
                node.name,
                node.parse_error,
            )
        self._cache.add_node(node)
        self._queue.move_all_to_active_or_backoff(NODE_ADD, None, node)
        self._timed("NodeAdd", started)

    def node_updated(self, old_raw: Raw, new_raw: Raw) -> None:
        started = time.perf_counter()
        old, new = parse_node(old_raw), parse_node(new_raw)
        if new.parse_error and new.parse_error != old.parse_error:
            log.warning(
                "node %s: %s; treating it as having nothing allocatable",
                new.name,
                new.parse_error,
            )
        self._cache.update_node(new)
        action = node_update_action(old, new)
        for bit in _NODE_UPDATE_BITS:  # one event per kind of change, as upstream
            if action & bit:
                self._queue.move_all_to_active_or_backoff(
                    ClusterEvent(Resource.NODE, bit), old, new
                )
        self._timed("NodeUpdate", started)

    def node_deleted(self, raw: Raw) -> None:
        started = time.perf_counter()
        node = parse_node(raw)
        self._queue.move_all_to_active_or_backoff(NODE_DELETE, node, None)
        self._cache.remove_node(node.name)
        self._timed("NodeDelete", started)


class ObjectEventHandlers:
    """Changes to a resource other than pods and nodes (PersistentVolumeClaims,
    StorageClasses, ...) as cluster events: Add, Update or Delete of
    ``resource``, whose queueing hints receive the raw objects. Upstream
    registers these handlers only for resources some plugin asked for."""

    def __init__(
        self, queue: QueueEvents, resource: Resource, timer: EventTimer | None = None
    ) -> None:
        self._queue = queue
        self._timer = timer
        self._add = ClusterEvent(resource, ActionType.ADD)
        self._update = ClusterEvent(resource, ActionType.UPDATE)
        self._delete = ClusterEvent(resource, ActionType.DELETE)

    def _move(self, event: ClusterEvent, old: Raw | None, new: Raw | None) -> None:
        started = time.perf_counter()
        self._queue.move_all_to_active_or_backoff(event, old, new)
        if self._timer is not None:
            self._timer.event_handling(event.label, time.perf_counter() - started)

    def added(self, raw: Raw) -> None:
        self._move(self._add, None, raw)

    def updated(self, old: Raw, new: Raw) -> None:
        self._move(self._update, old, new)

    def deleted(self, raw: Raw) -> None:
        self._move(self._delete, raw, None)


def _uid(raw: Raw) -> str:
    """The object's UID without parsing it ("" for a malformed object)."""
    metadata = raw.get("metadata") if isinstance(raw, Mapping) else None
    uid = metadata.get("uid") if isinstance(metadata, Mapping) else None
    return uid if isinstance(uid, str) else ""
