"""``MemoryCluster``: the client boundary's writes, as the API server applies them."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from scheduler.kube.errors import ApiError
from scheduler.kube.resources import PODS, RESOURCE_CLAIMS
from scheduler.simulate.memory import MemoryCluster, field_matcher
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
