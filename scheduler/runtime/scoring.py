"""PreScore, Score and NormalizeScore with upstream run semantics: Skip
sets, the 0..100 range check, weights. Raw scores and NormalizeScore results
are reused where the profile's ``VerdictSource`` allows
(``scheduler.runtime.verdicts``)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

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
    PluginSet,
    Recorder,
    code_of,
    score_failure,
)
from scheduler.runtime.verdicts import RawScoreRows, VerdictSource


class Scoring:
    """The PreScore, Score and NormalizeScore runner of one profile."""

    __slots__ = ("_plugins", "_recorder", "_verdicts", "weights")

    def __init__(
        self,
        plugins: PluginSet,
        score_weights: Mapping[str, int],
        recorder: Recorder,
        verdicts: VerdictSource,
    ) -> None:
        self._plugins = plugins
        self._recorder = recorder
        self._verdicts = verdicts
        # Every Score plugin's weight (at least 1): the profile's, else 1.
        self.weights = {
            plugin.name: max(1, score_weights.get(plugin.name, 1)) for plugin in plugins.score
        }

    # ---------------------------------------------------- PreScore / Score
    def run_pre_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        started = time.perf_counter()
        called: dict[str, int] = {}
        for plugin in self._plugins.pre_score:
            begun = time.perf_counter()
            called[plugin.name] = 1
            try:
                status = plugin.pre_score(state, pod, nodes)
            except Exception as error:
                status = Status.as_error(error)
            self._recorder.plugin(state, plugin.name, ExtensionPoint.PRE_SCORE, status, begun)
            code = code_of(status)
            if code is Code.SKIP:
                state.skip_score_plugins.add(plugin.name)
            elif code is not Code.SUCCESS:
                assert status is not None
                final = Status.as_error(
                    f'running PreScore plugin "{plugin.name}": {status.message()}'
                ).with_plugin(plugin.name)
                self._recorder.evaluated(ExtensionPoint.PRE_SCORE, called)
                self._recorder.observe(ExtensionPoint.PRE_SCORE, final, started)
                return final
        self._recorder.evaluated(ExtensionPoint.PRE_SCORE, called)
        self._recorder.observe(ExtensionPoint.PRE_SCORE, None, started)
        return None

    def run_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[ScoreTable, Status | None]:
        """Score every node with every plugin not skipped by PreScore, normalize,
        check the 0..100 range, weigh and total (upstream ``RunScorePlugins``)."""
        started = time.perf_counter()
        skip = state.skip_score_plugins
        score = self._plugins.score
        plugins = [p for p in score if p.name not in skip] if skip else score
        raw, status = self._raw_scores(state, plugins, pod, nodes)
        if status is not None:
            self._recorder.observe(ExtensionPoint.SCORE, status, started)
            return NO_SCORES, status
        names = [node_info.name for node_info in nodes]
        totals = [0] * len(nodes)
        weighted: list[list[int]] = []
        for plugin, plugin_raw in zip(plugins, raw, strict=True):
            values, status = self._normalize(state, plugin, pod, names, plugin_raw)
            if status is not None:
                self._recorder.observe(ExtensionPoint.SCORE, status, started)
                return NO_SCORES, status
            if values and (min(values) < MIN_NODE_SCORE or max(values) > MAX_NODE_SCORE):
                bad = next(v for v in values if not MIN_NODE_SCORE <= v <= MAX_NODE_SCORE)
                final = Status.as_error(
                    f'applying score defaultWeights on Score plugins: plugin "{plugin.name}" '
                    f"returns an invalid score {bad}, it should in the range of "
                    f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                )
                self._recorder.observe(ExtensionPoint.SCORE, final, started)
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
        self._recorder.observe(ExtensionPoint.SCORE, None, started)
        return result, None

    def _raw_scores(
        self,
        state: CycleState,
        plugins: Sequence[ScorePlugin],
        pod: Pod,
        nodes: Sequence[NodeInfo],
    ) -> tuple[list[list[int]], Status | None]:
        """Each plugin's score per node before NormalizeScore. The rows of the
        plugins that sign the pod are reused for nodes whose NodeInfo has not
        changed, the others computed for every node; each plugin's column is
        what it would be if everything were computed (Score has no side
        effects)."""
        reuse = self._verdicts.score_reuse(state, pod, plugins, len(nodes))
        if reuse is None:
            raw: list[list[int]] = []
            for plugin in plugins:
                values, status = self._score_plugin(state, plugin, pod, nodes)
                if status is not None:
                    return [], status
                raw.append(values)
            self._recorder.evaluated(ExtensionPoint.SCORE, {p.name: len(nodes) for p in plugins})
            return raw, None
        table, signed = reuse
        rows, computed_nodes, status = _reused_rows(table, signed, state, pod, nodes)
        if status is not None:
            return [], status
        if len(signed) == len(plugins):  # all reused: no per-plugin lookup
            self._recorder.evaluated(
                ExtensionPoint.SCORE, {p.name: computed_nodes for p in plugins}
            )
            if not rows:
                return [[] for _ in plugins], None
            return [list(column) for column in zip(*rows, strict=True)], None
        columns = (
            dict(zip((p.name for p in signed), map(list, zip(*rows, strict=True)), strict=True))
            if rows
            else {p.name: [] for p in signed}
        )
        raw = []
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
        self._recorder.evaluated(ExtensionPoint.SCORE, counts)
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
        self._recorder.plugin(state, plugin.name, ExtensionPoint.SCORE, None, begun)
        return values, None

    def _normalize(
        self,
        state: CycleState,
        plugin: ScorePlugin,
        pod: Pod,
        names: list[str],
        values: list[int],
    ) -> tuple[list[int], Status | None]:
        """NormalizeScore of one plugin; the result for the same input as
        last cycle is reused where the ``VerdictSource`` allows."""
        extensions = plugin.score_extensions()
        if extensions is None:
            return values, None
        reused = self._verdicts.reused_normalized(state, plugin, pod, names, values)
        if reused is not None:
            return reused, None
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
        self._recorder.plugin(state, plugin.name, ExtensionPoint.NORMALIZE_SCORE, status, begun)
        if status is not None and status.code is not Code.SUCCESS:
            return [], Status.as_error(
                f'running Normalize on Score plugins: plugin "{plugin.name}" failed with: '
                f"{status.message()}"
            )
        result = fast if fast is not None else [node_score.score for node_score in node_scores]
        self._verdicts.keep_normalized(state, plugin, pod, names, values, result=result)
        return list(result), None


def _reused_rows(
    table: RawScoreRows,
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
