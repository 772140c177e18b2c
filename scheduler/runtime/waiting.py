"""Pods held at Permit: one future per pod, one timer per waiting plugin.

A pod waits until every plugin that returned Wait allows it, any plugin
rejects it, or a plugin's timeout fires (a rejection by that plugin). Created
inside the scheduling cycle (synchronously, on the running loop); awaited by
the pod's binding cycle.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from scheduler.framework.objects import Pod
from scheduler.framework.status import Status


class WaitingPodImpl:
    def __init__(self, pod: Pod, timeouts: Mapping[str, float]) -> None:
        loop = asyncio.get_running_loop()
        self._pod = pod
        self._result: asyncio.Future[Status] = loop.create_future()
        self._timers = {
            plugin: loop.call_later(seconds, self._timeout, plugin, seconds)
            for plugin, seconds in timeouts.items()
        }

    @property
    def pod(self) -> Pod:
        return self._pod

    def pending_plugins(self) -> Sequence[str]:
        return list(self._timers)

    def allow(self, plugin: str) -> None:
        timer = self._timers.pop(plugin, None)
        if timer is not None:
            timer.cancel()
        if not self._timers and not self._result.done():
            self._result.set_result(Status.success())

    def reject(self, plugin: str, message: str) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        if not self._result.done():
            self._result.set_result(Status.unschedulable(message).with_plugin(plugin))

    def _timeout(self, plugin: str, seconds: float) -> None:
        self.reject(
            plugin, f"rejected due to timeout after waiting {seconds:g}s at plugin {plugin}"
        )

    async def wait(self) -> Status:
        return await self._result


class WaitingPods:
    """The registry of waiting pods, by UID, shared by all profiles."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPodImpl] = {}

    def add(self, waiting: WaitingPodImpl) -> None:
        self._pods[waiting.pod.uid] = waiting

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPodImpl | None:
        return self._pods.get(uid)

    def all(self) -> list[WaitingPodImpl]:
        return list(self._pods.values())
