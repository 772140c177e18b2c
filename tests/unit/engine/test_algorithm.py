"""One scheduling algorithm run: PreFilter narrowing, the nominated node
first, the rotating start index, early stop, scoring and FitErrors."""

from __future__ import annotations

import random

import pytest

from scheduler.cache import Cache, Snapshot
from scheduler.cycle.algorithm import (
    NO_NODES_AVAILABLE,
    Algorithm,
    NoNodesAvailableError,
    SchedulingError,
)
from scheduler.framework import Code, CycleState, Pod, Status
from scheduler.framework.types import FitError
from scheduler.runtime.framework import Framework
from tests.support.objects import node, pod
from tests.unit.engine.plugins import FilterStub, PreFilterStub, ScoreStub, make_framework

POD = pod("p")


def snapshot_of(count: int) -> Snapshot:
    cache = Cache()
    for index in range(count):
        cache.add_node(node(f"n{index}"))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    return snapshot


def run(
    algorithm: Algorithm,
    framework: Framework,
    snapshot: Snapshot,
    target: Pod = POD,
    percentage: int | None = None,
) -> str:
    return algorithm.schedule_pod(
        framework, CycleState(), target, snapshot, percentage
    ).suggested_host


def test_start_index_rotates_across_cycles() -> None:
    log: list[str] = []
    framework = make_framework(
        filter=[FilterStub("F", {"n1": Status.unschedulable("busy")}, log=log)]
    )
    algorithm = Algorithm(random.Random(0))
    snapshot = snapshot_of(10)

    hosts = [run(algorithm, framework, snapshot) for _ in range(3)]

    assert hosts == ["n0", "n2", "n3"]
    assert log == ["Filter:F@n0", "Filter:F@n1", "Filter:F@n2", "Filter:F@n3"]
    assert algorithm.next_start_node_index == 4


def test_start_index_wraps_around() -> None:
    framework = make_framework(filter=[FilterStub("F")])
    algorithm = Algorithm(random.Random(0))
    snapshot = snapshot_of(3)
    assert [run(algorithm, framework, snapshot) for _ in range(4)] == ["n0", "n1", "n2", "n0"]


@pytest.mark.parametrize(
    ("nodes", "percentage", "filtered"),
    [
        pytest.param(50, None, 50, id="small cluster: every node"),
        pytest.param(200, None, 100, id="200 nodes: stops after 100 feasible"),
        pytest.param(200, 100, 200, id="percentage 100: every node"),
    ],
)
def test_search_stops_after_enough_feasible_nodes(
    nodes: int, percentage: int | None, filtered: int
) -> None:
    log: list[str] = []
    framework = make_framework(filter=[FilterStub("F", log=log)], score=[ScoreStub("S")])
    algorithm = Algorithm(random.Random(0))

    result = algorithm.schedule_pod(framework, CycleState(), POD, snapshot_of(nodes), percentage)

    assert len(log) == filtered
    assert (result.feasible_nodes, result.evaluated_nodes) == (filtered, filtered)
    assert algorithm.next_start_node_index == filtered % nodes


def test_profile_percentage_overrides_the_global_one() -> None:
    log: list[str] = []
    framework = make_framework(filter=[FilterStub("F", log=log)], score=[ScoreStub("S")])
    algorithm = Algorithm(random.Random(0), percentage_of_nodes_to_score=100)
    algorithm.schedule_pod(framework, CycleState(), POD, snapshot_of(400), None)
    assert len(log) == 400
    log.clear()
    algorithm.schedule_pod(framework, CycleState(), POD, snapshot_of(400), 30)
    assert len(log) == 120


def test_rejected_nodes_do_not_count_towards_enough() -> None:
    log: list[str] = []
    rejects = {f"n{i}": Status.unschedulable("full") for i in range(0, 100, 2)}
    framework = make_framework(filter=[FilterStub("F", rejects, log=log)], score=[ScoreStub("S")])
    algorithm = Algorithm(random.Random(0))
    result = algorithm.schedule_pod(framework, CycleState(), POD, snapshot_of(200), None)
    assert result.feasible_nodes == 100
    assert len(log) == result.evaluated_nodes == 150
    assert algorithm.next_start_node_index == 150


def test_without_score_plugins_the_first_feasible_node_is_taken() -> None:
    log: list[str] = []
    framework = make_framework(filter=[FilterStub("F", log=log)])
    result = Algorithm(random.Random(0)).schedule_pod(
        framework, CycleState(), POD, snapshot_of(5), None
    )
    assert (result.suggested_host, result.feasible_nodes, log) == ("n0", 1, ["Filter:F@n0"])


def test_without_filter_plugins_nodes_are_taken_from_the_start_index() -> None:
    framework = make_framework(score=[ScoreStub("S", {"n3": 10})])
    algorithm = Algorithm(random.Random(0))
    algorithm.next_start_node_index = 2
    result = algorithm.schedule_pod(framework, CycleState(), POD, snapshot_of(5), None)
    assert (result.suggested_host, result.feasible_nodes) == ("n3", 5)
    assert algorithm.next_start_node_index == 2


def test_the_best_score_wins_and_scores_are_kept() -> None:
    framework = make_framework(
        filter=[FilterStub("F")], score=[ScoreStub("S", {"n0": 10, "n1": 90, "n2": 50})]
    )
    result = Algorithm(random.Random(0)).schedule_pod(
        framework, CycleState(), POD, snapshot_of(3), None
    )
    assert result.suggested_host == "n1"
    assert result.scores is not None
    assert [(s.name, s.total) for s in result.scores] == [("n0", 10), ("n1", 90), ("n2", 50)]


NOMINATED = pod("p", lambda b: b.nominated("n3"))


def test_the_nominated_node_is_tried_first_and_taken_if_it_fits() -> None:
    log: list[str] = []
    framework = make_framework(filter=[FilterStub("F", log=log)], score=[ScoreStub("S")])
    algorithm = Algorithm(random.Random(0))

    result = algorithm.schedule_pod(framework, CycleState(), NOMINATED, snapshot_of(5), None)

    assert (result.suggested_host, result.feasible_nodes, log) == ("n3", 1, ["Filter:F@n3"])
    assert algorithm.next_start_node_index == 0


@pytest.mark.parametrize(
    "verdict",
    [
        pytest.param(Status.unschedulable("taken"), id="rejected"),
        pytest.param(Status.as_error("boom"), id="an error: logged, not fatal"),
    ],
)
def test_a_nominated_node_that_does_not_fit_falls_back_to_the_search(verdict: Status) -> None:
    log: list[str] = []
    framework = make_framework(filter=[FilterStub("F", {"n3": verdict}, log=log)])
    result = Algorithm(random.Random(0)).schedule_pod(
        framework, CycleState(), NOMINATED, snapshot_of(5), None
    )
    assert result.suggested_host == "n0"
    assert log == ["Filter:F@n3", "Filter:F@n0"]
    if verdict.is_rejected():
        assert result.diagnosis.node_to_status.statuses == {"n3": verdict.with_plugin("F")}


def test_an_unknown_nominated_node_is_ignored() -> None:
    target = pod("p", lambda b: b.nominated("gone"))
    framework = make_framework(filter=[FilterStub("F")])
    assert run(Algorithm(random.Random(0)), framework, snapshot_of(2), target) == "n0"


def fit_error(framework: Framework, nodes: int, target: Pod = POD) -> FitError:
    with pytest.raises(FitError) as raised:
        Algorithm(random.Random(0)).schedule_pod(
            framework, CycleState(), target, snapshot_of(nodes), None
        )
    return raised.value


def test_pre_filter_narrowing_gives_other_nodes_an_unresolvable_status() -> None:
    log: list[str] = []
    framework = make_framework(
        pre_filter=[PreFilterStub("Aff", nodes={"n3", "n1", "missing"})],
        filter=[FilterStub("F", {"n1": Status.unschedulable("nope")}, log=log)],
    )
    error = fit_error(framework, 3)  # n3 does not exist: only n1 is a candidate

    assert log == ["Filter:F@n1"]
    absent = error.diagnosis.node_to_status.absent
    assert (absent.code, absent.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "node(s) didn't satisfy plugin(s) [Aff]",
    )
    assert error.diagnosis.unschedulable_plugins == {"Aff", "F"}
    assert str(error) == (
        "0/3 nodes are available: 1 nope, 2 node(s) didn't satisfy plugin(s) [Aff]."
    )


def test_narrowed_candidates_are_searched_in_snapshot_order() -> None:
    log: list[str] = []
    framework = make_framework(
        pre_filter=[PreFilterStub("Aff", nodes={"n4", "n1", "n2"})],
        filter=[FilterStub("F", log=log)],
        score=[ScoreStub("S")],
    )
    Algorithm(random.Random(0)).schedule_pod(framework, CycleState(), POD, snapshot_of(5), None)
    assert log == ["Filter:F@n1", "Filter:F@n2", "Filter:F@n4"]


@pytest.mark.parametrize(
    ("plugins", "message", "rejectors"),
    [
        pytest.param(
            [PreFilterStub("Vol", Status.unschedulable("pod has unbound immediate claims"))],
            "0/3 nodes are available: pod has unbound immediate claims.",
            {"Vol"},
            id="a rejection applies to every node",
        ),
        pytest.param(
            [PreFilterStub("A", nodes={"n0"}), PreFilterStub("B", nodes={"n1"})],
            "0/3 nodes are available: node(s) didn't satisfy plugin(s) [A B] simultaneously.",
            {"A", "B"},
            id="empty intersection: the narrowing plugins are the rejectors",
        ),
    ],
)
def test_pre_filter_rejection(
    plugins: list[PreFilterStub], message: str, rejectors: set[str]
) -> None:
    log: list[str] = []
    framework = make_framework(pre_filter=plugins, filter=[FilterStub("F", log=log)])
    error = fit_error(framework, 3)
    assert str(error) == message
    assert error.diagnosis.unschedulable_plugins == rejectors
    assert log == []


def test_pre_filter_error_fails_the_cycle() -> None:
    framework = make_framework(pre_filter=[PreFilterStub("A", Status.as_error("boom"))])
    with pytest.raises(SchedulingError) as raised:
        run(Algorithm(random.Random(0)), framework, snapshot_of(2))
    assert raised.value.status.message() == 'running PreFilter plugin "A": boom'


def test_filter_error_fails_the_cycle_but_the_start_index_moves() -> None:
    framework = make_framework(
        filter=[FilterStub("F", {"n0": Status.unschedulable("x"), "n1": Status.as_error("boom")})],
        score=[ScoreStub("S")],
    )
    algorithm = Algorithm(random.Random(0))
    with pytest.raises(SchedulingError) as raised:
        run(algorithm, framework, snapshot_of(5))
    assert raised.value.status.message() == 'running "F" filter plugin: boom'
    assert algorithm.next_start_node_index == 1


def test_no_node_fits() -> None:
    rejects = {"n0": Status.unschedulable("Insufficient cpu"), "n1": Status.unresolvable("taint")}
    framework = make_framework(
        filter=[FilterStub("Fit", rejects), FilterStub("Taint", {"n2": Status.pending("later")})]
    )
    error = fit_error(framework, 3)
    assert str(error) == "0/3 nodes are available: 1 Insufficient cpu, 1 later, 1 taint."
    assert error.diagnosis.unschedulable_plugins == {"Fit"}
    assert error.diagnosis.pending_plugins == {"Taint"}
    assert error.num_all_nodes == 3


def test_no_nodes_at_all() -> None:
    with pytest.raises(NoNodesAvailableError) as raised:
        run(Algorithm(random.Random(0)), make_framework(), snapshot_of(0))
    assert str(raised.value) == NO_NODES_AVAILABLE == "no nodes available to schedule pods"
    assert raised.value.num_all_nodes == 0
    assert raised.value.diagnosis.unschedulable_plugins == set()


def test_score_error_fails_the_cycle() -> None:
    framework = make_framework(
        filter=[FilterStub("F")], score=[ScoreStub("S", status=Status.as_error("x"))]
    )
    with pytest.raises(SchedulingError):
        run(Algorithm(random.Random(0)), framework, snapshot_of(3))
