"""The AutoscaleEnforcer workload: VM pods scheduled while agents storm the plugin.

``python -m bench.autoscale [--nodes 500] [--vms 1000] [--rate 1000]`` (or
``make bench-autoscale``) starts a local control plane with our minimal NeonVM
CRDs, ``--nodes`` nodes and pyscheduler with AutoscaleEnforcer enabled, then:

1. schedules half of ``--vms`` VM pods with no agent traffic (pods/s);
2. starts simulated autoscaler-agents sending ``--rate`` v5.0 requests per
   second (VMs of the first half growing and shrinking by one compute unit)
   and schedules the other half meanwhile (pods/s under the storm);
3. reports agent requests per second, p50/p99 latency and the answers' codes.

The agents run in a process of their own (``storm_process``), so their
latencies are not inflated by this harness creating pods and polling the API
server on its own event loop.

pyscheduler only: upstream kube-scheduler has no AutoscaleEnforcer. The
harness shares the machine with what it measures, so figures are a floor.
Target (issue 9): p99 <= 5 ms at 1000 requests/s while scheduling continues.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import sys
import time
from collections import Counter
from collections.abc import Sequence
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event as ProcessEvent
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

from bench.apiclient import Api
from bench.workload import PAUSE_IMAGE
from localcluster import ControlPlane, ControlPlaneOptions
from localcluster.cluster import free_port
from localcluster.process import ComponentProcess

ROOT = Path(__file__).resolve().parent.parent
CRDS = ROOT / "tests" / "support" / "neonvm-crds.yaml"
PROFILE = "autoscale-scheduler"
NAMESPACE = "bench-vms"
CONFIG_MAP = "scheduler-plugin-config"
CONFIG_KEY = "autoscaler-enforcer-config.json"
VM_PATH = f"/apis/vm.neon.tech/v1/namespaces/{NAMESPACE}/virtualmachines"
POD_PATH = f"/api/v1/namespaces/{NAMESPACE}/pods"
Obj = dict[str, Any]


def scheduler_config(kubeconfig: Path, agent_port: int) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 1000, "burst": 1000},
            "leaderElection": {"leaderElect": False},
            "profiles": [
                {
                    "schedulerName": PROFILE,
                    "plugins": {"multiPoint": {"enabled": [{"name": "AutoscaleEnforcer"}]}},
                    "pluginConfig": [
                        {"name": "AutoscaleEnforcer", "args": {"agentPort": agent_port}}
                    ],
                }
            ],
        },
        sort_keys=False,
    )


def enforcer_config() -> str:
    return orjson.dumps(
        {
            "nodeDefaults": {
                "cpu": {"watermark": 0.9, "system": "0"},
                "memory": {"watermark": 0.9, "system": "0"},
                "computeUnit": {"vCPUs": 1, "mem": 1},
            },
            "memBlockSize": "1Gi",
            "schedulerName": PROFILE,
            "doMigration": False,
        }
    ).decode()


def node(index: int) -> Obj:
    name = f"vm-node-{index}"
    capacity = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def vm(index: int) -> Obj:
    return {
        "apiVersion": "vm.neon.tech/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": f"vm-{index}", "namespace": NAMESPACE},
        "spec": {
            "schedulerName": PROFILE,
            "guest": {
                "cpus": {"min": 1, "max": 4, "use": 1},
                "memorySlots": {"min": 1, "max": 4, "use": 1},
                "memorySlotSize": "1Gi",
            },
        },
        "status": {"podName": f"vm-{index}-pod"},
    }


def vm_pod(index: int) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"vm-{index}-pod",
            "namespace": NAMESPACE,
            "labels": {"vm.neon.tech/name": f"vm-{index}"},
        },
        "spec": {
            "schedulerName": PROFILE,
            "containers": [{"name": "runner", "image": PAUSE_IMAGE}],
        },
    }


def quantile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


async def create_many(api: Api, path: str, bodies: Sequence[Obj], concurrency: int = 32) -> None:
    queue = list(bodies)

    async def worker() -> None:
        while queue:
            await api.create(path, queue.pop())

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def bound_count(api: Api) -> int:
    listed = await api.get(POD_PATH)
    return sum(1 for pod in listed["items"] if pod["spec"].get("nodeName"))


async def schedule(api: Api, first: int, count: int) -> float:
    """Create VMs and pods ``first..first+count``; pods/s until all are bound."""
    await create_many(api, VM_PATH, [vm(i) for i in range(first, first + count)])
    started = time.monotonic()
    await create_many(api, POD_PATH, [vm_pod(i) for i in range(first, first + count)])
    deadline = started + 600
    while await bound_count(api) < first + count:
        if time.monotonic() > deadline:
            raise RuntimeError("VM pods not all bound within 600 s")
        await asyncio.sleep(0.2)
    return count / (time.monotonic() - started)


class Storm:
    """Simulated agents: ``rate`` v5.0 requests/s over the given VM pods."""

    def __init__(self, url: str, pods: int, rate: int) -> None:
        self.url, self.pods, self.rate = url, pods, rate
        self.latencies: list[tuple[float, float]] = []  # (sent at, seconds)
        self.codes: Counter[int] = Counter()
        self.sent = 0
        self._stop = asyncio.Event()

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> float:
        """Send until stopped; returns the achieved requests per second."""
        connector = aiohttp.TCPConnector(limit=256)
        async with aiohttp.ClientSession(connector=connector) as session:
            tasks: set[asyncio.Task[None]] = set()
            started = time.monotonic()
            while not self._stop.is_set():
                target = started + self.sent / self.rate
                delay = target - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                task = asyncio.create_task(self._one(session, self.sent))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                self.sent += 1
            await asyncio.gather(*tasks)
            return self.sent / (time.monotonic() - started)

    async def _one(self, session: aiohttp.ClientSession, n: int) -> None:
        index = n % self.pods
        size = 1 + (n // self.pods) % 2  # grow to 2, shrink to 1, ...
        body = {
            "protoVersion": 7,
            "pod": {"namespace": NAMESPACE, "name": f"vm-{index}-pod"},
            "resources": {"vCPUs": size, "mem": f"{size}Gi"},
            "computeUnit": {"vCPUs": 1, "mem": "1Gi"},
            "metrics": {"loadAvg1M": 0.5},
        }
        began = time.perf_counter()
        try:
            async with session.post(self.url, data=orjson.dumps(body)) as response:
                await response.read()
                self.codes[response.status] += 1
        except aiohttp.ClientError:
            self.codes[0] += 1
            return
        self.latencies.append((time.monotonic(), time.perf_counter() - began))


StormResult = tuple[float, int, dict[int, int], list[tuple[float, float]]]


def storm_process(url: str, pods: int, rate: int, stop: ProcessEvent, out: Connection) -> None:
    """A ``Storm`` in a process of its own, until ``stop``; sends its result on ``out``."""
    storm = Storm(url, pods, rate)

    async def main() -> float:
        running = asyncio.create_task(storm.run())
        await asyncio.to_thread(stop.wait)
        storm.stop()
        return await running

    achieved = asyncio.run(main())
    out.send((achieved, storm.sent, dict(storm.codes), storm.latencies))


async def run(
    args: argparse.Namespace, plane: ControlPlane, processes: list[ComponentProcess]
) -> None:
    plane.start()
    async with Api.connect(plane.server, plane.ca_file, plane.token) as api:
        for crd in yaml.safe_load_all(CRDS.read_text()):
            await api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        for _ in range(300):
            with contextlib.suppress(Exception):
                await api.get("/apis/vm.neon.tech/v1/virtualmachines")
                break
            await asyncio.sleep(0.1)
        await api.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        await api.create(
            "/api/v1/namespaces/kube-system/configmaps",
            {"metadata": {"name": CONFIG_MAP}, "data": {CONFIG_KEY: enforcer_config()}},
        )
        await create_many(api, "/api/v1/nodes", [node(i) for i in range(args.nodes)])

        agent_port, port = free_port(), free_port()
        config = plane.layout.base / "autoscale-scheduler.yaml"
        config.write_text(scheduler_config(plane.kubeconfig, agent_port))
        argv = [
            str(Path(sys.executable).parent / "pyscheduler"),
            f"--config={config}",
            f"--kubeconfig={plane.kubeconfig}",
            f"--secure-port={port}",
            "--bind-address=127.0.0.1",
            "--v=0",
        ]
        process = ComponentProcess("pyscheduler", argv, plane.layout.logs / "pyscheduler.log")
        process.start()
        processes.append(process)
        # The ops port is HTTPS with a self-signed certificate; /readyz is open.
        ops = aiohttp.TCPConnector(ssl=False)
        async with aiohttp.ClientSession(connector=ops) as session:
            for _ in range(600):
                with contextlib.suppress(aiohttp.ClientError):
                    async with session.get(f"https://127.0.0.1:{port}/readyz") as response:
                        if response.status == 200:
                            break
                if not process.running():
                    raise RuntimeError(f"pyscheduler exited:\n{process.tail(30)}")
                await asyncio.sleep(0.1)

        half = args.vms // 2
        quiet = await schedule(api, 0, half)
        print(f"VM pods without agent traffic: {half} in {half / quiet:.1f}s = {quiet:.0f} pods/s")
        context = multiprocessing.get_context("spawn")
        stop = context.Event()
        receive, send = context.Pipe(duplex=False)
        agents = context.Process(
            target=storm_process,
            args=(f"http://127.0.0.1:{agent_port}/", half, args.rate, stop, send),
            name="agents",
        )
        agents.start()
        await asyncio.sleep(1)  # the storm is on before the second half arrives
        busy = await schedule(api, half, args.vms - half)
        scheduled_at = time.monotonic()  # CLOCK_MONOTONIC: the same in both processes
        await asyncio.sleep(max(0.0, args.storm_seconds - 1))
        stop.set()
        result: StormResult = await asyncio.to_thread(receive.recv)
        agents.join()
        achieved, sent, codes, latencies = result
        print(f"VM pods during the storm: {args.vms - half} = {busy:.0f} pods/s")
        print(f"agent requests: {sent} sent, {achieved:.0f}/s (asked {args.rate}/s); codes {codes}")
        windows = (
            ("while scheduling", [s for t, s in latencies if t <= scheduled_at]),
            ("after scheduling", [s for t, s in latencies if t > scheduled_at]),
        )
        for label, values in windows:
            ordered = sorted(values)
            print(
                f"  {label}: {len(ordered)} requests, p50 {quantile(ordered, 0.5) * 1000:.2f} ms, "
                f"p99 {quantile(ordered, 0.99) * 1000:.2f} ms"
            )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--vms", type=int, default=1000)
    parser.add_argument("--rate", type=int, default=1000, help="agent requests per second")
    parser.add_argument("--storm-seconds", type=float, default=10.0)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    plane = ControlPlane(ControlPlaneOptions(controller_manager=False))
    processes: list[ComponentProcess] = []
    try:
        asyncio.run(run(args, plane, processes))
    finally:
        for process in processes:
            process.stop()
        plane.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
