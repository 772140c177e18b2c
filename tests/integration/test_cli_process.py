"""The ``pyscheduler`` console script as a real process against a real API
server: a bad configuration stops it before it connects; a good one makes it
ready and binding; SIGTERM in the middle of a burst makes it exit 0 within its
grace period, leaving nothing overcommitted and nothing that a second instance
cannot finish."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest
from kubernetes_asyncio import client

from bench.checks import overcommitted_nodes
from localcluster.cluster import free_port
from localcluster.process import ComponentProcess
from scheduler.app import AppOptions
from scheduler.cli import EXIT_CONFIG
from tests.integration.conftest import Cluster, NodePool
from tests.support.builders import make_node, make_pod
from tests.support.kubeapi import create_all, list_pods, read_json
from tests.support.ops import kubeconfig_token, ops_get
from tests.support.scheduler import running_scheduler, scheduler_config, unique_scheduler_name
from tests.support.wait import ConditionTimeout, eventually

T = TypeVar("T")

PYSCHEDULER = Path(sys.executable).parent / "pyscheduler"
BIND_GRACE_SECONDS = 5.0
# SIGTERM to exit: drain binds (bounded by the bind grace), flush pod status
# and events (bounded by the flush grace), close; plus slack for a busy machine.
SHUTDOWN_DEADLINE = BIND_GRACE_SECONDS + AppOptions().flush_grace_seconds + 5.0
BURST = 150


class Daemon:
    """One ``pyscheduler`` process; its stdout and stderr go to a log file."""

    def __init__(self, process: ComponentProcess, port: int) -> None:
        self.process = process
        self.base = f"https://127.0.0.1:{port}"

    def report(self, problem: str) -> str:
        return f"{problem}\n--- pyscheduler log ---\n{self.process.tail(40)}"

    async def until(self, probe: Callable[[], Awaitable[T | None]], what: str) -> T:
        """``eventually``, but failing at once, with the log, if the process died."""

        async def alive_and_probe() -> T | None:
            if not self.process.running():
                code = self.process.exit_code()
                raise AssertionError(self.report(f"pyscheduler exited with code {code}"))
            return await probe()

        try:
            return await eventually(alive_and_probe, timeout=30, what=what)
        except ConditionTimeout as error:
            raise AssertionError(self.report(str(error))) from None

    async def get(self, path: str, token: str | None = None) -> tuple[int, str]:
        return await ops_get(self.base, path, token)

    async def ready(self) -> tuple[int, str]:
        async def answered() -> tuple[int, str] | None:
            try:
                status, body = await self.get("/readyz")
            except aiohttp.ClientConnectionError:
                return None  # not listening yet
            return (status, body) if status == 200 else None

        return await self.until(answered, "/readyz 200")

    async def terminate(self) -> tuple[int | None, float]:
        """Send SIGTERM; return the exit code and the seconds it took to exit."""
        pid = self.process.pid
        assert pid is not None, "pyscheduler was never started"
        started = time.monotonic()
        os.kill(pid, signal.SIGTERM)

        async def exited() -> tuple[int | None] | None:
            return None if self.process.running() else (self.process.exit_code(),)

        try:
            (code,) = await eventually(exited, timeout=SHUTDOWN_DEADLINE, what="exit on SIGTERM")
        except ConditionTimeout as error:
            raise AssertionError(self.report(str(error))) from None
        return code, time.monotonic() - started


@asynccontextmanager
async def pyscheduler(
    kubeconfig: Path, name: str, workdir: Path, *extra: str
) -> AsyncIterator[Daemon]:
    """Run ``pyscheduler`` with one profile ``name``; always stopped (and reaped)
    on exit, killed if it ignores SIGTERM."""
    config = workdir / f"{name}.yaml"
    config.write_text(scheduler_config(name))
    port = free_port()
    argv = [
        str(PYSCHEDULER),
        f"--config={config}",
        f"--kubeconfig={kubeconfig}",
        f"--secure-port={port}",
        "--bind-address=127.0.0.1",
        f"--bind-grace-seconds={BIND_GRACE_SECONDS:g}",
        *extra,
    ]
    process = ComponentProcess("pyscheduler", argv, workdir / f"{name}.log")
    process.start()
    try:
        yield Daemon(process, port)
    finally:
        await asyncio.to_thread(process.stop, SHUTDOWN_DEADLINE)


# ------------------------------------------------------------------ helpers
async def _placements(core: client.CoreV1Api, namespace: str) -> dict[str, str]:
    return {
        pod["metadata"]["name"]: pod["spec"].get("nodeName", "")
        for pod in await list_pods(core, namespace)
    }


async def _bound_at_least(core: client.CoreV1Api, namespace: str, count: int) -> int | None:
    bound = sum(1 for node in (await _placements(core, namespace)).values() if node)
    return bound if bound >= count else None


async def _nodes_json(core: client.CoreV1Api, names: list[str]) -> list[dict[str, Any]]:
    listed = await read_json(await core.list_node(_preload_content=False))
    return [node for node in listed["items"] if node["metadata"]["name"] in names]


# -------------------------------------------------------------------- tests
@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param(
            "apiVersion: kubescheduler.config.k8s.io/v1\n"
            "kind: KubeSchedulerConfiguration\n"
            "profiles:\n- schedulerName: p\n  bogus: 1\n",
            "profiles[0].bogus: unknown field",
            id="unknown field",
        ),
        pytest.param(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: [\n",
            "bad.yaml:3:1: invalid YAML",
            id="invalid YAML",
        ),
    ],
)
async def test_bad_config_exits_2_before_connecting(
    document: str, expected: str, tmp_path: Path
) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(document)
    # A kubeconfig that cannot load: any attempt to connect would fail differently.
    process = await asyncio.create_subprocess_exec(
        str(PYSCHEDULER),
        f"--config={config}",
        f"--kubeconfig={tmp_path / 'absent'}",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=60)

    assert process.returncode == EXIT_CONFIG, stderr.decode()
    assert stdout == b""
    assert expected in stderr.decode()
    assert "Traceback" not in stderr.decode()


async def test_daemon_process_becomes_ready_and_binds_only_its_own_pods(
    control_plane: Cluster,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
    tmp_path: Path,
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    for index in range(2):
        await nodes.create(make_node(f"p{index}").capacity(cpu="4", memory="8Gi", pods="110").obj())
    # Reviews through their own kubeconfigs (the same admin here), as upstream's flags.
    reviews = (
        f"--authentication-kubeconfig={control_plane.kubeconfig}",
        f"--authorization-kubeconfig={control_plane.kubeconfig}",
    )
    async with pyscheduler(control_plane.kubeconfig, name, tmp_path, *reviews) as daemon:
        assert await daemon.ready() == (200, "ok")
        ours = [
            make_pod(f"ours-{i}", namespace).scheduler(name).requests(cpu="500m").obj()
            for i in range(5)
        ]
        theirs = make_pod("theirs", namespace).scheduler("someone-else").obj()
        await create_all(lambda body: core.create_namespaced_pod(namespace, body), [*ours, theirs])

        await daemon.until(lambda: _bound_at_least(core, namespace, 5), "our pods bound")
        placements = await _placements(core, namespace)
        assert {placements[f"ours-{i}"] for i in range(5)} <= set(nodes.names)
        assert placements["theirs"] == ""
        status, metrics = await daemon.get("/metrics")
        assert status == 403, "anonymous /metrics must be refused"
        status, metrics = await daemon.get("/metrics", kubeconfig_token(control_plane.kubeconfig))
        assert status == 200
        assert f'scheduler_schedule_attempts_total{{profile="{name}",result="scheduled"}} 5.0' in (
            metrics
        )

        code, _ = await daemon.terminate()
        assert code == 0, daemon.report("idle daemon did not exit 0 on SIGTERM")


async def test_sigterm_mid_burst_exits_0_within_grace_and_loses_no_pod(
    control_plane: Cluster,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
    tmp_path: Path,
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    for index in range(4):
        await nodes.create(make_node(f"b{index}").capacity(cpu="8", memory="8Gi", pods="110").obj())
    # 150 x 200m = 30 cpu of the 32: every pod fits, but only just.
    burst = [
        make_pod(f"burst-{i:03d}", namespace).scheduler(name).requests(cpu="200m").obj()
        for i in range(BURST)
    ]
    async with pyscheduler(control_plane.kubeconfig, name, tmp_path) as daemon:
        await daemon.ready()
        creating = asyncio.create_task(
            create_all(lambda body: core.create_namespaced_pod(namespace, body), burst),
            name="create-burst",
        )
        try:
            await daemon.until(lambda: _bound_at_least(core, namespace, 10), "burst under way")
            code, took = await daemon.terminate()
        finally:
            await creating
        assert code == 0, daemon.report(f"exit code {code} on SIGTERM mid-burst")
        assert took <= SHUTDOWN_DEADLINE

    left_behind = await list_pods(core, namespace)
    assert len(left_behind) == BURST
    assert overcommitted_nodes(await _nodes_json(core, nodes.names), left_behind) == {}

    async with running_scheduler(control_plane.kubeconfig, name):
        await eventually(
            lambda: _bound_at_least(core, namespace, BURST),
            timeout=120,
            what="a second instance binds every remaining pod",
        )
    finished = await list_pods(core, namespace)
    assert overcommitted_nodes(await _nodes_json(core, nodes.names), finished) == {}
