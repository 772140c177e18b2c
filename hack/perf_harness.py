"""In-process backlog measurement of the scheduler's CPU per pod (perf work).

Starts a fresh etcd + kube-apiserver (localcluster), creates NODES nodes and
PODS pending pods for the default profile, then runs ``SchedulerApp`` in this
process and reports, between the first and the last bind: CPU per pod from
``time.process_time`` (user and system apart, from ``os.times``), wall time,
and the client's ``connections_opened`` (TLS handshakes) at the first bind and
at the end. CPU time, not wall time, is the figure to compare on a shared
machine. PROFILE=<file> writes a cProfile of the measured window (its wall
times include preemption: a ``socket.send`` waking the apiserver looks slow
but costs ~no CPU here).

    NODES=500 PODS=1500 PYTHONPATH=. .venv/bin/python hack/perf_harness.py
"""

from __future__ import annotations

import asyncio
import cProfile
import json
import os
import tempfile
import time
from collections.abc import Iterable
from typing import Any

from bench.workload import namespace_body, node_body, node_name, pod_body, pod_name
from localcluster import ControlPlane, ControlPlaneOptions
from scheduler.app.root import AppOptions, SchedulerApp
from scheduler.config.loading import load_config
from scheduler.kube.client import KubeClient
from scheduler.kube.resources import NODES, PODS

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
"""
SCHEDULER_NAME = "pyscheduler"  # the default profile's name


async def create_all(
    client: KubeClient, items: Iterable[tuple[str, Any]], concurrency: int = 30
) -> None:
    pending = iter(items)

    async def worker() -> None:
        for path, body in pending:
            await client.request("POST", path, body)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def measure(kubeconfig: str, nodes: int, pods: int, profile: str | None) -> dict[str, Any]:
    admin = await KubeClient.connect(kubeconfig=kubeconfig, qps=0, burst=0, user_agent="harness")
    await admin.request("POST", "/api/v1/namespaces", namespace_body("bench"))
    await create_all(
        admin, [(NODES.collection_path(), node_body(node_name(i))) for i in range(nodes)]
    )
    await create_all(
        admin,
        [
            (PODS.collection_path("bench"), pod_body(pod_name(i), "bench", SCHEDULER_NAME))
            for i in range(pods)
        ],
    )
    await admin.close()
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as file:
        file.write(CONFIG)
    client = await KubeClient.connect(
        kubeconfig=kubeconfig, qps=5000, burst=5000, user_agent="pyscheduler"
    )
    app = SchedulerApp(load_config(file.name), client, AppOptions(bind_address="127.0.0.1", port=0))
    pod_store = app.informer_factory.informer(PODS).store
    started_wall, started_cpu = time.monotonic(), time.process_time()
    running = asyncio.create_task(app.run())
    first: tuple[float, float, int, int, os.times_result] | None = None
    profiler = cProfile.Profile() if profile else None
    while True:
        await asyncio.sleep(0.2)
        if not app.ready:
            continue
        bound = sum(1 for obj in pod_store.list() if obj.get("spec", {}).get("nodeName"))
        if bound and first is None:
            first = (
                time.monotonic(),
                time.process_time(),
                bound,
                client.connections_opened,
                os.times(),
            )
            if profiler:
                profiler.enable()
        if bound >= pods:
            break
    end_wall, end_cpu, end_times = time.monotonic(), time.process_time(), os.times()
    if profiler and profile:
        profiler.disable()
        profiler.dump_stats(profile)
    connections = client.connections_opened
    app.stop()
    await asyncio.wait_for(running, 60)
    assert first is not None
    measured = pods - first[2]
    return {
        "start_to_first_bind_wall_s": round(first[0] - started_wall, 2),
        "start_to_first_bind_cpu_s": round(first[1] - started_cpu, 3),
        "cpu_per_pod_ms": round((end_cpu - first[1]) * 1000 / measured, 3),
        "user_ms_per_pod": round((end_times.user - first[4].user) * 1000 / measured, 3),
        "sys_ms_per_pod": round((end_times.system - first[4].system) * 1000 / measured, 3),
        "wall_s": round(end_wall - first[0], 2),
        "connections_at_first_bind": first[3],
        "connections_at_end": connections,
    }


def main() -> None:
    nodes = int(os.environ.get("NODES", "500"))
    pods = int(os.environ.get("PODS", "1500"))
    options = ControlPlaneOptions(controller_manager=False, unlimited_inflight=True)
    with ControlPlane(options) as plane:
        result = asyncio.run(measure(str(plane.kubeconfig), nodes, pods, os.environ.get("PROFILE")))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
