"""AutoscaleEnforcer with its authority in a real child process: the daemon's
loop never waits for it (Reserve asks, Permit holds the pod until the
answer), and an authority that dies is restarted with its state rebuilt,
reservations of pods being bound included (issue 25 #4, issue 20)."""

from __future__ import annotations

import asyncio
import inspect
import os
import random
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import orjson
import pytest

from plugins.autoscale_enforcer import AutoscaleEnforcer, AutoscaleEnforcerArgs
from plugins.autoscale_enforcer.authority import Dump
from plugins.autoscale_enforcer.plugin import AUTHORITY_WATCH, REASON_NO_ROOM, STATE_DUMP_PATH
from scheduler.framework import Code, CycleState, Handle, HttpRequest, ListenerLimits
from scheduler.services.process import ProcessListener
from tests.support.builders import make_node
from tests.unit.plugins.support import node_info, pod
from tests.unit.plugins.test_autoscale_plugin import FakeHandle, config_map, plain_pod

NODE = make_node("n1").allocatable(cpu="8", memory="8Gi", pods="110").obj()


@asynccontextmanager
async def with_authority(
    args: AutoscaleEnforcerArgs | None = None,
) -> AsyncIterator[tuple[AutoscaleEnforcer, FakeHandle, ProcessListener]]:
    handle = FakeHandle()
    plugin = AutoscaleEnforcer(
        args or AutoscaleEnforcerArgs(agent_port=0, init_config_map_timeout_seconds=5),
        cast(Handle, handle),
        random.Random(1),
    )
    (listener,) = handle.services.process_listeners
    await listener.start("127.0.0.1")
    try:
        listener.update_gate(None)
        handle.informers.put("nodes", NODE)
        handle.informers.put("configmaps", config_map())
        await handle.services.start()
        yield plugin, handle, listener
    finally:
        await listener.stop()


async def dump(listener: ProcessListener) -> dict[str, Any]:
    return cast(dict[str, Any], await listener.ask(Dump(), timeout=30))


async def eventually(check: Callable[[], Any], what: str) -> Any:
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        try:
            found = await check()
        except Exception:
            found = None
        if found:
            return found
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def test_reserve_does_not_wait_for_a_stopped_authority_and_permit_holds_the_pod() -> None:
    async with with_authority() as (plugin, handle, listener):
        pid = listener.pid
        assert pid is not None
        first = pod(plain_pod("first", cpu="6", memory="1Gi"))
        os.kill(pid, signal.SIGSTOP)
        try:
            # Before: Reserve blocked the loop on the authority for 5 s, then failed.
            assert plugin.reserve(CycleState(), first, "n1") is None
            status, timeout = plugin.permit(CycleState(), first, "n1")
            assert status is not None
            assert status.code is Code.WAIT
            assert timeout == 5.0
            waiting = handle.hold(first)
            # Meanwhile Filter counts the pod it asked for on its node.
            second = pod(plain_pod("second", cpu="4", memory="1Gi"))
            info = node_info(NODE, plain_pod("first", cpu="6", memory="1Gi"))
            assert plugin.filter(CycleState(), second, info) is not None
            assert not waiting.verdict.done()
        finally:
            os.kill(pid, signal.SIGCONT)
        assert await asyncio.wait_for(waiting.verdict, 30) is None  # allowed
        assert "default/first" in (await dump(listener))["nodes"]["n1"]["pods"]


async def test_a_reserve_the_authority_cannot_answer_in_time_is_rejected_at_permit() -> None:
    args = AutoscaleEnforcerArgs(
        agent_port=0, init_config_map_timeout_seconds=5, reserve_timeout_seconds=0.2
    )
    async with with_authority(args) as (plugin, handle, listener):
        pid = listener.pid
        assert pid is not None
        late = pod(plain_pod("late"))
        os.kill(pid, signal.SIGSTOP)
        try:
            assert plugin.reserve(CycleState(), late, "n1") is None
            status, timeout = plugin.permit(CycleState(), late, "n1")
            assert status is not None
            assert (status.code, timeout) == (Code.WAIT, 0.2)
            handle.hold(late)
            # The framework's Permit timer rejects the pod and rolls back:
            plugin.unreserve(CycleState(), late, "n1")
        finally:
            os.kill(pid, signal.SIGCONT)
        # The authority's late reservation is undone by the Unreserve after it.
        assert "default/late" not in (await dump(listener))["nodes"]["n1"]["pods"]


@pytest.mark.parametrize(
    "kill",
    [
        pytest.param(signal.SIGKILL, id="killed"),
        pytest.param(signal.SIGSTOP, id="stopped (hung): killed by the heartbeat"),
    ],
)
async def test_a_lost_authority_is_restarted_and_keeps_bound_pods_and_pods_being_bound(
    kill: signal.Signals,
) -> None:
    args = AutoscaleEnforcerArgs(
        agent_port=0, init_config_map_timeout_seconds=5, agent_liveness_seconds=2.5
    )
    async with with_authority(args) as (plugin, handle, listener):
        assert listener.limits == ListenerLimits(liveness_seconds=2.5)
        handle.informers.put("pods", plain_pod("bound", node="n1", cpu="2", memory="2Gi"))
        binding = pod(plain_pod("binding", cpu="3", memory="3Gi"))
        assert plugin.reserve(CycleState(), binding, "n1") is None
        status, _ = plugin.permit(CycleState(), binding, "n1")
        if status is not None:
            assert await asyncio.wait_for(handle.hold(binding).verdict, 30) is None
        before = (await dump(listener))["nodes"]["n1"]
        assert set(before["pods"]) == {"default/bound", "default/binding"}
        (worker,) = [w for name, w in handle.services.workers if name == AUTHORITY_WATCH]
        watching = asyncio.create_task(worker())
        try:
            pid = listener.pid
            assert pid is not None
            os.kill(pid, kill)

            async def rebuilt() -> dict[str, Any] | None:
                if listener.restarts < 1 or watching.done():
                    return None
                node = (await dump(listener))["nodes"].get("n1")
                return node if node and len(node["pods"]) == 2 else None

            after = await eventually(rebuilt, "the authority restarted and rebuilt")
            assert not watching.done()  # before: the worker raised, stopping the daemon
            assert after["reserved"] == before["reserved"] == {"cpu": 5000, "mem": 5 << 30}
            # The rebuilt authority answers Reserve again; the mirror follows it.
            third = pod(plain_pod("third", cpu="4", memory="1Gi"))
            info = node_info(
                NODE,
                plain_pod("bound", node="n1", cpu="2", memory="2Gi"),
                plain_pod("binding", node="n1", cpu="3", memory="3Gi"),
            )
            filtered = plugin.filter(CycleState(), third, info)
            assert filtered is not None
            assert filtered.message() == REASON_NO_ROOM
        finally:
            watching.cancel()
            with pytest.raises(asyncio.CancelledError):
                await watching


async def test_the_state_dump_waits_for_a_stopped_authority_without_blocking_the_loop() -> None:
    async with with_authority() as (_plugin, handle, listener):
        pid = listener.pid
        assert pid is not None
        route = handle.services.debug_routes[STATE_DUMP_PATH]
        os.kill(pid, signal.SIGSTOP)
        try:
            answer = route(HttpRequest("GET", "/", b""))
            # Before: a blocking call, 503 after 5 s with the loop held meanwhile.
            assert inspect.isawaitable(answer)
            pending = asyncio.ensure_future(answer)
            for _ in range(20):  # the loop turns while the authority is stopped
                await asyncio.sleep(0)
            assert not pending.done()
        finally:
            os.kill(pid, signal.SIGCONT)
        response = await asyncio.wait_for(pending, 30)
        assert response.status == 200
        assert "n1" in orjson.loads(response.body)["nodes"]
