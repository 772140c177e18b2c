"""Runs the plugins of one profile at each extension point, upstream-style.

One ``Framework`` per profile, assembled by composition: it holds the
profile's ``PluginSet`` (the plugins per extension point, held once, here)
and three runners that read it: ``Filtering`` (PreFilter, Filter,
PostFilter), ``Scoring`` (PreScore, Score, NormalizeScore) and ``Binding``
(Reserve through PostBind). The runners share one ``Recorder`` (extension
point durations, evaluation counts, sampled plugin durations) and the
filtering and scoring runners one ``VerdictSource`` (reuse of node-local
results, ``scheduler.runtime.verdicts``). The ``run_*`` methods here are the
callers' entry points; each is the runner's method of the same name.

Every ``run_*`` method applies kube-scheduler's semantics for its point
(order, short-circuiting, Skip sets, status codes, error wrapping, score
range checks, weights) and records
``scheduler_framework_extension_point_duration_seconds``; individual plugin
durations are recorded only for cycles sampled for plugin metrics.

Synchronous except ``wait_on_permit``, ``run_pre_bind`` and ``run_bind``,
which belong to the binding cycle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.interfaces import (
    EnqueueExtensions,
    ExtensionPoint,
    FilterPlugin,
    Plugin,
    PreBindPlugin,
    PreEnqueuePlugin,
)
from scheduler.framework.nodeinfo import NodeInfo
from scheduler.framework.objects import Pod
from scheduler.framework.status import Status
from scheduler.framework.types import (
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
    ScoreTable,
)
from scheduler.runtime.binding import Binding
from scheduler.runtime.filtering import Filtering
from scheduler.runtime.nodefilter import NodeFilter
from scheduler.runtime.points import FrameworkMetrics, PluginSet, Recorder
from scheduler.runtime.scoring import Scoring
from scheduler.runtime.verdicts import SignatureVerdicts, VerdictSource
from scheduler.runtime.waiting import WaitingPods


class Framework:
    """Plugins of one profile, instantiated, grouped by extension point, and
    the runners of its extension points."""

    __slots__ = ("binding", "filtering", "plugins", "profile_name", "scoring")

    def __init__(
        self,
        profile_name: str,
        plugins_by_point: Mapping[ExtensionPoint, Sequence[Plugin]],
        score_weights: Mapping[str, int],
        waiting_pods: WaitingPods,
        metrics: FrameworkMetrics | None = None,
        *,
        verdicts: VerdictSource | None = None,
    ) -> None:
        """``verdicts``: where node-local results may be reused from; by
        default by pod signature (``SignatureVerdicts``)."""
        self.profile_name = profile_name
        self.plugins = PluginSet.from_points(plugins_by_point)
        recorder = Recorder(profile_name, metrics)
        source = verdicts if verdicts is not None else SignatureVerdicts()
        self.filtering = Filtering(self.plugins, recorder, source)
        self.scoring = Scoring(self.plugins, score_weights, recorder, source)
        self.binding = Binding(self.plugins, recorder, waiting_pods)

    # ------------------------------------------------------------- metadata
    @property
    def pre_enqueue(self) -> list[PreEnqueuePlugin]:
        return self.plugins.pre_enqueue

    @property
    def pre_bind(self) -> list[PreBindPlugin]:
        return self.plugins.pre_bind

    def has_filter_plugins(self) -> bool:
        return bool(self.plugins.filter)

    def has_score_plugins(self) -> bool:
        return bool(self.plugins.score)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.plugins.post_filter)

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Registered events of every plugin that can reject pods. A rejecting
        plugin without EnqueueExtensions is left out, which the queue reads as
        "every event may help"."""
        plugins = self.plugins
        result: dict[str, list[ClusterEventWithHint]] = {}
        rejecting = (
            *plugins.pre_enqueue,
            *plugins.pre_filter,
            *plugins.filter,
            *plugins.reserve,
            *plugins.permit,
        )
        for plugin in rejecting:
            if plugin.name in result or not isinstance(plugin, EnqueueExtensions):
                continue
            result[plugin.name] = list(plugin.events_to_register())
        return result

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        sort = self.plugins.queue_sort
        if sort is None:
            raise RuntimeError(f"profile {self.profile_name!r} has no QueueSort plugin")
        return sort.less(a, b)

    # ------------------------------------------------------------ filtering
    def run_pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        return self.filtering.run_pre_filter(state, pod, nodes)

    def run_pre_filter_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self.filtering.run_pre_filter_add_pod(state, pod, pod_to_add, node_info)

    def run_pre_filter_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        return self.filtering.run_pre_filter_remove_pod(state, pod, pod_to_remove, node_info)

    def run_filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return self.filtering.run_filter(state, pod, node_info)

    def active_filters(self, state: CycleState) -> tuple[FilterPlugin, ...]:
        return self.filtering.active_filters(state)

    def run_filters(
        self,
        plugins: tuple[FilterPlugin, ...],
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
    ) -> Status | None:
        return self.filtering.run_filters(plugins, state, pod, node_info)

    def node_filter(
        self, state: CycleState, pod: Pod, filters: tuple[FilterPlugin, ...], node_count: int
    ) -> NodeFilter:
        return self.filtering.node_filter(state, pod, filters, node_count)

    def count_filter_evaluations(
        self, filters: Sequence[FilterPlugin], passed: int, rejected_by: Mapping[str, int]
    ) -> None:
        self.filtering.count_filter_evaluations(filters, passed, rejected_by)

    def observe_filter(self, status: Status | None, started: float) -> None:
        self.filtering.observe_filter(status, started)

    def run_post_filter(
        self, state: CycleState, pod: Pod, filtered: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        return self.filtering.run_post_filter(state, pod, filtered)

    # -------------------------------------------------------------- scoring
    def run_pre_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        return self.scoring.run_pre_score(state, pod, nodes)

    def run_score(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[ScoreTable, Status | None]:
        return self.scoring.run_score(state, pod, nodes)

    # -------------------------------------------------------------- binding
    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self.binding.run_reserve(state, pod, node_name)

    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self.binding.run_unreserve(state, pod, node_name)

    def run_permit(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return self.binding.run_permit(state, pod, node_name)

    def is_waiting(self, uid: str) -> bool:
        return self.binding.is_waiting(uid)

    def reject_waiting(self, uid: str, message: str) -> None:
        self.binding.reject_waiting(uid, message)

    async def wait_on_permit(self, pod: Pod) -> Status | None:
        return await self.binding.wait_on_permit(pod)

    def run_pre_bind_pre_flights(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return self.binding.run_pre_bind_pre_flights(state, pod, node_name)

    async def run_pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return await self.binding.run_pre_bind(state, pod, node_name)

    async def run_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return await self.binding.run_bind(state, pod, node_name)

    def run_post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self.binding.run_post_bind(state, pod, node_name)
