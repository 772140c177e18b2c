"""PreFilter, Filter and PostFilter with upstream run semantics.

``Filtering`` reads the profile's ``PluginSet`` (never copies it) and records
through the shared ``Recorder``. The per-node Filter of a cycle comes from
``node_filter``: the ``VerdictSource`` decides whether a node's status is
reused or run (``scheduler.runtime.verdicts``); the walk over the nodes is
the cycle's (``scheduler.cycle.algorithm``)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interfaces import (
    ExtensionPoint,
    FilterPlugin,
)
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.objects import Pod
from scheduler.framework.status import Code, Status
from scheduler.framework.types import (
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
)
from scheduler.runtime.nodefilter import NodeFilter
from scheduler.runtime.points import (
    PluginSet,
    Recorder,
    code_of,
    filter_failure,
    nominates,
)
from scheduler.runtime.verdicts import VerdictSource


class Filtering:
    """The PreFilter, Filter and PostFilter runner of one profile."""

    __slots__ = ("_plugins", "_recorder", "_verdicts")

    def __init__(self, plugins: PluginSet, recorder: Recorder, verdicts: VerdictSource) -> None:
        self._plugins = plugins
        self._recorder = recorder
        self._verdicts = verdicts

    # ------------------------------------------------------------ PreFilter
    def run_pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """See ``_run_pre_filter``; also counts the plugins that ran."""
        called: dict[str, int] = {}
        try:
            return self._run_pre_filter(state, pod, nodes, called)
        finally:
            self._recorder.evaluated(ExtensionPoint.PRE_FILTER, called)

    def _run_pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo], called: dict[str, int]
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
        for plugin in self._plugins.pre_filter:
            begun = time.perf_counter()
            called[plugin.name] = 1
            try:
                plugin_result, status = plugin.pre_filter(state, pod, nodes)
            except Exception as error:  # a plugin bug is an Error, not a crash
                plugin_result, status = None, Status.as_error(error)
            self._recorder.plugin(state, plugin.name, ExtensionPoint.PRE_FILTER, status, begun)
            code = code_of(status)
            if code is Code.SKIP:
                state.skip_filter_plugins.add(plugin.name)
                continue
            if code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                assert status is not None
                final = status.with_plugin(plugin.name)
                self._recorder.observe(ExtensionPoint.PRE_FILTER, final, started)
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
                self._recorder.observe(ExtensionPoint.PRE_FILTER, final, started)
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
                    self._recorder.observe(ExtensionPoint.PRE_FILTER, final, started)
                    return None, final, narrowing
        self._recorder.observe(ExtensionPoint.PRE_FILTER, rejection, started)
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
        for plugin in self._plugins.pre_filter:
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
            return tuple(self._plugins.filter)
        return tuple(plugin for plugin in self._plugins.filter if plugin.name not in skip)

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
                return filter_failure(plugin.name, status)
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
            self._recorder.plugin(state, plugin.name, ExtensionPoint.FILTER, status, begun)
            if status is not None and status.code is not Code.SUCCESS:
                return filter_failure(plugin.name, status)
        return None

    def count_filter_evaluations(
        self, filters: Sequence[FilterPlugin], passed: int, rejected_by: Mapping[str, int]
    ) -> None:
        """Per-plugin Filter calls of a cycle, from per-node outcomes: a node
        that passed ran every filter; one rejected by plugin k ran plugins 0..k."""
        counts: dict[str, int] = {}
        running = passed
        for plugin in reversed(filters):
            running += rejected_by.get(plugin.name, 0)
            counts[plugin.name] = running
        self._recorder.evaluated(ExtensionPoint.FILTER, counts)

    def observe_filter(self, status: Status | None, started: float) -> None:
        self._recorder.observe(ExtensionPoint.FILTER, status, started)

    def node_filter(
        self, state: CycleState, pod: Pod, filters: tuple[FilterPlugin, ...], node_count: int
    ) -> NodeFilter:
        """The cycle's Filter of ``pod`` node by node, with ``filters`` (the
        cycle's ``active_filters``); results reused where the profile's
        ``VerdictSource`` allows. ``node_count`` (the nodes to filter) bounds
        its tables."""
        return self._verdicts.node_filter(self, state, pod, filters, node_count)

    # ----------------------------------------------------------- PostFilter
    def run_post_filter(
        self, state: CycleState, pod: Pod, filtered: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        started = time.perf_counter()
        reasons: list[str] = []
        first_rejector = ""
        result: PostFilterResult | None = None
        for plugin in self._plugins.post_filter:
            begun = time.perf_counter()
            try:
                plugin_result, status = plugin.post_filter(state, pod, filtered)
            except Exception as error:
                plugin_result, status = None, Status.as_error(error)
            self._recorder.plugin(state, plugin.name, ExtensionPoint.POST_FILTER, status, begun)
            code = code_of(status)
            if code is Code.SUCCESS:
                final = Status.success()
                self._recorder.observe(ExtensionPoint.POST_FILTER, final, started)
                return plugin_result, final
            assert status is not None
            if code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                final = status.with_plugin(plugin.name)
                self._recorder.observe(ExtensionPoint.POST_FILTER, final, started)
                return plugin_result, final
            if not status.is_rejected():  # upstream passes the plugin's error on unwrapped
                final = Status.as_error(status.message()).with_plugin(plugin.name)
                self._recorder.observe(ExtensionPoint.POST_FILTER, final, started)
                return None, final
            reasons.extend(status.reasons)
            first_rejector = first_rejector or plugin.name
            if nominates(plugin_result):  # the last meaningful (non-Noop) result wins
                result = plugin_result
        final = Status.unschedulable(*reasons).with_plugin(first_rejector)
        self._recorder.observe(ExtensionPoint.POST_FILTER, final, started)
        return result, final
