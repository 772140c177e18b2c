"""The AutoscaleEnforcer workload: VM pods scheduled while agents storm the plugin.

``python -m bench.autoscale [--nodes 500] [--vms 1000] [--rate 1000]`` (or
``make bench-autoscale``) starts a local control plane with our minimal NeonVM
CRDs, ``--nodes`` nodes and pyscheduler with AutoscaleEnforcer enabled, then:

1. schedules half of ``--vms`` VM pods with no agent traffic (pods/s);
2. starts simulated autoscaler-agents sending ``--rate`` v5.0 requests per
   second (VMs of the first half growing and shrinking by one compute unit)
   and schedules the other half meanwhile (pods/s under the storm);
3. reports agent requests per second, p50/p99 latency and the answers' codes,
   and the scheduler's CPU per VM pod in both phases.

Each of ``--repeat`` rounds (default 3) runs on a fresh control plane; the
rounds and their min / median / max go to ``bench/results/autoscale.json``
and ``.md`` (``--results-dir``), which ``docs/benchmarks.md`` quotes through
``python -m bench.publish`` (``bench.autoscale_report``). Bound pods are
counted from the harness's pod watch (``bench.podwatch``), not by listing
the API server while it is measured.

The agents run in a process of their own (``storm_process``), so their
latencies are not inflated by this harness creating pods and watching the API
server on its own event loop; their client is a lean synchronous loop
(``Storm``), so its own CPU is not counted as the plugin's latency either.

pyscheduler only: upstream kube-scheduler has no AutoscaleEnforcer. The
harness shares the machine with what it measures, so figures are a floor.
Target (issue 9): p99 <= 5 ms at 1000 requests/s while scheduling continues.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import multiprocessing
import selectors
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event as ProcessEvent
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

from bench.apiclient import Api
from bench.autoscale_report import STEM, AutoscaleRound, document, markdown, table
from bench.podwatch import PodWatch
from bench.procstat import children_cpu_seconds, read_usage
from bench.publish import RESULTS_DIR
from bench.run import commit, machine
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
        "metadata": {
            "name": f"vm-{index}",
            "namespace": NAMESPACE,
            "labels": {"autoscaling.neon.tech/enabled": "true"},  # it has an agent
        },
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


async def schedule(api: Api, pods: PodWatch, first: int, count: int) -> float:
    """Create VMs and pods ``first..first+count``; pods/s until all are bound
    (counted from the harness's pod watch, not by listing the API server
    while it is measured)."""
    await create_many(api, VM_PATH, [vm(i) for i in range(first, first + count)])
    started = time.monotonic()
    await create_many(api, POD_PATH, [vm_pod(i) for i in range(first, first + count)])
    if not await pods.wait_bound(NAMESPACE, first + count, 600):
        raise RuntimeError("VM pods not all bound within 600 s")
    return count / (time.monotonic() - started)


class Storm:
    """Simulated agents: ``rate`` v5.0 requests/s over the given VM pods.

    Synchronous and lean on purpose (one ``selectors`` loop, raw HTTP/1.1 over
    keep-alive connections, bodies encoded once), so the client's own CPU
    does not show up as agent-API latency: a real agent runs on another
    machine. Each agent (VM pod) has its own connection, opened up front, and
    one request in flight at most, as a real agent does. A latency runs from
    writing the request to having read the whole response; a request due
    while its agent still waits for an answer goes out once that answer is
    in, and its latency counts from when it was due (the server's delay, not
    hidden by the wait)."""

    def __init__(self, host: str, port: int, pods: int, rate: int) -> None:
        self.host, self.port, self.pods, self.rate = host, port, pods, rate
        self.latencies: list[tuple[float, float]] = []  # (sent at, seconds)
        self.codes: Counter[int] = Counter()
        self.sent = 0
        self.queued = 0  # requests due while their agent still waited for an answer
        self._selector = selectors.DefaultSelector()
        self._agents = [self._connect(index) for index in range(pods)]

    def _connect(self, index: int) -> _Agent:
        sock = socket.create_connection((self.host, self.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        agent = _Agent(sock, [self._request(index, size) for size in (1, 2)])
        self._selector.register(sock, selectors.EVENT_READ, agent)
        return agent

    def _request(self, index: int, size: int) -> bytes:
        body = orjson.dumps(
            {
                "protoVersion": 7,
                "pod": {"namespace": NAMESPACE, "name": f"vm-{index}-pod"},
                "resources": {"vCPUs": size, "mem": f"{size}Gi"},
                "computeUnit": {"vCPUs": 1, "mem": "1Gi"},
                "metrics": {"loadAvg1M": 0.5},
            }
        )
        head = (
            f"POST / HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            "User-Agent: Go-http-client/1.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nAccept-Encoding: gzip\r\n\r\n"
        )
        return head.encode() + body

    def run(self, stopped: Callable[[], bool]) -> float:
        """Send until ``stopped()`` (checked every 50 ms), then wait for the
        answers in flight (up to 10 s); returns the achieved requests/s."""
        started = time.perf_counter()
        next_check = started
        while True:
            now = time.perf_counter()
            if now >= next_check:
                if stopped():
                    break
                next_check = now + 0.05
            while started + self.sent / self.rate <= now:
                n = self.sent
                size = (n // self.pods) % 2  # grow to 2, shrink to 1, ...
                agent = self._agents[n % self.pods]
                if agent.in_flight:
                    self.queued += 1
                    agent.due.append((started + n / self.rate, size))
                else:
                    agent.send(size, time.perf_counter())
                self.sent += 1
            wait = max(0.0, min(started + self.sent / self.rate, next_check) - now)
            self._receive(wait)
        achieved = self.sent / (time.perf_counter() - started)
        deadline = time.perf_counter() + 10
        while any(agent.in_flight for agent in self._agents) and time.perf_counter() < deadline:
            self._receive(0.1)
        self.codes[0] += sum(agent.in_flight + len(agent.due) for agent in self._agents)
        return achieved

    def _receive(self, timeout: float) -> None:
        """Read what arrived within ``timeout``; send what agents had queued."""
        for key, _ in self._selector.select(timeout):
            agent: _Agent = key.data
            answered = agent.receive()
            if answered is None:
                continue
            status, sent_at, seconds = answered
            self.codes[status] += 1
            if not status:  # closed by the server: this agent stops
                self._selector.unregister(agent.sock)
                agent.sock.close()
                continue
            self.latencies.append((sent_at, seconds))
            if agent.due:
                due, size = agent.due.pop(0)
                agent.send(size, due)


class _Agent:
    """One agent's keep-alive connection, with at most one request in flight."""

    __slots__ = ("began", "buffer", "due", "in_flight", "requests", "sent_at", "sock")

    def __init__(self, sock: socket.socket, requests: list[bytes]) -> None:
        self.sock = sock
        self.requests = requests  # by size - 1
        self.buffer = bytearray()
        self.due: list[tuple[float, int]] = []  # (due at, size - 1) waiting to be sent
        self.in_flight = False
        self.began = 0.0
        self.sent_at = 0.0

    def send(self, size: int, since: float) -> None:
        """Write the request for ``size`` (0: one unit, 1: two); its latency
        counts from ``since`` (perf_counter)."""
        self.sent_at = time.monotonic()  # CLOCK_MONOTONIC: comparable across processes
        self.began = since
        self.in_flight = True
        self.sock.sendall(self.requests[size])  # small: fits the socket buffer

    def receive(self) -> tuple[int, float, float] | None:
        """(status, sent at, seconds) once a whole response is read; status 0
        when the connection closed first; None while incomplete."""
        try:
            data = self.sock.recv(65536)
        except BlockingIOError:
            return None
        if not data:
            self.in_flight = False
            return 0, self.sent_at, 0.0
        buffer = self.buffer
        buffer += data
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            return None
        head = bytes(buffer[:end]).decode("latin-1").split("\r\n")
        length = 0
        for line in head[1:]:
            name, _, value = line.partition(":")
            if name.lower() == "content-length":
                length = int(value)
        if len(buffer) < end + 4 + length:
            return None
        seconds = time.perf_counter() - self.began
        del buffer[: end + 4 + length]
        self.in_flight = False
        return int(head[0].split(" ")[1]), self.sent_at, seconds


StormResult = tuple[float, int, int, dict[int, int], list[tuple[float, float]]]


def storm_process(
    address: tuple[str, int], pods: int, rate: int, stop: ProcessEvent, out: Connection
) -> None:
    """A ``Storm`` in a process of its own, until ``stop``; sends its result on ``out``."""
    storm = Storm(*address, pods, rate)
    achieved = storm.run(stop.is_set)
    out.send((achieved, storm.sent, storm.queued, dict(storm.codes), storm.latencies))


async def run(
    args: argparse.Namespace, plane: ControlPlane, processes: list[ComponentProcess]
) -> AutoscaleRound:
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

        pods = PodWatch(api)
        await pods.start()
        follower = asyncio.create_task(pods.follow())
        try:
            pid = process.pid
            assert pid is not None  # started above
            return await storm_and_schedule(args, api, pods, agent_port, pid)
        finally:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower


async def storm_and_schedule(
    args: argparse.Namespace, api: Api, pods: PodWatch, agent_port: int, scheduler_pid: int
) -> AutoscaleRound:
    """Half the VM pods without agent traffic, then the storm and the other half."""
    half = args.vms // 2
    cpu_before = read_usage(scheduler_pid).cpu_seconds
    agent_before = children_cpu_seconds(scheduler_pid)
    quiet = await schedule(api, pods, 0, half)
    cpu_quiet = read_usage(scheduler_pid).cpu_seconds - cpu_before
    agent_quiet = children_cpu_seconds(scheduler_pid) - agent_before
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    receive, send = context.Pipe(duplex=False)
    agents = context.Process(
        target=storm_process,
        args=(("127.0.0.1", agent_port), half, args.rate, stop, send),
        name="agents",
    )
    agents.start()
    await asyncio.sleep(1)  # the storm is on before the second half arrives
    cpu_before = read_usage(scheduler_pid).cpu_seconds
    agent_before = children_cpu_seconds(scheduler_pid)
    busy = await schedule(api, pods, half, args.vms - half)
    cpu_busy = read_usage(scheduler_pid).cpu_seconds - cpu_before
    agent_busy = children_cpu_seconds(scheduler_pid) - agent_before
    scheduled_at = time.monotonic()  # CLOCK_MONOTONIC: the same in both processes
    await asyncio.sleep(max(0.0, args.storm_seconds - 1))
    stop.set()
    result: StormResult = await asyncio.to_thread(receive.recv)
    agents.join()
    achieved, sent, queued, codes, latencies = result
    during = sorted(s for t, s in latencies if t <= scheduled_at)
    after = sorted(s for t, s in latencies if t > scheduled_at)
    return AutoscaleRound(
        quiet_pods_per_second=quiet,
        quiet_cpu_ms_per_pod=(cpu_quiet + agent_quiet) / half * 1000,
        quiet_agent_process_cpu_ms_per_pod=agent_quiet / half * 1000,
        storm_pods_per_second=busy,
        storm_cpu_ms_per_pod=(cpu_busy + agent_busy) / (args.vms - half) * 1000,
        storm_agent_process_cpu_ms_per_pod=agent_busy / (args.vms - half) * 1000,
        requests_sent=sent,
        requests_per_second=achieved,
        codes={str(code): count for code, count in sorted(codes.items()) if count},
        queued=queued,
        while_requests=len(during),
        while_p50_ms=quantile(during, 0.5) * 1000,
        while_p99_ms=quantile(during, 0.99) * 1000,
        after_requests=len(after),
        after_p50_ms=quantile(after, 0.5) * 1000,
        after_p99_ms=quantile(after, 0.99) * 1000,
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--vms", type=int, default=1000)
    parser.add_argument("--rate", type=int, default=1000, help="agent requests per second")
    parser.add_argument("--storm-seconds", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=3, help="rounds, each on a fresh plane")
    parser.add_argument(
        "--results-dir",
        type=Path,
        default=RESULTS_DIR,
        help=f"where {STEM}.json/.md go (default bench/results)",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.vms < 2 or args.nodes < 1 or args.rate < 1:
        parser.error("--repeat, --nodes and --rate must be >= 1 and --vms >= 2")
    return args


def one_round(args: argparse.Namespace) -> AutoscaleRound:
    plane = ControlPlane(ControlPlaneOptions(controller_manager=False))
    processes: list[ComponentProcess] = []
    try:
        return asyncio.run(run(args, plane, processes))
    finally:
        for process in processes:
            process.stop()
        plane.stop()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    rounds = []
    for index in range(1, args.repeat + 1):
        print(f"round {index} of {args.repeat}", file=sys.stderr)
        rounds.append(one_round(args))
    doc = document(
        {
            "started": started,
            "command": " ".join(["python -m bench.autoscale", *(argv or sys.argv[1:])]),
            "commit": commit(),
            "machine": machine(),
            "nodes": args.nodes,
            "vms": args.vms,
            "rate": args.rate,
            "storm_seconds": args.storm_seconds,
        },
        rounds,
    )
    args.results_dir.mkdir(parents=True, exist_ok=True)
    json_path = args.results_dir / f"{STEM}.json"
    json_path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    md_path = args.results_dir / f"{STEM}.md"
    md_path.write_text(markdown(doc))
    print(table(doc))
    print(f"wrote {json_path} and {md_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
