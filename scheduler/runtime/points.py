"""The shared base of the extension-point runners: what they measure and the
state they share. ``Framework`` (framework.py) combines the runners:
filtering.py (PreFilter, Filter, PostFilter), scoring.py (PreScore, Score,
NormalizeScore) and binding.py (Reserve through PostBind)."""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping, Sequence
from typing import Protocol, TypeVar

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
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.objects import Pod
from scheduler.framework.status import Code, Status
from scheduler.framework.types import (
    NominatingMode,
    PostFilterResult,
    ScoreTable,
)
from scheduler.runtime.verdicts import VerdictCache
from scheduler.runtime.waiting import WaitingPods


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
V = TypeVar("V")


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


class ExtensionPoints:
    """Attributes every runner reads; set by ``Framework.__init__``."""

    profile_name: str
    _metrics: FrameworkMetrics
    _samples: list[PluginSample]
    _waiting: WaitingPods
    _filter_verdicts: VerdictCache[Status | None]
    _score_verdicts: VerdictCache[tuple[int, ...]]
    _cluster_size: int
    # plugin -> (pod fragment, node names, raw scores, normalized scores)
    _normalized: dict[str, tuple[Hashable, list[str], list[int], list[int]]]
    pre_filter: list[PreFilterPlugin]
    filter: list[FilterPlugin]
    _filters: tuple[FilterPlugin, ...]
    post_filter: list[PostFilterPlugin]
    pre_score: list[PreScorePlugin]
    score: list[ScorePlugin]
    weights: dict[str, int]
    reserve: list[ReservePlugin]
    permit: list[PermitPlugin]
    pre_bind: list[PreBindPlugin]
    bind: list[BindPlugin]
    post_bind: list[PostBindPlugin]

    # ---------------------------------------------------------- measurement
    def _observe(self, point: ExtensionPoint, status: Status | None, started: float) -> None:
        self._metrics.extension_point(
            point, code_of(status), self.profile_name, time.perf_counter() - started
        )
        if self._samples:  # one batch per extension point run, not one per call
            self._metrics.plugin_executions(self._samples)
            self._samples = []

    def _evaluated(self, point: ExtensionPoint, counts: Mapping[str, int]) -> None:
        """Upstream ``scheduler_plugin_evaluation_total``: real plugin calls."""
        self._metrics.plugin_evaluations(point, self.profile_name, counts)

    def _plugin(
        self,
        state: CycleState,
        plugin: str,
        point: ExtensionPoint,
        status: Status | None,
        started: float,
    ) -> None:
        if state.record_plugin_metrics:
            self._samples.append((plugin, point, code_of(status), time.perf_counter() - started))

    @staticmethod
    def _verdict_table(
        cache: VerdictCache[V],
        state: CycleState,
        plugins: Sequence[Plugin],
        pod: Pod,
        node_count: int,
    ) -> dict[str, tuple[int, V]] | None:
        if not plugins:
            return None
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
