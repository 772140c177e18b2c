"""Failover in the cluster: the leader pod is deleted in the middle of a burst
of pods, first with a normal delete (SIGTERM: it releases the Lease), then
with --grace-period=0 --force (the standby waits out the Lease). The other
replica takes the Lease each time, every pod that fits is bound exactly once
and none is overcommitted, judged from the API."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.cluster import Cluster
from tests.e2e.node import wait_for
from tests.e2e.workloads import (
    BURST_LABEL,
    NAMESPACE,
    WORK_NAMESPACE,
    Deployed,
    apply,
    ensure_namespace,
    holder_pod,
    kubelet_rejections,
    leader_cache_agrees,
    lease_holder,
    node_usage,
    pod_manifest,
    pods,
    ready,
    scheduled_events,
    scheduler_pods,
)

WAVE = 8  # pods per wave; two waves around each deletion, one overflowing wave at the end
OVERFLOW = 4  # pods of the last wave that cannot fit
# Room kept free for the Deployment's replacement replica (100m) of each
# deleted leader, placed by the default scheduler while the burst runs.
REPLACEMENT_RESERVE_MILLI = 300


def burst(cluster: Cluster, wave: str, count: int, cpu_milli: int) -> None:
    apply(
        cluster,
        [
            pod_manifest(
                cluster, f"burst-{wave}-{i}", cpu=f"{cpu_milli}m", labels={BURST_LABEL: wave}
            )
            for i in range(count)
        ],
    )


def wait_two_ready_replicas(cluster: Cluster) -> None:
    wait_for(
        "two Ready scheduler replicas",
        lambda: len([p for p in scheduler_pods(cluster) if ready(p)]) == 2,
        300,
        2,
    )


def fail_over(cluster: Cluster, force: bool, wave: str, cpu_milli: int) -> dict[str, Any]:
    wait_two_ready_replicas(cluster)
    old = lease_holder(cluster)
    burst(cluster, f"{wave}a", WAVE, cpu_milli)
    args = ["delete", "pod", holder_pod(old), "-n", NAMESPACE, "--wait=false"]
    if force:
        args += ["--grace-period=0", "--force"]
    cluster.kubectl(*args)
    burst(cluster, f"{wave}b", WAVE, cpu_milli)
    new = str(
        wait_for(
            "another replica holds the Lease",
            lambda: (h := lease_holder(cluster)) and h != old and h,
            180,
            1,
        )
    )
    return {"old": holder_pod(old), "new": holder_pod(new)}


def settled(cluster: Cluster) -> bool:
    """Every burst pod is either bound or marked Unschedulable."""
    for pod in pods(cluster, selector=BURST_LABEL):
        if pod["spec"].get("nodeName"):
            continue
        conditions = pod["status"].get("conditions", ())
        if not any(
            c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions
        ):
            return False
    return True


@pytest.fixture(scope="module")
def failovers(cluster: Cluster, deployed: Deployed) -> dict[str, Any]:
    with cluster.phase("failover (delete, force delete, bursts)"):
        ensure_namespace(cluster, WORK_NAMESPACE)
        usage = node_usage(cluster)
        free = usage["cpu_allocatable"] - usage["cpu_used"] - REPLACEMENT_RESERVE_MILLI
        # The four waves around the deletions fit.
        cpu_milli = max(10, free // (4 * WAVE + WAVE // 2))
        results: dict[str, Any] = {
            "delete": fail_over(cluster, force=False, wave="1", cpu_milli=cpu_milli),
            "force": fail_over(cluster, force=True, wave="2", cpu_milli=cpu_milli),
        }
        wait_two_ready_replicas(cluster)
        # The last wave overflows what is left by a few pods.
        usage = node_usage(cluster)
        left = usage["cpu_allocatable"] - usage["cpu_used"]
        burst(cluster, "3", left // cpu_milli + OVERFLOW, cpu_milli)
        wait_for("every burst pod bound or Unschedulable", lambda: settled(cluster), 600, 3)
        results["cpu_milli"] = cpu_milli
    return results


def test_the_other_replica_takes_the_lease_after_a_normal_delete(
    cluster: Cluster, failovers: dict[str, Any]
) -> None:
    assert failovers["delete"]["new"] != failovers["delete"]["old"]


def test_the_other_replica_takes_the_lease_after_a_forced_delete(
    cluster: Cluster, failovers: dict[str, Any]
) -> None:
    assert failovers["force"]["new"] != failovers["force"]["old"]
    names = [p["metadata"]["name"] for p in scheduler_pods(cluster)]
    assert holder_pod(lease_holder(cluster)) in names


def test_every_burst_pod_is_bound_exactly_once_and_none_is_lost(
    cluster: Cluster, failovers: dict[str, Any]
) -> None:
    burst_pods = pods(cluster, selector=BURST_LABEL)
    events = scheduled_events(cluster)
    bound = [p for p in burst_pods if p["spec"].get("nodeName")]
    for pod in bound:
        name = pod["metadata"]["name"]
        assert [e.get("reportingController") for e in events.get(name, [])] == ["pyscheduler"]
    waiting = [p for p in burst_pods if not p["spec"].get("nodeName")]
    usage = node_usage(cluster)
    free = usage["cpu_allocatable"] - usage["cpu_used"]
    # Nothing lost: a pod still waiting really does not fit what is left.
    assert waiting, "the last wave was sized to overflow the node"
    assert failovers["cpu_milli"] > free
    cluster.summary["failover"] = (
        f"delete: {failovers['delete']['old']} -> {failovers['delete']['new']}; "
        f"force: {failovers['force']['old']} -> {failovers['force']['new']}; "
        f"burst {len(burst_pods)} pods: {len(bound)} bound once, {len(waiting)} waiting"
    )


def test_no_pod_is_overcommitted_and_the_kubelet_admits_every_one(
    cluster: Cluster, failovers: dict[str, Any]
) -> None:
    usage = node_usage(cluster)
    assert usage["cpu_used"] <= usage["cpu_allocatable"]
    assert usage["memory_used"] <= usage["memory_allocatable"]
    assert kubelet_rejections(cluster) == []
    wait_for(
        "every bound burst pod Running",
        lambda: all(
            p["status"].get("phase") == "Running"
            for p in pods(cluster, selector=BURST_LABEL)
            if p["spec"].get("nodeName")
        ),
        600,
        3,
    )
    cluster.summary["node cpu requested/allocatable"] = (
        f"{usage['cpu_used']}m/{usage['cpu_allocatable']}m"
    )
    cluster.summary["pods bound/running/waiting (all)"] = "/".join(str(n) for n in counts(cluster))


def counts(cluster: Cluster) -> tuple[int, int, int]:
    every = cluster.json("get", "pods", "-A")["items"]
    bound = sum(1 for p in every if p["spec"].get("nodeName"))
    running = sum(1 for p in every if p["status"].get("phase") == "Running")
    waiting = sum(1 for p in every if not p["spec"].get("nodeName"))
    return bound, running, waiting


def test_the_new_leaders_cache_agrees_with_the_api_after_the_failovers(
    cluster: Cluster, failovers: dict[str, Any]
) -> None:
    report = leader_cache_agrees(cluster)
    cluster.summary["/debug/cache (after failover)"] = (
        f"{report['pods']} pods, {report['nodes']} node, 0 differences"
    )
