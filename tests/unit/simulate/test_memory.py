"""``MemoryCluster``: the client boundary's writes, as the API server applies them."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from scheduler.kube.errors import ApiError
from scheduler.kube.resources import PODS, RESOURCE_CLAIMS
from scheduler.simulate.memory import MemoryCluster
from scheduler.simulate.patches import field_matcher
from tests.support.builders import make_node, make_pod

NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"


def cluster(*objects: dict[str, Any]) -> MemoryCluster:
    return MemoryCluster(list(objects), lambda: 1_700_000_000.0)


@pytest.mark.parametrize(
    ("selector", "phase", "matches"),
    [
        pytest.param(NON_TERMINAL, "Running", True, id="a running pod is not terminal"),
        pytest.param(NON_TERMINAL, "Succeeded", False, id="a succeeded pod is terminal"),
        pytest.param("status.phase=Pending", "", False, id="a missing field is empty"),
        pytest.param("", "Failed", True, id="no selector matches everything"),
    ],
)
def test_field_selector(selector: str, phase: str, matches: bool) -> None:
    assert field_matcher(selector)(make_pod("p").phase(phase).obj()) is matches


async def test_bind_sets_node_and_condition_and_refuses_a_second_bind() -> None:
    memory = cluster(make_node("n").obj(), make_pod("p").obj())
    pod = memory.get(PODS, "default/p")
    assert pod is not None
    assert "nodeName" not in pod["spec"]
    await memory.bind("default", "p", pod["metadata"]["uid"], "n")
    bound = memory.get(PODS, "default/p")
    assert bound is not None
    assert bound["spec"]["nodeName"] == "n"
    assert bound["status"]["conditions"][0]["type"] == "PodScheduled"
    assert "nodeName" not in pod["spec"]  # the stored original was not mutated
    with pytest.raises(ApiError) as refused:
        await memory.bind("default", "p", pod["metadata"]["uid"], "n")
    assert refused.value.status == 409


async def test_status_patch_merges_conditions_and_checks_the_uid() -> None:
    memory = cluster(make_pod("p").obj())
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    await memory.patch_pod_status("default", "p", {"status": {"conditions": [condition]}})
    await memory.patch_pod_status(
        "default", "p", {"status": {"conditions": [{**condition, "message": "m"}]}}
    )
    pod = memory.get(PODS, "default/p")
    assert pod is not None
    assert pod["status"]["conditions"] == [{**condition, "message": "m"}]
    with pytest.raises(ApiError):
        await memory.patch_pod_status("default", "p", {"metadata": {"uid": "other"}})


async def test_watch_sees_a_pod_leave_the_selector_as_deleted() -> None:
    memory = cluster(make_pod("p").obj())
    stream = memory.watch(
        PODS, resource_version="1", timeout_seconds=60, field_selector=NON_TERMINAL
    )
    first = stream.__anext__()  # subscribes, then waits
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(first), 0.01)
    assert memory.pending_deliveries() == 0
    await memory.request(
        "PATCH", "/api/v1/namespaces/default/pods/p/status", {"status": {"phase": "Succeeded"}}
    )
    event = await first
    assert event["type"] == "DELETED"
    await stream.aclose()


async def test_request_writes_claim_status() -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {},
    }
    memory = cluster(claim)
    path = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c/status"
    stored = await memory.request("GET", path.removesuffix("/status"))
    written = await memory.request("PUT", path, {**stored, "status": {"allocation": {}}})
    assert written["status"] == {"allocation": {}}
    assert memory.get(RESOURCE_CLAIMS, "default/c") == written
    with pytest.raises(ApiError) as stale:
        await memory.request("PUT", path, stored)  # an old resourceVersion
    assert stale.value.status == 409


async def test_claim_status_patch_deletes_a_reservation_by_uid() -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "status": {"reservedFor": [{"uid": "a", "name": "a"}, {"uid": "b", "name": "b"}]},
    }
    memory = cluster(claim)
    path = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c/status"
    patch = {"status": {"reservedFor": [{"$patch": "delete", "uid": "a"}]}}
    written = await memory.request("PATCH", path, patch, "application/strategic-merge-patch+json")
    assert written["status"]["reservedFor"] == [{"uid": "b", "name": "b"}]


async def test_post_with_generate_name_is_named_and_repeatable() -> None:
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"generateName": "pod-gpu-"},
    }
    path = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
    first = await cluster().request("POST", path, body)
    again = await cluster().request("POST", path, body)
    assert first["metadata"]["name"].startswith("pod-gpu-")
    assert first["metadata"]["name"] == again["metadata"]["name"]
    assert first["metadata"]["namespace"] == "default"


def test_loading_admits_pods_as_the_api_server_would() -> None:
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "g"}]}}},
    }
    urgent = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "urgent"},
        "value": 100,
    }
    raw = make_pod("p").spec_field("priorityClassName", "urgent").obj()
    raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]
    assert "priority" not in raw["spec"]
    memory = cluster(template, urgent, raw, make_pod("gated").scheduling_gate("x").obj())
    pod = memory.get(PODS, "default/p")
    assert pod is not None
    assert pod["spec"]["priority"] == 100
    (status,) = pod["status"]["resourceClaimStatuses"]
    claim = memory.get(RESOURCE_CLAIMS, f"default/{status['resourceClaimName']}")
    assert claim is not None
    assert claim["spec"] == {"devices": {"requests": [{"name": "g"}]}}
    assert claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    gated = memory.get(PODS, "default/gated")
    assert gated is not None
    assert gated["status"]["conditions"][0]["reason"] == "SchedulingGated"
