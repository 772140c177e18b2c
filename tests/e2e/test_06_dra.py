"""DRA on a real node: the suite's own driver (``knode dra-driver``, built on
k8s.io/dynamic-resource-allocation's kubelet plugin helper) publishes a
ResourceSlice of two devices for the node; pods with a ResourceClaim from a
template are allocated by pyscheduler's DynamicResources plugin, prepared by
the driver through the kubelet and Running; a third waits for a device."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.cluster import Cluster
from tests.e2e.node import NODE_NAME, wait_for
from tests.e2e.workloads import (
    WORK_NAMESPACE,
    Deployed,
    apply,
    ensure_namespace,
    failed_scheduling_message,
    pod_manifest,
)

DRIVER = "e2e.pyscheduler.dev"
PODS = ["dra-0", "dra-1", "dra-2"]  # two devices: the third waits


def dra_objects(cluster: Cluster) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": DRIVER},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "e2e-device", "namespace": WORK_NAMESPACE},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [{"name": "device", "exactly": {"deviceClassName": DRIVER}}]
                    }
                }
            },
        },
    ]
    for name in PODS:
        pod = pod_manifest(cluster, name, cpu="1m", labels={"e2e/dra": "yes"})
        pod["spec"]["resourceClaims"] = [
            {"name": "device", "resourceClaimTemplateName": "e2e-device"}
        ]
        pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "device"}]
        objects.append(pod)
    return objects


@pytest.fixture(scope="module")
def dra(cluster: Cluster, deployed: Deployed) -> dict[str, Any]:
    with cluster.phase("DRA (driver, claims, Running)"):
        ensure_namespace(cluster, WORK_NAMESPACE)
        slices = wait_for(
            "the driver's ResourceSlice",
            lambda: [
                s
                for s in cluster.json("get", "resourceslices")["items"]
                if s["spec"]["driver"] == DRIVER and s["spec"].get("nodeName") == NODE_NAME
            ],
            180,
            2,
        )
        apply(cluster, dra_objects(cluster))

        def two_running() -> bool:
            phases = [
                cluster.json("get", "pod", name, "-n", WORK_NAMESPACE)["status"].get("phase")
                for name in PODS
            ]
            return phases.count("Running") == 2

        wait_for("two DRA pods Running", two_running, 300, 2)
    return {"slices": slices}


def claims_of(cluster: Cluster) -> dict[str, dict[str, Any]]:
    claims = cluster.json("get", "resourceclaims", "-n", WORK_NAMESPACE)["items"]
    return {
        ref["name"]: claim
        for claim in claims
        for ref in claim["status"].get("reservedFor", ())
        if ref["resource"] == "pods"
    }


def test_the_driver_publishes_a_resource_slice_for_its_node(
    cluster: Cluster, dra: dict[str, Any]
) -> None:
    devices = [d["name"] for s in dra["slices"] for d in s["spec"]["devices"]]
    assert sorted(devices) == ["dev-0", "dev-1"]


def test_claims_are_allocated_by_pyscheduler_prepared_by_the_driver_and_pods_run(
    cluster: Cluster, dra: dict[str, Any]
) -> None:
    assert cluster.node is not None
    running = [
        name
        for name in PODS
        if cluster.json("get", "pod", name, "-n", WORK_NAMESPACE)["status"]["phase"] == "Running"
    ]
    claims = claims_of(cluster)
    allocated = []
    for name in running:
        results = claims[name]["status"]["allocation"]["devices"]["results"]
        assert [r["driver"] for r in results] == [DRIVER]
        allocated.append(results[0]["device"])
    assert sorted(allocated) == ["dev-0", "dev-1"]
    log = cluster.node.components["dra-driver"].tail(400)
    for name in running:
        assert claims[name]["metadata"]["name"] in log, "the driver prepared the claim"
    cluster.summary["DRA"] = f"{len(running)} pods Running with devices {sorted(allocated)}"


def test_a_pod_whose_claim_cannot_be_allocated_waits(cluster: Cluster, dra: dict[str, Any]) -> None:
    waiting = [
        name
        for name in PODS
        if not cluster.json("get", "pod", name, "-n", WORK_NAMESPACE)["spec"].get("nodeName")
    ]
    assert len(waiting) == 1
    message = wait_for(
        "a FailedScheduling event", lambda: failed_scheduling_message(cluster, waiting[0]), 120, 2
    )
    assert "0/1 nodes are available" in str(message)
    cluster.summary["DRA"] += f"; {waiting[0]} waits: {message}"
