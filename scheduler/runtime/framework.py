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

from collections.abc import Mapping, Sequence

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
)
from scheduler.framework.status import Status
from scheduler.framework.types import (
    QueuedPodInfo,
)
from scheduler.runtime.binding import BindingPoints
from scheduler.runtime.filtering import FilteringPoints
from scheduler.runtime.points import (
    FrameworkMetrics,
    NoMetrics,
    PluginSample,
)
from scheduler.runtime.scoring import ScoringPoints
from scheduler.runtime.verdicts import VerdictCache
from scheduler.runtime.waiting import WaitingPods


class Framework(FilteringPoints, ScoringPoints, BindingPoints):
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
        self._metrics: FrameworkMetrics = metrics or NoMetrics()
        self._samples: list[PluginSample] = []
        self._filter_verdicts: VerdictCache[Status | None] = VerdictCache()
        self._score_verdicts: VerdictCache[tuple[int, ...]] = VerdictCache()
        self._cluster_size = 0
        self._normalized = {}
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
