"""The shared base of the extension-point runners: the typed plugin lists of
each point (``PluginSet``, filled once from the profile), what the runners
measure and the state they share, all set by ``ExtensionPoints.__init__``.
``Framework`` (framework.py) combines the runners: filtering.py (PreFilter,
Filter, PostFilter), scoring.py (PreScore, Score, NormalizeScore) and
binding.py (Reserve through PostBind)."""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

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
P = TypeVar("P", bound=Plugin)


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


class ExtensionPoints:
    """What every runner reads: the typed plugin lists of each point and the
    measurement and reuse state, all set here, once."""

    def __init__(
        self,
        profile_name: str,
        plugins: PluginSet,
        score_weights: Mapping[str, int],
        waiting_pods: WaitingPods,
        metrics: FrameworkMetrics | None = None,
    ) -> None:
        self.profile_name = profile_name
        self._metrics: FrameworkMetrics = metrics or NoMetrics()
        self._samples: list[PluginSample] = []
        self._waiting = waiting_pods
        self._filter_verdicts: VerdictCache[Status | None] = VerdictCache()
        self._score_verdicts: VerdictCache[tuple[int, ...]] = VerdictCache()
        self._cluster_size = 0
        # Pod signature fragments by plugin, for one cycle's (state, pod).
        self._fragment_key: tuple[object, object] = (None, None)
        self._fragment_memo: dict[str, Hashable | None] = {}
        # plugin -> (pod fragment, node names, raw scores, normalized scores)
        self._normalized: dict[str, tuple[Hashable, list[str], list[int], list[int]]] = {}
        self.pre_enqueue = plugins.pre_enqueue
        self.queue_sort = plugins.queue_sort
        self.pre_filter = plugins.pre_filter
        self.filter = plugins.filter
        self._filters = tuple(plugins.filter)
        self.post_filter = plugins.post_filter
        self.pre_score = plugins.pre_score
        self.score = plugins.score
        self.weights = {
            plugin.name: max(1, score_weights.get(plugin.name, 1)) for plugin in plugins.score
        }
        self.reserve = plugins.reserve
        self.permit = plugins.permit
        self.pre_bind = plugins.pre_bind
        self.bind = plugins.bind
        self.post_bind = plugins.post_bind

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

    def _verdict_table(
        self,
        cache: VerdictCache[V],
        state: CycleState,
        plugins: Sequence[Plugin],
        pod: Pod,
        node_count: int,
    ) -> dict[str, tuple[int, V]] | None:
        """The table for ``plugins`` when every one of them signs ``pod``."""
        if not plugins:
            return None
        signed = self._signed_part(state, plugins, pod)
        if len(signed[0]) != len(plugins):
            return None
        return cache.table(_signature(*signed), max_entries=2 * node_count + 16)

    def _partial_verdict_table(
        self,
        cache: VerdictCache[V],
        state: CycleState,
        plugins: Sequence[P],
        pod: Pod,
        node_count: int,
    ) -> tuple[dict[str, tuple[int, V]], tuple[P, ...]] | None:
        """For ``plugins`` of which some but not all sign ``pod``: the table
        of the signing ones' results, and those plugins (in order). A table
        is the same whether its plugins were all of the cycle's or a part:
        its signature names them."""
        signed, fragments = self._signed_part(state, plugins, pod)
        if not signed or len(signed) == len(plugins):
            return None
        table = cache.table(_signature(signed, fragments), max_entries=2 * node_count + 16)
        return table, signed


def _signature(plugins: Sequence[Plugin], fragments: tuple[Hashable, ...]) -> Hashable:
    return (tuple(plugin.name for plugin in plugins), fragments)
