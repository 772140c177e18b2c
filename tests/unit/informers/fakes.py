"""Scripted stand-ins for the API client, for informer tests (time: ``tests.support.clock``)."""

from __future__ import annotations

import asyncio
import copy
from collections import deque
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from scheduler.kube.resources import ResourceType

Raw = dict[str, Any]


@dataclass
class WatchStep:
    """One watch call: these events, then raise ``then``, hang, or end cleanly."""

    events: list[Raw] = field(default_factory=list)
    then: Exception | None = None
    hang: bool = False


def event(type_: str, obj: Raw) -> Raw:
    return {"type": type_, "object": obj}


def bookmark(rv: str) -> Raw:
    return event("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": rv}})


def error_event(code: int, reason: str = "Expired") -> Raw:
    return event("ERROR", {"kind": "Status", "code": code, "reason": reason, "message": "m"})


@dataclass
class FakeListWatch:
    """``states[i]`` = (resourceVersion, items) answered by the i-th list (the
    last repeats); ``watches`` are consumed one per watch call, then watches hang."""

    states: list[tuple[str, list[Raw]]] = field(default_factory=lambda: [("1", [])])
    watches: deque[WatchStep] = field(default_factory=deque)
    list_failures: deque[Exception] = field(default_factory=deque)
    list_calls: list[Raw] = field(default_factory=list)
    watch_calls: list[Raw] = field(default_factory=list)
    open_watches: int = 0
    lists_done: int = 0

    async def list(
        self,
        resource: ResourceType,
        *,
        resource_version: str | None = None,
        limit: int = 500,
        continue_: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Raw:
        self.list_calls.append(
            {
                "continue": continue_,
                "limit": limit,
                "label": label_selector,
                "field": field_selector,
            }
        )
        if self.list_failures:
            raise self.list_failures.popleft()
        version, items = self.states[min(self.lists_done, len(self.states) - 1)]
        start = int(continue_ or 0)
        end = start + limit
        metadata: Raw = {"resourceVersion": version}
        if end < len(items):
            metadata["continue"] = str(end)
        else:
            self.lists_done += 1
        return {"metadata": metadata, "items": copy.deepcopy(items[start:end])}

    async def watch(
        self,
        resource: ResourceType,
        *,
        resource_version: str,
        timeout_seconds: int,
        allow_bookmarks: bool = True,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> AsyncGenerator[Raw, None]:
        self.watch_calls.append(
            {"rv": resource_version, "timeout": timeout_seconds, "bookmarks": allow_bookmarks}
        )
        step = self.watches.popleft() if self.watches else WatchStep(hang=True)
        self.open_watches += 1
        try:
            for item in step.events:
                yield copy.deepcopy(item)
            if step.then is not None:
                raise step.then
            if step.hang:
                await asyncio.Event().wait()
        finally:
            self.open_watches -= 1

    @property
    def idle(self) -> bool:
        """Every scripted step is used up and the informer waits on a hanging watch."""
        return not self.watches and self.open_watches == 1


@dataclass
class Recorder:
    """Handler calls as readable tuples."""

    calls: list[tuple[str, ...]] = field(default_factory=list)

    def on_add(self, obj: Raw) -> None:
        self.calls.append(("add", _name(obj), _rv(obj)))

    def on_update(self, old: Raw, new: Raw) -> None:
        self.calls.append(("update", _name(new), _rv(old), _rv(new)))

    def on_delete(self, obj: Raw) -> None:
        self.calls.append(("delete", _name(obj)))


def _name(obj: Raw) -> str:
    return str(obj["metadata"]["name"])


def _rv(obj: Raw) -> str:
    return str(obj["metadata"].get("resourceVersion", ""))
