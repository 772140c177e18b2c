"""The differential test's own parts: workloads are reproducible and order-
independent by construction; the comparison and the hard-constraint check
report what they should."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from scheduler.framework import parse_node, parse_pod
from tests.support.builders import make_node, make_pod
from tests.support.differential import (
    Outcome,
    disagreements,
    hard_constraint_violations,
    missing_plugins,
    upstream_config,
)
from tests.support.workloads import (
    GPU,
    MAX_GPU_PODS,
    NODE_CPU,
    NODE_MEMORY,
    SHARED_PORTS,
    generate,
)

SEEDS = range(1, 21)


def test_same_seed_same_workload() -> None:
    assert generate(7) == generate(7)
    assert generate(7) != generate(8)


@pytest.mark.parametrize("seed", SEEDS)
def test_schedulable_pods_fit_on_any_node_all_at_once(seed: int) -> None:
    workload = generate(seed)
    node = parse_node(make_node("n").capacity(cpu=NODE_CPU, memory=NODE_MEMORY).obj())
    small = [parse_pod(raw) for raw in workload.pods]
    fitting = [
        pod
        for pod in small
        if pod.requests.milli_cpu <= node.allocatable.milli_cpu
        and pod.requests.memory <= node.allocatable.memory
    ]
    # Even the worst case of every pod that can fit anywhere on one node fits.
    assert sum(pod.requests.milli_cpu for pod in fitting) <= node.allocatable.milli_cpu
    assert sum(pod.requests.memory for pod in fitting) <= node.allocatable.memory
    assert max(pod.requests.milli_cpu for pod in fitting) <= 500
    assert sum(pod.requests.get(GPU) for pod in small if pod.requests.get(GPU) <= 1) <= (
        MAX_GPU_PODS
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_shared_ports_wanted_by_one_pod_at_most(seed: int) -> None:
    ports = [port.port for raw in generate(seed).pods for port in parse_pod(raw).host_ports]
    for shared in SHARED_PORTS:
        assert ports.count(shared) <= 1
    assert len(ports) == len(set(ports))


def test_workloads_exercise_every_feature() -> None:
    pods = [parse_pod(raw) for seed in SEEDS for raw in generate(seed).pods]
    nodes = [parse_node(raw) for seed in SEEDS for raw in generate(seed).nodes]
    assert any(pod.node_selector for pod in pods)
    assert any(pod.required_affinity.pinned_names for pod in pods)
    assert any(pod.required_affinity.affinity for pod in pods)
    assert any(pod.preferred_affinity for pod in pods)
    assert any(pod.host_ports for pod in pods)
    assert any(pod.tolerations for pod in pods)
    assert any(pod.scheduling_gates for pod in pods)
    assert any(node.unschedulable for node in nodes)
    assert any(node.taints for node in nodes)
    assert any(GPU in node.allocatable.scalar for node in nodes)


def test_upstream_profile_disables_what_we_lack() -> None:
    missing = missing_plugins()
    assert "NodeAffinity" not in missing
    assert "NodePorts" not in missing
    config = yaml.safe_load(upstream_config(Path("/k")))
    (profile,) = config["profiles"]
    disabled = profile.get("plugins", {}).get("multiPoint", {}).get("disabled", [])
    assert [entry["name"] for entry in disabled] == missing


def test_disagreements_name_pod_and_both_outcomes() -> None:
    ours = {
        "a": Outcome("n1", "", ""),
        "b": Outcome("", "Unschedulable", "0/2 nodes are available: x."),
        "c": Outcome("n1", "", ""),
    }
    upstream = {
        "a": Outcome("n2", "", ""),  # both bound: placement may differ
        "b": Outcome("", "Unschedulable", "0/2 nodes are available: y."),
        "c": Outcome("", "Unschedulable", "0/2 nodes are available: z."),
    }
    lines = disagreements(ours, upstream)
    assert [line.split(":")[0] for line in lines] == ["b", "c"]
    assert "0/2 nodes are available: y." in lines[0]


def test_hard_constraints_checked() -> None:
    nodes = [
        make_node("n1").label("zone", "a").capacity(cpu="1", memory="1Gi", pods="10").obj(),
        make_node("n2").taint("dedicated", "x").obj(),
        make_node("n3").unschedulable().obj(),
    ]
    pods = [
        make_pod("wrong-zone").node("n1").node_selector(zone="b").obj(),
        make_pod("too-big").node("n1").requests(cpu="2").obj(),
        make_pod("port-a").node("n1").host_port(80).obj(),
        make_pod("port-b").node("n1").host_port(80).obj(),
        make_pod("tainted").node("n2").obj(),
        make_pod("cordoned").node("n3").obj(),
        make_pod("fine").node("n2").toleration("dedicated", "x", "NoSchedule").obj(),
    ]
    for raw in pods:
        raw["metadata"]["uid"] = raw["metadata"]["name"]
    problems = hard_constraint_violations(nodes, pods)
    assert problems == [
        "default/wrong-zone on n1: node affinity/selector not satisfied",
        "default/port-b on n1: host port conflict",
        "default/tainted on n2: untolerated taint",
        "default/cordoned on n3: node cordoned",
        "n1: overcommitted cpu",
    ]
