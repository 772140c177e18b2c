"""Pods that really run: pods and a Deployment with ``schedulerName:
pyscheduler`` are bound by pyscheduler and Running on the kubelet (whose own
admission agrees), pods that do not fit wait with upstream's message (the
default kube-scheduler's, for the same pod), pods without the schedulerName
go to the default scheduler; the leader's cache agrees with the API while
the kubelet's status updates stream in."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.cluster import Cluster
from tests.e2e.node import wait_for
from tests.e2e.workloads import (
    NAMESPACE,
    WORK_NAMESPACE,
    Deployed,
    apply,
    ensure_namespace,
    failed_scheduling_message,
    kubelet_rejections,
    leader_cache_agrees,
    node_usage,
    pod_manifest,
    pods,
    scheduled_events,
    scheduler_pods,
)

FITTING = [f"fits-{i}" for i in range(6)]
DEPLOYMENT_REPLICAS = 3
# name -> (what makes it not fit, the pod's overrides)
NOT_FITTING: dict[str, dict[str, Any]] = {
    "too-much-cpu": {"cpu": "64"},
    "too-much-memory": {"cpu": "10m", "memory": "4Ti"},
    "no-such-node": {"cpu": "10m", "node_selector": {"e2e/absent": "yes"}},
}
DEFAULT_SCHEDULED = ["default-0", "default-1"]


def deployment(cluster: Cluster) -> dict[str, Any]:
    template = pod_manifest(cluster, "unused", cpu="100m", labels={"app": "e2e-deployment"})
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "e2e-deployment", "namespace": WORK_NAMESPACE},
        "spec": {
            "replicas": DEPLOYMENT_REPLICAS,
            "selector": {"matchLabels": {"app": "e2e-deployment"}},
            "template": {
                "metadata": {"labels": {"app": "e2e-deployment"}},
                "spec": template["spec"],
            },
        },
    }


@pytest.fixture(scope="module")
def workload(cluster: Cluster, deployed: Deployed) -> dict[str, Any]:
    with cluster.phase("scheduling (pods, Deployment, Running)"):
        ensure_namespace(cluster, WORK_NAMESPACE)
        objects = [pod_manifest(cluster, name, cpu="100m") for name in FITTING]
        objects += [pod_manifest(cluster, name, **spec) for name, spec in NOT_FITTING.items()]
        # The same non-fitting pods for the default scheduler, to compare messages.
        objects += [
            pod_manifest(cluster, f"upstream-{name}", scheduler=None, **spec)
            for name, spec in NOT_FITTING.items()
        ]
        objects += [
            pod_manifest(cluster, name, cpu="50m", scheduler=None) for name in DEFAULT_SCHEDULED
        ]
        objects.append(deployment(cluster))
        apply(cluster, objects)

        def running() -> list[str]:
            names = [
                p["metadata"]["name"]
                for p in pods(cluster)
                if p["status"].get("phase") == "Running"
            ]
            expected = len(FITTING) + DEPLOYMENT_REPLICAS + len(DEFAULT_SCHEDULED)
            return names if len(names) == expected else []

        wait_for("every fitting pod Running", running, 600, 2)
        wait_for(
            "a FailedScheduling event for every pod that does not fit",
            lambda: (
                all(failed_scheduling_message(cluster, name) for name in NOT_FITTING)
                and all(failed_scheduling_message(cluster, f"upstream-{n}") for n in NOT_FITTING)
            ),
            300,
            2,
        )
    return {"pods": pods(cluster)}


def ours(pod: dict[str, Any]) -> bool:
    return bool(pod["spec"].get("schedulerName") == "pyscheduler")


def test_fitting_pods_and_a_deployment_are_bound_by_pyscheduler_and_run(
    cluster: Cluster, workload: dict[str, Any]
) -> None:
    events = scheduled_events(cluster)
    bound = [p for p in pods(cluster) if ours(p) and p["spec"].get("nodeName")]
    assert len(bound) == len(FITTING) + DEPLOYMENT_REPLICAS
    for pod in bound:
        assert pod["status"]["phase"] == "Running", pod["metadata"]["name"]
        reporters = [e.get("reportingController") for e in events[pod["metadata"]["name"]]]
        assert reporters == ["pyscheduler"], pod["metadata"]["name"]
    cluster.summary["pods bound by pyscheduler"] = len(bound)
    cluster.summary["pods Running"] = sum(
        p["status"].get("phase") == "Running" for p in pods(cluster)
    )


def test_the_kubelet_admits_every_pod_we_placed(cluster: Cluster, workload: Any) -> None:
    assert kubelet_rejections(cluster) == []
    usage = node_usage(cluster)
    assert usage["cpu_used"] <= usage["cpu_allocatable"]
    assert usage["memory_used"] <= usage["memory_allocatable"]


@pytest.mark.parametrize("name", list(NOT_FITTING))
def test_a_pod_that_does_not_fit_waits_with_upstreams_message(
    cluster: Cluster, workload: Any, name: str
) -> None:
    pod = cluster.json("get", "pod", name, "-n", WORK_NAMESPACE)
    assert pod["status"]["phase"] == "Pending"
    assert not pod["spec"].get("nodeName")
    condition = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    assert failed_scheduling_message(cluster, name) == failed_scheduling_message(
        cluster, f"upstream-{name}"
    )
    cluster.summary.setdefault("pods waiting (ours)", 0)
    cluster.summary["pods waiting (ours)"] += 1


def test_pods_without_the_scheduler_name_go_to_the_default_scheduler(
    cluster: Cluster, workload: Any
) -> None:
    events = scheduled_events(cluster)
    for name in DEFAULT_SCHEDULED:
        reporters = [e.get("reportingController") for e in events[name]]
        assert reporters == ["default-scheduler"], name
    # The scheduler's own pods are placed by the default scheduler too.
    system_events = scheduled_events(cluster, NAMESPACE)
    for pod in scheduler_pods(cluster):
        placed_by = {e.get("reportingController") for e in system_events[pod["metadata"]["name"]]}
        assert placed_by == {"default-scheduler"}


def test_the_leaders_cache_agrees_with_an_independent_count_from_the_api(
    cluster: Cluster, workload: Any
) -> None:
    report = leader_cache_agrees(cluster)
    cluster.summary["/debug/cache (after scheduling)"] = (
        f"{report['pods']} pods, {report['nodes']} node, 0 differences"
    )
