"""Extended resources backed by a DeviceClass: the class index, the claim's
requests and container mappings, NodeResourcesFit stepping aside, and the
DynamicResources flow that creates, allocates and records the claim."""

from __future__ import annotations

from typing import Any

import pytest

from plugins.dynamicresources.extended import ANNOTATION, requests_and_mappings
from plugins.node_resources_balanced_allocation import SPEC as BALANCED_SPEC
from plugins.node_resources_fit import SPEC as FIT_SPEC
from plugins.node_resources_fit import NodeResourcesFit
from scheduler.app.gateflags import parse_feature_gates
from scheduler.framework import CycleState, Handle, Status
from scheduler.framework.deviceclasses import ExtendedResourceClasses, dra_devices
from tests.support.builders import make_node, make_pod
from tests.support.drabuilders import make_claim, make_class, make_device, make_slice
from tests.unit.plugins.dynamicresources.fakes import FakeHandle, FakeInformers, make_plugin
from tests.unit.plugins.support import node_info, pod

GPU = "example.com/gpu"


def classes(*objs: dict[str, Any]) -> ExtendedResourceClasses:
    index = ExtendedResourceClasses()
    for obj in objs:
        index.changed(None, obj)
    return index


def gpu_class(name: str = "gpu-class", created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    obj = make_class(name).extended_resource(GPU).obj()
    obj["metadata"]["creationTimestamp"] = created
    return obj


@pytest.mark.parametrize(
    ("objs", "resource", "expected"),
    [
        pytest.param([gpu_class()], GPU, "gpu-class", id="explicit name"),
        pytest.param(
            [gpu_class()],
            "deviceclass.resource.kubernetes.io/gpu-class",
            "gpu-class",
            id="implicit name",
        ),
        pytest.param([gpu_class()], "deviceclass.resource.kubernetes.io/nope", None, id="no class"),
        pytest.param(
            [gpu_class("old", "2026-01-01T00:00:00Z"), gpu_class("new", "2026-02-01T00:00:00Z")],
            GPU,
            "new",
            id="newer class wins",
        ),
        pytest.param([gpu_class("b"), gpu_class("a")], GPU, "a", id="same age: smaller name wins"),
    ],
)
def test_class_for(objs: list[dict[str, Any]], resource: str, expected: str | None) -> None:
    assert classes(*objs).class_for(resource) == expected


def test_deleted_class_serves_nothing() -> None:
    index = classes(gpu_class())
    index.changed(gpu_class(), None)
    assert index.class_for(GPU) is None


def containers_pod(*containers: tuple[str, dict[str, str], bool], init: int = 0) -> Any:
    """Containers as (name, requests, sidecar); the first ``init`` are init containers."""
    raw = make_pod("p").uid("pod-uid").obj()
    specs = []
    for name, requests, sidecar in containers:
        spec: dict[str, Any] = {"name": name, "image": "x", "resources": {"requests": requests}}
        if sidecar:
            spec["restartPolicy"] = "Always"
        specs.append(spec)
    raw["spec"]["initContainers"] = specs[:init]
    raw["spec"]["containers"] = specs[init:]
    return pod(raw)


def request(name: str, count: int) -> dict[str, Any]:
    return {
        "name": name,
        "exactly": {"deviceClassName": "gpu-class", "allocationMode": "ExactCount", "count": count},
    }


def mapping(container: str, request_name: str) -> dict[str, str]:
    return {"containerName": container, "resourceName": GPU, "requestName": request_name}


@pytest.mark.parametrize(
    ("target", "requests", "mappings"),
    [
        pytest.param(
            containers_pod(("c0", {GPU: "2"}, False)),
            [request("container-0-request-0", 2)],
            [mapping("c0", "container-0-request-0")],
            id="one container",
        ),
        pytest.param(
            containers_pod(("c0", {"cpu": "1", GPU: "1"}, False), ("c1", {GPU: "1"}, False)),
            [request("container-0-request-1", 1), request("container-1-request-0", 1)],
            [mapping("c0", "container-0-request-1"), mapping("c1", "container-1-request-0")],
            id="resource index among the container's sorted requests",
        ),
        pytest.param(
            containers_pod(("init", {GPU: "1"}, False), ("main", {GPU: "2"}, False), init=1),
            [request("container-1-request-0", 2)],
            [mapping("main", "container-1-request-0"), mapping("init", "container-1-request-0")],
            id="init container reuses a later container's request",
        ),
        pytest.param(
            containers_pod(
                ("init-a", {GPU: "1"}, False),
                ("init-b", {GPU: "3"}, False),
                ("main", {"cpu": "1"}, False),
                init=2,
            ),
            [request("container-1-request-0", 3)],
            [
                mapping("init-a", "container-1-request-0"),
                mapping("init-b", "container-1-request-0"),
            ],
            id="init containers share the largest request",
        ),
    ],
)
def test_requests_and_mappings(
    target: Any, requests: list[dict[str, Any]], mappings: list[dict[str, str]]
) -> None:
    assert requests_and_mappings(target, [GPU], classes(gpu_class())) == (requests, mappings)


# ------------------------------------------------------- NodeResourcesFit
def fit_with(informers: FakeInformers) -> NodeResourcesFit:
    class WithInformers:
        def __init__(self) -> None:
            self.informers = informers

    handle: Handle = WithInformers()  # type: ignore[assignment]
    plugin = FIT_SPEC.factory(None, handle)
    assert isinstance(plugin, NodeResourcesFit)
    return plugin


def fit_filter(plugin: NodeResourcesFit, target: Any, node: dict[str, Any]) -> Status | None:
    state = CycleState()
    plugin.pre_filter(state, target, [])
    return plugin.filter(state, target, node_info(node))


GPU_POD = pod(make_pod("p").request(GPU, "1").obj())


def test_node_resources_fit_steps_aside_for_dra_backed_resources() -> None:
    informers = FakeInformers()
    plugin = fit_with(informers)
    bare = make_node("bare").obj()
    assert fit_filter(plugin, GPU_POD, bare) == Status.unresolvable(f"Insufficient {GPU}")
    assert plugin.sign_pod(GPU_POD) is not None
    informers.put("deviceclasses", gpu_class())
    assert fit_filter(plugin, GPU_POD, bare) is None
    assert plugin.sign_pod(GPU_POD) is None  # no verdict reuse for it
    # a node advertising the resource through a device plugin is checked as usual
    full = make_node("plugin").resource(GPU, "1").obj()
    busy = make_pod("busy").node("plugin").request(GPU, "1").obj()
    state = CycleState()
    plugin.pre_filter(state, GPU_POD, [])
    assert plugin.filter(state, GPU_POD, node_info(full, busy)) == Status.unschedulable(
        f"Insufficient {GPU}"
    )


# ----------------------------------------------------- DynamicResources
def dra_setup() -> tuple[Any, FakeHandle]:
    plugin, handle = make_plugin()
    handle.informers.put("deviceclasses", gpu_class())
    slice_ = make_slice("worker-slice").driver("gpu.example.com").pool("worker").node("worker")
    handle.informers.put("resourceslices", slice_.device("gpu-0", "gpu-1").obj())
    return plugin, handle


async def test_claim_is_created_allocated_and_recorded_in_pod_status() -> None:
    plugin, handle = dra_setup()
    target = pod(make_pod("p").uid("pod-uid").request(GPU, "2").obj())
    worker, other = node_info(make_node("worker").obj()), node_info(make_node("other").obj())
    state = CycleState()
    _, status = plugin.pre_filter(state, target, [worker, other])
    assert status is None
    assert plugin.filter(state, target, worker) is None
    assert plugin.filter(state, target, other) == Status.unresolvable("cannot allocate all claims")
    assert plugin.reserve(state, target, "worker") is None
    assert len(plugin.tracker.allocated_state().devices) == 2  # in flight
    assert await plugin.pre_bind(state, target, "worker") is None
    assert [m for m, _ in handle.api.calls] == ["POST", "PUT", "PUT", "PATCH"]
    path = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/p-extended-resources-x1"
    written = handle.api.objects[path]
    assert written["metadata"]["annotations"] == {ANNOTATION: "true"}
    assert written["metadata"]["ownerReferences"][0]["uid"] == "pod-uid"
    assert written["spec"]["devices"]["requests"] == [
        {
            "name": "container-0-request-0",
            "exactly": {"deviceClassName": "gpu-class", "allocationMode": "ExactCount", "count": 2},
        }
    ]
    devices = [r["device"] for r in written["status"]["allocation"]["devices"]["results"]]
    assert devices == ["gpu-0", "gpu-1"]
    assert written["status"]["reservedFor"][0]["uid"] == "pod-uid"
    assert len(plugin.tracker.allocated_state().devices) == 2  # now from the written claim
    assert handle.metrics.recorded == [("resourceclaim_create", "success")]


def test_node_advertising_the_resource_needs_no_claim() -> None:
    plugin, _ = dra_setup()
    target = pod(make_pod("p").uid("pod-uid").request(GPU, "1").obj())
    advertised = node_info(make_node("plugin").resource(GPU, "4").obj())
    state = CycleState()
    plugin.pre_filter(state, target, [advertised])
    assert plugin.filter(state, target, advertised) is None
    assert plugin.reserve(state, target, "plugin") is None
    assert plugin.tracker.allocated_state().devices == frozenset()


# ------------------------------------------- scoring DRA-backed resources
MOST_ALLOCATED_GPU = {
    "scoringStrategy": {"type": "MostAllocated", "resources": [{"name": GPU, "weight": 1}]}
}
BALANCED_CPU_GPU = {"resources": [{"name": "cpu", "weight": 1}, {"name": GPU, "weight": 1}]}


def scoring_setup(gates: str = "") -> tuple[FakeHandle, NodeResourcesFit, Any]:
    """Upstream noderesources calculateDRAResourceTotals' inputs: worker has
    gpu-0..3 (gpu-3 of another model, which the class rejects), busy has
    gpu-0..1 with one in use; an all-nodes slice adds one more everywhere.
    The plugins exist before the objects arrive, as informer handlers."""
    handle = FakeHandle(feature_gates=parse_feature_gates(gates))
    make_plugin(handle=handle)
    assert FIT_SPEC.args_model is not None
    assert BALANCED_SPEC.args_model is not None
    fit = FIT_SPEC.factory(FIT_SPEC.args_model.model_validate(MOST_ALLOCATED_GPU), handle)
    assert isinstance(fit, NodeResourcesFit)
    balanced = BALANCED_SPEC.factory(
        BALANCED_SPEC.args_model.model_validate(BALANCED_CPU_GPU), handle
    )
    gpu = make_class("gpu-class").extended_resource(GPU)
    gpu = gpu.selector('device.attributes["gpu.example.com"].model == "a"')
    handle.informers.put("deviceclasses", gpu.obj())
    node_devices = {"worker": 4, "busy": 2}
    for node, count in node_devices.items():
        devices = [
            make_device(f"gpu-{i}").attr("model", "b" if i == 3 else "a") for i in range(count)
        ]
        slice_ = make_slice(f"{node}-slice").driver("gpu.example.com").pool(node).node(node)
        handle.informers.put("resourceslices", slice_.device(*devices).obj())
    shared = make_slice("everywhere").driver("gpu.example.com").pool("shared").all_nodes()
    handle.informers.put("resourceslices", shared.device(make_device("g").attr("model", "a")).obj())
    in_use = (
        make_claim("held")
        .uid("held-uid")
        .resource_version("1")
        .allocation(
            {
                "devices": {
                    "results": [
                        {
                            "request": "r",
                            "driver": "gpu.example.com",
                            "pool": "busy",
                            "device": "gpu-0",
                        }
                    ]
                }
            }
        )
        .obj()
    )
    handle.informers.put("resourceclaims", in_use)
    return handle, fit, balanced


def test_device_counts_of_a_class_on_a_node() -> None:
    """calculateDRAResourceTotals: class-selected devices serving the node
    (its own slice and all-nodes slices), and how many are in use."""
    handle, _, _ = scoring_setup()
    slot = dra_devices(handle)
    assert slot is not None
    assert slot.provider is not None
    assert slot.provider.class_devices("worker", {}, "gpu-class") == (4, 0)
    assert slot.provider.class_devices("busy", {}, "gpu-class") == (3, 1)
    assert slot.provider.class_devices("nowhere", {}, "gpu-class") == (1, 0)
    assert slot.provider.class_devices("worker", {}, "no-such-class") == (0, 0)


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        pytest.param(
            "",
            # MostAllocated: worker 1 of 4 -> 25, busy 1 + 1 of 3 -> 66
            {"worker": 25, "busy": 66},
            id="calculateDRAExtendedResourceAllocatableRequest: devices count as allocatable",
        ),
        pytest.param(
            "DRAExtendedResource=false",
            {"worker": 0, "busy": 0},
            id="without DRAExtendedResource the resource is left out",
        ),
    ],
)
def test_node_resources_fit_scores_dra_backed_resources(
    gates: str, expected: dict[str, int]
) -> None:
    _, fit, _ = scoring_setup(gates)
    target = pod(make_pod("p").uid("pod-uid").request(GPU, "1").obj())
    state = CycleState()
    nodes = {name: node_info(make_node(name).obj()) for name in expected}
    assert fit.pre_score(state, target, list(nodes.values())) is None
    scores = {name: fit.score(state, target, info)[0] for name, info in nodes.items()}
    assert scores == expected
    assert (fit.sign_pod(target) is None) == (not gates)  # not signed while devices count


@pytest.mark.parametrize(
    ("gates", "differ"),
    [
        pytest.param("", True, id="balance counts the devices"),
        pytest.param("DRAExtendedResource=false", False, id="gate off: gpu left out"),
    ],
)
def test_balanced_allocation_scores_dra_backed_resources(gates: str, differ: bool) -> None:
    _, _, balanced = scoring_setup(gates)
    target = pod(make_pod("p").uid("pod-uid").request("cpu", "1").request(GPU, "1").obj())
    state = CycleState()
    nodes = [node_info(make_node(name).resource("cpu", "4").obj()) for name in ("worker", "busy")]
    balanced.pre_score(state, target, nodes)  # type: ignore[attr-defined]
    worker, busy = (balanced.score(state, target, n)[0] for n in nodes)  # type: ignore[attr-defined]
    assert (worker != busy) is differ
