"""Plain data passed between the queue, the cycles and the plugins."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import overload

from scheduler.framework.events import ClusterEvent
from scheduler.framework.objects import Pod
from scheduler.framework.status import Status

MIN_NODE_SCORE = 0
MAX_NODE_SCORE = 100
MAX_PERMIT_TIMEOUT_SECONDS = 15 * 60.0


@dataclass(slots=True)
class QueuedPodInfo:
    """A pod in the scheduling queue with its queueing bookkeeping.

    Owned by the queue; the scheduling loop gets it from ``pop`` and hands it
    back through ``done``/``add_unschedulable``.
    """

    pod: Pod
    timestamp: float
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_count: int = 0
    consecutive_errors_count: int = 0
    backoff_expiration: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gating_plugin: str = ""
    gating_plugin_events: tuple[ClusterEvent, ...] = ()
    was_flushed_from_unschedulable: bool = False

    @property
    def key(self) -> str:
        return self.pod.key


def go_div(numerator: int, denominator: int) -> int:
    """Go integer division: truncates toward zero (scores ported from Go)."""
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator >= 0) == (denominator > 0) else -quotient


def default_normalize(values: list[int], max_priority: int, *, reverse: bool) -> list[int]:
    """Upstream ``helper.DefaultNormalizeScore`` on plain values: scale to
    ``0..max_priority`` by the highest score (Go integer division; scores are
    non-negative), optionally reversed. All zero: 0s, or ``max_priority`` when
    reversed."""
    highest = max(values, default=0)
    if highest <= 0:
        return [max_priority] * len(values) if reverse else [0] * len(values)
    if reverse:
        return [max_priority - max_priority * value // highest for value in values]
    return [max_priority * value // highest for value in values]


@dataclass(slots=True)
class NodeScore:
    name: str
    score: int


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """``node_names`` None means all nodes; a set narrows the candidates."""

    node_names: frozenset[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


class NominatingMode:
    NOOP = "Noop"
    OVERRIDE = "Override"


@dataclass(frozen=True, slots=True)
class NominatingInfo:
    node_name: str = ""
    mode: str = NominatingMode.NOOP


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    nominating_info: NominatingInfo | None = None


@dataclass(slots=True)
class NodeToStatus:
    """Per-node rejection statuses; nodes not listed have ``absent``."""

    statuses: dict[str, Status] = field(default_factory=dict)
    absent: Status = field(default_factory=Status.unresolvable)

    def get(self, name: str) -> Status:
        return self.statuses.get(name, self.absent)

    def nodes_for_code(self, all_node_names: list[str], code: int) -> list[str]:
        return [name for name in all_node_names if self.get(name).code == code]


@dataclass(slots=True)
class Diagnosis:
    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""


class FitError(Exception):
    """No node fits the pod; ``str()`` is the upstream user-facing message."""

    def __init__(self, pod: Pod, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis
        self._reason_counts: dict[str, int] | None = None

    def reason_counts(self) -> dict[str, int]:
        """Nodes per rejection reason, counted once (the node statuses do not
        change after Filter): the message and the debug record share it."""
        if self._reason_counts is None:
            self._reason_counts = reason_counts(self.num_all_nodes, self.diagnosis.node_to_status)
        return self._reason_counts

    def __str__(self) -> str:
        counts = None if self.diagnosis.pre_filter_msg else self.reason_counts()
        return fit_error_message(self.num_all_nodes, self.diagnosis, counts)


class InvalidPodError(FitError):
    """The pod's spec cannot be interpreted; the message says what and where.
    Reported like a fit failure (condition, event, requeue until it changes)."""

    def __init__(self, pod: Pod, problem: str, plugin: str) -> None:
        super().__init__(pod, 1, Diagnosis(unschedulable_plugins={plugin}))
        self.problem = problem

    def __str__(self) -> str:
        return f"invalid pod: {self.problem}"


def reason_counts(num_all_nodes: int, node_to_status: NodeToStatus) -> dict[str, int]:
    """How many nodes gave each rejection reason (nodes not listed count
    with the ``absent`` status)."""
    counts: dict[str, int] = {}
    for status in node_to_status.statuses.values():
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    absent = num_all_nodes - len(node_to_status.statuses)
    if absent > 0:
        for reason in node_to_status.absent.reasons:
            counts[reason] = counts.get(reason, 0) + absent
    return counts


def reason_histogram(
    num_all_nodes: int, node_to_status: NodeToStatus, counts: dict[str, int] | None = None
) -> str:
    if counts is None:
        counts = reason_counts(num_all_nodes, node_to_status)
    return ", ".join(sorted(f"{count} {reason}" for reason, count in counts.items()))


def fit_error_message(
    num_all_nodes: int, diagnosis: Diagnosis, counts: dict[str, int] | None = None
) -> str:
    """``0/<N> nodes are available: <prefilter or histogram>. <postfilter>``

    The PreFilter message or the histogram ends with a period; the PostFilter
    message is appended as it is (upstream 1.36 ``FitError.Error``; older
    releases added a period after it too). A PreFilter message replaces the
    histogram: PreFilter gave every node the same status, so the histogram
    would only repeat it."""
    message = f"0/{num_all_nodes} nodes are available:"
    if diagnosis.pre_filter_msg:
        message += f" {diagnosis.pre_filter_msg}."
    else:
        histogram = reason_histogram(num_all_nodes, diagnosis.node_to_status, counts)
        if histogram:
            message += f" {histogram}."
    if diagnosis.post_filter_msg:
        message += f" {diagnosis.post_filter_msg}"
    return message


@dataclass(frozen=True, slots=True)
class WeightedScore:
    plugin: str
    score: int


@dataclass(frozen=True, slots=True)
class NodePluginScores:
    name: str
    scores: tuple[WeightedScore, ...]
    total: int


class ScoreTable(Sequence[NodePluginScores]):
    """Scores of one cycle: per plugin a list of weighted scores, one per node,
    and the totals. Reads as a sequence of ``NodePluginScores``, built on
    demand: the cycle needs only the totals, diagnostics only the best few."""

    __slots__ = ("names", "plugins", "totals", "weighted")

    def __init__(
        self,
        names: Sequence[str],
        plugins: Sequence[str],
        weighted: Sequence[Sequence[int]],
        totals: Sequence[int],
    ) -> None:
        self.names = names
        self.plugins = plugins
        self.weighted = weighted
        self.totals = totals

    @overload
    def __getitem__(self, index: int) -> NodePluginScores: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[NodePluginScores]: ...

    def __getitem__(self, index: int | slice) -> NodePluginScores | Sequence[NodePluginScores]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        scores = tuple(
            WeightedScore(plugin, values[index])
            for plugin, values in zip(self.plugins, self.weighted, strict=True)
        )
        return NodePluginScores(self.names[index], scores, self.totals[index])

    def __len__(self) -> int:
        return len(self.names)

    def best(self, count: int) -> list[NodePluginScores]:
        # nlargest is sorted(..., reverse=True)[:count], ties in node order.
        order = heapq.nlargest(count, range(len(self)), key=self.totals.__getitem__)
        return [self[i] for i in order]


Labels = Mapping[str, str]
