"""PreScore, Score and NormalizeScore with upstream run semantics: Skip
sets, the 0..100 range check, weights; node-local raw scores reused."""

from __future__ import annotations

import time
from collections.abc import Sequence

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interfaces import (
    ExtensionPoint,
    ScorePlugin,
)
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.objects import Pod
from scheduler.framework.status import Code, Status
from scheduler.framework.types import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    NodeScore,
    ScoreTable,
)
from scheduler.runtime.points import (
    NO_SCORES,
    ExtensionPoints,
    code_of,
    score_failure,
)


class ScoringPoints(ExtensionPoints):
    # ---------------------------------------------------- PreScore / Score
    def run_pre_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        started = time.perf_counter()
        called: dict[str, int] = {}
        for plugin in self.pre_score:
            begun = time.perf_counter()
            called[plugin.name] = 1
            try:
                status = plugin.pre_score(state, pod, nodes)
            except Exception as error:
                status = Status.as_error(error)
            self._plugin(state, plugin.name, ExtensionPoint.PRE_SCORE, status, begun)
            code = code_of(status)
            if code is Code.SKIP:
                state.skip_score_plugins.add(plugin.name)
            elif code is not Code.SUCCESS:
                assert status is not None
                final = Status.as_error(
                    f'running PreScore plugin "{plugin.name}": {status.message()}'
                ).with_plugin(plugin.name)
                self._evaluated(ExtensionPoint.PRE_SCORE, called)
                self._observe(ExtensionPoint.PRE_SCORE, final, started)
                return final
        self._evaluated(ExtensionPoint.PRE_SCORE, called)
        self._observe(ExtensionPoint.PRE_SCORE, None, started)
        return None

    def run_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[ScoreTable, Status | None]:
        """Score every node with every plugin not skipped by PreScore, normalize,
        check the 0..100 range, weigh and total (upstream ``RunScorePlugins``)."""
        started = time.perf_counter()
        skip = state.skip_score_plugins
        plugins = [p for p in self.score if p.name not in skip] if skip else self.score
        raw, status = self._raw_scores(state, plugins, pod, nodes)
        if status is not None:
            self._observe(ExtensionPoint.SCORE, status, started)
            return NO_SCORES, status
        names = [node_info.name for node_info in nodes]
        totals = [0] * len(nodes)
        weighted: list[list[int]] = []
        for plugin, plugin_raw in zip(plugins, raw, strict=True):
            values, status = self._normalize(state, plugin, pod, names, plugin_raw)
            if status is not None:
                self._observe(ExtensionPoint.SCORE, status, started)
                return NO_SCORES, status
            if values and (min(values) < MIN_NODE_SCORE or max(values) > MAX_NODE_SCORE):
                bad = next(v for v in values if not MIN_NODE_SCORE <= v <= MAX_NODE_SCORE)
                final = Status.as_error(
                    f'applying score defaultWeights on Score plugins: plugin "{plugin.name}" '
                    f"returns an invalid score {bad}, it should in the range of "
                    f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                )
                self._observe(ExtensionPoint.SCORE, final, started)
                return NO_SCORES, final
            weight = self.weights[plugin.name]
            if weight != 1:
                values = [value * weight for value in values]
            weighted.append(values)
        if weighted:  # per node, the sum over plugins (C-level, no per-plugin pass)
            totals = list(map(sum, zip(*weighted, strict=True)))
        result = ScoreTable(
            names,
            [plugin.name for plugin in plugins],
            weighted,
            totals,
        )
        self._observe(ExtensionPoint.SCORE, None, started)
        return result, None

    def _raw_scores(
        self,
        state: CycleState,
        plugins: Sequence[ScorePlugin],
        pod: Pod,
        nodes: Sequence[NodeInfo],
    ) -> tuple[list[list[int]], Status | None]:
        """Each plugin's score per node before NormalizeScore. Reused from an
        earlier cycle for a node whose NodeInfo has not changed when every
        plugin signs the pod (see ``verdicts``)."""
        size = max(self._cluster_size, len(nodes))
        table = self._verdict_table(self._score_verdicts, state, plugins, pod, size)
        if table is None:
            partial = self._partial_verdict_table(self._score_verdicts, state, plugins, pod, size)
            if partial is not None:
                return self._partially_reused_scores(state, plugins, partial, pod, nodes)
            raw: list[list[int]] = []
            for plugin in plugins:
                values, status = self._score_plugin(state, plugin, pod, nodes)
                if status is not None:
                    return [], status
                raw.append(values)
            self._evaluated(ExtensionPoint.SCORE, {p.name: len(nodes) for p in plugins})
            return raw, None
        rows, computed_nodes, status = _reused_rows(table, plugins, state, pod, nodes)
        if status is not None:
            return [], status
        self._evaluated(ExtensionPoint.SCORE, {p.name: computed_nodes for p in plugins})
        if not rows:
            return [[] for _ in plugins], None
        return [list(column) for column in zip(*rows, strict=True)], None

    def _partially_reused_scores(
        self,
        state: CycleState,
        plugins: Sequence[ScorePlugin],
        partial: tuple[dict[str, tuple[int, tuple[int, ...]]], tuple[ScorePlugin, ...]],
        pod: Pod,
        nodes: Sequence[NodeInfo],
    ) -> tuple[list[list[int]], Status | None]:
        """Raw scores when only some plugins sign the pod: the signing ones'
        per-node rows reused while the node's generation is unchanged, the
        others computed for every node; each plugin's column is what it would
        be if everything were computed (Score has no side effects)."""
        table, signed = partial
        rows, computed_nodes, status = _reused_rows(table, signed, state, pod, nodes)
        if status is not None:
            return [], status
        columns = (
            dict(zip((p.name for p in signed), map(list, zip(*rows, strict=True)), strict=True))
            if rows
            else {p.name: [] for p in signed}
        )
        raw: list[list[int]] = []
        counts: dict[str, int] = {}
        for plugin in plugins:
            column = columns.get(plugin.name)
            if column is None:
                column, status = self._score_plugin(state, plugin, pod, nodes)
                if status is not None:
                    return [], status
                counts[plugin.name] = len(nodes)
            else:
                counts[plugin.name] = computed_nodes
            raw.append(column)
        self._evaluated(ExtensionPoint.SCORE, counts)
        return raw, None

    def _score_plugin(
        self, state: CycleState, plugin: ScorePlugin, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[list[int], Status | None]:
        """One plugin's raw scores for every node, or an Error status."""
        begun = time.perf_counter()
        score = plugin.score
        values: list[int] = []
        append = values.append
        for node_info in nodes:
            try:
                value, status = score(state, pod, node_info)
            except Exception as error:
                value, status = 0, Status.as_error(error)
            if status is not None and status.code is not Code.SUCCESS:
                return [], score_failure(plugin.name, status)
            append(value)
        self._plugin(state, plugin.name, ExtensionPoint.SCORE, None, begun)
        return values, None

    def _normalize(
        self,
        state: CycleState,
        plugin: ScorePlugin,
        pod: Pod,
        names: list[str],
        values: list[int],
    ) -> tuple[list[int], Status | None]:
        """NormalizeScore of one plugin. For a plugin that signs the pod, the
        result for the same fragment, nodes and raw scores as last cycle is
        reused: normalizing is a pure function of those."""
        extensions = plugin.score_extensions()
        if extensions is None:
            return values, None
        fragment = self._fragment(state, plugin, pod)
        if fragment is not None:
            last = self._normalized.get(plugin.name)
            if last is not None and last[0] == fragment and last[2] == values and last[1] == names:
                return list(last[3]), None
        begun = time.perf_counter()
        node_scores: list[NodeScore] = []
        try:
            fast = extensions.normalize_values(values)
            if fast is None:
                node_scores = list(map(NodeScore, names, values))
                status = extensions.normalize_score(state, pod, node_scores)
            else:
                status = None
        except Exception as error:
            fast, status = None, Status.as_error(error)
        self._plugin(state, plugin.name, ExtensionPoint.NORMALIZE_SCORE, status, begun)
        if status is not None and status.code is not Code.SUCCESS:
            return [], Status.as_error(
                f'running Normalize on Score plugins: plugin "{plugin.name}" failed with: '
                f"{status.message()}"
            )
        result = fast if fast is not None else [node_score.score for node_score in node_scores]
        if fragment is not None:
            self._normalized[plugin.name] = (fragment, names, values, result)
        return list(result), None


def _reused_rows(
    table: dict[str, tuple[int, tuple[int, ...]]],
    plugins: Sequence[ScorePlugin],
    state: CycleState,
    pod: Pod,
    nodes: Sequence[NodeInfo],
) -> tuple[list[tuple[int, ...]], int, Status | None]:
    """Each node's row of ``plugins``' raw scores: the table's row while the
    node's generation is unchanged, else computed and stored; with the number
    of nodes computed, or the first plugin failure."""
    rows: list[tuple[int, ...]] = []
    append = rows.append
    computed_nodes = 0
    for node_info in nodes:
        cached = table.get(node_info.name)
        if cached is not None and cached[0] == node_info.generation:
            append(cached[1])
            continue
        computed: list[int] = []
        for plugin in plugins:
            try:
                value, status = plugin.score(state, pod, node_info)
            except Exception as error:
                value, status = 0, Status.as_error(error)
            if status is not None and status.code is not Code.SUCCESS:
                return [], 0, score_failure(plugin.name, status)
            computed.append(value)
        scores = tuple(computed)
        table[node_info.name] = (node_info.generation, scores)
        append(scores)
        computed_nodes += 1
    return rows, computed_nodes, None
