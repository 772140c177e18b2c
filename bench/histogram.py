"""Quantiles of a Prometheus histogram scraped from a scheduler (pure).

Both schedulers expose ``scheduler_scheduling_attempt_duration_seconds`` with
the same buckets. Scraping it before and after the measured phase and taking
the difference leaves the measured pods' attempts only, as scheduler_perf gets
by resetting its registry before measuring.

Quantiles follow Prometheus' ``histogram_quantile``: linear interpolation
inside the bucket holding the rank; a rank in the ``+Inf`` bucket gives the
largest finite bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

ATTEMPT_DURATION = "scheduler_scheduling_attempt_duration_seconds"
ALGORITHM_DURATION = "scheduler_scheduling_algorithm_duration_seconds"
# One observation per informer event handled, labelled by the event
# (``AssignedPodUpdate``...), in both schedulers: the events' counts.
EVENT_HANDLING_DURATION = "scheduler_event_handling_duration_seconds"
EVENT_LABEL = "event"
RESULT_SCHEDULED = "scheduled"


@dataclass(frozen=True)
class Buckets:
    """Cumulative counts by upper bound, summed over the selected series."""

    counts: Mapping[float, float]

    @property
    def total(self) -> float:
        return self.counts.get(math.inf, 0.0)

    def minus(self, earlier: Buckets) -> Buckets:
        return Buckets(
            {le: count - earlier.counts.get(le, 0.0) for le, count in self.counts.items()}
        )

    def quantile(self, q: float) -> float | None:
        """None when the histogram is empty."""
        total = self.total
        if total <= 0:
            return None
        rank = q * total
        lower, below = 0.0, 0.0
        finite = [le for le in sorted(self.counts) if le != math.inf]
        for le in finite:
            count = self.counts[le]
            if count >= rank:
                if count == below:
                    return le
                return lower + (le - lower) * (rank - below) / (count - below)
            lower, below = le, count
        return finite[-1] if finite else None


def histogram(text: str, name: str, labels: Mapping[str, str]) -> Buckets:
    """The buckets of ``name`` in exposition ``text``, over series matching ``labels``."""
    counts: dict[float, float] = {}
    bucket = f"{name}_bucket"
    for family in text_string_to_metric_families(text):
        if family.name != name:
            continue
        for sample in family.samples:
            if sample.name != bucket:
                continue
            if any(sample.labels.get(key) != value for key, value in labels.items()):
                continue
            le = float(sample.labels["le"])
            counts[le] = counts.get(le, 0.0) + sample.value
    return Buckets(counts)


def counts_by_label(text: str, name: str, label: str) -> dict[str, float]:
    """Histogram ``name``'s observation counts (``_count``) in exposition
    ``text``, summed per value of ``label``."""
    counts: dict[str, float] = {}
    total = f"{name}_count"
    for family in text_string_to_metric_families(text):
        if family.name != name:
            continue
        for sample in family.samples:
            if sample.name == total:
                key = sample.labels.get(label, "")
                counts[key] = counts.get(key, 0.0) + sample.value
    return counts


def count_deltas(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, int]:
    """``after - before`` per key, the keys that changed, largest first."""
    changed = {key: round(value - before.get(key, 0.0)) for key, value in after.items()}
    return dict(sorted(((k, v) for k, v in changed.items() if v), key=lambda item: -item[1]))
