"""An assume cache over an informer store (upstream ``passiveAssumeCache``).

Reserve records the object the binding will produce (a PersistentVolume with
its claimRef set, a claim with the selected-node annotation) so that the
next scheduling cycles already see it, before the API write and the watch
event catch up. Invariants:

- an assumed object is seen only while the store still holds the version it
  was derived from (same ``resourceVersion``); any newer version from the
  informer wins, and the stale assumption is dropped;
- ``assume`` refuses an object whose version is not the store's (the
  informer moved on since the decision was made);
- ``restore`` drops an assumption only if it is the one given, so a late
  Unreserve never removes a newer pod's assumption.

Synchronous; called only from the scheduling cycle and the binding cycle's
synchronous sections.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from scheduler.framework import ObjectStore, object_key
from scheduler.framework.volumes import resource_version

Raw = Mapping[str, Any]


class AssumeError(Exception):
    """The object to assume is missing from the store or out of sync with it."""


class AssumeCache:
    def __init__(self, store: ObjectStore, resource: str) -> None:
        self._store = store
        self._resource = resource  # plural, for upstream's NotFound message
        self._assumed: dict[str, Raw] = {}

    def not_found(self, key: str) -> str:
        return f'{self._resource} "{key}" not found'

    def get(self, key: str) -> Raw | None:
        """The assumed object if still current, else the informer's."""
        stored = self._store.get(key)
        if stored is None:
            self._assumed.pop(key, None)
            return None
        return self._current(key, stored)

    def get_api_object(self, key: str) -> Raw | None:
        """The informer's object, ignoring assumptions."""
        return self._store.get(key)

    def list(self) -> Iterator[Raw]:
        for stored in self._store.list():
            yield self._current(object_key(stored), stored)

    def _current(self, key: str, stored: Raw) -> Raw:
        assumed = self._assumed.get(key)
        if assumed is None:
            return stored
        if resource_version(assumed) == resource_version(stored):
            return assumed
        del self._assumed[key]  # the informer has a newer version
        return stored

    def assume(self, obj: Raw) -> None:
        key = object_key(obj)
        stored = self._store.get(key)
        if stored is None:
            raise AssumeError(self.not_found(key))
        if resource_version(stored) != resource_version(obj):
            raise AssumeError(
                f'"{key}" is out of sync (stored: {resource_version(stored)}, '
                f"assume: {resource_version(obj)})"
            )
        self._assumed[key] = obj

    def restore(self, obj: Raw) -> None:
        key = object_key(obj)
        assumed = self._assumed.get(key)
        if assumed is not None and resource_version(assumed) == resource_version(obj):
            del self._assumed[key]

    def assumed_count(self) -> int:
        return len(self._assumed)
