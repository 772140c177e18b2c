"""Compacting decoded objects before they enter a store: memory at cluster size.

A decoded pod is ~9 KiB of Python dicts, lists and strings, most of it the
same from pod to pod (the containers of one template, admission's
tolerations, the managedFields). Two steps shrink what the stores hold:

- ``trim_managed_fields``: drops ``metadata.managedFields``, as upstream's
  pod informer does (``newPodInformer``'s transform): nothing in the
  scheduler reads them, and the scheduler only ever patches pods.
- ``SubtreePool.share``: hash-consing. ``spec`` and ``status``, and each
  dict or list under ``metadata``, are replaced by an equal one another
  object already holds, if any; one that is new is pooled after the same is
  done to the dicts and lists inside it, ``DEPTH`` levels down. A thousand
  pending pods of one template hold one ``spec`` between them; bound, each
  has its own ``spec`` (``nodeName``) but they share its ``containers``.

Invariants:
- Sharing is invisible to readers: a subtree is replaced only by one that is
  ``==`` to it and serialises to the same JSON bytes (same types, same key
  order, so iteration order is unchanged). It relies on the store's rule
  that objects are never mutated (``scheduler.informers.store``): a write to
  a shared subtree would show in every object holding it.
- Only a freshly decoded object is compacted, before anyone else sees it
  (it is changed in place).
- Bounded: the pool forgets subtrees no object holds any more (reference
  counts, swept whenever the pool has doubled since the last sweep), so it
  never keeps a deleted object's parts alive.

Pure and synchronous.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import orjson

from scheduler.kube.resources import NODES, PODS, ResourceType

Raw = dict[str, Any]
Transform = Callable[[Raw], Raw]

SHARED_SECTIONS = ("spec", "status")
# Levels looked into below a new (not yet pooled) section: its values, theirs, ...
DEPTH = 3
_MIN_SWEEP = 1024
# A pooled value referenced only by the pool: the pool's dict and
# getrefcount's own argument.
_POOL_ONLY = 2


def trim_managed_fields(obj: Raw) -> Raw:
    metadata = obj.get("metadata")
    if isinstance(metadata, dict) and "managedFields" in metadata:
        del metadata["managedFields"]
    return obj


class SubtreePool:
    """Equal subtrees of the objects of one resource type, held once."""

    __slots__ = ("_next_sweep", "_pool")

    def __init__(self) -> None:
        self._pool: dict[int, Any] = {}  # hash of the JSON bytes -> the held value
        self._next_sweep = _MIN_SWEEP

    def __len__(self) -> int:
        return len(self._pool)

    def share(self, obj: Raw) -> Raw:
        """``obj`` with its subtrees replaced by pooled equal ones where there are."""
        metadata = obj.get("metadata")
        if type(metadata) is dict:  # unique (name, uid): only its parts can be shared
            self._intern_children(metadata, DEPTH - 1)
        for section in SHARED_SECTIONS:
            value = obj.get(section)
            if type(value) is dict:
                obj[section] = self._intern(value, DEPTH)
        if len(self._pool) >= self._next_sweep:
            self.sweep()
        return obj

    def _intern(self, value: Any, depth: int) -> Any:
        try:
            key = hash(orjson.dumps(value))
        except TypeError:  # not JSON (an object built in process): kept as it is
            return value
        held = self._pool.get(key)
        if held is not None:
            # Equal bytes with unequal values (a tuple where a list was, or a
            # hash collision): not shared.
            return held if type(held) is type(value) and held == value else value
        if depth:
            self._intern_children(value, depth - 1)
        self._pool[key] = value
        return value

    def _intern_children(self, value: Any, depth: int) -> None:
        if type(value) is dict:
            for key, child in value.items():
                if type(child) is dict or type(child) is list:
                    value[key] = self._intern(child, depth)
        else:
            for index, child in enumerate(value):
                if type(child) is dict or type(child) is list:
                    value[index] = self._intern(child, depth)

    def sweep(self) -> None:
        """Forget the values no object holds any more."""
        pool = self._pool
        for key in list(pool):
            if sys.getrefcount(pool[key]) <= _POOL_ONLY:
                del pool[key]
        self._next_sweep = max(_MIN_SWEEP, 2 * len(pool))


def compactor(*, trim: bool) -> Transform:
    """The transform for one informer: trim managedFields if ``trim``, then share."""
    pool = SubtreePool()
    if not trim:
        return pool.share

    def compact(obj: Raw) -> Raw:
        return pool.share(trim_managed_fields(obj))

    return compact


def compactor_for(resource: ResourceType) -> Transform | None:
    """Pods and nodes, the objects there are thousands of: pods trimmed as
    upstream trims them, both shared. Other types are stored as decoded."""
    if resource == PODS:
        return compactor(trim=True)
    if resource == NODES:
        return compactor(trim=False)
    return None
