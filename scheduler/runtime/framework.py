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
    EnqueueExtensions,
    ExtensionPoint,
    Plugin,
)
from scheduler.framework.types import (
    QueuedPodInfo,
)
from scheduler.runtime.binding import BindingPoints
from scheduler.runtime.filtering import FilteringPoints
from scheduler.runtime.points import FrameworkMetrics, PluginSet
from scheduler.runtime.scoring import ScoringPoints
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
        super().__init__(
            profile_name,
            PluginSet.from_points(plugins_by_point),
            score_weights,
            waiting_pods,
            metrics,
        )
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
