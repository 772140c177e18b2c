"""Filtering with nominated pods (upstream ``RunFilterPluginsWithNominatedPods``):
pods nominated to a node with priority >= the incoming pod's count as already
there, through the PreFilter plugins' AddPod extensions; both passes must pass."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import pytest

from plugins.node_resources_fit import NodeResourcesFit, NodeResourcesFitArgs
from scheduler.cache import Cache, Snapshot
from scheduler.cycle.algorithm import Algorithm
from scheduler.framework import (
    CycleState,
    FilterPlugin,
    NodeInfo,
    Pod,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    Status,
)
from scheduler.runtime.nominated import run_filters_with_nominated_pods
from tests.support.objects import node, node_info, pod
from tests.unit.engine.plugins import ScoreStub, make_framework


def cpu_pod(name: str, cpu: str, priority: int) -> Pod:
    return pod(name, lambda b: b.requests(cpu=cpu).priority(priority))


class Extensions(PreFilterPlugin, PreFilterExtensions):
    """Records the AddPod/RemovePod calls the what-if makes."""

    name = "Recorder"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        return self

    def add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        self.calls.append(f"add {pod_to_add.name}@{node_info.name}")
        return None

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        self.calls.append(f"remove {pod_to_remove.name}@{node_info.name}")
        return None


class NeedsCompany(FilterPlugin):
    """Passes only when some other pod is on the node (like pod affinity)."""

    name = "NeedsCompany"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        return None if node_info.pods else Status.unschedulable("alone")


INCOMING = cpu_pod("incoming", "2", priority=100)


@pytest.mark.parametrize(
    ("nominated", "expected", "added"),
    [
        pytest.param((), None, [], id="no nominated pods: plain filtering"),
        pytest.param(
            (cpu_pod("big", "3", 200),),
            ("Insufficient cpu",),
            ["add big@n1"],
            id="higher priority nominated pod keeps its room",
        ),
        pytest.param(
            (cpu_pod("big", "3", 100),),
            ("Insufficient cpu",),
            ["add big@n1"],
            id="equal priority counts too",
        ),
        pytest.param((cpu_pod("big", "3", 99),), None, [], id="lower priority is ignored"),
        pytest.param(
            (cpu_pod("incoming", "3", 100),), None, [], id="the pod's own nomination is ignored"
        ),
    ],
)
def test_nominated_pods_of_greater_or_equal_priority_take_room(
    nominated: tuple[Pod, ...], expected: tuple[str, ...] | None, added: list[str]
) -> None:
    fit = NodeResourcesFit(NodeResourcesFitArgs())
    recorder = Extensions()
    framework = make_framework(pre_filter=[fit, recorder], filter=[fit])
    state = CycleState()
    info = node_info("n1")  # 4 cpus
    framework.run_pre_filter(state, INCOMING, [info])

    status = run_filters_with_nominated_pods(framework, state, INCOMING, info, nominated)

    assert (None if status is None else status.reasons) == expected
    assert recorder.calls == added
    assert info.pods == {}, "the what-if never touches the snapshot's NodeInfo"


def test_both_passes_must_pass() -> None:
    framework = make_framework(filter=[NeedsCompany()])
    info = node_info("n1")
    nominated = (cpu_pod("friend", "1", 500),)

    status = run_filters_with_nominated_pods(framework, CycleState(), INCOMING, info, nominated)

    assert status is not None
    assert status.reasons == ("alone",), "pass 1 (with the friend) passed, pass 2 did not"


class Nominations:
    def __init__(self, by_node: Mapping[str, Sequence[Pod]]) -> None:
        self.by_node = dict(by_node)

    def nominated_by_node(self) -> Mapping[str, Sequence[Pod]]:
        return self.by_node


def test_the_cycle_honours_nominations_outside_the_verdict_cache() -> None:
    cache = Cache()
    for name in ("n0", "n1"):
        cache.add_node(node(name))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    fit = NodeResourcesFit(NodeResourcesFitArgs())
    framework = make_framework(pre_filter=[fit], filter=[fit], score=[ScoreStub("S")])
    nominations = Nominations({"n0": [cpu_pod("big", "3", 200)]})
    algorithm = Algorithm(random.Random(0), nominated=nominations)

    first = algorithm.schedule_pod(framework, CycleState(), INCOMING, snapshot, None)
    assert (first.suggested_host, first.feasible_nodes) == ("n1", 1)
    assert first.diagnosis.node_to_status.statuses["n0"].reasons == ("Insufficient cpu",)

    nominations.by_node.clear()  # the nominated pod was bound elsewhere
    second = algorithm.schedule_pod(framework, CycleState(), INCOMING, snapshot, None)
    assert second.feasible_nodes == 2, "n0's rejection was not cached as node-local"
