"""Simulation outcomes: the real engine over in-memory snapshots, with edits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from scheduler.config import SchedulerConfiguration
from scheduler.kube.resources import PODS
from scheduler.simulate.cli import simulate
from scheduler.simulate.edits import add_nodes, cordon, remove_node
from scheduler.simulate.report import Report, as_yaml, build_report
from scheduler.simulate.snapshot import Snapshot, load_text, snapshot_time
from tests.support.builders import PodBuilder, make_node, make_pod
from tests.support.drabuilders import make_claim, make_class, make_slice, pod_uses_claim

Obj = dict[str, Any]
Edit = Callable[[Snapshot], object]
WALL = 1_700_000_000.0
SCHEDULER = "pyscheduler"


def pod(name: str) -> PodBuilder:
    """A pod of the default configuration's profile."""
    return make_pod(name).scheduler(SCHEDULER)


def run(objects: list[Obj], *edits: Edit, seed: int = 0) -> tuple[Report, Any]:
    snapshot = Snapshot(objects=list(objects))
    for edit in edits:
        edit(snapshot)
    outcome, pending, _ = simulate(SchedulerConfiguration(), snapshot, seed=seed, wall=WALL)
    return build_report(outcome.cluster, snapshot.objects, pending, {}), outcome


def placements(report: Report) -> dict[str, str]:
    return {p.pod: p.node or p.result for p in report.pods}


SMALL = make_node("small").capacity(cpu="1", memory="4Gi", pods="110").obj()
LARGE = make_node("large").capacity(cpu="4", memory="8Gi", pods="110").obj()


@pytest.mark.parametrize(
    ("objects", "edits", "expected"),
    [
        pytest.param(
            [SMALL, LARGE, pod("web").requests(cpu="2").obj()],
            (),
            {"default/web": "large"},
            id="a pod lands on the only node with room",
        ),
        pytest.param(
            [SMALL, LARGE, pod("web").requests(cpu="2").obj()],
            (lambda s: cordon(s, "large"),),
            {"default/web": "Unschedulable"},
            id="a cordoned node takes no new pod",
        ),
        pytest.param(
            [SMALL, LARGE, pod("web").requests(cpu="2").node("large").obj()],
            (lambda s: remove_node(s, "large"), lambda s: add_nodes(s, "small", 2)),
            {"default/web": "Unschedulable"},
            id="a removed node's pod is placed again, and small nodes cannot take it",
        ),
        pytest.param(
            [
                SMALL,
                make_pod("half").requests(cpu="500m").node("small").obj(),
                pod("a").requests(cpu="1").obj(),
                pod("b").requests(cpu="500m").obj(),
            ],
            (lambda s: add_nodes(s, "small", 1),),
            {"default/a": "small-sim-1", "default/b": "small"},
            id="added nodes take the overflow",
        ),
        pytest.param(
            [SMALL, make_pod("other").scheduler("someone-else").obj(), pod("mine").obj()],
            (),
            {"default/mine": "small"},
            id="pods of other schedulers are not ours to place",
        ),
        pytest.param(
            [SMALL, pod("gated").scheduling_gate("example.com/wait").obj()],
            (),
            {"default/gated": "SchedulingGated"},
            id="a gated pod stays pending, as the API server marks it",
        ),
    ],
)
def test_outcomes(objects: list[Obj], edits: tuple[Edit, ...], expected: dict[str, str]) -> None:
    report, _ = run(objects, *edits)
    assert placements(report) == expected


def test_unschedulable_pod_carries_the_live_message() -> None:
    report, outcome = run([SMALL, LARGE, pod("huge").requests(cpu="16").obj()])
    (huge,) = report.pods
    assert huge.result == "Unschedulable"
    assert huge.message.startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert [e["reason"] for e in outcome.cluster.events] == ["FailedScheduling"]
    assert outcome.cluster.events[0]["note"] == huge.message


def test_usage_counts_bound_and_placed_pods() -> None:
    report, _ = run([LARGE, pod("old").requests(cpu="1").node("large").obj(), pod("new").obj()])
    (usage,) = report.nodes
    assert (usage.node, usage.cpu_requested_milli, usage.pods) == ("large", 1000, 2)


def test_same_seed_same_nodes() -> None:
    nodes = [make_node(f"n{i}").obj() for i in range(8)]
    pods = [pod(f"p{i}").obj() for i in range(8)]
    first, _ = run(nodes + pods, seed=7)
    second, _ = run(nodes + pods, seed=7)
    assert placements(first) == placements(second)
    assert all(p.result == "Scheduled" for p in first.pods)


def test_yaml_output_is_a_snapshot_a_second_run_starts_from() -> None:
    objects = [SMALL, pod("a").requests(cpu="1").obj(), pod("b").requests(cpu="1").obj()]
    first, outcome = run(objects)
    assert placements(first) == {"default/a": "small", "default/b": "Unschedulable"}
    again = load_text(as_yaml(outcome.cluster, []), "first-run.yaml")
    second, _ = run(again.objects)
    # "a" is bound now; "b" is still pending, with the condition the first run wrote.
    assert placements(second) == {"default/b": "Unschedulable"}
    assert second.pods[0].message == first.pods[1].message


def test_preemption_victims_are_reported() -> None:
    urgent_class = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "urgent"},
        "value": 1000,
    }
    victim = make_pod("batch").requests(cpu="4").node("large").obj()
    urgent = pod("urgent").requests(cpu="3").spec_field("priorityClassName", "urgent").obj()
    report, outcome = run([LARGE, urgent_class, victim, urgent])
    assert report.victims == ["default/batch"]
    assert placements(report) == {"default/urgent": "large"}
    assert "Preempted" in [e["reason"] for e in outcome.cluster.events]


def test_timestamps_stay_strings_and_the_run_is_dated_by_its_snapshot() -> None:
    node = make_node("n").obj()
    node["metadata"]["creationTimestamp"] = "2026-01-02T03:04:05Z"
    text = yaml.safe_dump_all([node, pod("p").obj()])
    snapshot = load_text(text, "in.yaml")
    assert snapshot.objects[0]["metadata"]["creationTimestamp"] == "2026-01-02T03:04:05Z"
    assert snapshot_time(snapshot.objects) == 1767323045.0
    outcome, _, _ = simulate(SchedulerConfiguration(), snapshot, seed=0)
    bound = outcome.cluster.get(PODS, "default/p")
    assert bound is not None
    assert bound["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-02T03:04:05Z"


def test_pods_enter_the_queue_in_input_order_even_with_claims() -> None:
    """The pod with a claim comes first in the snapshot and takes the only
    pod slot: its claim is known when it is queued, so it is not gated
    behind the pod without claims (as it is not live, on a running cluster)."""
    node = make_node("gpu-node").capacity(cpu="4", memory="8Gi", pods="1").obj()
    device_class = make_class("gpu").driver("driver-a").obj()
    devices = make_slice("gpu-node-slice").node("gpu-node").device("gpu-0").obj()
    claim = make_claim("gpu-claim").request("r", "gpu").obj()
    with_claim = pod_uses_claim(pod("a-gpu").obj(), "gpu", "gpu-claim")
    report, _ = run([node, device_class, devices, claim, with_claim, pod("b-plain").obj()])
    assert placements(report) == {"default/a-gpu": "gpu-node", "default/b-plain": "Unschedulable"}
    assert [a.devices for a in report.allocations] == [["driver-a/pool-1/gpu-0"]]
