"""The ``pyscheduler`` console script as a real process against a real API
server: a bad configuration stops it before it connects; a good one makes it
ready and binding; SIGTERM in the middle of a burst makes it exit 0 within its
grace period, leaving nothing overcommitted and nothing that a second instance
cannot finish."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from bench.checks import overcommitted_nodes
from scheduler.app.cli import EXIT_CONFIG
from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster, NodePool
from tests.support.daemon import PYSCHEDULER, SHUTDOWN_DEADLINE, UPSTREAM_OPEN, pyscheduler
from tests.support.faultproxy import FaultProxy, Kind
from tests.support.kubeapi import create_all, list_pods, read_json
from tests.support.ops import kubeconfig_token
from tests.support.scheduler import running_scheduler, unique_scheduler_name
from tests.support.wait import eventually

BURST = 150

# Each bind is held this long by the proxy: longer than the bind grace, so the
# binds in flight at SIGTERM are cancelled and rolled back, not drained.
BIND_DELAY_SECONDS = 8.0


# ------------------------------------------------------------------ helpers
async def _placements(core: client.CoreV1Api, namespace: str) -> dict[str, str]:
    return {
        pod["metadata"]["name"]: pod["spec"].get("nodeName", "")
        for pod in await list_pods(core, namespace)
    }


async def _bound_at_least(core: client.CoreV1Api, namespace: str, count: int) -> int | None:
    bound = sum(1 for node in (await _placements(core, namespace)).values() if node)
    return bound if bound >= count else None


async def _logged(daemon: Any, text: str) -> bool:
    return text in daemon.process.tail(200)


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
    async with pyscheduler(
        control_plane.kubeconfig, name, tmp_path, *reviews, open_paths=UPSTREAM_OPEN
    ) as daemon:
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

        daemon.signal(signal.SIGUSR2)
        await daemon.until(
            lambda: _logged(daemon, "cache comparer: 0 differences"), "SIGUSR2 report logged"
        )

        code, _ = await daemon.terminate()
        assert code == 0, daemon.report("idle daemon did not exit 0 on SIGTERM")


async def test_sigterm_with_binds_in_flight_exits_0_within_grace_and_loses_no_pod(
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
    async with FaultProxy(control_plane.kubeconfig) as proxy:
        proxy.delay[Kind.BIND] = BIND_DELAY_SECONDS
        via_proxy = proxy.write_kubeconfig(tmp_path / "via-proxy.kubeconfig")
        async with pyscheduler(via_proxy, name, tmp_path) as daemon:
            await daemon.ready()
            await create_all(lambda body: core.create_namespaced_pod(namespace, body), burst)

            async def binds_held() -> int | None:
                held = len(proxy.binds_in_flight)
                return held if held >= 10 else None

            held = await daemon.until(binds_held, "binds held in flight by the proxy")
            assert held >= 10
            code, took = await daemon.terminate()
            assert code == 0, daemon.report(f"exit code {code} on SIGTERM mid-burst")
            assert took <= SHUTDOWN_DEADLINE
            assert "binding cycles did not finish and were rolled back" in daemon.process.tail(
                200
            ), daemon.report("the binds in flight were not rolled back")
        proxy.delay.clear()
        assert proxy.double_bound() == {}

        left_behind = await list_pods(core, namespace)
        assert len(left_behind) == BURST
        assert overcommitted_nodes(await _nodes_json(core, nodes.names), left_behind) == {}

        async with running_scheduler(via_proxy, name) as second:
            await eventually(
                lambda: _bound_at_least(core, namespace, BURST),
                timeout=120,
                what="a second instance binds every remaining pod",
            )
            report = await second.cache_debugger.report()
            assert report.differences == []
        assert proxy.double_bound() == {}
    finished = await list_pods(core, namespace)
    assert overcommitted_nodes(await _nodes_json(core, nodes.names), finished) == {}
