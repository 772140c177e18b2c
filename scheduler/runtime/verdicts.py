"""Where a cycle's per-node Filter and raw Score results come from: the one
seam of node-local result reuse (an upstream-style "signature"
optimization, cf. SignPlugin in kube-scheduler 1.35+).

The runners and the filter walk (``scheduler.cycle.algorithm``) ask a
``VerdictSource`` and never look at signatures or tables themselves:

- ``node_filter`` gives the cycle's ``NodeFilter``: the statuses reused
  whole (a mapping the walk reads inline, its hot path) and ``run`` for the
  other nodes, which runs the filters (or the part not reused), stores what
  may be reused and counts the nodes on which the filters really ran;
- ``score_reuse`` gives the table of reusable raw scores and the plugins it
  covers, or None (every plugin scores every node);
- ``reused_normalized`` / ``keep_normalized``: NormalizeScore results for an
  unchanged input.

``NoReuse`` runs everything; ``SignatureVerdicts`` (the default) reuses.

A plugin that implements ``SignPlugin`` promises that its Filter status and
its raw Score (before NormalizeScore) for a node depend only on the pod's
signature fragment and on that node's NodeInfo (``scheduler.testing.
check_signature_promise`` checks it for a plugin). When every Filter plugin of
the cycle signs the pod, the Filter status of a node whose NodeInfo has not
changed (same generation) since it was computed for an equal signature is
reused instead of recomputed; likewise raw scores when every Score plugin
signs. When only some sign (InterPodAffinity or PodTopologySpread active),
the signing plugins' part is reused the same way and the others run fresh
for every node; a table's signature names its plugins, so both uses share
the tables. NormalizeScore, weights and selection still run every cycle, so
the outcome is exactly what recomputing would give.

Invariants: Error statuses are never stored; a table never outgrows twice
the cluster's node count (plus slack); only the snapshot's NodeInfos are
looked up (what-if copies of nominated-pod filtering never reach a
``NodeFilter``: their results depend on the nominations, not only on the
node). Cycles sampled for plugin metrics use reuse too: they measure the
plugin calls that really run.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from typing import Generic, Protocol, TypeVar

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interfaces import FilterPlugin, Plugin, ScorePlugin, SignPlugin
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.objects import Pod
from scheduler.framework.status import Status

V = TypeVar("V")
P = TypeVar("P", bound=Plugin)

# node name -> (NodeInfo generation, result)
FilterTable = dict[str, tuple[int, Status | None]]
ScoreTable = dict[str, tuple[int, tuple[int, ...]]]


class VerdictCache(Generic[V]):
    """Tables of per-node results for the most recent pod signatures (LRU)."""

    def __init__(self, max_signatures: int = 8) -> None:
        self._tables: OrderedDict[Hashable, dict[str, tuple[int, V]]] = OrderedDict()
        self._max = max_signatures

    def table(self, signature: Hashable, max_entries: int) -> dict[str, tuple[int, V]]:
        """The table for ``signature``; emptied when it outgrows ``max_entries``
        (entries of deleted nodes would otherwise pile up)."""
        table = self._tables.get(signature)
        if table is not None and len(table) > max_entries:
            table.clear()
        if table is None:
            table = self._tables[signature] = {}
            while len(self._tables) > self._max:
                self._tables.popitem(last=False)
        else:
            self._tables.move_to_end(signature)
        return table

    def clear(self) -> None:
        self._tables.clear()

    def __len__(self) -> int:
        return len(self._tables)


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


class VerdictSource(Protocol):
    """Where per-node results may be reused from (see the module docstring)."""

    def node_filter(
        self,
        runner: RunsFilters,
        state: CycleState,
        pod: Pod,
        filters: tuple[FilterPlugin, ...],
        node_count: int,
    ) -> NodeFilter:
        """The cycle's per-node Filter; ``node_count`` bounds the tables."""

    def score_reuse(
        self,
        state: CycleState,
        pod: Pod,
        plugins: Sequence[ScorePlugin],
        node_count: int,
    ) -> tuple[ScoreTable, tuple[ScorePlugin, ...]] | None:
        """The reusable raw-score rows of the plugins (in order) that sign
        ``pod``, or None when every plugin must score every node."""

    def reused_normalized(
        self, state: CycleState, plugin: ScorePlugin, pod: Pod, names: list[str], raw: list[int]
    ) -> list[int] | None:
        """``plugin``'s NormalizeScore result for exactly this input, if kept."""

    def keep_normalized(
        self,
        state: CycleState,
        plugin: ScorePlugin,
        pod: Pod,
        names: list[str],
        raw: list[int],
        *,
        result: list[int],
    ) -> None:
        """Remember a NormalizeScore result for ``reused_normalized``."""


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


class NoReuse:
    """A ``VerdictSource`` that reuses nothing: every plugin runs every cycle
    (the reference the reusing source must agree with)."""

    def node_filter(
        self,
        runner: RunsFilters,
        state: CycleState,
        pod: Pod,
        filters: tuple[FilterPlugin, ...],
        node_count: int,
    ) -> NodeFilter:
        return RunEvery(runner, state, pod, filters)

    def score_reuse(
        self,
        state: CycleState,
        pod: Pod,
        plugins: Sequence[ScorePlugin],
        node_count: int,
    ) -> tuple[ScoreTable, tuple[ScorePlugin, ...]] | None:
        return None

    def reused_normalized(
        self, state: CycleState, plugin: ScorePlugin, pod: Pod, names: list[str], raw: list[int]
    ) -> list[int] | None:
        return None

    def keep_normalized(
        self,
        state: CycleState,
        plugin: ScorePlugin,
        pod: Pod,
        names: list[str],
        raw: list[int],
        *,
        result: list[int],
    ) -> None:
        return None


class SignatureVerdicts:
    """A ``VerdictSource`` keyed by the pod's signature: the fragments of the
    plugins that sign it (``SignPlugin.sign_pod``), named by plugin."""

    def __init__(self, max_signatures: int = 8) -> None:
        self._filter_tables: VerdictCache[Status | None] = VerdictCache(max_signatures)
        self._score_tables: VerdictCache[tuple[int, ...]] = VerdictCache(max_signatures)
        self._cluster_size = 0  # the last Filter's node count: Score sees fewer nodes
        # Pod signature fragments by plugin, for one cycle's (state, pod).
        self._fragment_key: tuple[object, object] = (None, None)
        self._fragment_memo: dict[str, Hashable | None] = {}
        # plugin -> (pod fragment, node names, raw scores, normalized scores)
        self._normalized: dict[str, tuple[Hashable, list[str], list[int], list[int]]] = {}

    # ---------------------------------------------------------------- Filter
    def node_filter(
        self,
        runner: RunsFilters,
        state: CycleState,
        pod: Pod,
        filters: tuple[FilterPlugin, ...],
        node_count: int,
    ) -> NodeFilter:
        self._cluster_size = node_count
        signed, fragments = self._signed_part(state, filters, pod)
        if not signed:
            return RunEvery(runner, state, pod, filters)
        table = self._filter_tables.table(
            _signature(signed, fragments), max_entries=_bound(node_count)
        )
        if len(signed) == len(filters):
            return ReuseAll(runner, state, pod, filters, table)
        return ReusePart(runner, state, pod, filters, table, signed=signed)

    # ----------------------------------------------------------------- Score
    def score_reuse(
        self,
        state: CycleState,
        pod: Pod,
        plugins: Sequence[ScorePlugin],
        node_count: int,
    ) -> tuple[ScoreTable, tuple[ScorePlugin, ...]] | None:
        signed, fragments = self._signed_part(state, plugins, pod)
        if not signed:
            return None
        size = max(self._cluster_size, node_count)
        table = self._score_tables.table(_signature(signed, fragments), max_entries=_bound(size))
        return table, signed

    def reused_normalized(
        self, state: CycleState, plugin: ScorePlugin, pod: Pod, names: list[str], raw: list[int]
    ) -> list[int] | None:
        """Normalizing is a pure function of the fragment, nodes and raw scores."""
        fragment = self._fragment(state, plugin, pod)
        if fragment is None:
            return None
        last = self._normalized.get(plugin.name)
        if last is not None and last[0] == fragment and last[2] == raw and last[1] == names:
            return list(last[3])
        return None

    def keep_normalized(
        self,
        state: CycleState,
        plugin: ScorePlugin,
        pod: Pod,
        names: list[str],
        raw: list[int],
        *,
        result: list[int],
    ) -> None:
        fragment = self._fragment(state, plugin, pod)
        if fragment is not None:
            self._normalized[plugin.name] = (fragment, names, raw, result)

    # ------------------------------------------------------------ signatures
    def _fragment(self, state: CycleState, plugin: Plugin, pod: Pod) -> Hashable | None:
        """``plugin``'s signature fragment of ``pod`` (None: it does not sign
        it), computed once per cycle: Filter, Score and NormalizeScore all ask,
        and a fragment cannot change within one synchronous cycle."""
        key = self._fragment_key
        if key[0] is not state or key[1] is not pod:
            self._fragment_key = (state, pod)
            self._fragment_memo = {}
        memo = self._fragment_memo
        name = plugin.name
        if name in memo:
            return memo[name]
        fragment = plugin.sign_pod(pod) if isinstance(plugin, SignPlugin) else None
        memo[name] = fragment
        return fragment

    def _signed_part(
        self, state: CycleState, plugins: Sequence[P], pod: Pod
    ) -> tuple[tuple[P, ...], tuple[Hashable, ...]]:
        """The plugins that sign ``pod`` (in order) and their fragments."""
        signed: list[P] = []
        fragments: list[Hashable] = []
        for plugin in plugins:
            fragment = self._fragment(state, plugin, pod)
            if fragment is not None:
                signed.append(plugin)
                fragments.append(fragment)
        return tuple(signed), tuple(fragments)


def _bound(node_count: int) -> int:
    return 2 * node_count + 16


def _signature(plugins: Sequence[Plugin], fragments: tuple[Hashable, ...]) -> Hashable:
    return (tuple(plugin.name for plugin in plugins), fragments)
