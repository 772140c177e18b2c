"""A cycle's Filter of one pod, node by node (``NodeFilter``), in the three
forms a ``VerdictSource`` (verdicts.py) hands out: ``RunEvery`` (nothing
reused), ``ReuseAll`` (every filter signs the pod: whole statuses reused)
and ``ReusePart`` (only some sign: their part reused, the others run).

Invariants: the status a NodeFilter gives for a node is exactly what
running every filter of the cycle in order gives (Filter calls have no side
effects); Error statuses are never stored; ``passed`` and ``rejected_by``
count the nodes on which filters really ran (for the evaluation metrics).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interfaces import FilterPlugin
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.objects import Pod
from scheduler.framework.status import Status

# node name -> (NodeInfo generation, Filter status)
FilterTable = dict[str, tuple[int, Status | None]]


class RunsFilters(Protocol):
    """What a ``NodeFilter`` calls for a node whose status it does not have:
    the Filter runner (``scheduler.runtime.filtering.Filtering``)."""

    def run_filters(
        self,
        plugins: tuple[FilterPlugin, ...],
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
    ) -> Status | None: ...


class NodeFilter(Protocol):
    """One cycle's Filter of one pod, node by node. For each node the walk
    first looks in ``reused``: an entry ``(generation, status)`` is the
    node's status while its NodeInfo has that generation (the hot path, a
    lookup the walk makes inline); otherwise ``run`` gives the status."""

    passed: int  # nodes on which every filter ran and passed
    rejected_by: dict[str, int]  # plugin -> nodes it rejected when the filters ran

    @property
    def reused(self) -> Mapping[str, tuple[int, Status | None]]:
        """Statuses reused whole, by node name; empty when there are none."""

    def run(self, node_info: NodeInfo) -> Status | None:
        """The status of a node ``reused`` has no valid entry for: None when
        it fits. Counts the node as evaluated; may store the result."""


class RunEvery:
    """A ``NodeFilter`` that runs every filter on every node."""

    __slots__ = ("_filters", "_pod", "_run", "_state", "passed", "rejected_by", "reused")

    def __init__(
        self,
        runner: RunsFilters,
        state: CycleState,
        pod: Pod,
        filters: tuple[FilterPlugin, ...],
    ) -> None:
        self._run = runner.run_filters
        self._state = state
        self._pod = pod
        self._filters = filters
        self.reused: Mapping[str, tuple[int, Status | None]] = {}
        self.passed = 0
        self.rejected_by: dict[str, int] = {}

    def run(self, node_info: NodeInfo) -> Status | None:
        status = self._run(self._filters, self._state, self._pod, node_info)
        if status is None:
            self.passed += 1
        else:
            self.rejected_by[status.plugin] = self.rejected_by.get(status.plugin, 0) + 1
        return status


class ReuseAll:
    """A ``NodeFilter`` for a cycle whose filters all sign the pod: an
    unchanged node's status comes from the table, the others run and are
    stored (Errors are not). Only the nodes that ran are counted."""

    __slots__ = ("_filters", "_pod", "_run", "_state", "_table", "passed", "rejected_by", "reused")

    def __init__(
        self,
        runner: RunsFilters,
        state: CycleState,
        pod: Pod,
        filters: tuple[FilterPlugin, ...],
        table: FilterTable,
    ) -> None:
        self._run = runner.run_filters
        self._state = state
        self._pod = pod
        self._filters = filters
        self._table = table
        self.reused: Mapping[str, tuple[int, Status | None]] = table
        self.passed = 0
        self.rejected_by: dict[str, int] = {}

    def run(self, node_info: NodeInfo) -> Status | None:
        status = self._run(self._filters, self._state, self._pod, node_info)
        if status is None:
            self.passed += 1
        else:
            self.rejected_by[status.plugin] = self.rejected_by.get(status.plugin, 0) + 1
            if status.is_error():
                return status
        self._table[node_info.name] = (node_info.generation, status)
        return status


class ReusePart:
    """A ``NodeFilter`` with reused results of the node-local (signing)
    plugins and fresh runs of the others.

    Filter stops at the first plugin, in profile order, that does not
    succeed. The signing plugins' verdict for a node (their first failure in
    order, or success) is reused while the node's generation is unchanged;
    then only the other plugins placed before that failure run (all of them
    if the signing plugins pass). The first failure among those, else the
    reused one, is exactly what running every filter in order gives, since
    Filter calls have no side effects. Errors are never stored. Every node
    counts as evaluated (the other plugins ran on it).
    """

    __slots__ = (
        "_before",
        "_filters",
        "_fresh",
        "_pod",
        "_run",
        "_signed",
        "_state",
        "passed",
        "rejected_by",
        "reused",
        "table",
    )

    def __init__(
        self,
        runner: RunsFilters,
        state: CycleState,
        pod: Pod,
        filters: tuple[FilterPlugin, ...],
        table: FilterTable,
        *,
        signed: tuple[FilterPlugin, ...],
    ) -> None:
        self._run = runner.run_filters
        self._state = state
        self._pod = pod
        self.table = table
        self._filters = filters
        self._signed = signed
        signed_names = {plugin.name for plugin in signed}
        self._fresh = tuple(plugin for plugin in filters if plugin.name not in signed_names)
        # signing plugin -> the other plugins placed before it
        self._before: dict[str, tuple[FilterPlugin, ...]] = {}
        earlier: list[FilterPlugin] = []
        for plugin in filters:
            if plugin.name in signed_names:
                self._before[plugin.name] = tuple(earlier)
            else:
                earlier.append(plugin)
        self.reused: Mapping[str, tuple[int, Status | None]] = {}  # only parts are
        self.passed = 0
        self.rejected_by: dict[str, int] = {}

    def run(self, node_info: NodeInfo) -> Status | None:
        state, pod = self._state, self._pod
        cached = self.table.get(node_info.name)
        if cached is not None and cached[0] == node_info.generation:
            local = cached[1]
        else:
            local = self._run(self._signed, state, pod, node_info)
            if local is None or not local.is_error():
                self.table[node_info.name] = (node_info.generation, local)
        status: Status | None
        if local is None:
            fresh = self._fresh
            status = self._run(fresh, state, pod, node_info) if fresh else None
        else:
            before = self._before.get(local.plugin)
            if before is None:  # not one of ours: never reached, but stay exact
                status = self._run(self._filters, state, pod, node_info)
            else:
                earlier = self._run(before, state, pod, node_info) if before else None
                status = local if earlier is None else earlier
        if status is None:
            self.passed += 1
        else:
            self.rejected_by[status.plugin] = self.rejected_by.get(status.plugin, 0) + 1
        return status
