"""An in-memory API for the whole scheduler app, for fuzzing it end to end.

``FakeApi`` answers what ``SchedulerApp`` asks of ``KubeClient``: lists (every
object of a type, one page), watches (the changes made through it after the
list), binds (sets ``spec.nodeName``, as the binding subresource does),
status patches and events (recorded). Types nobody stored list empty.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from scheduler.kube.resources import NODES, PODS, ResourceType

Raw = dict[str, Any]


class FakeApi:
    def __init__(self, pods: list[Raw], nodes: list[Raw]) -> None:
        self._objects: dict[str, dict[str, Raw]] = {
            PODS.plural: {self._key(p): p for p in pods},
            NODES.plural: {self._key(n): n for n in nodes},
        }
        self._version = 1
        self._watchers: dict[str, list[asyncio.Queue[Raw]]] = {}
        self.binds: dict[str, str] = {}  # pod key -> node
        self.conditions: dict[str, Raw] = {}  # pod key -> last PodScheduled condition
        self.events: list[Raw] = []

    @staticmethod
    def _key(raw: Raw) -> str:
        metadata = raw.get("metadata") or {}
        return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"

    def sibling(self, **_: Any) -> FakeApi:
        """The ops port's review client: the same fake."""
        return self

    async def list(self, resource: ResourceType, **_: Any) -> dict[str, Any]:
        items = list(self._objects.get(resource.plural, {}).values())
        return {"metadata": {"resourceVersion": str(self._version)}, "items": copy.deepcopy(items)}

    async def watch(self, resource: ResourceType, **_: Any) -> AsyncGenerator[Raw, None]:
        queue: asyncio.Queue[Raw] = asyncio.Queue()
        self._watchers.setdefault(resource.plural, []).append(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._watchers[resource.plural].remove(queue)

    async def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        key = f"{namespace}/{name}"
        pod = copy.deepcopy(self._objects[PODS.plural][key])
        pod["spec"]["nodeName"] = node_name
        self._version += 1
        pod["metadata"]["resourceVersion"] = str(self._version)
        self._objects[PODS.plural][key] = pod
        self.binds[key] = node_name
        for queue in self._watchers.get(PODS.plural, ()):
            queue.put_nowait({"type": "MODIFIED", "object": copy.deepcopy(pod)})

    async def patch_pod_status(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        for condition in (patch.get("status") or {}).get("conditions") or ():
            if condition.get("type") == "PodScheduled":
                self.conditions[f"{namespace}/{name}"] = dict(condition)
        return {}

    async def create_event(self, namespace: str, event: Mapping[str, Any]) -> None:
        self.events.append(dict(event))

    async def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        return None

    async def request(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"unexpected API request {args}")

    def report_to(self, metrics: Any) -> None:
        return None

    async def close(self) -> None:
        return None
