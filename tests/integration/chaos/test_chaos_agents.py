"""Chaos scenarios of the AutoscaleEnforcer's agent port: the burst is
scheduled by a profile with the AutoscaleEnforcer, some of its pods are VM
pods whose agents keep talking to the agent port, and the fault hits that
port's process while the burst schedules. Same verdict and summary row as
``test_chaos.py``: nothing lost, bound twice or overcommitted, the cache
comparer clean, and the fault observed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from kubernetes_asyncio import client

from plugins.autoscale_enforcer import CONFIG_MAP_KEY
from plugins.autoscale_enforcer.plugin import AGENT_LISTENER, NAME
from scheduler.app.root import SchedulerApp
from scheduler.services.process import ProcessListener
from tests.integration.chaos.harness import Scene, assert_in_flight, size, verdict
from tests.support.builders import make_config_map, make_vm
from tests.support.faultproxy import Kind
from tests.support.neonvm import GROUP, VERSION, enforcer_config, install_neonvm_crds
from tests.support.scheduler import running_scheduler, scheduler_config
from tests.support.wait import ConditionTimeout, eventually

pytestmark = pytest.mark.timeout(900)

VM_PODS = 20 if size().pods >= 500 else 10
CONFIG_NAMESPACE = "kube-system"
AGENT_PERIOD_SECONDS = 0.1  # each agent asks this often
REPO = Path(__file__).resolve().parents[3]


def _profile(config_map: str) -> str:
    return f"""  plugins:
    multiPoint:
      enabled:
      - name: {NAME}
  pluginConfig:
  - name: {NAME}
    args:
      configMapName: {config_map}
      agentPort: 0
"""


@contextlib.asynccontextmanager
async def enforced(scene: Scene) -> AsyncIterator[tuple[SchedulerApp, ProcessListener, int]]:
    """The scheduler under test (through the proxy) with the AutoscaleEnforcer
    in its profile, its ConfigMap, and a VM (1 vCPU, one 1 GiB slot, its agent
    on) for each of the burst's VM pods. Yields the app, its agent process
    listener and the agent port."""
    burst = scene.burst
    await install_neonvm_crds(scene.kube)
    core = client.CoreV1Api(scene.kube)
    custom = client.CustomObjectsApi(scene.kube)
    config_map = f"chaos-enforcer-{secrets.token_hex(3)}"
    body = make_config_map(
        config_map, CONFIG_NAMESPACE, {CONFIG_MAP_KEY: enforcer_config(burst.name)}
    )
    del body["metadata"]["uid"]
    await core.create_namespaced_config_map(CONFIG_NAMESPACE, body)
    try:
        for name in sorted(burst.vm_pods):
            vm = (
                make_vm(name, burst.namespace)
                .cpus(1, 1, 1)
                .memory_slots(1, 1, 1)
                .label("autoscaling.neon.tech/enabled", "true")
                .pod_name(name)
                .obj()
            )
            vm["spec"]["schedulerName"] = burst.name
            await custom.create_namespaced_custom_object(
                GROUP, VERSION, burst.namespace, "virtualmachines", vm
            )
        config = scheduler_config(burst.name, _profile(config_map))
        async with running_scheduler(scene.via_proxy, burst.name, config_text=config) as app:
            (listener,) = app.plugin_services.process_listeners
            assert listener.name == AGENT_LISTENER
            yield app, listener, app.listeners.port(AGENT_LISTENER)
    finally:
        with contextlib.suppress(client.ApiException):
            await core.delete_namespaced_config_map(config_map, CONFIG_NAMESPACE)


@dataclass
class Agents:
    """Simulated autoscaler-agents, one per VM pod, each telling the agent
    port its VM's current size (a notification: always granted once the pod
    is reserved) every ``AGENT_PERIOD_SECONDS``; answers are recorded with
    their time (``error``: no HTTP answer)."""

    port: int
    namespace: str
    pods: list[str]
    answers: list[tuple[float, str]] = field(default_factory=list)

    def count(self, since: float = 0.0) -> Counter[str]:
        return Counter(status for at, status in self.answers if at >= since)

    async def run(self, stop: asyncio.Event) -> None:
        timeout = aiohttp.ClientTimeout(total=10)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            await asyncio.gather(*(self._agent(session, pod, stop) for pod in self.pods))

    async def _agent(self, session: aiohttp.ClientSession, pod: str, stop: asyncio.Event) -> None:
        body = orjson.dumps(
            {
                "protoVersion": 2,
                "pod": {"namespace": self.namespace, "name": pod},
                "resources": {"vCPUs": 1, "mem": 1},
                "metrics": None,
            }
        )
        url = f"http://127.0.0.1:{self.port}/"
        while not stop.is_set():
            try:
                async with session.post(url, data=body) as response:
                    await response.read()
                    status = str(response.status)
            except (aiohttp.ClientError, TimeoutError):
                status = "error"
            self.answers.append((time.monotonic(), status))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), AGENT_PERIOD_SECONDS)


@contextlib.asynccontextmanager
async def talking(agents: Agents) -> AsyncIterator[Agents]:
    stop = asyncio.Event()
    task = asyncio.create_task(agents.run(stop), name="chaos-agents")
    try:
        yield agents
    finally:
        stop.set()
        await asyncio.gather(task, return_exceptions=True)


async def test_the_agent_process_killed_while_vm_pods_schedule(scene: Scene) -> None:
    """The agent port's process is SIGKILLed while the burst (VM pods among
    it) schedules and binds are held: the scheduler restarts it and goes on;
    pods waiting at Permit for it are retried, none lost or bound twice."""
    burst, nodes, proxy, outcome = scene.burst, scene.nodes, scene.proxy, scene.outcome
    burst.vm_pods = set(burst.fitting[:VM_PODS])
    await burst.create_nodes(nodes)
    proxy.delay[Kind.BIND] = 1.0
    async with enforced(scene) as (app, listener, port):
        agents = Agents(port, burst.namespace, sorted(burst.vm_pods))
        async with talking(agents):
            creating = burst.start()
            await burst.until_bound(burst.size.pods // 5)

            async def answered() -> int | None:
                granted = agents.count()["200"]
                return granted if granted >= 3 else None

            before = await eventually(answered, timeout=60, what="agents granted before the kill")
            outcome.note = await assert_in_flight(
                burst, proxy, app.scheduler.binding_in_flight(), need_binds=True
            )
            pid, restarts = listener.pid, listener.restarts
            assert pid is not None
            killed_at = time.monotonic()
            os.kill(pid, signal.SIGKILL)
            outcome.faults.append(f"agent process SIGKILLed after {before} agent grants")

            async def restarted() -> int | None:
                new = listener.pid
                ok = listener.restarts > restarts and new not in (None, pid) and app.ready
                return new if ok else None

            new_pid = await eventually(restarted, timeout=90, what="the agent process restarted")

            async def answered_again() -> int | None:
                granted = agents.count(killed_at)["200"]
                return granted if granted else None

            await eventually(answered_again, timeout=60, what="agents answered by the new process")
            await creating
            proxy.delay.clear()
            after = agents.count(killed_at)
            outcome.observed = [
                f"agent process restarted (pid {pid} -> {new_pid})",
                f"agents after the kill: {dict(sorted(after.items()))}",
            ]
            await verdict(
                burst,
                outcome,
                node_names=lambda: nodes.names,
                comparer=app.cache_debugger.report_json,
                proxy=proxy,
            )


PIPELINERS = 4
SLOW_CLIENTS = 200 if size().pods >= 500 else 50
GARBAGE_CLIENTS = 8


class HostileLoad:
    """``tests.support.agent_hostile`` in a process of its own."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def report(self) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(b"report\n")
        await self.process.stdin.drain()
        line = await asyncio.wait_for(self.process.stdout.readline(), 30)
        if not line:
            raise AssertionError(f"the hostile clients exited ({self.process.returncode})")
        report: dict[str, Any] = orjson.loads(line)
        return report


@contextlib.asynccontextmanager
async def hostile(port: int) -> AsyncIterator[HostileLoad]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.support.agent_hostile",
        str(port),
        str(PIPELINERS),
        str(SLOW_CLIENTS),
        str(GARBAGE_CLIENTS),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=REPO,
    )
    try:
        yield HostileLoad(process)
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()


async def test_hostile_clients_on_the_agent_port_while_scheduling(scene: Scene) -> None:
    """Issue 20 defects 3 and 4 under a burst: clients that pipeline and
    never read, slow-loris heads and malformed requests load the agent port
    while VM pods schedule and their agents talk: every pod binds, the
    agents are answered, the agent process never dies, and the hostile
    clients get what the listener promises (a stalled pipeline, 4xx/5xx for
    garbage, slow heads held or timed out)."""
    burst, nodes, proxy, outcome = scene.burst, scene.nodes, scene.proxy, scene.outcome
    burst.vm_pods = set(burst.fitting[:VM_PODS])
    await burst.create_nodes(nodes)
    proxy.delay[Kind.BIND] = 0.2
    async with enforced(scene) as (app, listener, port), hostile(port) as load:
        pid, restarts = listener.pid, listener.restarts

        last: dict[str, Any] = {}

        async def loaded() -> dict[str, Any] | None:
            nonlocal last
            report = last = await load.report()
            answers = sum(report["garbage_answers"].values())
            heavy = (
                report["stalled"] >= PIPELINERS
                and report["slow_open"] >= SLOW_CLIENTS
                and answers >= 2 * GARBAGE_CLIENTS
            )
            return report if heavy else None

        try:
            await eventually(loaded, timeout=120, what="the hostile load on the agent port")
        except ConditionTimeout as error:
            raise AssertionError(f"{error}; the hostile clients saw {last}") from error
        agents = Agents(port, burst.namespace, sorted(burst.vm_pods))
        async with talking(agents):
            loaded_at = time.monotonic()
            creating = burst.start()
            await burst.until_bound(burst.size.pods // 10)
            outcome.note = await assert_in_flight(burst, proxy, app.scheduler.binding_in_flight())
            outcome.faults.append(
                f"{PIPELINERS} never-reading pipeliners, {SLOW_CLIENTS} slow-loris, "
                f"{GARBAGE_CLIENTS} garbage clients"
            )

            async def all_bound() -> bool:
                return await burst.bound_count() >= burst.size.pods

            await eventually(all_bound, timeout=burst.size.settle_timeout, what="all bound")
            await creating

            async def granted() -> int | None:
                count = agents.count(loaded_at)["200"]
                return count if count >= len(burst.vm_pods) else None

            grants = await eventually(granted, timeout=60, what="agents granted under the load")
            report = await load.report()
        assert (listener.pid, listener.restarts) == (pid, restarts), "the agent process died"
        codes = report["garbage_answers"]
        assert codes, report
        assert all(code[0] in "45" for code in codes), f"garbage was answered {codes}"
        assert report["stalled"] >= 1, f"no pipeline was stalled (back-pressure): {report}"
        outcome.observed = [
            f"garbage answered {dict(sorted(codes.items()))}",
            f"{report['stalled']} pipeliners stalled after {report['pipelined'] >> 10} KiB",
            f"{report['slow_open']} slow heads held, {report['slow_closed']} timed out",
            f"agents granted x{grants} under load",
            "agent process alive",
        ]
        proxy.delay.clear()
        await verdict(
            burst,
            outcome,
            node_names=lambda: nodes.names,
            comparer=app.cache_debugger.report_json,
            proxy=proxy,
        )
