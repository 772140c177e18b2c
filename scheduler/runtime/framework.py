"""Runs the plugins of one profile at each extension point, upstream-style.

One ``Framework`` per profile. Every ``run_*`` method applies kube-scheduler's
semantics for its point (order, short-circuiting, Skip sets, status codes,
error wrapping, score range checks, weights) and records
``scheduler_framework_extension_point_duration_seconds``; individual plugin
durations are recorded only for cycles sampled for plugin metrics.

Synchronous except ``wait_on_permit``, ``run_pre_bind`` and ``run_bind``,
which belong to the binding cycle.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.interfaces import (
    BindPlugin,
    EnqueueExtensions,
    ExtensionPoint,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.objects import Pod
from scheduler.framework.status import Code, Status
from scheduler.framework.types import (
    MAX_NODE_SCORE,
    MAX_PERMIT_TIMEOUT_SECONDS,
    MIN_NODE_SCORE,
    NodeScore,
    NodeToStatus,
    NominatingMode,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
    ScoreTable,
)
from scheduler.runtime.verdicts import VerdictCache
from scheduler.runtime.waiting import WaitingPodImpl, WaitingPods


class FrameworkMetrics(Protocol):
    def extension_point(
        self, point: ExtensionPoint, status: Code, profile: str, seconds: float
    ) -> None: ...

    def plugin_executions(self, samples: Sequence[PluginSample]) -> None: ...

    def permit_wait(self, status: Code, seconds: float) -> None: ...


# (plugin, extension point, status code, seconds) of one plugin call.
PluginSample = tuple[str, ExtensionPoint, Code, float]


class _NoMetrics:
    def extension_point(
        self, point: ExtensionPoint, status: Code, profile: str, seconds: float
    ) -> None:
        return None

    def plugin_executions(self, samples: Sequence[PluginSample]) -> None:
        return None

    def permit_wait(self, status: Code, seconds: float) -> None:
        return None


def _code(status: Status | None) -> Code:
    return Code.SUCCESS if status is None else status.code


def _nominates(result: PostFilterResult | None) -> bool:
    """Upstream ``Mode() != ModeNoop``: the result asks to (re)set the nomination."""
    info = None if result is None else result.nominating_info
    return info is not None and info.mode != NominatingMode.NOOP


_NO_SCORES = ScoreTable((), (), (), ())
V = TypeVar("V")


def _score_failure(plugin: str, status: Status) -> Status:
    return Status.as_error(
        f'running Score plugins: plugin "{plugin}" failed with: {status.message()}'
    )


def _rejection_or_error(point: str, plugin: str, status: Status) -> Status:
    """A rejection keeps its code; anything else becomes an upstream-worded Error."""
    if status.is_rejected():
        return status.with_plugin(plugin)
    message = f'running {point} plugin "{plugin}": {status.message()}'
    return Status.as_error(message).with_plugin(plugin)


def _filter_failure(plugin: str, status: Status) -> Status:
    if status.is_rejected():
        return status.with_plugin(plugin)
    return Status.as_error(f'running "{plugin}" filter plugin: {status.message()}').with_plugin(
        plugin
    )


class Framework:
    """Plugins of one profile, instantiated, grouped by extension point."""

    def __init__(
        self,
        profile_name: str,
        plugins_by_point: Mapping[ExtensionPoint, Sequence[Plugin]],
        score_weights: Mapping[str, int],
        waiting_pods: WaitingPods,
        metrics: FrameworkMetrics | None = None,
    ) -> None:
        self.profile_name = profile_name
        self._metrics: FrameworkMetrics = metrics or _NoMetrics()
        self._samples: list[PluginSample] = []
        self._filter_verdicts: VerdictCache[Status | None] = VerdictCache()
        self._score_verdicts: VerdictCache[tuple[int, ...]] = VerdictCache()
        self._cluster_size = 0
        self._waiting = waiting_pods

        def at(point: ExtensionPoint) -> list[Plugin]:
            return list(plugins_by_point.get(point, ()))

        self.pre_enqueue: list[PreEnqueuePlugin] = at(ExtensionPoint.PRE_ENQUEUE)  # type: ignore[assignment]
        sorts: list[QueueSortPlugin] = at(ExtensionPoint.QUEUE_SORT)  # type: ignore[assignment]
        self.queue_sort = sorts[0] if sorts else None
        self.pre_filter: list[PreFilterPlugin] = at(ExtensionPoint.PRE_FILTER)  # type: ignore[assignment]
        self.filter: list[FilterPlugin] = at(ExtensionPoint.FILTER)  # type: ignore[assignment]
        self._filters = tuple(self.filter)
        self.post_filter: list[PostFilterPlugin] = at(ExtensionPoint.POST_FILTER)  # type: ignore[assignment]
        self.pre_score: list[PreScorePlugin] = at(ExtensionPoint.PRE_SCORE)  # type: ignore[assignment]
        self.score: list[ScorePlugin] = at(ExtensionPoint.SCORE)  # type: ignore[assignment]
        self.reserve: list[ReservePlugin] = at(ExtensionPoint.RESERVE)  # type: ignore[assignment]
        self.permit: list[PermitPlugin] = at(ExtensionPoint.PERMIT)  # type: ignore[assignment]
        self.pre_bind: list[PreBindPlugin] = at(ExtensionPoint.PRE_BIND)  # type: ignore[assignment]
        self.bind: list[BindPlugin] = at(ExtensionPoint.BIND)  # type: ignore[assignment]
        self.post_bind: list[PostBindPlugin] = at(ExtensionPoint.POST_BIND)  # type: ignore[assignment]
        self.weights = {
            plugin.name: max(1, score_weights.get(plugin.name, 1)) for plugin in self.score
        }
        self.plugins: dict[str, Plugin] = {}
        for group in plugins_by_point.values():
            for plugin in group:
                self.plugins[plugin.name] = plugin

    # ------------------------------------------------------------- metadata
    def has_filter_plugins(self) -> bool:
        return bool(self.filter)

    def has_score_plugins(self) -> bool:
        return bool(self.score)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter)

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Registered events of every plugin that can reject pods. A rejecting
        plugin without EnqueueExtensions is left out, which the queue reads as
        "every event may help"."""
        result: dict[str, list[ClusterEventWithHint]] = {}
        rejecting = (*self.pre_enqueue, *self.pre_filter, *self.filter, *self.reserve, *self.permit)
        for plugin in rejecting:
            if plugin.name in result or not isinstance(plugin, EnqueueExtensions):
                continue
            if isinstance(plugin, EnqueueExtensions):
                result[plugin.name] = list(plugin.events_to_register())
        return result

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        assert self.queue_sort is not None
        return self.queue_sort.less(a, b)

    # ---------------------------------------------------------- measurement
    def _observe(self, point: ExtensionPoint, status: Status | None, started: float) -> None:
        self._metrics.extension_point(
            point, _code(status), self.profile_name, time.perf_counter() - started
        )
        if self._samples:  # one batch per extension point run, not one per call
            self._metrics.plugin_executions(self._samples)
            self._samples = []

    def _plugin(
        self,
        state: CycleState,
        plugin: str,
        point: ExtensionPoint,
        status: Status | None,
        started: float,
    ) -> None:
        if state.record_plugin_metrics:
            self._samples.append((plugin, point, _code(status), time.perf_counter() - started))

    # ------------------------------------------------------------ PreFilter
    def run_pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """Returns the merged node narrowing, the status, and the plugins that
        narrowed the node set (empty after an UnschedulableAndUnresolvable from
        a plugin or an Error: upstream does not report them then).

        Of several Unschedulable plugins the last one is returned; all of them
        run, so that preemption has their state."""
        started = time.perf_counter()
        result: PreFilterResult | None = None
        narrowing: set[str] = set()
        rejection: Status | None = None
        for plugin in self.pre_filter:
            begun = time.perf_counter()
            try:
                plugin_result, status = plugin.pre_filter(state, pod, nodes)
            except Exception as error:  # a plugin bug is an Error, not a crash
                plugin_result, status = None, Status.as_error(error)
            self._plugin(state, plugin.name, ExtensionPoint.PRE_FILTER, status, begun)
            code = _code(status)
            if code is Code.SKIP:
                state.skip_filter_plugins.add(plugin.name)
                continue
            if code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                assert status is not None
                final = status.with_plugin(plugin.name)
                self._observe(ExtensionPoint.PRE_FILTER, final, started)
                return None, final, set()
            if code is Code.UNSCHEDULABLE:
                assert status is not None
                rejection = status.with_plugin(plugin.name)
                continue
            if code is not Code.SUCCESS:  # Error, or a code PreFilter may not return
                assert status is not None
                final = Status.as_error(
                    f'running PreFilter plugin "{plugin.name}": {status.message()}'
                ).with_plugin(plugin.name)
                self._observe(ExtensionPoint.PRE_FILTER, final, started)
                return None, final, set()
            if plugin_result is not None and not plugin_result.all_nodes():
                narrowing.add(plugin.name)
                result = plugin_result if result is None else result.merge(plugin_result)
                if result.node_names is not None and not result.node_names:
                    names = sorted(narrowing)
                    message = (
                        f"node(s) didn't satisfy plugin {names[0]}"
                        if len(names) == 1
                        else f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                    )
                    final = Status.unresolvable(message)
                    self._observe(ExtensionPoint.PRE_FILTER, final, started)
                    return None, final, narrowing
        self._observe(ExtensionPoint.PRE_FILTER, rejection, started)
        return result, rejection, narrowing

    def run_pre_filter_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._run_pre_filter_extension(state, pod, pod_to_add, node_info, adding=True)

    def run_pre_filter_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self._run_pre_filter_extension(state, pod, pod_to_remove, node_info, adding=False)

    def _run_pre_filter_extension(
        self, state: CycleState, pod: Pod, other: Pod, node_info: NodeInfo, *, adding: bool
    ) -> Status | None:
        """AddPod/RemovePod of every PreFilter plugin not skipped this cycle."""
        for plugin in self.pre_filter:
            if plugin.name in state.skip_filter_plugins:
                continue
            try:
                extensions = plugin.pre_filter_extensions()
                if extensions is None:
                    continue
                change = extensions.add_pod if adding else extensions.remove_pod
                status = change(state, pod, other, node_info)
            except Exception as error:
                status = Status.as_error(error)
            if status is not None and status.code is not Code.SUCCESS:
                verb = "AddPod" if adding else "RemovePod"
                return Status.as_error(
                    f'running {verb} on PreFilter plugin "{plugin.name}": {status.message()}'
                )
        return None

    # --------------------------------------------------------------- Filter
    def run_filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        """Stop at the first non-success; non-rejections become Errors.
        (Timed per cycle by the caller, as upstream.)"""
        return self.run_filters(self.active_filters(state), state, pod, node_info)

    def active_filters(self, state: CycleState) -> tuple[FilterPlugin, ...]:
        """The Filter plugins this cycle runs (PreFilter may have skipped some).
        Callers filtering many nodes compute this once per cycle."""
        skip = state.skip_filter_plugins
        if not skip:
            return self._filters
        return tuple(plugin for plugin in self._filters if plugin.name not in skip)

    def run_filters(
        self,
        plugins: tuple[FilterPlugin, ...],
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
    ) -> Status | None:
        """``run_filter`` with the cycle's plugin list precomputed: the
        per-node hot loop of the scheduling cycle."""
        if state.record_plugin_metrics:
            return self._run_filters_measured(plugins, state, pod, node_info)
        for plugin in plugins:
            try:
                status = plugin.filter(state, pod, node_info)
            except Exception as error:
                status = Status.as_error(error)
            if status is not None and status.code is not Code.SUCCESS:
                return _filter_failure(plugin.name, status)
        return None

    def _run_filters_measured(
        self,
        plugins: tuple[FilterPlugin, ...],
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
    ) -> Status | None:
        for plugin in plugins:
            begun = time.perf_counter()
            try:
                status = plugin.filter(state, pod, node_info)
            except Exception as error:
                status = Status.as_error(error)
            self._plugin(state, plugin.name, ExtensionPoint.FILTER, status, begun)
            if status is not None and status.code is not Code.SUCCESS:
                return _filter_failure(plugin.name, status)
        return None

    def observe_filter(self, status: Status | None, started: float) -> None:
        self._observe(ExtensionPoint.FILTER, status, started)

    # ----------------------------------------------------------- PostFilter
    def run_post_filter(
        self, state: CycleState, pod: Pod, filtered: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        started = time.perf_counter()
        reasons: list[str] = []
        first_rejector = ""
        result: PostFilterResult | None = None
        for plugin in self.post_filter:
            begun = time.perf_counter()
            try:
                plugin_result, status = plugin.post_filter(state, pod, filtered)
            except Exception as error:
                plugin_result, status = None, Status.as_error(error)
            self._plugin(state, plugin.name, ExtensionPoint.POST_FILTER, status, begun)
            code = _code(status)
            if code is Code.SUCCESS:
                final = Status.success()
                self._observe(ExtensionPoint.POST_FILTER, final, started)
                return plugin_result, final
            assert status is not None
            if code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                final = status.with_plugin(plugin.name)
                self._observe(ExtensionPoint.POST_FILTER, final, started)
                return plugin_result, final
            if not status.is_rejected():  # upstream passes the plugin's error on unwrapped
                final = Status.as_error(status.message()).with_plugin(plugin.name)
                self._observe(ExtensionPoint.POST_FILTER, final, started)
                return None, final
            reasons.extend(status.reasons)
            first_rejector = first_rejector or plugin.name
            if _nominates(plugin_result):  # the last meaningful (non-Noop) result wins
                result = plugin_result
        final = Status.unschedulable(*reasons).with_plugin(first_rejector)
        self._observe(ExtensionPoint.POST_FILTER, final, started)
        return result, final

    # ---------------------------------------------------- PreScore / Score
    def run_pre_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        started = time.perf_counter()
        for plugin in self.pre_score:
            begun = time.perf_counter()
            try:
                status = plugin.pre_score(state, pod, nodes)
            except Exception as error:
                status = Status.as_error(error)
            self._plugin(state, plugin.name, ExtensionPoint.PRE_SCORE, status, begun)
            code = _code(status)
            if code is Code.SKIP:
                state.skip_score_plugins.add(plugin.name)
            elif code is not Code.SUCCESS:
                assert status is not None
                final = Status.as_error(
                    f'running PreScore plugin "{plugin.name}": {status.message()}'
                ).with_plugin(plugin.name)
                self._observe(ExtensionPoint.PRE_SCORE, final, started)
                return final
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
            return _NO_SCORES, status
        totals = [0] * len(nodes)
        weighted: list[list[int]] = []
        for plugin, plugin_raw in zip(plugins, raw, strict=True):
            values, status = self._normalize(state, plugin, pod, nodes, plugin_raw)
            if status is not None:
                self._observe(ExtensionPoint.SCORE, status, started)
                return _NO_SCORES, status
            if values and (min(values) < MIN_NODE_SCORE or max(values) > MAX_NODE_SCORE):
                bad = next(v for v in values if not MIN_NODE_SCORE <= v <= MAX_NODE_SCORE)
                final = Status.as_error(
                    f'applying score defaultWeights on Score plugins: plugin "{plugin.name}" '
                    f"returns an invalid score {bad}, it should in the range of "
                    f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                )
                self._observe(ExtensionPoint.SCORE, final, started)
                return _NO_SCORES, final
            weight = self.weights[plugin.name]
            if weight != 1:
                values = [value * weight for value in values]
            totals = [total + value for total, value in zip(totals, values, strict=True)]
            weighted.append(values)
        result = ScoreTable(
            [node_info.name for node_info in nodes],
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
            raw: list[list[int]] = []
            for plugin in plugins:
                values, status = self._score_plugin(state, plugin, pod, nodes)
                if status is not None:
                    return [], status
                raw.append(values)
            return raw, None
        raw = [[] for _ in plugins]
        appends = [values.append for values in raw]
        for node_info in nodes:
            cached = table.get(node_info.name)
            if cached is not None and cached[0] == node_info.generation:
                scores = cached[1]
            else:
                computed: list[int] = []
                for plugin in plugins:
                    try:
                        value, status = plugin.score(state, pod, node_info)
                    except Exception as error:
                        value, status = 0, Status.as_error(error)
                    if status is not None and status.code is not Code.SUCCESS:
                        return [], _score_failure(plugin.name, status)
                    computed.append(value)
                scores = tuple(computed)
                table[node_info.name] = (node_info.generation, scores)
            for append, value in zip(appends, scores, strict=True):
                append(value)
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
                return [], _score_failure(plugin.name, status)
            append(value)
        self._plugin(state, plugin.name, ExtensionPoint.SCORE, None, begun)
        return values, None

    def _normalize(
        self,
        state: CycleState,
        plugin: ScorePlugin,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        values: list[int],
    ) -> tuple[list[int], Status | None]:
        begun = time.perf_counter()
        node_scores = []
        try:
            extensions = plugin.score_extensions()
            if extensions is None:
                return values, None
            node_scores = [NodeScore(n.name, v) for n, v in zip(nodes, values, strict=True)]
            status = extensions.normalize_score(state, pod, node_scores)
        except Exception as error:
            status = Status.as_error(error)
        self._plugin(state, plugin.name, ExtensionPoint.NORMALIZE_SCORE, status, begun)
        if status is not None and status.code is not Code.SUCCESS:
            return [], Status.as_error(
                f'running Normalize on Score plugins: plugin "{plugin.name}" failed with: '
                f"{status.message()}"
            )
        return [node_score.score for node_score in node_scores], None

    # ----------------------------------------------------- verdict caching
    def filter_verdicts(
        self, state: CycleState, pod: Pod, filters: Sequence[FilterPlugin], node_count: int
    ) -> dict[str, tuple[int, Status | None]] | None:
        """The reusable Filter results for this pod's signature, or None when
        this cycle must run every Filter (see ``scheduler.runtime.verdicts``).
        ``node_count`` (the snapshot's) bounds the tables."""
        self._cluster_size = node_count
        return self._verdict_table(self._filter_verdicts, state, filters, pod, node_count)

    @staticmethod
    def _verdict_table(
        cache: VerdictCache[V],
        state: CycleState,
        plugins: Sequence[Plugin],
        pod: Pod,
        node_count: int,
    ) -> dict[str, tuple[int, V]] | None:
        if state.record_plugin_metrics or not plugins:
            return None  # sampled cycles measure real plugin calls
        fragments = []
        for plugin in plugins:
            if not isinstance(plugin, SignPlugin):
                return None
            fragment = plugin.sign_pod(pod)
            if fragment is None:
                return None
            fragments.append(fragment)
        signature = (tuple(plugin.name for plugin in plugins), tuple(fragments))
        return cache.table(signature, max_entries=2 * node_count + 16)

    # -------------------------------------------------------------- Reserve
    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        started = time.perf_counter()
        for plugin in self.reserve:
            begun = time.perf_counter()
            try:
                status = plugin.reserve(state, pod, node_name)
            except Exception as error:
                status = Status.as_error(error)
            self._plugin(state, plugin.name, ExtensionPoint.RESERVE, status, begun)
            if status is not None and status.code is not Code.SUCCESS:
                final = _rejection_or_error("Reserve", plugin.name, status)
                self._observe(ExtensionPoint.RESERVE, final, started)
                return final
        self._observe(ExtensionPoint.RESERVE, None, started)
        return None

    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        started = time.perf_counter()
        for plugin in reversed(self.reserve):
            begun = time.perf_counter()
            try:
                plugin.unreserve(state, pod, node_name)
            except Exception:  # Unreserve must not stop the others
                self._plugin(
                    state, plugin.name, ExtensionPoint.UNRESERVE, Status.as_error(""), begun
                )
                continue
            self._plugin(state, plugin.name, ExtensionPoint.UNRESERVE, None, begun)
        self._observe(ExtensionPoint.UNRESERVE, None, started)

    # --------------------------------------------------------------- Permit
    def run_permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        started = time.perf_counter()
        timeouts: dict[str, float] = {}
        for plugin in self.permit:
            begun = time.perf_counter()
            try:
                status, timeout = plugin.permit(state, pod, node_name)
            except Exception as error:
                status, timeout = Status.as_error(error), 0.0
            self._plugin(state, plugin.name, ExtensionPoint.PERMIT, status, begun)
            code = _code(status)
            if code is Code.SUCCESS:
                continue
            assert status is not None
            if status.is_rejected():
                final = status.with_plugin(plugin.name)
                self._observe(ExtensionPoint.PERMIT, final, started)
                return final
            if code is Code.WAIT:
                timeouts[plugin.name] = min(max(timeout, 0.0), MAX_PERMIT_TIMEOUT_SECONDS)
                continue
            final = Status.as_error(
                f'running Permit plugin "{plugin.name}": {status.message()}'
            ).with_plugin(plugin.name)
            self._observe(ExtensionPoint.PERMIT, final, started)
            return final
        if timeouts:
            self._waiting.add(WaitingPodImpl(pod, timeouts))
            final = Status.wait(
                f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"'
            )
            self._observe(ExtensionPoint.PERMIT, final, started)
            return final
        self._observe(ExtensionPoint.PERMIT, None, started)
        return None

    def reject_waiting(self, uid: str, message: str) -> None:
        """Reject the pod if it waits at Permit (it is being rolled back)."""
        waiting = self._waiting.get(uid)
        if waiting is not None:
            waiting.reject("", message)
            self._waiting.remove(uid)

    async def wait_on_permit(self, pod: Pod) -> Status | None:
        waiting = self._waiting.get(pod.uid)
        if waiting is None:
            return None
        started = time.perf_counter()
        try:
            status = await waiting.wait()
        finally:
            self._waiting.remove(pod.uid)
        self._metrics.permit_wait(status.code, time.perf_counter() - started)
        if status.is_success():
            return None
        if status.is_rejected():
            return status
        return Status.as_error(f"waiting on permit for pod: {status.message()}").with_plugin(
            status.plugin
        )

    # ----------------------------------------------------------- PreBind...
    def run_pre_bind_pre_flights(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """Success if some PreBind plugin will do work, Skip if none will."""
        started = time.perf_counter()
        any_work = False
        final: Status | None = None
        for plugin in self.pre_bind:
            begun = time.perf_counter()
            try:
                status = plugin.pre_bind_pre_flight(state, pod, node_name)
            except Exception as error:
                status = Status.as_error(error)
            self._plugin(state, plugin.name, ExtensionPoint.PRE_BIND_PRE_FLIGHT, status, begun)
            code = _code(status)
            if code is Code.SKIP:
                state.skip_pre_bind_plugins.add(plugin.name)
            elif code is Code.SUCCESS:
                any_work = True
            elif code is Code.ERROR:
                assert status is not None
                final = Status.as_error(
                    f'running PreBindPreFlight "{plugin.name}": {status.message()}'
                )
                break
            else:
                final = Status.as_error(
                    f'PreBindPreFlight {plugin.name} returned "{code.label}", which is '
                    "unsupported. It is supposed to return Success, Skip, or Error status"
                )
                break
        if final is None:
            final = Status.success() if any_work else Status.skip()
        self._observe(ExtensionPoint.PRE_BIND_PRE_FLIGHT, final, started)
        return final

    async def run_pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        started = time.perf_counter()
        for plugin in self.pre_bind:
            if plugin.name in state.skip_pre_bind_plugins:
                continue
            begun = time.perf_counter()
            try:
                status = await plugin.pre_bind(state, pod, node_name)
            except Exception as error:
                status = Status.as_error(error)
            self._plugin(state, plugin.name, ExtensionPoint.PRE_BIND, status, begun)
            if status is not None and status.code is not Code.SUCCESS:
                final = _rejection_or_error("PreBind", plugin.name, status)
                self._observe(ExtensionPoint.PRE_BIND, final, started)
                return final
        self._observe(ExtensionPoint.PRE_BIND, None, started)
        return None

    async def run_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        started = time.perf_counter()
        final = Status.skip()
        for plugin in self.bind:
            begun = time.perf_counter()
            try:
                status = await plugin.bind(state, pod, node_name)
            except Exception as error:
                status = Status.as_error(error)
            self._plugin(state, plugin.name, ExtensionPoint.BIND, status, begun)
            code = _code(status)
            if code is Code.SKIP:
                continue
            if code is Code.SUCCESS:
                final = Status.success()
            elif status is not None and status.is_rejected():
                final = status.with_plugin(plugin.name)
            else:
                assert status is not None
                final = Status.as_error(
                    f'running Bind plugin "{plugin.name}": {status.message()}'
                ).with_plugin(plugin.name)
            break
        self._observe(ExtensionPoint.BIND, final, started)
        return final

    def run_post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        started = time.perf_counter()
        for plugin in self.post_bind:
            begun = time.perf_counter()
            try:
                plugin.post_bind(state, pod, node_name)
            except Exception:  # informational only
                self._plugin(
                    state, plugin.name, ExtensionPoint.POST_BIND, Status.as_error(""), begun
                )
                continue
            self._plugin(state, plugin.name, ExtensionPoint.POST_BIND, None, begun)
        self._observe(ExtensionPoint.POST_BIND, None, started)
