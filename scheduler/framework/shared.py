"""Objects shared by the plugins of every profile of the process.

Upstream builds one DRA manager in the scheduler and hands it to every
profile's framework (``WithSharedDRAManager``), so that two profiles never
allocate one device twice. Here the engine knows no plugin, so the seam is
generic: a plugin asks its Handle for ``shared(KEY, build)`` and every
profile's instance gets the object the first one built.

Keys are typed like CycleState's: ``KEY: SharedKey[MyState] =
SharedKey("MyPlugin/state")`` and ``handle.shared(KEY, build)`` returns a
``MyState``.

Invariants: one object per key per process (per ``SharedObjects``, of which
the engine makes one); ``build`` runs at most once per key, when the first
plugin asks, so it may use only what every profile's Handle has in common
(informers, clock, API, background runner), never the profile's name, its
plugin arguments or its event recorder. Synchronous, pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class SharedKey(Generic[T]):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"SharedKey({self.name!r})"


class SharedObjects:
    """The process's shared objects by key; the engine gives one to every
    profile's Handle."""

    def __init__(self) -> None:
        self._objects: dict[str, Any] = {}

    def get_or_build(self, key: SharedKey[T], build: Callable[[], T]) -> T:
        if key.name not in self._objects:
            self._objects[key.name] = build()
        return self._objects[key.name]  # type: ignore[no-any-return]
