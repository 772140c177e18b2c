"""NodeResourcesFit PreFilter/Filter: every shortfall reported, escalated when hopeless."""

from __future__ import annotations

import pytest

from plugins.node_resources_fit import NodeResourcesFit, NodeResourcesFitArgs
from scheduler.framework import Code, CycleState, Status
from tests.support.builders import make_node, make_pod
from tests.unit.plugins.support import Obj, node_info, pod

GPU = "example.com/gpu"

NODE = make_node("n").capacity(cpu="4", memory="8Gi", pods="110").obj()
TWO_PODS_NODE = make_node("n").capacity(cpu="4", memory="8Gi", pods="2").obj()
ONE_POD_NODE = make_node("n").capacity(cpu="4", memory="8Gi", pods="1").obj()
GPU_NODE = make_node("n").capacity(cpu="4", memory="8Gi", pods="110").resource(GPU, "2").obj()
STORAGE_NODE = make_node("n").capacity(cpu="4", memory="8Gi", pods="110").obj()
STORAGE_NODE["status"]["capacity"]["ephemeral-storage"] = "10Gi"

USES_2_CPU = make_pod("used2").requests(cpu="2").obj()
USES_3_CPU = make_pod("used3").requests(cpu="3").obj()
USES_3_CPU_6GI = make_pod("used").requests(cpu="3", memory="6Gi").obj()
USES_1_GPU = make_pod("gpu-user").request(GPU, "1").obj()
USES_8GI_STORAGE = make_pod("disk").requests(**{"ephemeral-storage": "8Gi"}).obj()
EMPTY_POD = make_pod("idle").obj()
IDLE_2 = make_pod("idle2").obj()


def args(**fields: object) -> NodeResourcesFitArgs:
    return NodeResourcesFitArgs.model_validate(fields)


CASES = [
    pytest.param(EMPTY_POD, NODE, [], None, None, id="no requests fit"),
    pytest.param(
        make_pod("p").requests(cpu="1").obj(), NODE, [USES_3_CPU], None, None, id="fits exactly"
    ),
    pytest.param(
        make_pod("p").requests(cpu="2").obj(),
        NODE,
        [USES_3_CPU],
        None,
        Status.unschedulable("Insufficient cpu"),
        id="insufficient cpu",
    ),
    pytest.param(
        make_pod("p").requests(cpu="2", memory="4Gi").obj(),
        NODE,
        [USES_3_CPU_6GI],
        None,
        Status.unschedulable("Insufficient cpu", "Insufficient memory"),
        id="every insufficient resource reported",
    ),
    pytest.param(
        make_pod("p").requests(cpu="5").obj(),
        NODE,
        [],
        None,
        Status.unresolvable("Insufficient cpu"),
        id="request beyond the whole node is unresolvable",
    ),
    pytest.param(
        make_pod("p").requests(cpu="2", memory="9Gi").obj(),
        NODE,
        [USES_3_CPU],
        None,
        Status.unresolvable("Insufficient cpu", "Insufficient memory"),
        id="one hopeless shortfall escalates all",
    ),
    pytest.param(
        make_pod("p").requests(cpu="1").obj(),
        TWO_PODS_NODE,
        [EMPTY_POD, IDLE_2],
        None,
        Status.unschedulable("Too many pods"),
        id="too many pods",
    ),
    pytest.param(
        EMPTY_POD,
        ONE_POD_NODE,
        [IDLE_2],
        None,
        Status.unschedulable("Too many pods"),
        id="too many pods for a pod without requests",
    ),
    pytest.param(
        make_pod("p").requests(cpu="2").obj(),
        ONE_POD_NODE,
        [USES_3_CPU],
        None,
        Status.unschedulable("Too many pods", "Insufficient cpu"),
        id="too many pods and insufficient cpu",
    ),
    pytest.param(
        make_pod("p").requests(cpu="1").container("second", cpu="1500m").obj(),
        NODE,
        [USES_2_CPU],
        None,
        Status.unschedulable("Insufficient cpu"),
        id="app containers are summed",
    ),
    pytest.param(
        make_pod("p").requests(cpu="1").init_container("init", cpu="2").obj(),
        NODE,
        [USES_2_CPU],
        None,
        None,
        id="init container is not added to app containers",
    ),
    pytest.param(
        make_pod("p").requests(cpu="1").init_container("init", cpu="3").obj(),
        NODE,
        [USES_2_CPU],
        None,
        Status.unschedulable("Insufficient cpu"),
        id="largest init container dominates",
    ),
    pytest.param(
        make_pod("p").requests(cpu="1500m").init_container("sidecar", sidecar=True, cpu="1").obj(),
        NODE,
        [USES_2_CPU],
        None,
        Status.unschedulable("Insufficient cpu"),
        id="sidecar adds to app containers",
    ),
    pytest.param(
        make_pod("p")
        .requests(cpu="500m")
        .init_container("sidecar", sidecar=True, cpu="500m")
        .init_container("init", cpu="1600m")
        .obj(),
        NODE,
        [USES_2_CPU],
        None,
        Status.unschedulable("Insufficient cpu"),
        id="sidecar started before an init container adds to it",
    ),
    pytest.param(
        make_pod("p")
        .requests(cpu="500m")
        .init_container("init", cpu="1800m")
        .init_container("sidecar", sidecar=True, cpu="500m")
        .obj(),
        NODE,
        [USES_2_CPU],
        None,
        None,
        id="sidecar started after an init container does not",
    ),
    pytest.param(
        make_pod("p").requests(cpu="1500m").overhead(cpu="600m").obj(),
        NODE,
        [USES_2_CPU],
        None,
        Status.unschedulable("Insufficient cpu"),
        id="overhead is added",
    ),
    pytest.param(
        make_pod("p").requests(cpu="1500m").overhead(cpu="500m").obj(),
        NODE,
        [USES_2_CPU],
        None,
        None,
        id="overhead fits exactly",
    ),
    pytest.param(
        make_pod("p").request(GPU, "1").obj(),
        GPU_NODE,
        [USES_1_GPU],
        None,
        None,
        id="extended resource fits",
    ),
    pytest.param(
        make_pod("p").request(GPU, "2").obj(),
        GPU_NODE,
        [USES_1_GPU],
        None,
        Status.unschedulable(f"Insufficient {GPU}"),
        id="extended resource insufficient",
    ),
    pytest.param(
        make_pod("p").request(GPU, "3").obj(),
        GPU_NODE,
        [],
        None,
        Status.unresolvable(f"Insufficient {GPU}"),
        id="extended resource beyond the node",
    ),
    pytest.param(
        make_pod("p").request(GPU, "1").obj(),
        NODE,
        [],
        None,
        Status.unresolvable(f"Insufficient {GPU}"),
        id="extended resource the node lacks",
    ),
    pytest.param(
        make_pod("p").request(GPU, "0").obj(),
        NODE,
        [],
        None,
        None,
        id="zero extended request is not checked",
    ),
    pytest.param(
        make_pod("p").request(GPU, "1").obj(),
        NODE,
        [],
        args(ignoredResources=[GPU]),
        None,
        id="ignored resource",
    ),
    pytest.param(
        make_pod("p").request(GPU, "1").obj(),
        NODE,
        [],
        args(ignoredResourceGroups=["example.com"]),
        None,
        id="ignored resource group",
    ),
    pytest.param(
        make_pod("p").request(GPU, "1").obj(),
        NODE,
        [],
        args(ignoredResourceGroups=["example.org"]),
        Status.unresolvable(f"Insufficient {GPU}"),
        id="other resource group not ignored",
    ),
    pytest.param(
        make_pod("p").request("hugepages-2Mi", "4Mi").obj(),
        NODE,
        [],
        args(ignoredResources=["hugepages-2Mi"]),
        Status.unresolvable("Insufficient hugepages-2Mi"),
        id="native resources cannot be ignored",
    ),
    pytest.param(
        make_pod("p").requests(**{"ephemeral-storage": "4Gi"}).obj(),
        STORAGE_NODE,
        [USES_8GI_STORAGE],
        None,
        Status.unschedulable("Insufficient ephemeral-storage"),
        id="insufficient ephemeral storage",
    ),
]


@pytest.mark.parametrize(("raw_pod", "raw_node", "existing", "plugin_args", "expected"), CASES)
def test_filter(
    raw_pod: Obj,
    raw_node: Obj,
    existing: list[Obj],
    plugin_args: NodeResourcesFitArgs | None,
    expected: Status | None,
) -> None:
    plugin = NodeResourcesFit(plugin_args or NodeResourcesFitArgs())
    state = CycleState()
    the_pod = pod(raw_pod)
    info = node_info(raw_node, *existing)
    assert plugin.pre_filter(state, the_pod, [info]) == (None, None)
    assert plugin.filter(state, the_pod, info) == expected


def test_filter_without_pre_filter_is_an_error() -> None:
    status = NodeResourcesFit(NodeResourcesFitArgs()).filter(
        CycleState(), pod(make_pod("p").obj()), node_info(NODE)
    )
    assert status is not None
    assert status.code is Code.ERROR


def test_pre_filter_state_survives_clone() -> None:
    plugin = NodeResourcesFit(NodeResourcesFitArgs())
    state = CycleState()
    the_pod = pod(make_pod("p").requests(cpu="2").obj())
    plugin.pre_filter(state, the_pod, [])
    status = plugin.filter(state.clone(), the_pod, node_info(NODE, USES_3_CPU))
    assert status is not None
    assert status.reasons == ("Insufficient cpu",)
