"""Reserve/Unreserve, Permit (waiting pods), PreBindPreFlight, PreBind, Bind
and PostBind with upstream run semantics. ``Binding`` reads the profile's
``PluginSet`` and records through the shared ``Recorder``; pods held at
Permit live in the process's ``WaitingPods``."""

from __future__ import annotations

import time

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interfaces import (
    ExtensionPoint,
)
from scheduler.framework.objects import Pod
from scheduler.framework.status import Code, Status
from scheduler.framework.types import (
    MAX_PERMIT_TIMEOUT_SECONDS,
)
from scheduler.runtime.points import (
    PluginSet,
    Recorder,
    code_of,
    rejection_or_error,
)
from scheduler.runtime.waiting import WaitingPodImpl, WaitingPods


class Binding:
    """The runner of one profile from Reserve through PostBind."""

    __slots__ = ("_plugins", "_recorder", "_waiting")

    def __init__(self, plugins: PluginSet, recorder: Recorder, waiting_pods: WaitingPods) -> None:
        self._plugins = plugins
        self._recorder = recorder
        self._waiting = waiting_pods

    # -------------------------------------------------------------- Reserve
    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        started = time.perf_counter()
        for plugin in self._plugins.reserve:
            begun = time.perf_counter()
            try:
                status = plugin.reserve(state, pod, node_name)
            except Exception as error:
                status = Status.as_error(error)
            self._recorder.plugin(state, plugin.name, ExtensionPoint.RESERVE, status, begun)
            if status is not None and status.code is not Code.SUCCESS:
                final = rejection_or_error("Reserve", plugin.name, status)
                self._recorder.observe(ExtensionPoint.RESERVE, final, started)
                return final
        self._recorder.observe(ExtensionPoint.RESERVE, None, started)
        return None

    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        started = time.perf_counter()
        for plugin in reversed(self._plugins.reserve):
            begun = time.perf_counter()
            try:
                plugin.unreserve(state, pod, node_name)
            except Exception:  # Unreserve must not stop the others
                self._recorder.plugin(
                    state, plugin.name, ExtensionPoint.UNRESERVE, Status.as_error(""), begun
                )
                continue
            self._recorder.plugin(state, plugin.name, ExtensionPoint.UNRESERVE, None, begun)
        self._recorder.observe(ExtensionPoint.UNRESERVE, None, started)

    # --------------------------------------------------------------- Permit
    def run_permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        started = time.perf_counter()
        timeouts: dict[str, float] = {}
        for plugin in self._plugins.permit:
            begun = time.perf_counter()
            try:
                status, timeout = plugin.permit(state, pod, node_name)
            except Exception as error:
                status, timeout = Status.as_error(error), 0.0
            self._recorder.plugin(state, plugin.name, ExtensionPoint.PERMIT, status, begun)
            code = code_of(status)
            if code is Code.SUCCESS:
                continue
            assert status is not None
            if status.is_rejected():
                final = status.with_plugin(plugin.name)
                self._recorder.observe(ExtensionPoint.PERMIT, final, started)
                return final
            if code is Code.WAIT:
                timeouts[plugin.name] = min(max(timeout, 0.0), MAX_PERMIT_TIMEOUT_SECONDS)
                continue
            final = Status.as_error(
                f'running Permit plugin "{plugin.name}": {status.message()}'
            ).with_plugin(plugin.name)
            self._recorder.observe(ExtensionPoint.PERMIT, final, started)
            return final
        if timeouts:
            self._waiting.add(WaitingPodImpl(pod, timeouts))
            final = Status.wait(
                f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"'
            )
            self._recorder.observe(ExtensionPoint.PERMIT, final, started)
            return final
        self._recorder.observe(ExtensionPoint.PERMIT, None, started)
        return None

    def is_waiting(self, uid: str) -> bool:
        """Upstream ``WillWaitOnPermit``: the pod is held at Permit."""
        return self._waiting.get(uid) is not None

    def reject_waiting(self, uid: str, message: str) -> None:
        """Reject the pod if it waits at Permit (it is being rolled back)."""
        waiting = self._waiting.get(uid)
        if waiting is not None:
            waiting.reject("", message)
            self._waiting.remove(uid)

    async def wait_on_permit(self, pod: Pod) -> Status | None:
        waiting = self._waiting.get(pod.uid)
        if waiting is None:
            return None
        started = time.perf_counter()
        try:
            status = await waiting.wait()
        finally:
            self._waiting.remove(pod.uid)
        self._recorder.permit_wait(status.code, time.perf_counter() - started)
        if status.is_success():
            return None
        if status.is_rejected():
            return status
        return Status.as_error(f"waiting on permit for pod: {status.message()}").with_plugin(
            status.plugin
        )

    # ----------------------------------------------------------- PreBind...
    def run_pre_bind_pre_flights(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """Success if some PreBind plugin will do work, Skip if none will."""
        started = time.perf_counter()
        any_work = False
        final: Status | None = None
        for plugin in self._plugins.pre_bind:
            begun = time.perf_counter()
            try:
                status = plugin.pre_bind_pre_flight(state, pod, node_name)
            except Exception as error:
                status = Status.as_error(error)
            self._recorder.plugin(
                state, plugin.name, ExtensionPoint.PRE_BIND_PRE_FLIGHT, status, begun
            )
            code = code_of(status)
            if code is Code.SKIP:
                state.skip_pre_bind_plugins.add(plugin.name)
            elif code is Code.SUCCESS:
                any_work = True
            elif code is Code.ERROR:
                assert status is not None
                final = Status.as_error(
                    f'running PreBindPreFlight "{plugin.name}": {status.message()}'
                )
                break
            else:
                final = Status.as_error(
                    f'PreBindPreFlight {plugin.name} returned "{code.label}", which is '
                    "unsupported. It is supposed to return Success, Skip, or Error status"
                )
                break
        if final is None:
            final = Status.success() if any_work else Status.skip()
        self._recorder.observe(ExtensionPoint.PRE_BIND_PRE_FLIGHT, final, started)
        return final

    async def run_pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        started = time.perf_counter()
        for plugin in self._plugins.pre_bind:
            if plugin.name in state.skip_pre_bind_plugins:
                continue
            begun = time.perf_counter()
            try:
                status = await plugin.pre_bind(state, pod, node_name)
            except Exception as error:
                status = Status.as_error(error)
            self._recorder.plugin(state, plugin.name, ExtensionPoint.PRE_BIND, status, begun)
            if status is not None and status.code is not Code.SUCCESS:
                final = rejection_or_error("PreBind", plugin.name, status)
                self._recorder.observe(ExtensionPoint.PRE_BIND, final, started)
                return final
        self._recorder.observe(ExtensionPoint.PRE_BIND, None, started)
        return None

    async def run_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        started = time.perf_counter()
        final = Status.skip()
        for plugin in self._plugins.bind:
            begun = time.perf_counter()
            try:
                status = await plugin.bind(state, pod, node_name)
            except Exception as error:
                status = Status.as_error(error)
            self._recorder.plugin(state, plugin.name, ExtensionPoint.BIND, status, begun)
            code = code_of(status)
            if code is Code.SKIP:
                continue
            if code is Code.SUCCESS:
                final = Status.success()
            elif status is not None and status.is_rejected():
                final = status.with_plugin(plugin.name)
            else:
                assert status is not None
                final = Status.as_error(
                    f'running Bind plugin "{plugin.name}": {status.message()}'
                ).with_plugin(plugin.name)
            break
        self._recorder.observe(ExtensionPoint.BIND, final, started)
        return final

    def run_post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        started = time.perf_counter()
        for plugin in self._plugins.post_bind:
            begun = time.perf_counter()
            try:
                plugin.post_bind(state, pod, node_name)
            except Exception:  # informational only
                self._recorder.plugin(
                    state, plugin.name, ExtensionPoint.POST_BIND, Status.as_error(""), begun
                )
                continue
            self._recorder.plugin(state, plugin.name, ExtensionPoint.POST_BIND, None, begun)
        self._recorder.observe(ExtensionPoint.POST_BIND, None, started)
