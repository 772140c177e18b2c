"""What one measured run of one scheduler produced (plain data)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from bench.throughput import ThroughputStats
from bench.workload import Workload

MAX_PROGRESS_POINTS = 200


@dataclass(frozen=True)
class RunResult:
    """One scheduler on one fresh control plane, in one mode.

    The clock (``wall_seconds``) runs, in streaming mode, from the first
    measured pod's creation until the watch saw the last one bound; in
    backlog mode, from the first measured bind seen to the last one, and
    ``pods_per_second`` is then the binds after the first over that time.
    ``startup_seconds`` (backlog only) runs from starting the process to the
    first measured bind: informer sync and filling the queue.

    CPU seconds are the process's user + system time: ``cpu_seconds`` over its
    whole life (read just before it was stopped), ``cpu_seconds_measured``
    over the clock and then until the scheduler settled (``settle_seconds``:
    until its CPU stayed under 10% for two 0.1 s intervals, so the events and
    status writes it still had queued at the last bind are counted; in
    streaming mode it also settles before the clock, after the init pods);
    ``cpu_ms_per_pod`` is the latter per bound measured pod, and
    ``control_plane_cpu_ms_per_pod`` the same for etcd and kube-apiserver
    together (the same window, as the API request counts). Attempt and
    algorithm durations are quantiles of
    ``scheduler_scheduling_attempt_duration_seconds{result="scheduled"}`` and
    ``scheduler_scheduling_algorithm_duration_seconds`` over the measured
    pods, in milliseconds (None for the ceiling, which has neither). With
    profiling on (``bench.cpuprofile``), ``profile_cpu_seconds`` is what the
    profiler sampled while the clock ran, ``snapshot_cpu_seconds`` the
    measured CPU times the samples' share under the snapshot update, and
    ``profile_top`` the functions with the largest share of own samples
    (``profile_cumulative``: of samples under them, callees included).
    ``apiserver_requests_measured`` counts what the apiserver served while
    measuring (``"VERB resource"``), and ``scheduler_writes_per_pod`` is its
    writes minus the harness's pod creations, per bound pod.
    ``informer_events`` counts the informer events the scheduler handled
    while measuring, by event (``scheduler_event_handling_duration_seconds``'s
    observations, which both schedulers expose); with profiling,
    ``decode_cpu_seconds`` and ``informer_cpu_seconds`` are the measured CPU
    times the samples' share decoding watch events and in the informers
    (decoding, stores, handlers). In churn mode ``status_updates`` and
    ``deleted_pods`` are what the harness's kubelet wrote, and the CPU runs
    until every measured pod is deleted. ``progress`` is
    (seconds since the clock started, measured pods bound), at most
    ``MAX_PROGRESS_POINTS`` points (plus the last), for the plot.
    """

    scheduler: str
    profile: str
    mode: str
    round_index: int
    workload: Workload
    throughput: ThroughputStats | None
    pods_per_second: float
    wall_seconds: float
    measured_bound: int
    completed: bool
    cpu_seconds: float
    cpu_seconds_measured: float
    peak_rss_bytes: int
    control_plane_cpu_seconds_measured: float
    bench_cpu_seconds_measured: float
    scheduler_writes_per_pod: float | None
    apiserver_requests_measured: dict[str, int]
    attempt_p50_ms: float | None
    attempt_p99_ms: float | None
    unbound_pods: int
    overcommitted_nodes: dict[str, str]
    algorithm_p50_ms: float | None = None
    algorithm_p99_ms: float | None = None
    startup_seconds: float | None = None
    profile_cpu_seconds: float | None = None
    snapshot_cpu_seconds: float | None = None
    profile_top: tuple[tuple[str, float], ...] = ()
    profile_cumulative: tuple[tuple[str, float], ...] = ()
    progress: tuple[tuple[float, int], ...] = ()
    phase_seconds: dict[str, float] = field(default_factory=dict)
    settle_seconds: float | None = None
    informer_events: dict[str, int] = field(default_factory=dict)
    decode_cpu_seconds: float | None = None
    informer_cpu_seconds: float | None = None
    status_updates: int | None = None
    deleted_pods: int | None = None

    @property
    def correct(self) -> bool:
        """Every pod bound and no node overcommitted."""
        return self.completed and self.unbound_pods == 0 and not self.overcommitted_nodes

    @property
    def cpu_ms_per_pod(self) -> float | None:
        return (
            1000 * self.cpu_seconds_measured / self.measured_bound if self.measured_bound else None
        )

    @property
    def control_plane_cpu_ms_per_pod(self) -> float | None:
        if not self.measured_bound:
            return None
        return 1000 * self.control_plane_cpu_seconds_measured / self.measured_bound

    @property
    def snapshot_cpu_ms_per_pod(self) -> float | None:
        return self._ms_per_pod(self.snapshot_cpu_seconds)

    @property
    def informer_events_per_pod(self) -> float | None:
        if not self.informer_events or not self.measured_bound:
            return None
        return sum(self.informer_events.values()) / self.measured_bound

    @property
    def decode_cpu_ms_per_pod(self) -> float | None:
        return self._ms_per_pod(self.decode_cpu_seconds)

    @property
    def informer_cpu_ms_per_pod(self) -> float | None:
        return self._ms_per_pod(self.informer_cpu_seconds)

    def _ms_per_pod(self, seconds: float | None) -> float | None:
        if seconds is None or not self.measured_bound:
            return None
        return 1000 * seconds / self.measured_bound

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["workload"] = self.workload.to_json()
        data["correct"] = self.correct
        data["cpu_ms_per_pod"] = self.cpu_ms_per_pod
        data["control_plane_cpu_ms_per_pod"] = self.control_plane_cpu_ms_per_pod
        data["snapshot_cpu_ms_per_pod"] = self.snapshot_cpu_ms_per_pod
        data["informer_events_per_pod"] = self.informer_events_per_pod
        data["decode_cpu_ms_per_pod"] = self.decode_cpu_ms_per_pod
        data["informer_cpu_ms_per_pod"] = self.informer_cpu_ms_per_pod
        return data


def progress_points(bind_times: list[float], start: float) -> tuple[tuple[float, int], ...]:
    """(seconds since ``start``, pods bound) after each bind, thinned to at most
    ``MAX_PROGRESS_POINTS`` evenly spaced binds, plus the last."""
    if not bind_times:
        return ()
    count = len(bind_times)
    step = max(1, -(-count // MAX_PROGRESS_POINTS))
    indexes = [*range(0, count, step)]
    if indexes[-1] != count - 1:
        indexes.append(count - 1)
    return tuple((round(bind_times[i] - start, 4), i + 1) for i in indexes)
