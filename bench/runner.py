"""One measured run of one scheduler, on a fresh control plane of its own.

Phases, each bounded by a deadline:
1. start etcd and kube-apiserver (no controller manager, no request throttling);
2. start the pod watch, create the nodes (``creators`` concurrent POSTs);
3. streaming mode: start the scheduler as its own process, wait for its
   ``/readyz``, create the init pods and wait until all are bound (not
   measured); then measure: create the measured pods with ``creators``
   concurrent creators while the sampler reads the watch's bound count once
   per second, until all are bound or the timeout;
3''. churn mode: as streaming, but the measured pods are created at the
   workload's steady rate (``bench.steady``), the harness's kubelet
   (``bench.kubelet``) writes each one's three status updates once bound and
   deletes it after its lifetime; the clock stops at the last bind, the CPU
   is read once every measured pod is deleted and the scheduler settled, and
   node occupancy is checked all along (``bench.checks.Occupancy``), since
   no measured pod is left at the end to check;
3'. backlog mode: create the init pods already bound (``spec.nodeName``,
   round-robin: the same cluster state without a scheduler), create every
   measured pod pending, then start the scheduler; the clock starts at the
   first measured bind the watch sees and stops at the last;
4. read the scheduler's CPU time, peak RSS and metrics, stop it, and check
   that every pod is bound and no node is overcommitted.

Backlog's first pop: neither scheduler says when it popped its first pod
(upstream logs it only at high verbosity, which costs throughput, and no
metric carries a timestamp), so the clock starts at the first measured bind
as the harness's watch sees it. That bind follows the first pop by one
attempt and one Binding round trip (milliseconds); both ends of the clock are
seen through the same watch, so its delay cancels, and the same rule holds
for ours, upstream and the ceiling. The rate is the binds after the first
over that time; the time from starting the process to that first bind
(informer sync, filling the queue) is reported apart as ``startup_seconds``.

Every task started here (the watch, the sampler, the creators, the kubelet) belongs to one
TaskGroup and ends before the run returns; the scheduler and the control plane
are stopped whatever happens.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import aiohttp

from bench import schedulers
from bench.apiclient import Api
from bench.apirequests import delta, request_counts, scheduler_writes
from bench.checks import Occupancy, overcommitted_nodes, unbound_pods
from bench.cpuprofile import CpuProfile, GoProfiler, PySpy
from bench.histogram import (
    ALGORITHM_DURATION,
    ATTEMPT_DURATION,
    EVENT_HANDLING_DURATION,
    EVENT_LABEL,
    RESULT_SCHEDULED,
    Buckets,
    count_deltas,
    counts_by_label,
    histogram,
)
from bench.kubelet import Kubelet
from bench.podwatch import PODS_PATH, BindListener, PodWatch
from bench.procstat import ProcessUsage, read_usage, wait_until_idle
from bench.results import RunResult, progress_points
from bench.schedulers import RunningScheduler, SchedulerKind
from bench.steady import create_steadily
from bench.throughput import ThroughputSampler, summarize
from bench.workload import (
    INIT_NAMESPACE,
    MEASURED_NAMESPACE,
    NAMESPACES,
    Mode,
    Obj,
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
    mode: Mode = Mode.STREAMING
    creators: int = 30
    timeout_seconds: float = 600.0
    profile: bool = False


class _Profiler(Protocol):
    async def stop(self) -> CpuProfile | None: ...


class _SyncProfiler:
    """py-spy stops with a blocking wait: run it off the event loop."""

    def __init__(self, spy: PySpy) -> None:
        self._spy = spy

    async def stop(self) -> CpuProfile | None:
        return await asyncio.to_thread(self._spy.stop)


@dataclass(frozen=True)
class _Before:
    """What is read when the clock starts, to subtract at its end."""

    metrics: str
    requests: dict[str, float]
    usage: ProcessUsage
    plane_cpu: float
    bench_cpu: float
    profiler: _Profiler | None = None


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
    plane_options = ControlPlaneOptions(
        controller_manager=options.workload.template.controller_manager, unlimited_inflight=True
    )
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
        sampler.observe(time.monotonic(), watch.pods.seen(namespace))


def quantiles(
    before: str, after: str, name: str, profile: str | None
) -> tuple[float | None, float | None]:
    """p50 and p99 (ms) of histogram ``name`` between the two scrapes: the
    scheduled attempts of ``profile``, or every observation when None."""
    labels = {} if profile is None else {"profile": profile, "result": RESULT_SCHEDULED}
    measured: Buckets = histogram(after, name, labels).minus(histogram(before, name, labels))
    p50, p99 = measured.quantile(0.5), measured.quantile(0.99)
    return (
        None if p50 is None else p50 * 1000,
        None if p99 is None else p99 * 1000,
    )


@dataclass(frozen=True)
class _Churn:
    """Churn mode's listeners on the pod watch."""

    kubelet: Kubelet
    occupancy: Occupancy


@dataclass(frozen=True)
class _Io:
    """What the phases talk through, all opened (and closed) by ``_Run.measure``."""

    api: Api
    http: aiohttp.ClientSession
    watch: PodWatch
    group: asyncio.TaskGroup
    churn: _Churn | None = None


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
            template = self.workload.template
            for namespace in NAMESPACES:
                await api.create("/api/v1/namespaces", namespace_body(namespace))
                for path, body in template.namespace_objects(namespace):
                    await api.create(path, body)
            churn = self._churn_listeners(api)
            listeners: list[BindListener] = (
                [] if churn is None else [churn.kubelet, churn.occupancy]
            )
            watch = PodWatch(api, listeners)
            await watch.start()
            tasks = [group.create_task(watch.follow(), name="pod-watch")]
            if churn is not None:
                tasks.append(group.create_task(churn.kubelet.run(), name="kubelet"))
            try:
                return await self._phases(_Io(api, http, watch, group, churn), round_index)
            finally:
                for task in tasks:
                    task.cancel()

    def _churn_listeners(self, api: Api) -> _Churn | None:
        if self.options.mode is not Mode.CHURN:
            return None
        kubelet = Kubelet(
            api,
            MEASURED_NAMESPACE,
            self.workload.churn.lifetime_seconds,
            writers=self.options.creators,
        )
        return _Churn(kubelet, Occupancy(self._node_bodies()))

    def _node_bodies(self) -> Iterable[Obj]:
        labels = self.workload.template.node_labels
        return (node_body(node_name(i), labels(i)) for i in range(self.workload.nodes))

    async def _phases(self, io: _Io, round_index: int) -> RunResult:
        workload = self.workload
        began = time.monotonic()
        await create_all(io.api, NODES_PATH, self._node_bodies(), self.options.creators)
        for path, body in workload.template.cluster_objects(workload.nodes):
            await io.api.create(path, body)
        self._phase("nodes", began, f"{workload.nodes} nodes created")
        if self.options.mode is Mode.BACKLOG:
            return await self._backlog(io, round_index)

        began = time.monotonic()
        scheduler = schedulers.start(self.kind, self.plane, self.workdir)
        try:
            await schedulers.wait_ready(io.http, scheduler, READY_TIMEOUT)
            self._phase("scheduler_ready", began, f"pid {scheduler.alive_pid()} ready")
            await self._init_pods(io, scheduler.profile, scheduler)
            return await self._streaming(io, scheduler, round_index)
        finally:
            await asyncio.to_thread(schedulers.stop, scheduler)

    async def _backlog(self, io: _Io, round_index: int) -> RunResult:
        """Init pods created bound (round-robin), measured pods created
        pending, then the scheduler started; the clock runs from the first
        measured bind the watch sees to the last one."""
        profile = schedulers.PROFILE_NAMES[self.kind]
        await self._init_pods(io, profile, None)
        count = self.workload.pods
        began = time.monotonic()
        await create_all(
            io.api,
            _pods_path(MEASURED_NAMESPACE),
            self._measured_bodies(profile),
            self.options.creators,
        )
        self._phase("pod_creation", began, f"{count} measured pods created, pending")
        # A fresh process: its histograms start empty, so "before" is nothing.
        metrics_before = ""
        requests_before = request_counts(await io.api.get_text(METRICS_PATH))
        started = time.monotonic()
        scheduler = schedulers.start(self.kind, self.plane, self.workdir)
        try:
            pid = scheduler.alive_pid()
            sampler = ThroughputSampler()
            sampling = io.group.create_task(
                sample(io.watch, MEASURED_NAMESPACE, sampler), name="sampler"
            )
            if not await io.watch.wait_bound(MEASURED_NAMESPACE, 1, self.options.timeout_seconds):
                raise BenchError(
                    f"{self.kind}: no measured pod bound within "
                    f"{self.options.timeout_seconds:g}s:\n{scheduler.process.tail()}"
                )
            usage_before = read_usage(pid)
            plane_before = self._control_plane_cpu()
            bench_before = time.process_time()
            profiler = self._profiler(io, scheduler)
            first = io.watch.pods.bind_times(MEASURED_NAMESPACE)[0]
            self.phases["startup"] = first - started
            self.progress(f"[{self.kind}] first measured bind {first - started:.1f}s after start")
            completed = await io.watch.wait_bound(
                MEASURED_NAMESPACE, count, self.options.timeout_seconds
            )
            sampling.cancel()
            return await self._finish(
                io,
                scheduler,
                round_index,
                _Before(
                    metrics_before,
                    requests_before,
                    usage_before,
                    plane_before,
                    bench_before,
                    profiler,
                ),
                completed=completed,
                clock_start=first,
                samples=sampler.samples,
                startup=first - started,
            )
        finally:
            await asyncio.to_thread(schedulers.stop, scheduler)

    def _measured_bodies(self, profile: str) -> Iterable[Obj]:
        return (
            pod_body(
                pod_name(i), MEASURED_NAMESPACE, profile, self._pod_spec, labels=self._pod_labels
            )
            for i in range(self.workload.pods)
        )

    async def _init_pods(self, io: _Io, profile: str, scheduler: RunningScheduler | None) -> None:
        """Create the init pods and wait until all are bound: by ``scheduler``,
        or, without one (backlog), created bound round-robin."""
        count, timeout = self.workload.init_pods, self.options.timeout_seconds
        nodes = self.workload.nodes
        began = time.monotonic()
        bodies = (
            pod_body(
                init_pod_name(i),
                INIT_NAMESPACE,
                profile,
                self._init_pod_spec,
                node="" if scheduler else node_name(i % nodes),
                labels=self._init_pod_labels,
            )
            for i in range(count)
        )
        await create_all(io.api, _pods_path(INIT_NAMESPACE), bodies, self.options.creators)
        if not await io.watch.wait_bound(INIT_NAMESPACE, count, timeout):
            tail = scheduler.process.tail() if scheduler else ""
            raise BenchError(
                f"{self.kind}: {io.watch.pods.count(INIT_NAMESPACE)}/{count} init pods bound "
                f"within {timeout:g}s:\n{tail}"
            )
        self._phase("init_pods", began, f"{count} init pods bound")

    async def _streaming(self, io: _Io, scheduler: RunningScheduler, round_index: int) -> RunResult:
        """Streaming and churn: the clock runs from the first creation to the
        last bind; churn then waits for the kubelet to delete every pod."""
        count, timeout = self.workload.pods, self.options.timeout_seconds
        pid = scheduler.alive_pid()
        # The init pods' last events are theirs, not the measured pods'.
        await wait_until_idle(lambda: read_usage(pid).cpu_seconds)
        before = _Before(
            await schedulers.scrape_metrics(io.http, scheduler),
            request_counts(await io.api.get_text(METRICS_PATH)),
            read_usage(pid),
            self._control_plane_cpu(),
            time.process_time(),
            self._profiler(io, scheduler),
        )
        sampler = ThroughputSampler()
        sampling = io.group.create_task(
            sample(io.watch, MEASURED_NAMESPACE, sampler), name="sampler"
        )
        began = time.monotonic()
        creating = io.group.create_task(
            self._timed_creation(io.api, self._measured_bodies(scheduler.profile), began),
            name="measured-creators",
        )
        completed = await io.watch.wait_seen(MEASURED_NAMESPACE, count, timeout)
        sampling.cancel()
        if io.churn is not None and completed:
            await self._drain(io, io.churn.kubelet)
        try:
            return await self._finish(
                io,
                scheduler,
                round_index,
                before,
                completed=completed,
                clock_start=began,
                samples=sampler.samples,
            )
        finally:
            if completed:
                await creating
            else:
                creating.cancel()

    async def _drain(self, io: _Io, kubelet: Kubelet) -> None:
        """Churn: until the kubelet deleted every measured pod and the watch
        saw them go (the last pods' status updates and deletions are theirs)."""
        began, count, timeout = time.monotonic(), self.workload.pods, self.options.timeout_seconds
        if not (
            await kubelet.wait_done(count, timeout)
            and await io.watch.wait_empty(MEASURED_NAMESPACE, timeout)
        ):
            raise BenchError(
                f"{self.kind}: {kubelet.deleted_pods}/{count} measured pods deleted "
                f"within {timeout:g}s"
            )
        self._phase("drain", began, f"{count} measured pods run and deleted")

    async def _finish(
        self,
        io: _Io,
        scheduler: RunningScheduler,
        round_index: int,
        before: _Before,
        *,
        completed: bool,
        clock_start: float,
        samples: Sequence[float],
        startup: float | None = None,
    ) -> RunResult:
        """Read everything at the end of the clock (the CPU figures once the
        scheduler has settled: its last events and status writes are its
        measured pods' too), then check the cluster."""
        now = time.monotonic()
        pid = scheduler.alive_pid()
        settle = await wait_until_idle(lambda: read_usage(pid).cpu_seconds)
        usage_measured = read_usage(pid)
        plane_cpu = self._control_plane_cpu() - before.plane_cpu
        bench_cpu = time.process_time() - before.bench_cpu
        profile = None if before.profiler is None else await before.profiler.stop()
        count = self.workload.pods
        bound = io.watch.pods.seen(MEASURED_NAMESPACE)
        times = io.watch.pods.bind_times(MEASURED_NAMESPACE)
        if self.options.mode is Mode.BACKLOG:
            wall = (times[-1] if completed else now) - clock_start
            rate = (bound - 1) / wall if wall > 0 else 0.0
        elif self.options.mode is Mode.CHURN:
            wall = (times[-1] if completed and times else now) - clock_start
            rate = bound / wall
        else:
            wall = now - clock_start
            rate = bound / wall
        self.phases["measured"] = wall
        self.progress(f"[{self.kind}] {bound}/{count} measured pods bound in {wall:.1f}s")

        requests = delta(before.requests, request_counts(await io.api.get_text(METRICS_PATH)))
        metrics_after = await schedulers.scrape_metrics(io.http, scheduler)
        attempts = quantiles(before.metrics, metrics_after, ATTEMPT_DURATION, scheduler.profile)
        algorithm = quantiles(before.metrics, metrics_after, ALGORITHM_DURATION, None)
        usage_exit = read_usage(scheduler.alive_pid())
        nodes, _ = await io.api.list_all(NODES_PATH)
        pods, _ = await io.api.list_all(PODS_PATH)
        overcommitted = overcommitted_nodes(nodes, pods)
        kubelet = None if io.churn is None else io.churn.kubelet
        kubelet_writes = 0 if kubelet is None else kubelet.status_updates + kubelet.deleted_pods
        if io.churn is not None:
            overcommitted = {**io.churn.occupancy.overcommitted, **overcommitted}
        cpu_measured = usage_measured.cpu_seconds - before.usage.cpu_seconds
        return RunResult(
            scheduler=str(self.kind),
            profile=scheduler.profile,
            mode=str(self.options.mode),
            round_index=round_index,
            workload=self.workload,
            throughput=summarize(samples),
            pods_per_second=rate,
            wall_seconds=wall,
            measured_bound=bound,
            completed=completed,
            cpu_seconds=usage_exit.cpu_seconds,
            cpu_seconds_measured=cpu_measured,
            peak_rss_bytes=usage_exit.peak_rss_bytes,
            control_plane_cpu_seconds_measured=plane_cpu,
            bench_cpu_seconds_measured=bench_cpu,
            settle_seconds=settle,
            scheduler_writes_per_pod=scheduler_writes(requests, kubelet_writes) / bound
            if bound
            else None,
            apiserver_requests_measured=requests,
            attempt_p50_ms=attempts[0],
            attempt_p99_ms=attempts[1],
            algorithm_p50_ms=algorithm[0],
            algorithm_p99_ms=algorithm[1],
            unbound_pods=sum(len(unbound_pods(pods, ns)) for ns in NAMESPACES),
            overcommitted_nodes=overcommitted,
            startup_seconds=startup,
            profile_cpu_seconds=None if profile is None else profile.total_seconds,
            snapshot_cpu_seconds=None if profile is None else profile.snapshot_share * cpu_measured,
            decode_cpu_seconds=None if profile is None else profile.decode_share * cpu_measured,
            informer_cpu_seconds=None if profile is None else profile.informer_share * cpu_measured,
            profile_top=() if profile is None else profile.top_shares,
            profile_cumulative=() if profile is None else profile.cumulative_shares,
            progress=progress_points(times, clock_start),
            phase_seconds=dict(self.phases),
            informer_events=count_deltas(
                counts_by_label(before.metrics, EVENT_HANDLING_DURATION, EVENT_LABEL),
                counts_by_label(metrics_after, EVENT_HANDLING_DURATION, EVENT_LABEL),
            ),
            status_updates=None if kubelet is None else kubelet.status_updates,
            deleted_pods=None if kubelet is None else kubelet.deleted_pods,
        )

    async def _timed_creation(self, api: Api, bodies: Iterable[Obj], began: float) -> None:
        path, creators = _pods_path(MEASURED_NAMESPACE), self.options.creators
        if self.options.mode is Mode.CHURN:
            rate = self.workload.churn.rate
            await create_steadily(
                api, path, bodies, self.workload.pods, rate=rate, creators=creators
            )
        else:
            await create_all(api, path, bodies, creators)
        self.phases["pod_creation"] = time.monotonic() - began

    def _profiler(self, io: _Io, scheduler: RunningScheduler) -> _Profiler | None:
        """A CPU profiler attached now, if asked for and its tool is here."""
        if not self.options.profile:
            return None
        if scheduler.kind in schedulers.UPSTREAM_KINDS:
            if GoProfiler.available():
                directory = self.workdir / f"pprof-{scheduler.kind}"
                directory.mkdir(exist_ok=True)
                return GoProfiler(io.http, scheduler.base_url, directory)
        elif PySpy.available():
            spy = PySpy(scheduler.alive_pid(), self.workdir / f"py-spy-{scheduler.kind}.txt")
            return _SyncProfiler(spy)
        self.progress(f"[{self.kind}] no profiler available (py-spy or go): not profiled")
        return None

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
