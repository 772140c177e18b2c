"""The unschedulable pool: rejected pods waiting for a relevant event, and
PreEnqueue-gated pods waiting for their gate to open.

Invariant: ``_gated`` holds exactly the keys whose entry had a gating plugin
when it was last stored; ``add`` refreshes it.
"""

from __future__ import annotations

from collections.abc import Iterator

from scheduler.framework.types import QueuedPodInfo


class UnschedulablePool:
    def __init__(self) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}
        self._gated: set[str] = set()

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        """A snapshot: the pool may change while the caller walks it."""
        return iter(list(self._pods.values()))

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
        if pinfo.gating_plugin:
            self._gated.add(key)
        else:
            self._gated.discard(key)
        return new

    def remove(self, key: str) -> QueuedPodInfo | None:
        self._gated.discard(key)
        return self._pods.pop(key, None)
