"""DefaultPreemption's pure parts on one node: which pods become victims
(upstream ``SelectVictimsOnNode``), PDB violations and label selectors."""

from __future__ import annotations

from typing import Any

import pytest

from plugins.default_preemption.pdb import (
    DisruptionBudget,
    parse_pdb,
    pdb_selector,
    split_by_pdb_violation,
)
from plugins.default_preemption.victims import REASON_NO_VICTIMS, select_victims_on_node
from scheduler.framework import Code, CycleState, NodeInfo, Pod, Status
from tests.support.builders import make_node, make_pod
from tests.unit.plugins.support import node_info, pod

PREEMPTOR = pod(make_pod("preemptor").priority(100).requests(cpu="2").obj())


def victim(
    name: str, priority: int, cpu: str = "1", start: str = "", **labels: str
) -> dict[str, Any]:
    builder = make_pod(name).node("n1").priority(priority).requests(cpu=cpu)
    if start:
        builder = builder.start_time(start)
    for key, value in labels.items():
        builder = builder.label(key, value)
    return builder.obj()


def pdb(app: str, allowed: int, disrupted: tuple[str, ...] = ()) -> DisruptionBudget:
    return parse_pdb(
        {
            "metadata": {"namespace": "default", "name": f"pdb-{app}"},
            "spec": {"selector": {"matchLabels": {"app": app}}},
            "status": {
                "disruptionsAllowed": allowed,
                "disruptedPods": dict.fromkeys(disrupted, "2024-01-01T00:00:00Z"),
            },
        }
    )


class CpuWhatIf:
    """Filters by cpu alone; records the PreFilter extension calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None:
        free = node_info.allocatable.milli_cpu - node_info.requested.milli_cpu
        return None if pod.requests.milli_cpu <= free else Status.unschedulable("Insufficient cpu")

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        self.calls.append(f"add {pod_to_add.name}")
        return None

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        self.calls.append(f"remove {pod_to_remove.name}")
        return None


NODE = make_node("n1").capacity(cpu="4", memory="8Gi", pods="110").obj()


@pytest.mark.parametrize(
    ("pods", "pdbs", "victims", "violations"),
    [
        pytest.param(
            [victim("a", 10, "2"), victim("b", 20, "2")],
            [],
            ["a"],
            0,
            id="the more important pod is reprieved first",
        ),
        pytest.param(
            [victim("a", 10, "1"), victim("b", 10, "1"), victim("c", 10, "2")],
            [],
            ["c"],
            0,
            id="as many as fit are reprieved, so the fewest pods go",
        ),
        pytest.param(
            [
                victim("old", 10, "2", "2024-01-01T00:00:00Z"),
                victim("new", 10, "2", "2024-06-01T00:00:00Z"),
            ],
            [],
            ["new"],
            0,
            id="start time breaks priority ties",
        ),
        pytest.param(
            [victim("a", 10, "2", app="web"), victim("b", 20, "2")],
            [pdb("web", 0)],
            ["b"],
            0,
            id="a PDB-protected pod is reprieved before more important ones",
        ),
        pytest.param(
            [victim("a", 10, "3", app="web"), victim("b", 20, "1")],
            [pdb("web", 0)],
            ["a"],
            1,
            id="a protected pod that must go counts as a violation",
        ),
        pytest.param(
            [victim("a", 10, "2", app="web"), victim("b", 20, "2")],
            [pdb("web", 1)],
            ["a"],
            0,
            id="a budget with a disruption left is no violation",
        ),
        pytest.param(
            [victim("a", 10, "2", app="web"), victim("b", 20, "2")],
            [pdb("web", 0, disrupted=("a",))],
            ["a"],
            0,
            id="a pod the API server already counts as disrupted violates nothing",
        ),
        pytest.param(
            [victim("a", 10, "2"), victim("high", 500, "2")],
            [],
            ["a"],
            0,
            id="pods of higher priority are never victims",
        ),
    ],
)
def test_minimal_victims(
    pods: list[dict[str, Any]], pdbs: list[DisruptionBudget], victims: list[str], violations: int
) -> None:
    info = node_info(NODE, *pods)
    what_if = CpuWhatIf()
    chosen, counted, status = select_victims_on_node(what_if, CycleState(), PREEMPTOR, info, pdbs)
    assert status is None
    assert [p.name for p in chosen] == victims
    assert counted == violations
    removed = [call for call in what_if.calls if call.startswith("remove")]
    assert removed, "removals go through the PreFilter extensions"


@pytest.mark.parametrize(
    ("pods", "code", "reasons"),
    [
        pytest.param(
            [victim("high", 500, "4")],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            (REASON_NO_VICTIMS,),
            id="nothing of lower priority: no victims",
        ),
        pytest.param(
            [victim("high", 500, "3"), victim("low", 10, "1")],
            Code.UNSCHEDULABLE,
            ("Insufficient cpu",),
            id="removing every lower-priority pod is not enough",
        ),
    ],
)
def test_no_candidate(pods: list[dict[str, Any]], code: Code, reasons: tuple[str, ...]) -> None:
    info = node_info(NODE, *pods)
    chosen, _, status = select_victims_on_node(CpuWhatIf(), CycleState(), PREEMPTOR, info, [])
    assert chosen == []
    assert status is not None
    assert (status.code, status.reasons) == (code, reasons)


def test_a_failing_extension_is_an_error() -> None:
    class Failing(CpuWhatIf):
        def run_pre_filter_extension_remove_pod(
            self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
        ) -> Status | None:
            return Status.as_error("boom")

    info = node_info(NODE, victim("a", 10))
    _, _, status = select_victims_on_node(Failing(), CycleState(), PREEMPTOR, info, [])
    assert status is not None
    assert status.is_error()
    assert status.message() == "boom"


# ------------------------------------------------------------------ PDBs
def labelled(name: str, namespace: str = "default", **labels: str) -> Pod:
    builder = make_pod(name, namespace)
    for key, value in labels.items():
        builder = builder.label(key, value)
    return pod(builder.obj())


def test_split_spends_each_budget_once_per_pod_in_order() -> None:
    pods = [labelled("a", app="web"), labelled("b", app="web"), labelled("c", app="db")]
    violating, fine = split_by_pdb_violation(pods, [pdb("web", 1)])
    assert [p.name for p in violating] == ["b"]
    assert [p.name for p in fine] == ["a", "c"]


def test_split_ignores_other_namespaces_and_unlabelled_pods() -> None:
    pods = [labelled("a", "other", app="web"), labelled("b")]
    violating, fine = split_by_pdb_violation(pods, [pdb("web", 0)])
    assert violating == []
    assert [p.name for p in fine] == ["a", "b"]


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        pytest.param({"matchLabels": {"app": "web"}}, {"app": "web"}, True, id="matchLabels"),
        pytest.param({"matchLabels": {"app": "web"}}, {"app": "db"}, False, id="other value"),
        pytest.param({}, {"app": "web"}, False, id="empty selector matches nothing"),
        pytest.param(None, {"app": "web"}, False, id="no selector matches nothing"),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
            {"tier": "b"},
            True,
            id="In",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]},
            {},
            True,
            id="NotIn without the key",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            {"tier": ""},
            True,
            id="Exists",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
            {"tier": "x"},
            False,
            id="DoesNotExist",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": []}]},
            {"tier": "x"},
            False,
            id="In without values is invalid: matches nothing",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["1"]}]},
            {"tier": "2"},
            False,
            id="unknown operator is invalid: matches nothing",
        ),
    ],
)
def test_pdb_selector(
    selector: dict[str, Any] | None, labels: dict[str, str], matches: bool
) -> None:
    parsed = pdb_selector(selector)
    assert (parsed is not None and parsed.matches(labels)) == matches
