"""One pod watch that counts, per namespace, the pods that have a node.

The harness's only view of progress: the throughput sampler and every "wait
until bound" read these counts, so the apiserver is not listed over and over
while it is being measured.

Invariants:
- ``BoundPods`` is pure: it is fed watch events and answers counts;
- the watch starts from a list's resourceVersion taken before any pod is
  created, so no binding can fall between the list and the watch;
- it selects bound pods only (``spec.nodeName!=``): a pod enters the stream
  when it is bound, so the harness never decodes pod creations or the
  scheduler's status updates of pods that wait;
- if the stream ends it resumes from the last resourceVersion seen; if that is
  too old (410 Gone) it lists again and replaces the counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable
from typing import Any

from bench.apiclient import Api

Obj = dict[str, Any]

PODS_PATH = "/api/v1/pods"
BOUND = "spec.nodeName!="
WATCH_SECONDS = 3600
_GONE = 410
_DELETED = "DELETED"
_BOOKMARK = "BOOKMARK"
_ERROR = "ERROR"


class WatchError(RuntimeError):
    """The apiserver ended the pod watch with an error other than 410 Gone."""


class BoundPods:
    """Names of the bound pods in each namespace, kept from watch events, and
    when each was first seen bound (``now``, passed in: the harness's
    monotonic clock), in the order seen."""

    def __init__(self) -> None:
        self._bound: dict[str, set[str]] = {}
        self._times: dict[str, list[float]] = {}

    def apply(self, event_type: str, pod: Obj, now: float = 0.0) -> None:
        metadata = pod["metadata"]
        namespace = metadata["namespace"]
        names = self._bound.setdefault(namespace, set())
        if event_type != _DELETED and pod["spec"].get("nodeName"):
            if metadata["name"] not in names:
                names.add(metadata["name"])
                self._times.setdefault(namespace, []).append(now)
        else:
            names.discard(metadata["name"])

    def bind_times(self, namespace: str) -> list[float]:
        """When each pod of ``namespace`` was first seen bound, ascending."""
        return list(self._times.get(namespace, ()))

    def replace(self, pods: Iterable[Obj], now: float = 0.0) -> None:
        self._bound.clear()
        self._times.clear()
        for pod in pods:
            self.apply("ADDED", pod, now)

    def count(self, namespace: str) -> int:
        return len(self._bound.get(namespace, ()))


class PodWatch:
    """``await start()`` before creating pods, then run ``follow()`` as a task."""

    def __init__(self, api: Api) -> None:
        self._api = api
        self.pods = BoundPods()
        self._resource_version = ""
        self._changed = asyncio.Event()

    async def start(self) -> None:
        items, self._resource_version = await self._api.list_all(PODS_PATH, BOUND)
        self.pods.replace(items, time.monotonic())

    async def follow(self) -> None:
        while True:
            stream = self._api.watch(PODS_PATH, self._resource_version, WATCH_SECONDS, BOUND)
            async with contextlib.aclosing(stream):
                async for event in stream:
                    kind, obj = event["type"], event["object"]
                    if kind == _ERROR:
                        if obj.get("code") != _GONE:
                            raise WatchError(f"pod watch failed: {obj.get('message')}")
                        await self.start()  # too old to resume: list again
                        self._changed.set()
                        break
                    self._resource_version = obj["metadata"]["resourceVersion"]
                    if kind != _BOOKMARK:
                        self.pods.apply(kind, obj, time.monotonic())
                        self._changed.set()

    async def wait_bound(self, namespace: str, count: int, timeout: float) -> bool:  # noqa: ASYNC109 - a deadline on a condition, not a sleep
        """True once ``count`` pods of ``namespace`` are bound; False at the deadline."""
        deadline = time.monotonic() + timeout
        while self.pods.count(namespace) < count:
            self._changed.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                return self.pods.count(namespace) >= count
        return True
