"""The unschedulable pool: rejected pods waiting for a relevant event, and
PreEnqueue-gated pods waiting for their gate to open.

Invariant: ``_gated`` holds exactly the keys whose entry had a gating plugin
when it was last stored, and the ``PoolIndex`` the entries as they were then;
``add`` refreshes both, so whoever changes a pooled entry adds it again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from scheduler.framework.events import ClusterEvent
from scheduler.framework.types import QueuedPodInfo
from scheduler.queue.interest import PoolIndex
from scheduler.queue.profile import QueueProfile


class UnschedulablePool:
    def __init__(self, profiles: Mapping[str, QueueProfile] | None = None) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}
        self._gated: set[str] = set()
        self._index = PoolIndex(profiles or {})

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        """A snapshot: the pool may change while the caller walks it."""
        return iter(list(self._pods.values()))

    def concerned(self, event: ClusterEvent, old: object, new: object) -> list[QueuedPodInfo]:
        """The entries the event may concern (``PoolIndex``), in pool order:
        every other entry's hints would all answer SKIP."""
        if not self._pods:  # the initial lists' node adds, mostly
            return []
        keys = self._index.candidates(event, old, new)
        if keys is None:
            return list(self._pods.values())
        if not keys:
            return []
        pods = self._pods
        return [pods[key] for key in pods if key in keys]

    def gated_count(self) -> int:
        return len(self._gated)

    def is_gated(self, key: str) -> bool:
        return key in self._gated

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._pods.get(key)

    def add(self, pinfo: QueuedPodInfo) -> bool:
        """Store or replace; True if the key was not in the pool before."""
        key = pinfo.key
        new = key not in self._pods
        self._pods[key] = pinfo
        self._index.add(pinfo)
        if pinfo.gating_plugin:
            self._gated.add(key)
        else:
            self._gated.discard(key)
        return new

    def remove(self, key: str) -> QueuedPodInfo | None:
        self._gated.discard(key)
        self._index.remove(key)
        return self._pods.pop(key, None)
