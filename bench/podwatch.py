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
  too old (410 Gone) it lists again and replaces the counts;
- a pod is "seen" once, the first time it is seen bound: ``seen`` and the
  bind times keep counting pods that were bound and then deleted (the churn
  workload's), also across a relist; ``count`` is the pods bound now;
- listeners (the churn workload's kubelet and node occupancy) hear of each
  pod once when it is first seen bound and again when it is deleted, in the
  stream's order, synchronously (they must not block the watch).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

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


class BindListener(Protocol):
    """Told of each pod when first seen bound, and when it is deleted."""

    def bound(self, pod: Obj) -> None: ...

    def deleted(self, pod: Obj) -> None: ...


class BoundPods:
    """Names of the bound pods in each namespace, kept from watch events, and
    when each was first seen bound (``now``, passed in: the harness's
    monotonic clock), in the order seen."""

    def __init__(self) -> None:
        self._bound: dict[str, set[str]] = {}
        self._seen: dict[str, set[str]] = {}
        self._times: dict[str, list[float]] = {}

    def apply(self, event_type: str, pod: Obj, now: float = 0.0) -> bool:
        """True when this event is the first to show ``pod`` bound."""
        metadata = pod["metadata"]
        namespace, name = metadata["namespace"], metadata["name"]
        names = self._bound.setdefault(namespace, set())
        if event_type == _DELETED or not pod["spec"].get("nodeName"):
            names.discard(name)
            return False
        names.add(name)
        seen = self._seen.setdefault(namespace, set())
        if name in seen:
            return False
        seen.add(name)
        self._times.setdefault(namespace, []).append(now)
        return True

    def bind_times(self, namespace: str) -> list[float]:
        """When each pod of ``namespace`` was first seen bound, ascending."""
        return list(self._times.get(namespace, ()))

    def replace(self, pods: Iterable[Obj], now: float = 0.0) -> tuple[list[Obj], list[Obj]]:
        """The bound pods are now ``pods`` (a list): those never seen before,
        and stubs (namespace and name) of those bound before but not now."""
        before = {(ns, name) for ns, names in self._bound.items() for name in names}
        self._bound.clear()
        new = [pod for pod in pods if self.apply("ADDED", pod, now)]
        after = {(ns, name) for ns, names in self._bound.items() for name in names}
        gone = [{"metadata": {"namespace": ns, "name": name}} for ns, name in before - after]
        return new, gone

    def count(self, namespace: str) -> int:
        """Pods of ``namespace`` bound now."""
        return len(self._bound.get(namespace, ()))

    def seen(self, namespace: str) -> int:
        """Pods of ``namespace`` ever seen bound (deleted ones included)."""
        return len(self._seen.get(namespace, ()))


class PodWatch:
    """``await start()`` before creating pods, then run ``follow()`` as a task."""

    def __init__(self, api: Api, listeners: Sequence[BindListener] = ()) -> None:
        self._api = api
        self._listeners = tuple(listeners)
        self.pods = BoundPods()
        self._resource_version = ""
        self._changed = asyncio.Event()

    async def start(self) -> None:
        items, self._resource_version = await self._api.list_all(PODS_PATH, BOUND)
        new, gone = self.pods.replace(items, time.monotonic())
        for listener in self._listeners:
            for pod in gone:
                listener.deleted(pod)
            for pod in new:
                listener.bound(pod)

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
                        self._apply(kind, obj)

    def _apply(self, kind: str, obj: Obj) -> None:
        first = self.pods.apply(kind, obj, time.monotonic())
        for listener in self._listeners:
            if first:
                listener.bound(obj)
            elif kind == _DELETED:
                listener.deleted(obj)
        self._changed.set()

    async def wait_bound(self, namespace: str, count: int, timeout: float) -> bool:  # noqa: ASYNC109 - a deadline on a condition, not a sleep
        """True once ``count`` pods of ``namespace`` are bound; False at the deadline."""
        return await self._wait(lambda: self.pods.count(namespace) >= count, timeout)

    async def wait_seen(self, namespace: str, count: int, timeout: float) -> bool:  # noqa: ASYNC109 - a deadline on a condition, not a sleep
        """True once ``count`` pods of ``namespace`` were ever seen bound."""
        return await self._wait(lambda: self.pods.seen(namespace) >= count, timeout)

    async def wait_empty(self, namespace: str, timeout: float) -> bool:  # noqa: ASYNC109 - a deadline on a condition, not a sleep
        """True once no pod of ``namespace`` is bound (all deleted)."""
        return await self._wait(lambda: self.pods.count(namespace) == 0, timeout)

    async def _wait(self, done: Callable[[], bool], timeout: float) -> bool:  # noqa: ASYNC109 - a deadline on a condition, not a sleep
        return await until(self._changed, done, timeout)


async def until(changed: asyncio.Event, done: Callable[[], bool], timeout: float) -> bool:  # noqa: ASYNC109 - a deadline on a condition, not a sleep
    """True once ``done()`` holds, re-checked each time ``changed`` is set;
    False at the deadline. The owner sets ``changed`` after every change."""
    deadline = time.monotonic() + timeout
    while not done():
        changed.clear()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        try:
            await asyncio.wait_for(changed.wait(), remaining)
        except TimeoutError:
            return done()
    return True
