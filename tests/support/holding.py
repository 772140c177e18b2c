"""A PreBind plugin for tests that holds pods in PreBind until released.

``HoldingPreBind`` holds the first ``limit`` pods that reach its PreBind (the
rest pass straight through), as VolumeBinding holds a pod while it waits for
its volumes; ``release()`` lets every held pod go on to Bind. ``spec()``
registers it under ``NAME`` with a factory that remembers the instance the
scheduler built, so the test can watch and release it.
"""

from __future__ import annotations

import asyncio

from scheduler.framework import CycleState, Pod, PreBindPlugin, Status
from scheduler.framework.registry import PluginSpec

NAME = "ChaosHoldingPreBind"


class HoldingPreBind(PreBindPlugin):
    name = NAME

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held: set[str] = set()  # keys of the pods held now
        self.ever_held = 0
        self.passed = 0  # pods that went through without being held
        self._released = asyncio.Event()

    def release(self) -> None:
        self._released.set()

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        if self.ever_held >= self.limit or self._released.is_set():
            self.passed += 1
            return None
        self.ever_held += 1
        self.held.add(pod.key)
        try:
            await self._released.wait()
        finally:
            self.held.discard(pod.key)
        return None


class Holder:
    """The registration, and the plugin once the scheduler has built it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.plugin: HoldingPreBind | None = None

    def spec(self) -> PluginSpec[None]:
        def build(_args: object, _handle: object) -> HoldingPreBind:
            self.plugin = HoldingPreBind(self.limit)
            return self.plugin

        return PluginSpec(name=NAME, plugin_class=HoldingPreBind, factory=build)

    def config(self) -> str:
        """The profile lines (under ``- schedulerName: ...``) that enable it."""
        return f"""  plugins:
    preBind:
      enabled:
      - name: {NAME}"""
