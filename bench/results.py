"""What one measured run of one scheduler produced (plain data)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from bench.throughput import ThroughputStats
from bench.workload import Workload


@dataclass(frozen=True)
class RunResult:
    """One scheduler on one fresh control plane.

    ``wall_seconds`` runs from the first measured pod's creation until the
    watch saw the last one bound (or the timeout); ``pods_per_second`` is
    bound measured pods over that time. CPU seconds are the scheduler
    process's user + system time: ``cpu_seconds`` over its whole life (read
    just before it was stopped), ``cpu_seconds_measured`` over the measured
    phase only. Attempt durations are quantiles of
    ``scheduler_scheduling_attempt_duration_seconds{result="scheduled"}`` over
    the measured phase, in milliseconds. ``apiserver_requests_measured``
    counts what the apiserver served in that phase (``"VERB resource"``), and
    ``scheduler_writes_per_pod`` is its writes minus the harness's pod
    creations, per bound pod.
    """

    scheduler: str
    profile: str
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
    phase_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def correct(self) -> bool:
        """Every pod bound and no node overcommitted."""
        return self.completed and self.unbound_pods == 0 and not self.overcommitted_nodes

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["workload"] = self.workload.to_json()
        data["correct"] = self.correct
        return data
