"""The informer's store: the latest version of every object of one resource type.

Objects are the raw JSON dicts decoded from the API server, held by reference
and NEVER mutated, by the store or by anyone reading it: a handler or plugin
that needs a changed version copies first (``copy.deepcopy`` or a new dict).
Sharing one dict between the store, the handlers and the scheduler cache is
what keeps memory and CPU flat; mutating it would corrupt all of them at once.

Keys are ``namespace/name`` for namespaced objects and ``name`` otherwise (as
in client-go's ``MetaNamespaceKeyFunc``). Pure and synchronous.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.objects import object_key

Raw = dict[str, Any]


def uid_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def resource_version_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


@dataclass(slots=True)
class Diff:
    """What changed between two states of a store, in delivery order."""

    added: list[Raw] = field(default_factory=list)
    updated: list[tuple[Raw, Raw]] = field(default_factory=list)  # (old, new)
    deleted: list[Raw] = field(default_factory=list)  # the last known versions

    def __bool__(self) -> bool:
        return bool(self.added or self.updated or self.deleted)


class Store:
    def __init__(self) -> None:
        self._items: dict[str, Raw] = {}
        self._resource_version = ""

    @property
    def resource_version(self) -> str:
        """The resourceVersion of the last list, watch event or bookmark applied."""
        return self._resource_version

    def get(self, key: str) -> Raw | None:
        return self._items.get(key)

    def list(self) -> list[Raw]:
        return list(self._items.values())

    def keys(self) -> builtins.list[str]:
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def replace(self, items: Iterable[Raw], resource_version: str) -> Diff:
        """Make the store hold exactly ``items`` (a fresh list); return the difference.

        An object counts as updated only if its resourceVersion changed, so a
        relist after a watch gap reports just what the gap hid; one whose uid
        changed is reported as the old one deleted and the new one added.
        """
        fresh = {object_key(obj): obj for obj in items}
        diff = Diff()
        for key, obj in fresh.items():
            old = self._items.get(key)
            if old is None:
                diff.added.append(obj)
            elif uid_of(old) != uid_of(obj):
                # Deleted and recreated under the same name while we were not watching.
                diff.deleted.append(old)
                diff.added.append(obj)
            elif resource_version_of(old) != resource_version_of(obj):
                diff.updated.append((old, obj))
        diff.deleted.extend(obj for key, obj in self._items.items() if key not in fresh)
        self._items = fresh
        self._resource_version = resource_version
        return diff

    def upsert(self, obj: Raw) -> Raw | None:
        """Store ``obj``; return the version it replaced (None: it is new)."""
        key = object_key(obj)
        old = self._items.get(key)
        self._items[key] = obj
        self._advance(obj)
        return old

    def delete(self, obj: Raw) -> Raw | None:
        """Remove the object; return the version that was stored (None: unknown)."""
        old = self._items.pop(object_key(obj), None)
        self._advance(obj)
        return old

    def bookmark(self, resource_version: str) -> None:
        if resource_version:
            self._resource_version = resource_version

    def _advance(self, obj: Raw) -> None:
        version = resource_version_of(obj)
        if version:
            self._resource_version = version
