"""Reconcile bookkeeping: Neon's reconcile-queue metrics for our event feed.

Neon's plugin (v0.42+, ``pkg/plugin/reconcile``, ``metrics/reconcile.go``)
puts every informer event in a reconcile queue whose workers apply it to the
state, and measures that. Here the daemon forwards each event to the
authority, which applies them one at a time in order (``ClusterFeed``); the
same four measurements, with Neon's names, labels and buckets:

- ``autoscaling_plugin_reconcile_queue_wait_durations`` (histogram): from
  the daemon forwarding the event to the authority starting on it;
- ``autoscaling_plugin_reconcile_duration_seconds{kind, outcome}``
  (histogram): applying it; ``outcome`` ``success`` or ``failure``;
- ``autoscaling_plugin_reconcile_failing_objects{kind}`` (gauge): objects
  whose last event failed, until one for them succeeds or they are deleted;
- ``autoscaling_plugin_reconcile_panics_count{kind}``: failures; our
  handlers return no errors, so every failure is an exception, which is what
  a panic is in Go (the listener logs it and goes on, as Neon's middleware
  recovers).

``kind`` is the object's Kind (``Pod``, ``Node``, ``VirtualMachine``,
``VirtualMachineMigration``), as Neon's ``GVK.Kind``.

Pure and synchronous: times are passed in. ``ReconcileBook`` (the
authority) counts; ``take`` hands over what was counted since the last call
as a ``ReconcileReport`` of bucket counts, never of samples, so a flood of
events stays one small message; the daemon adds reports up
(``ReconcileTotals``) and exports them.
"""

from __future__ import annotations

import bisect
import enum
from dataclasses import dataclass, field

from plugins.autoscale_enforcer.vm import MIGRATION_KIND, MIGRATION_RESOURCE, VM_RESOURCE

# Neon's buckets for both histograms: 10µs .. 45s.
BUCKETS: tuple[float, ...] = (
    0.00001,
    0.0001,
    0.001,
    0.005,
    0.01,
    0.05,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    10.0,
    20.0,
    45.0,
)

KINDS = {
    "nodes": "Node",
    "pods": "Pod",
    VM_RESOURCE: "VirtualMachine",
    MIGRATION_RESOURCE: MIGRATION_KIND,
}


class Outcome(enum.StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"


@dataclass(slots=True)
class Observations:
    """A histogram's delta: counts per bucket (not cumulative; the last is
    above every bound) and the sum of the values."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))
    total: float = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(BUCKETS, value)] += 1
        self.total += value

    def add(self, other: Observations) -> None:
        for index, count in enumerate(other.counts):
            self.counts[index] += count
        self.total += other.total

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[str, float]]:
        """Prometheus buckets: (upper bound, observations at or below it)."""
        out, running = [], 0
        bounds = (*(repr(bound) for bound in BUCKETS), "+Inf")  # as floatToGoString
        for bound, count in zip(bounds, self.counts, strict=True):
            running += count
            out.append((bound, float(running)))
        return out


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    """What the authority counted since its last report."""

    waits: Observations
    durations: dict[tuple[str, Outcome], Observations]  # (kind, outcome)
    failing: dict[str, int]  # kind -> objects failing now (every kind seen)
    panics: dict[str, int]  # kind -> failures since the last report


class ReconcileBook:
    """The authority's counts (see the module docstring)."""

    def __init__(self) -> None:
        self._waits = Observations()
        self._durations: dict[tuple[str, Outcome], Observations] = {}
        self._failing: dict[str, set[str]] = {}
        self._panics: dict[str, int] = {}
        self._changed = False

    @property
    def pending(self) -> bool:
        """Something was counted since the last ``take``."""
        return self._changed

    def done(
        self,
        resource: str,
        key: str,
        *,
        wait: float | None,
        duration: float,
        failed: bool,
        deleted: bool,
    ) -> None:
        """One event for the object ``key`` of ``resource`` was applied."""
        kind = KINDS.get(resource, resource)
        if wait is not None:
            self._waits.observe(max(0.0, wait))
        outcome = Outcome.FAILURE if failed else Outcome.SUCCESS
        self._durations.setdefault((kind, outcome), Observations()).observe(max(0.0, duration))
        failing = self._failing.setdefault(kind, set())
        if failed and not deleted:
            failing.add(key)
        else:
            failing.discard(key)
        if failed:
            self._panics[kind] = self._panics.get(kind, 0) + 1
        self._changed = True

    def take(self) -> ReconcileReport | None:
        """What was counted since the last call (None: nothing)."""
        if not self._changed:
            return None
        report = ReconcileReport(
            self._waits,
            self._durations,
            {kind: len(keys) for kind, keys in self._failing.items()},
            self._panics,
        )
        self._waits, self._durations, self._panics = Observations(), {}, {}
        self._changed = False
        return report


class ReconcileTotals:
    """The daemon's running totals of the authority's reports. A new
    authority process (after a restart) starts with no failing objects."""

    def __init__(self) -> None:
        self.waits = Observations()
        self.durations: dict[tuple[str, Outcome], Observations] = {}
        self.failing: dict[str, int] = {}
        self.panics: dict[str, int] = {}

    def add(self, report: ReconcileReport) -> None:
        self.waits.add(report.waits)
        for labels, observations in report.durations.items():
            self.durations.setdefault(labels, Observations()).add(observations)
        self.failing.update(report.failing)
        for kind, count in report.panics.items():
            self.panics[kind] = self.panics.get(kind, 0) + count

    def restarted(self) -> None:
        """The authority was replaced: its failing objects are gone with it."""
        self.failing = dict.fromkeys(self.failing, 0)
