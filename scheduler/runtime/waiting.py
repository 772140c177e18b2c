"""Pods held at Permit: one future per pod, one timer per waiting plugin.

A pod waits until every plugin that returned Wait allows it, any plugin
rejects it, or a plugin's timeout fires (a rejection by that plugin, with
upstream's message). Created inside the scheduling cycle (synchronously, on
the running loop); awaited by the pod's binding cycle.

Invariants: the result is set at most once; once it is set, or once the
waiter gives up (cancelled), no timer of the pod is left scheduled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from scheduler.framework.objects import Pod
from scheduler.framework.status import Status

_NANOS_PER_SECOND = 1_000_000_000
_SUB_SECOND_UNITS = ((1_000_000, "ms"), (1_000, "µs"), (1, "ns"))


def _with_fraction(whole: int, fraction: int, digits: int) -> str:
    if not fraction:
        return str(whole)
    return f"{whole}.{fraction:0{digits}d}".rstrip("0")


def go_duration(seconds: float) -> str:
    """``seconds`` as Go's ``time.Duration.String()`` renders it (``15m0s``,
    ``1.5s``, ``500ms``), as upstream messages quote durations."""
    nanos = round(seconds * _NANOS_PER_SECOND)
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < _NANOS_PER_SECOND:
        for scale, unit in _SUB_SECOND_UNITS:
            if nanos >= scale:
                whole, fraction = divmod(nanos, scale)
                return f"{sign}{_with_fraction(whole, fraction, len(str(scale)) - 1)}{unit}"
    whole_seconds, fraction = divmod(nanos, _NANOS_PER_SECOND)
    minutes, secs = divmod(whole_seconds, 60)
    text = f"{_with_fraction(secs, fraction, 9)}s"
    if minutes:
        hours, minutes = divmod(minutes, 60)
        text = f"{minutes}m{text}"
        if hours:
            text = f"{hours}h{text}"
    return sign + text


def timeout_message(plugin: str, seconds: float) -> str:
    return f"rejected due to timeout after waiting {go_duration(seconds)} at plugin {plugin}"


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
        self._cancel_timers()
        if not self._result.done():
            self._result.set_result(Status.unschedulable(message).with_plugin(plugin))

    def _cancel_timers(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def _timeout(self, plugin: str, seconds: float) -> None:
        self.reject(plugin, timeout_message(plugin, seconds))

    async def wait(self) -> Status:
        try:
            return await self._result
        except asyncio.CancelledError:  # the binding cycle gave up: no timer may outlive it
            self._cancel_timers()
            raise


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
