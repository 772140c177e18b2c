"""One measured run of one scheduler, on a fresh control plane of its own.

Phases, each bounded by a deadline:
1. start etcd and kube-apiserver (no controller manager, no request throttling);
2. start the pod watch, create the nodes (``creators`` concurrent POSTs);
3. start the scheduler as its own process and wait for its ``/readyz``;
4. create the init pods and wait until all are bound (not measured);
5. measure: create the measured pods with ``creators`` concurrent creators
   while the sampler reads the watch's bound count once per second, until all
   are bound or the timeout;
6. read the scheduler's CPU time, peak RSS and metrics, stop it, and check
   that every pod is bound and no node is overcommitted.

Every task started here (the watch, the sampler, the creators) belongs to one
TaskGroup and ends before the run returns; the scheduler and the control plane
are stopped whatever happens.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from bench import schedulers
from bench.apiclient import Api, Obj
from bench.apirequests import delta, request_counts, scheduler_writes
from bench.checks import overcommitted_nodes, unbound_pods
from bench.histogram import ATTEMPT_DURATION, RESULT_SCHEDULED, Buckets, histogram
from bench.podwatch import PODS_PATH, PodWatch
from bench.procstat import read_usage
from bench.results import RunResult
from bench.schedulers import RunningScheduler, SchedulerKind
from bench.throughput import ThroughputSampler, summarize
from bench.workload import (
    INIT_NAMESPACE,
    MEASURED_NAMESPACE,
    NAMESPACES,
    Workload,
    init_pod_name,
    namespace_body,
    node_body,
    node_name,
    pod_body,
    pod_name,
)
from localcluster import ControlPlane, ControlPlaneOptions

SAMPLE_INTERVAL = 1.0
READY_TIMEOUT = 120.0
NODES_PATH = "/api/v1/nodes"
METRICS_PATH = "/metrics"
CONTROL_PLANE_COMPONENTS = ("etcd", "kube-apiserver")

Progress = Callable[[str], None]


class BenchError(RuntimeError):
    """A run could not be measured (a phase missed its deadline)."""


@dataclass(frozen=True)
class RunOptions:
    workload: Workload
    creators: int = 30
    timeout_seconds: float = 600.0


def _quiet(_line: str) -> None:
    pass


def run_benchmark(
    options: RunOptions,
    kinds: Iterable[SchedulerKind],
    repeat: int = 1,
    progress: Progress = _quiet,
) -> list[RunResult]:
    """``repeat`` rounds, each running every scheduler once: in the given order
    in the first round, reversed in the second, and so on, so that neither
    scheduler always runs on a machine still busy with the other's teardown."""
    order = list(kinds)
    return [
        run_once(kind, options, round_index, progress)
        for round_index in range(repeat)
        for kind in (order if round_index % 2 == 0 else order[::-1])
    ]


def run_once(
    kind: SchedulerKind, options: RunOptions, round_index: int = 0, progress: Progress = _quiet
) -> RunResult:
    began = time.monotonic()
    plane_options = ControlPlaneOptions(controller_manager=False, unlimited_inflight=True)
    with (
        ControlPlane(plane_options) as plane,
        tempfile.TemporaryDirectory(prefix="pyscheduler-bench-") as workdir,
    ):
        started = time.monotonic() - began
        progress(f"[{kind}, round {round_index + 1}] control plane up in {started:.1f}s")
        run = _Run(plane, kind, options, Path(workdir), progress)
        run.phases["control_plane"] = started
        try:
            return asyncio.run(run.measure(round_index))
        except BaseExceptionGroup as group:
            raise _first_error(group) from None


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The TaskGroup's first real error (a failed phase, or the watch failing)."""
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


async def create_all(api: Api, path: str, bodies: Iterable[Obj], creators: int) -> None:
    """POST every body, ``creators`` at a time (scheduler_perf's parallel creators)."""
    pending = iter(bodies)

    async def creator() -> None:
        for body in pending:
            await api.create(path, body)

    async with asyncio.TaskGroup() as group:
        for index in range(creators):
            group.create_task(creator(), name=f"creator-{index}")


async def sample(watch: PodWatch, namespace: str, sampler: ThroughputSampler) -> None:
    """Feed the sampler the bound count on a fixed 1 s grid (no drift)."""
    tick = time.monotonic()
    while True:
        tick += SAMPLE_INTERVAL
        await asyncio.sleep(max(tick - time.monotonic(), 0.0))
        sampler.observe(time.monotonic(), watch.pods.count(namespace))


def attempt_quantiles(before: str, after: str, profile: str) -> tuple[float | None, float | None]:
    """p50 and p99 (ms) of the attempts made between the two scrapes."""
    labels = {"profile": profile, "result": RESULT_SCHEDULED}
    measured: Buckets = histogram(after, ATTEMPT_DURATION, labels).minus(
        histogram(before, ATTEMPT_DURATION, labels)
    )
    p50, p99 = measured.quantile(0.5), measured.quantile(0.99)
    return (
        None if p50 is None else p50 * 1000,
        None if p99 is None else p99 * 1000,
    )


@dataclass(frozen=True)
class _Io:
    """What the phases talk through, all opened (and closed) by ``_Run.measure``."""

    api: Api
    http: aiohttp.ClientSession
    watch: PodWatch
    group: asyncio.TaskGroup


class _Run:
    """The phases of one run, in order; ``phases`` collects how long each took."""

    def __init__(
        self,
        plane: ControlPlane,
        kind: SchedulerKind,
        options: RunOptions,
        workdir: Path,
        progress: Progress,
    ) -> None:
        self.plane = plane
        self.kind = kind
        self.options = options
        self.workload = options.workload
        self._pod_spec = options.workload.template.pod_spec
        self._pod_labels = options.workload.template.pod_labels
        self._init_pod_spec, self._init_pod_labels = options.workload.template.init_pod()
        self.workdir = workdir
        self.progress = progress
        self.phases: dict[str, float] = {}

    async def measure(self, round_index: int) -> RunResult:
        plane = self.plane
        async with (
            Api.connect(plane.server, plane.ca_file, plane.token) as api,
            schedulers.http_session() as http,
            asyncio.TaskGroup() as group,
        ):
            for namespace in NAMESPACES:
                await api.create("/api/v1/namespaces", namespace_body(namespace))
            watch = PodWatch(api)
            await watch.start()
            follower = group.create_task(watch.follow(), name="pod-watch")
            try:
                return await self._phases(_Io(api, http, watch, group), round_index)
            finally:
                follower.cancel()

    async def _phases(self, io: _Io, round_index: int) -> RunResult:
        workload = self.workload
        began = time.monotonic()
        labels = workload.template.node_labels
        nodes = (node_body(node_name(i), labels(i)) for i in range(workload.nodes))
        await create_all(io.api, NODES_PATH, nodes, self.options.creators)
        self._phase("nodes", began, f"{workload.nodes} nodes created")

        began = time.monotonic()
        scheduler = schedulers.start(self.kind, self.plane, self.workdir)
        try:
            await schedulers.wait_ready(io.http, scheduler, READY_TIMEOUT)
            self._phase("scheduler_ready", began, f"pid {scheduler.alive_pid()} ready")
            await self._init_pods(io, scheduler)
            return await self._measured_pods(io, scheduler, round_index)
        finally:
            await asyncio.to_thread(schedulers.stop, scheduler)

    async def _init_pods(self, io: _Io, scheduler: RunningScheduler) -> None:
        count, timeout = self.workload.init_pods, self.options.timeout_seconds
        began = time.monotonic()
        bodies = (
            pod_body(
                init_pod_name(i),
                INIT_NAMESPACE,
                scheduler.profile,
                self._init_pod_spec,
                self._init_pod_labels,
            )
            for i in range(count)
        )
        await create_all(io.api, _pods_path(INIT_NAMESPACE), bodies, self.options.creators)
        if not await io.watch.wait_bound(INIT_NAMESPACE, count, timeout):
            raise BenchError(
                f"{self.kind}: {io.watch.pods.count(INIT_NAMESPACE)}/{count} init pods bound "
                f"within {timeout:g}s:\n{scheduler.process.tail()}"
            )
        self._phase("init_pods", began, f"{count} init pods bound")

    async def _measured_pods(
        self, io: _Io, scheduler: RunningScheduler, round_index: int
    ) -> RunResult:
        count, timeout = self.workload.pods, self.options.timeout_seconds
        pid = scheduler.alive_pid()
        metrics_before = await schedulers.scrape_metrics(io.http, scheduler)
        requests_before = request_counts(await io.api.get_text(METRICS_PATH))
        usage_before = read_usage(pid)
        plane_before = self._control_plane_cpu()
        bench_before = time.process_time()
        sampler = ThroughputSampler()
        sampling = io.group.create_task(
            sample(io.watch, MEASURED_NAMESPACE, sampler), name="sampler"
        )
        bodies = (
            pod_body(
                pod_name(i), MEASURED_NAMESPACE, scheduler.profile, self._pod_spec, self._pod_labels
            )
            for i in range(count)
        )
        began = time.monotonic()
        creating = io.group.create_task(
            self._timed_creation(io.api, bodies, began), name="measured-creators"
        )
        completed = await io.watch.wait_bound(MEASURED_NAMESPACE, count, timeout)
        wall = time.monotonic() - began
        sampling.cancel()
        usage_measured = read_usage(pid)
        plane_cpu = self._control_plane_cpu() - plane_before
        bench_cpu = time.process_time() - bench_before
        if completed:
            await creating
        else:
            creating.cancel()
        bound = io.watch.pods.count(MEASURED_NAMESPACE)
        self._phase("measured", began, f"{bound}/{count} pods bound")

        requests = delta(requests_before, request_counts(await io.api.get_text(METRICS_PATH)))
        metrics_after = await schedulers.scrape_metrics(io.http, scheduler)
        p50, p99 = attempt_quantiles(metrics_before, metrics_after, scheduler.profile)
        usage_exit = read_usage(scheduler.alive_pid())
        nodes, _ = await io.api.list_all(NODES_PATH)
        pods, _ = await io.api.list_all(PODS_PATH)
        return RunResult(
            scheduler=str(self.kind),
            profile=scheduler.profile,
            round_index=round_index,
            workload=self.workload,
            throughput=summarize(sampler.samples),
            pods_per_second=bound / wall,
            wall_seconds=wall,
            measured_bound=bound,
            completed=completed,
            cpu_seconds=usage_exit.cpu_seconds,
            cpu_seconds_measured=usage_measured.cpu_seconds - usage_before.cpu_seconds,
            peak_rss_bytes=usage_exit.peak_rss_bytes,
            control_plane_cpu_seconds_measured=plane_cpu,
            bench_cpu_seconds_measured=bench_cpu,
            scheduler_writes_per_pod=scheduler_writes(requests) / bound if bound else None,
            apiserver_requests_measured=requests,
            attempt_p50_ms=p50,
            attempt_p99_ms=p99,
            unbound_pods=sum(len(unbound_pods(pods, ns)) for ns in NAMESPACES),
            overcommitted_nodes=overcommitted_nodes(nodes, pods),
            phase_seconds=dict(self.phases),
        )

    async def _timed_creation(self, api: Api, bodies: Iterable[Obj], began: float) -> None:
        await create_all(api, _pods_path(MEASURED_NAMESPACE), bodies, self.options.creators)
        self.phases["pod_creation"] = time.monotonic() - began

    def _control_plane_cpu(self) -> float:
        """CPU seconds so far of etcd and kube-apiserver together."""
        total = 0.0
        for name in CONTROL_PLANE_COMPONENTS:
            pid = self.plane.components[name].pid
            if pid is not None:
                total += read_usage(pid).cpu_seconds
        return total

    def _phase(self, name: str, began: float, what: str) -> None:
        elapsed = time.monotonic() - began
        self.phases[name] = elapsed
        self.progress(f"[{self.kind}] {what} in {elapsed:.1f}s")


def _pods_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods"
