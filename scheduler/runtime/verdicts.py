"""Where a cycle's per-node Filter and raw Score results come from: the one
seam of node-local result reuse (an upstream-style "signature"
optimization, cf. SignPlugin in kube-scheduler 1.35+).

The runners and the filter walk (``scheduler.cycle.algorithm``) ask a
``VerdictSource`` and never look at signatures; what they read of a table
is only what the source hands out:

- ``node_filter`` gives the cycle's ``NodeFilter`` (``nodefilter.py``): the
  statuses reused whole (a mapping the walk reads inline, its hot path) and
  ``run`` for the other nodes, which runs the filters (or the part not
  reused), stores what may be reused and counts the nodes on which the
  filters really ran;
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
from collections.abc import Hashable, Sequence
from typing import Generic, Protocol, TypeVar

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interfaces import FilterPlugin, Plugin, ScorePlugin, SignPlugin
from scheduler.framework.objects import Pod
from scheduler.framework.status import Status
from scheduler.runtime.nodefilter import (
    NodeFilter,
    ReuseAll,
    ReusePart,
    RunEvery,
    RunsFilters,
)

V = TypeVar("V")
P = TypeVar("P", bound=Plugin)

# node name -> (NodeInfo generation, raw scores of the signing plugins)
RawScoreRows = dict[str, tuple[int, tuple[int, ...]]]


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
    ) -> tuple[RawScoreRows, tuple[ScorePlugin, ...]] | None:
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
    ) -> tuple[RawScoreRows, tuple[ScorePlugin, ...]] | None:
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
    ) -> tuple[RawScoreRows, tuple[ScorePlugin, ...]] | None:
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
