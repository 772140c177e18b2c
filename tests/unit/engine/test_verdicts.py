"""Reusing node-local plugin results across cycles changes nothing but the
work done: for every sequence of cycles, cached results equal recomputed ones,
and only nodes whose NodeInfo changed are evaluated again."""

from __future__ import annotations

import random
from collections.abc import Hashable

import pytest

from scheduler.cache import Cache, Snapshot
from scheduler.cycle.algorithm import Algorithm
from scheduler.framework import (
    CycleState,
    ExtensionPoint,
    FilterPlugin,
    NodeInfo,
    NodeScore,
    Pod,
    SignPlugin,
    Status,
    parse_pod,
)
from scheduler.framework.objects import parse_node
from scheduler.framework.types import FitError
from scheduler.runtime.nodefilter import NodeFilter, RunsFilters
from scheduler.runtime.verdicts import NoReuse, VerdictCache
from tests.support.builders import make_node, make_pod
from tests.unit.engine.plugins import (
    FilterStub,
    RecordingFrameworkMetrics,
    ScoreStub,
    make_framework,
)


class CountingFilter(FilterStub, SignPlugin):
    """A node-local filter that rejects nodes named in ``rejects``."""

    def __init__(self, name: str, rejects: dict[str, Status] | None = None) -> None:
        super().__init__(name, rejects)
        self.calls = 0

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        self.calls += 1
        return super().filter(state, pod, node_info)

    def sign_pod(self, pod: Pod) -> Hashable:
        return pod.requests.key()


class CountingScore(ScoreStub, SignPlugin):
    """A node-local score: fewer pods on the node scores higher."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.calls = 0

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        self.calls += 1
        return max(0, 100 - 10 * len(node_info.pods)), None

    def sign_pod(self, pod: Pod) -> Hashable:
        return pod.requests.key()


class UnsignedScore(CountingScore):
    def sign_pod(self, pod: Pod) -> Hashable | None:
        return None


def cluster(nodes: int) -> Cache:
    cache = Cache()
    for index in range(nodes):
        cache.add_node(parse_node(make_node(f"n{index}").obj()))
    return cache


def place(
    cache: Cache, algorithm: Algorithm, framework: object, snapshot: Snapshot, index: int
) -> str:
    pod = parse_pod(make_pod(f"p{index}").uid(f"u{index}").requests(cpu="100m").obj())
    cache.update_snapshot(snapshot)
    host = algorithm.schedule_pod(framework, CycleState(), pod, snapshot, None).suggested_host  # type: ignore[arg-type]
    cache.add_pod(
        parse_pod(make_pod(f"p{index}").uid(f"u{index}").requests(cpu="100m").node(host).obj())
    )
    return host


@pytest.mark.parametrize("nodes", [pytest.param(5, id="5 nodes"), pytest.param(30, id="30 nodes")])
def test_cached_placements_equal_recomputed_ones(nodes: int) -> None:
    def run(score: CountingScore) -> tuple[list[str], int]:
        cache = cluster(nodes)
        framework = make_framework(
            filter=[CountingFilter("F", {"n1": Status.unschedulable("x")})], score=[score]
        )
        algorithm = Algorithm(random.Random(7))
        snapshot = Snapshot()
        return [place(cache, algorithm, framework, snapshot, i) for i in range(40)], score.calls

    cached, cached_calls = run(CountingScore("S"))
    recomputed, recomputed_calls = run(UnsignedScore("S"))
    assert cached == recomputed
    assert cached_calls < recomputed_calls


def test_only_changed_nodes_are_evaluated_again() -> None:
    cache = cluster(10)
    filter_plugin = CountingFilter("F")
    score_plugin = CountingScore("S")
    framework = make_framework(filter=[filter_plugin], score=[score_plugin])
    algorithm = Algorithm(random.Random(1))
    snapshot = Snapshot()
    place(cache, algorithm, framework, snapshot, 0)
    assert (filter_plugin.calls, score_plugin.calls) == (10, 10)
    place(cache, algorithm, framework, snapshot, 1)
    assert (filter_plugin.calls, score_plugin.calls) == (11, 11), "one node changed"


def test_sampled_cycles_measure_only_the_calls_that_run() -> None:
    cache = cluster(4)
    filter_plugin = CountingFilter("F")
    framework = make_framework(filter=[filter_plugin], score=[CountingScore("S")])
    algorithm = Algorithm(random.Random(1))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    pod = parse_pod(make_pod("p").uid("u").obj())
    for _ in range(2):
        state = CycleState(record_plugin_metrics=True)
        algorithm.schedule_pod(framework, state, pod, snapshot, None)
    assert filter_plugin.calls == 4, "the second cycle reuses every verdict"


def test_cache_keeps_the_most_recent_signatures() -> None:
    cache: VerdictCache[int] = VerdictCache(max_signatures=2)
    for signature in ("a", "b", "c"):
        cache.table(signature, max_entries=10)["n"] = (1, 1)
    assert len(cache) == 2
    assert cache.table("a", max_entries=10) == {}, "the oldest signature was dropped"
    assert cache.table("c", max_entries=10) == {"n": (1, 1)}


def test_results_survive_while_the_sample_rotates_around_a_large_cluster() -> None:
    # 1000 nodes: each cycle scores 420 of them (adaptive 42%), starting where
    # the last one stopped. Once every node was seen, only changed nodes cost.
    cache = cluster(1000)
    score_plugin = CountingScore("S")
    framework = make_framework(filter=[CountingFilter("F")], score=[score_plugin])
    algorithm = Algorithm(random.Random(3))
    snapshot = Snapshot()
    for index in range(3):
        place(cache, algorithm, framework, snapshot, index)
    seen = score_plugin.calls
    for index in range(3, 6):
        place(cache, algorithm, framework, snapshot, index)
    assert score_plugin.calls - seen <= 6, "only the nodes that got a pod are scored again"


class NormalizingScore(CountingScore):
    """Normalizes by inverting: counts how often it really normalizes."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.normalized = 0

        def invert(scores: list[NodeScore]) -> Status | None:
            self.normalized += 1
            for score in scores:
                score.score = 100 - score.score
            return None

        self.normalize = invert


def test_normalizing_the_same_raw_scores_again_reuses_the_result() -> None:
    score_plugin = NormalizingScore("S")
    framework = make_framework(score=[score_plugin])
    cache = cluster(3)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    pod = parse_pod(make_pod("p").uid("u").obj())
    nodes = snapshot.node_infos()
    first, _ = framework.run_score(CycleState(), pod, nodes)
    second, _ = framework.run_score(CycleState(), pod, nodes)
    assert list(first.totals) == list(second.totals) == [0, 0, 0]
    assert score_plugin.normalized == 1
    cache.add_pod(parse_pod(make_pod("q").uid("q").node("n0").obj()))
    cache.update_snapshot(snapshot)
    third, _ = framework.run_score(CycleState(), pod, snapshot.node_infos())
    assert score_plugin.normalized == 2, "raw scores changed: normalized again"
    assert list(third.totals) == [10, 0, 0]


def test_evaluation_counts_follow_the_calls_that_really_ran() -> None:
    # scheduler_plugin_evaluation_total: a node that passed ran every filter;
    # a node rejected by the first filter ran only that one; reused verdicts
    # ran nothing.
    metrics = RecordingFrameworkMetrics()
    first = CountingFilter("First", {"n1": Status.unschedulable("no")})
    second = CountingFilter("Second")
    framework = make_framework(filter=[first, second], score=[CountingScore("S")], metrics=metrics)
    cache = cluster(4)
    algorithm = Algorithm(random.Random(1))
    snapshot = Snapshot()
    place(cache, algorithm, framework, snapshot, 0)
    assert metrics.evaluations[("First", ExtensionPoint.FILTER)] == 4 == first.calls
    assert metrics.evaluations[("Second", ExtensionPoint.FILTER)] == 3 == second.calls
    assert metrics.evaluations[("S", ExtensionPoint.SCORE)] == 3
    place(cache, algorithm, framework, snapshot, 1)
    assert metrics.evaluations[("First", ExtensionPoint.FILTER)] == 5 == first.calls, (
        "one node changed"
    )
    assert metrics.evaluations[("S", ExtensionPoint.SCORE)] == 4


class CrowdFilter(CountingFilter):
    """Node-local and changing: rejects a node once it holds ``limit`` pods,
    and the nodes named in ``rejects`` always."""

    def __init__(self, name: str, rejects: dict[str, Status], limit: int) -> None:
        super().__init__(name, rejects)
        self.limit = limit

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        status = super().filter(state, pod, node_info)
        if status is None and len(node_info.pods) >= self.limit:
            return Status.unschedulable("crowded")
        return status


class UnsignedCrowdFilter(CrowdFilter):
    def sign_pod(self, pod: Pod) -> Hashable | None:
        return None


@pytest.mark.parametrize("nodes", [pytest.param(7, id="7 nodes"), pytest.param(300, id="300")])
def test_the_filter_walk_with_reused_verdicts_equals_the_plain_one(nodes: int) -> None:
    """Windows of reused verdicts (``ReuseAll``) against every Filter run for
    every node: same hosts, start index and rejections."""
    rejects = {f"n{index}": Status.unschedulable("no") for index in range(0, nodes, 5)}

    def run(filter_plugin: CrowdFilter) -> list[tuple[str, int]]:
        cache = cluster(nodes)
        framework = make_framework(filter=[filter_plugin], score=[CountingScore("S")])
        algorithm = Algorithm(random.Random(11))
        snapshot = Snapshot()
        trail = []
        for index in range(3 * nodes):
            try:
                host = place(cache, algorithm, framework, snapshot, index)
            except FitError as error:
                statuses = error.diagnosis.node_to_status.statuses
                host = "-" + ",".join(f"{n}:{s.message()}" for n, s in sorted(statuses.items()))
            trail.append((host, algorithm.next_start_node_index))
        return trail

    reused = run(CrowdFilter("F", rejects, limit=2))
    plain = run(UnsignedCrowdFilter("F", rejects, limit=2))
    assert reused == plain
    assert any(host.startswith("-") for host, _ in reused), "the cluster fills up"


# ------------------------------------------------------ the verdict source seam
class RecordingSource(NoReuse):
    """NoReuse that records which nodes the walk asked it about."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def node_filter(
        self,
        runner: RunsFilters,
        state: CycleState,
        pod: Pod,
        filters: tuple[FilterPlugin, ...],
        node_count: int,
    ) -> NodeFilter:
        return Recording(super().node_filter(runner, state, pod, filters, node_count), self.asked)


class Recording:
    """The NodeFilter of NoReuse, recording the nodes it is asked to run."""

    def __init__(self, inner: NodeFilter, asked: list[str]) -> None:
        self._inner, self._asked = inner, asked
        self.reused = inner.reused
        self.passed, self.rejected_by = 0, inner.rejected_by

    def run(self, node_info: NodeInfo) -> Status | None:
        self._asked.append(node_info.name)
        status = self._inner.run(node_info)
        self.passed = self._inner.passed
        return status


def test_the_filter_walk_asks_the_frameworks_verdict_source_for_every_node() -> None:
    cache = cluster(4)
    source = RecordingSource()
    framework = make_framework(
        filter=[CountingFilter("F", {"n2": Status.unschedulable("no")})],
        score=[CountingScore("S")],
        verdicts=source,
    )
    assert source.asked == []
    place(cache, Algorithm(random.Random(1)), framework, Snapshot(), 0)
    assert sorted(source.asked) == ["n0", "n1", "n2", "n3"]


def test_without_reuse_every_filter_and_score_runs_every_cycle() -> None:
    cache = cluster(5)
    filter_plugin, score_plugin = CountingFilter("F"), CountingScore("S")
    framework = make_framework(filter=[filter_plugin], score=[score_plugin], verdicts=NoReuse())
    algorithm, snapshot = Algorithm(random.Random(1)), Snapshot()
    for index in range(3):
        place(cache, algorithm, framework, snapshot, index)
    assert (filter_plugin.calls, score_plugin.calls) == (15, 15)
