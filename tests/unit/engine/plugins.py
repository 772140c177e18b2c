"""Scripted plugins for the engine tests, one class per extension point.

Each stub returns what its constructor was given, may raise instead, and
appends ``"<Point>:<name>"`` (``@<node>`` for per-node calls) to a shared
log, so that a test can assert which plugins ran, in which order.
``make_framework`` groups them into a real ``Framework``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.framework import (
    BindPlugin,
    Code,
    CycleState,
    ExtensionPoint,
    FilterPlugin,
    NodeInfo,
    NodeScore,
    NodeToStatus,
    PermitPlugin,
    Plugin,
    Pod,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
    Status,
)
from scheduler.framework.types import NominatingInfo, NominatingMode
from scheduler.runtime.framework import Framework
from scheduler.runtime.verdicts import VerdictSource
from scheduler.runtime.waiting import WaitingPods

Log = list[str]


class Stub(Plugin):
    def __init__(self, name: str, log: Log | None, raises: Exception | None) -> None:
        self.name = name  # type: ignore[misc]
        self.log: Log = [] if log is None else log
        self.raises = raises

    def _call(self, point: ExtensionPoint, detail: str = "") -> None:
        self.log.append(f"{point}:{self.name}" + (f"@{detail}" if detail else ""))
        if self.raises is not None:
            raise self.raises


class PreFilterStub(Stub, PreFilterPlugin):
    """Returns ``status`` and narrows to ``nodes`` unless None (all nodes)."""

    def __init__(
        self,
        name: str,
        status: Status | None = None,
        *,
        nodes: Iterable[str] | None = None,
        raises: Exception | None = None,
        log: Log | None = None,
    ) -> None:
        super().__init__(name, log, raises)
        self.status = status
        self.nodes = None if nodes is None else frozenset(nodes)

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        self._call(ExtensionPoint.PRE_FILTER)
        return (None if self.nodes is None else PreFilterResult(self.nodes)), self.status


class FilterStub(Stub, FilterPlugin):
    """Rejects the nodes in ``rejects`` with their status; ``raises_for``
    limits ``raises`` to the pods with those names."""

    def __init__(
        self,
        name: str,
        rejects: Mapping[str, Status] | None = None,
        *,
        raises: Exception | None = None,
        raises_for: Iterable[str] = (),
        log: Log | None = None,
    ) -> None:
        super().__init__(name, log, None)
        self.rejects = dict(rejects or {})
        self.failure = raises
        self.raises_for = frozenset(raises_for)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        self._call(ExtensionPoint.FILTER, node_info.name)
        if self.failure is not None and (not self.raises_for or pod.name in self.raises_for):
            raise self.failure
        return self.rejects.get(node_info.name)


class PostFilterStub(Stub, PostFilterPlugin):
    def __init__(
        self,
        name: str,
        status: Status | None,
        *,
        nominate: str | None = None,
        mode: str = NominatingMode.OVERRIDE,
        raises: Exception | None = None,
        log: Log | None = None,
    ) -> None:
        super().__init__(name, log, raises)
        self.status = status
        self.result = None if nominate is None else PostFilterResult(NominatingInfo(nominate, mode))

    def post_filter(
        self, state: CycleState, pod: Pod, filtered: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        self._call(ExtensionPoint.POST_FILTER)
        return self.result, self.status


class PreScoreStub(Stub, PreScorePlugin):
    def __init__(
        self,
        name: str,
        status: Status | None = None,
        *,
        raises: Exception | None = None,
        log: Log | None = None,
    ) -> None:
        super().__init__(name, log, raises)
        self.status = status

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        self._call(ExtensionPoint.PRE_SCORE)
        return self.status


Normalize = Callable[[list[NodeScore]], Status | None]


class ScoreStub(Stub, ScorePlugin, ScoreExtensions):
    """Scores from ``scores`` (0 for other nodes); ``normalize`` rewrites them."""

    def __init__(
        self,
        name: str,
        scores: Mapping[str, int] | None = None,
        *,
        status: Status | None = None,
        normalize: Normalize | None = None,
        raises: Exception | None = None,
        log: Log | None = None,
    ) -> None:
        super().__init__(name, log, raises)
        self.scores = dict(scores or {})
        self.status = status
        self.normalize = normalize

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        self._call(ExtensionPoint.SCORE, node_info.name)
        return self.scores.get(node_info.name, 0), self.status

    def score_extensions(self) -> ScoreExtensions | None:
        return self if self.normalize is not None else None

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        assert self.normalize is not None
        self.log.append(f"{ExtensionPoint.NORMALIZE_SCORE}:{self.name}")
        return self.normalize(scores)


class ReserveStub(Stub, ReservePlugin):
    def __init__(
        self,
        name: str,
        status: Status | None = None,
        *,
        raises: Exception | None = None,
        unreserve_raises: Exception | None = None,
        log: Log | None = None,
    ) -> None:
        super().__init__(name, log, raises)
        self.status = status
        self.unreserve_raises = unreserve_raises

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self._call(ExtensionPoint.RESERVE, node_name)
        return self.status

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self.log.append(f"{ExtensionPoint.UNRESERVE}:{self.name}@{node_name}")
        if self.unreserve_raises is not None:
            raise self.unreserve_raises


class PermitStub(Stub, PermitPlugin):
    def __init__(
        self,
        name: str,
        status: Status | None = None,
        timeout: float = 0.0,
        *,
        raises: Exception | None = None,
        log: Log | None = None,
    ) -> None:
        super().__init__(name, log, raises)
        self.status = status
        self.timeout = timeout

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        self._call(ExtensionPoint.PERMIT, node_name)
        return self.status, self.timeout


class PreBindStub(Stub, PreBindPlugin):
    def __init__(
        self,
        name: str,
        status: Status | None = None,
        *,
        pre_flight: Status | None = None,
        raises: Exception | None = None,
        log: Log | None = None,
    ) -> None:
        super().__init__(name, log, raises)
        self.status = status
        self.pre_flight = pre_flight

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self._call(ExtensionPoint.PRE_BIND_PRE_FLIGHT, node_name)
        return self.pre_flight

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self._call(ExtensionPoint.PRE_BIND, node_name)
        return self.status


class BindStub(Stub, BindPlugin):
    """Binds (records) unless scripted otherwise; with ``block`` it waits for
    that event first, after setting ``entered``."""

    def __init__(
        self,
        name: str,
        status: Status | None = None,
        *,
        block: asyncio.Event | None = None,
        raises: Exception | None = None,
        log: Log | None = None,
    ) -> None:
        super().__init__(name, log, raises)
        self.status = status
        self.block = block
        self.entered = asyncio.Event()
        self.bound: list[tuple[str, str]] = []

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self._call(ExtensionPoint.BIND, node_name)
        self.entered.set()
        if self.block is not None:
            await self.block.wait()
        if self.status is None:
            self.bound.append((pod.key, node_name))
        return self.status


class PostBindStub(Stub, PostBindPlugin):
    def __init__(
        self, name: str, *, raises: Exception | None = None, log: Log | None = None
    ) -> None:
        super().__init__(name, log, raises)

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self._call(ExtensionPoint.POST_BIND, node_name)


@dataclass
class RecordingFrameworkMetrics:
    points: list[tuple[ExtensionPoint, Code]] = field(default_factory=list)
    plugins: list[tuple[str, ExtensionPoint, Code]] = field(default_factory=list)
    permit_waits: list[Code] = field(default_factory=list)
    evaluations: dict[tuple[str, ExtensionPoint], int] = field(default_factory=dict)

    def extension_point(
        self, point: ExtensionPoint, status: Code, profile: str, seconds: float
    ) -> None:
        self.points.append((point, status))

    def plugin_executions(self, samples: Sequence[tuple[str, ExtensionPoint, Code, float]]) -> None:
        self.plugins.extend((plugin, point, status) for plugin, point, status, _ in samples)

    def permit_wait(self, status: Code, seconds: float) -> None:
        self.permit_waits.append(status)

    def plugin_evaluations(
        self, point: ExtensionPoint, profile: str, counts: Mapping[str, int]
    ) -> None:
        for plugin, count in counts.items():
            key = (plugin, point)
            self.evaluations[key] = self.evaluations.get(key, 0) + count


PROFILE = "default-scheduler"


def make_framework(
    *,
    pre_filter: Sequence[Plugin] = (),
    filter: Sequence[Plugin] = (),
    post_filter: Sequence[Plugin] = (),
    pre_score: Sequence[Plugin] = (),
    score: Sequence[Plugin] = (),
    reserve: Sequence[Plugin] = (),
    permit: Sequence[Plugin] = (),
    pre_bind: Sequence[Plugin] = (),
    bind: Sequence[Plugin] = (),
    post_bind: Sequence[Plugin] = (),
    weights: Mapping[str, int] | None = None,
    waiting: WaitingPods | None = None,
    metrics: RecordingFrameworkMetrics | None = None,
    profile: str = PROFILE,
    verdicts: VerdictSource | None = None,
) -> Framework:
    by_point: dict[ExtensionPoint, Sequence[Plugin]] = {
        ExtensionPoint.PRE_FILTER: pre_filter,
        ExtensionPoint.FILTER: filter,
        ExtensionPoint.POST_FILTER: post_filter,
        ExtensionPoint.PRE_SCORE: pre_score,
        ExtensionPoint.SCORE: score,
        ExtensionPoint.RESERVE: reserve,
        ExtensionPoint.PERMIT: permit,
        ExtensionPoint.PRE_BIND: pre_bind,
        ExtensionPoint.BIND: bind,
        ExtensionPoint.POST_BIND: post_bind,
    }
    return Framework(
        profile,
        {point: plugins for point, plugins in by_point.items() if plugins},
        dict(weights or {}),
        waiting if waiting is not None else WaitingPods(),
        metrics,
        verdicts=verdicts,
    )
