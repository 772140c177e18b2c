"""In-memory stand-ins for informer stores, shared by the unit tests.

``FakeStore`` is an ``ObjectStore`` (what ``handle.informers.store(...)``
returns to a plugin): raw objects keyed as the real informer keys them
(``namespace/name``, or ``name`` for cluster-scoped objects; the same
``object_key``). Tests fill it from the constructor, with ``put`` and
``remove``, or through ``objects`` directly. Objects are held by reference,
as the real store holds them; ``list`` returns a new list, as the real one
does.

Each test area keeps its own ``FakeInformers`` around it: they differ in
what ``on_change`` does (records handlers and delivers ``put``/``delete``,
ignores them, or refuses them), which is what those tests are about.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.framework import object_key

RawObject = Mapping[str, Any]


class FakeStore:
    """An informer store: ``namespace/name`` or ``name`` -> raw object."""

    def __init__(self, objects: Iterable[RawObject] = ()) -> None:
        self.objects: dict[str, RawObject] = {}
        for obj in objects:
            self.put(obj)

    def put(self, obj: RawObject) -> None:
        self.objects[object_key(obj)] = obj

    def remove(self, key: str) -> None:
        self.objects.pop(key, None)

    def get(self, key: str) -> RawObject | None:
        return self.objects.get(key)

    def list(self) -> list[RawObject]:
        return list(self.objects.values())
