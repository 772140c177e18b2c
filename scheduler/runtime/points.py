"""What the extension-point runners share: the typed plugin lists of each
point (``PluginSet``, filled once from the profile and held once, by the
``Framework``), the ``Recorder`` that measures them, and upstream's status
wording. ``Framework`` (framework.py) holds one of each and the runners:
filtering.py (PreFilter, Filter, PostFilter), scoring.py (PreScore, Score,
NormalizeScore) and binding.py (Reserve through PostBind); reuse of
node-local results is verdicts.py's."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interfaces import (
    BindPlugin,
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
from scheduler.framework.status import Code, Status
from scheduler.framework.types import (
    NominatingMode,
    PostFilterResult,
    ScoreTable,
)


class FrameworkMetrics(Protocol):
    def extension_point(
        self, point: ExtensionPoint, status: Code, profile: str, seconds: float
    ) -> None: ...

    def plugin_executions(self, samples: Sequence[PluginSample]) -> None: ...

    def permit_wait(self, status: Code, seconds: float) -> None: ...

    def plugin_evaluations(
        self, point: ExtensionPoint, profile: str, counts: Mapping[str, int]
    ) -> None: ...


# (plugin, extension point, status code, seconds) of one plugin call.
PluginSample = tuple[str, ExtensionPoint, Code, float]


class NoMetrics:
    def extension_point(
        self, point: ExtensionPoint, status: Code, profile: str, seconds: float
    ) -> None:
        return None

    def plugin_executions(self, samples: Sequence[PluginSample]) -> None:
        return None

    def permit_wait(self, status: Code, seconds: float) -> None:
        return None

    def plugin_evaluations(
        self, point: ExtensionPoint, profile: str, counts: Mapping[str, int]
    ) -> None:
        return None


def code_of(status: Status | None) -> Code:
    return Code.SUCCESS if status is None else status.code


def nominates(result: PostFilterResult | None) -> bool:
    """Upstream ``Mode() != ModeNoop``: the result asks to (re)set the nomination."""
    info = None if result is None else result.nominating_info
    return info is not None and info.mode != NominatingMode.NOOP


NO_SCORES = ScoreTable((), (), (), ())


def _typed(
    plugins_by_point: Mapping[ExtensionPoint, Sequence[Plugin]],
    point: ExtensionPoint,
    kind: type,
) -> list[Any]:
    """The plugins configured at ``point``, each checked to implement ``kind``
    (the ``PluginSet`` field it fills gives the static type)."""
    typed: list[Any] = []
    for plugin in plugins_by_point.get(point, ()):
        if not isinstance(plugin, kind):
            raise TypeError(
                f"plugin {plugin.name!r} is enabled at {point} but is not a {kind.__name__}"
            )
        typed.append(plugin)
    return typed


@dataclass(slots=True)
class PluginSet:
    """The plugins of one profile per extension point, in configured order
    (upstream's per-point slices)."""

    pre_enqueue: list[PreEnqueuePlugin] = field(default_factory=list)
    queue_sort: QueueSortPlugin | None = None
    pre_filter: list[PreFilterPlugin] = field(default_factory=list)
    filter: list[FilterPlugin] = field(default_factory=list)
    post_filter: list[PostFilterPlugin] = field(default_factory=list)
    pre_score: list[PreScorePlugin] = field(default_factory=list)
    score: list[ScorePlugin] = field(default_factory=list)
    reserve: list[ReservePlugin] = field(default_factory=list)
    permit: list[PermitPlugin] = field(default_factory=list)
    pre_bind: list[PreBindPlugin] = field(default_factory=list)
    bind: list[BindPlugin] = field(default_factory=list)
    post_bind: list[PostBindPlugin] = field(default_factory=list)

    @staticmethod
    def from_points(plugins_by_point: Mapping[ExtensionPoint, Sequence[Plugin]]) -> PluginSet:
        """Fill every point once; a plugin enabled at a point it does not
        implement is a TypeError naming both."""
        sorts = _typed(plugins_by_point, ExtensionPoint.QUEUE_SORT, QueueSortPlugin)
        return PluginSet(
            pre_enqueue=_typed(plugins_by_point, ExtensionPoint.PRE_ENQUEUE, PreEnqueuePlugin),
            queue_sort=sorts[0] if sorts else None,
            pre_filter=_typed(plugins_by_point, ExtensionPoint.PRE_FILTER, PreFilterPlugin),
            filter=_typed(plugins_by_point, ExtensionPoint.FILTER, FilterPlugin),
            post_filter=_typed(plugins_by_point, ExtensionPoint.POST_FILTER, PostFilterPlugin),
            pre_score=_typed(plugins_by_point, ExtensionPoint.PRE_SCORE, PreScorePlugin),
            score=_typed(plugins_by_point, ExtensionPoint.SCORE, ScorePlugin),
            reserve=_typed(plugins_by_point, ExtensionPoint.RESERVE, ReservePlugin),
            permit=_typed(plugins_by_point, ExtensionPoint.PERMIT, PermitPlugin),
            pre_bind=_typed(plugins_by_point, ExtensionPoint.PRE_BIND, PreBindPlugin),
            bind=_typed(plugins_by_point, ExtensionPoint.BIND, BindPlugin),
            post_bind=_typed(plugins_by_point, ExtensionPoint.POST_BIND, PostBindPlugin),
        )


def score_failure(plugin: str, status: Status) -> Status:
    return Status.as_error(
        f'running Score plugins: plugin "{plugin}" failed with: {status.message()}'
    )


def rejection_or_error(point: str, plugin: str, status: Status) -> Status:
    """A rejection keeps its code; anything else becomes an upstream-worded Error."""
    if status.is_rejected():
        return status.with_plugin(plugin)
    message = f'running {point} plugin "{plugin}": {status.message()}'
    return Status.as_error(message).with_plugin(plugin)


def filter_failure(plugin: str, status: Status) -> Status:
    if status.is_rejected():
        return status.with_plugin(plugin)
    return Status.as_error(f'running "{plugin}" filter plugin: {status.message()}').with_plugin(
        plugin
    )


class Recorder:
    """What the runners of one profile measure, shared by them: extension
    point durations, plugin evaluation counts and, for cycles sampled for
    plugin metrics, each plugin call (batched per extension point run)."""

    __slots__ = ("_metrics", "_samples", "profile_name")

    def __init__(self, profile_name: str, metrics: FrameworkMetrics | None = None) -> None:
        self.profile_name = profile_name
        self._metrics: FrameworkMetrics = metrics or NoMetrics()
        self._samples: list[PluginSample] = []

    def observe(self, point: ExtensionPoint, status: Status | None, started: float) -> None:
        self._metrics.extension_point(
            point, code_of(status), self.profile_name, time.perf_counter() - started
        )
        if self._samples:  # one batch per extension point run, not one per call
            self._metrics.plugin_executions(self._samples)
            self._samples = []

    def evaluated(self, point: ExtensionPoint, counts: Mapping[str, int]) -> None:
        """Upstream ``scheduler_plugin_evaluation_total``: real plugin calls."""
        self._metrics.plugin_evaluations(point, self.profile_name, counts)

    def plugin(
        self,
        state: CycleState,
        plugin: str,
        point: ExtensionPoint,
        status: Status | None,
        started: float,
    ) -> None:
        if state.record_plugin_metrics:
            self._samples.append((plugin, point, code_of(status), time.perf_counter() - started))

    def permit_wait(self, status: Code, seconds: float) -> None:
        self._metrics.permit_wait(status, seconds)
