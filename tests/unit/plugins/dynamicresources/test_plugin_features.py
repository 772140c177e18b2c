"""DynamicResources and NodeResourcesFit with each DRA gate on and off
(issue 23 #9), as upstream's plugin switches on them (1.36
``pkg/scheduler/framework/plugins/dynamicresources``: ``PreFilter``,
``Filter``, ``PreBind``/``bindClaim``, ``preFilterExtendedResources``,
``ValidateDynamicResourcesArgs``; ``noderesources`` ``Fits`` with
``EnableDRAExtendedResource``). Ids name the upstream function."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from plugins.dynamicresources import SPEC
from plugins.dynamicresources.plugin import DynamicResources
from plugins.node_resources_fit import SPEC as FIT_SPEC
from plugins.node_resources_fit import NodeResourcesFit
from scheduler.app.gateflags import parse_feature_gates
from scheduler.framework import CycleState, Handle, Status
from tests.support.builders import make_node, make_pod
from tests.support.drabuilders import make_claim, make_class
from tests.unit.plugins.dynamicresources.fakes import FakeHandle, FakeInformers, make_plugin
from tests.unit.plugins.dynamicresources.test_plugin import (
    CLAIM,
    CLAIM_PATH,
    CLASS,
    WORKER,
    allocated_claim,
    claim_obj,
    conditioned_slice,
    cycle,
    the_pod,
    with_device_status,
    worker_slice,
)
from tests.unit.plugins.support import node_info, pod

GPU = "example.com/gpu"
GPU_POD = pod(make_pod("p").uid("pod-uid").request(GPU, "1").obj())


def setup(
    gates: str,
    *,
    claims: tuple[dict[str, Any], ...] = (),
    slices: tuple[dict[str, Any], ...] = (),
    args: dict[str, Any] | None = None,
) -> tuple[DynamicResources, FakeHandle]:
    handle = FakeHandle(feature_gates=parse_feature_gates(gates))
    plugin, _ = make_plugin(args, handle)
    handle.informers.put("deviceclasses", make_class(CLASS).obj())
    handle.informers.put("deviceclasses", make_class("gpu-class").extended_resource(GPU).obj())
    for slice_ in slices:
        handle.informers.put("resourceslices", slice_)
    for claim in claims:
        handle.informers.put("resourceclaims", claim)
    return plugin, handle


PRIORITIZED = (
    make_claim(CLAIM)
    .uid(f"uid-{CLAIM}")
    .first_available("req-1", {"name": "subreq-1", "deviceClassName": CLASS})
    .obj()
)


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        pytest.param("", None, id="PreFilter: firstAvailable with DRAPrioritizedList on"),
        pytest.param(
            "DRAPrioritizedList=false",
            Status.unresolvable(
                f"resource claim default/{CLAIM}, request req-1: has subrequests, but the"
                " DRAPrioritizedList feature is disabled"
            ),
            id="PreFilter: firstAvailable with DRAPrioritizedList off",
        ),
    ],
)
def test_prioritized_list_gate_in_pre_filter(gates: str, expected: Status | None) -> None:
    plugin, _ = setup(gates, claims=(PRIORITIZED,), slices=(worker_slice("instance-1"),))
    _, status = plugin.pre_filter(CycleState(), the_pod(), [WORKER])
    assert status == expected


def failed_binding_claim() -> dict[str, Any]:
    claim = allocated_claim("worker")
    result = claim["status"]["allocation"]["devices"]["results"][0]
    result["bindingConditions"] = ["IsPrepared"]
    result["bindingFailureConditions"] = ["BindingFailed"]
    return with_device_status(claim, IsPrepared="False", BindingFailed="True")


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        pytest.param(
            "",
            [Status.unresolvable("resourceclaim not available on the node")],
            id="Filter: a failed binding condition makes the claim unavailable",
        ),
        pytest.param(
            "DRADeviceBindingConditions=false",
            [None],
            id="Filter: binding conditions unchecked without DRADeviceBindingConditions",
        ),
        pytest.param(
            "DRAResourceClaimDeviceStatus=false",
            [None],
            id="Filter: binding conditions unchecked without DRAResourceClaimDeviceStatus",
        ),
    ],
)
def test_binding_condition_gates_in_filter(gates: str, expected: list[Status | None]) -> None:
    plugin, _ = setup(gates, claims=(failed_binding_claim(),), slices=(conditioned_slice(),))
    _, statuses = cycle(plugin, the_pod(), WORKER)
    assert statuses == expected


@pytest.mark.parametrize(
    ("gates", "stamped"),
    [
        pytest.param("", True, id="bindClaim: allocationTimestamp with binding conditions on"),
        pytest.param(
            "DRADeviceBindingConditions=false",
            False,
            id="bindClaim: no allocationTimestamp with binding conditions off",
        ),
    ],
)
async def test_binding_condition_gates_in_pre_bind_stamp(gates: str, stamped: bool) -> None:
    plugin, handle = setup(
        gates, claims=(allocated_claim("worker"),), slices=(worker_slice("instance-1"),)
    )
    state, statuses = cycle(plugin, the_pod(), WORKER)
    assert statuses == [None]
    assert plugin.reserve(state, the_pod(), "worker") is None
    assert await plugin.pre_bind(state, the_pod(), "worker") is None
    allocation = handle.api.objects[CLAIM_PATH]["status"]["allocation"]
    assert ("allocationTimestamp" in allocation) is stamped


async def test_pre_bind_does_not_wait_for_binding_conditions_with_the_gate_off() -> None:
    """PreBind: without both gates it returns once the claims are reserved."""
    claim = allocated_claim("worker", ("my-pod", "1234"))
    result = claim["status"]["allocation"]["devices"]["results"][0]
    result["bindingConditions"] = ["IsPrepared"]
    plugin, handle = setup(
        "DRADeviceBindingConditions=false", claims=(claim,), slices=(conditioned_slice(),)
    )
    state, statuses = cycle(plugin, the_pod(), WORKER)
    assert statuses == [None]
    assert await plugin.pre_bind(state, the_pod(), "worker") is None
    assert handle.clock.sleeps == []
    # with the gates on the same claim is waited for (precondition of the case)
    plugin_on, handle_on = setup("", claims=(claim,), slices=(conditioned_slice(),))
    handle_on.clock.on_sleep(lambda _: None)
    state, _ = cycle(plugin_on, the_pod(), WORKER)
    handle_on.clock.on_sleep(
        lambda _: handle_on.informers.put(
            "resourceclaims", with_device_status(claim, IsPrepared="True")
        )
    )
    assert await plugin_on.pre_bind(state, the_pod(), "worker") is None
    assert handle_on.clock.sleeps == [5.0]


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        pytest.param(
            "",
            Status.as_error("node worker: timed out trying to allocate devices"),
            id="Filter: filterTimeout applies with DRASchedulerFilterTimeout on",
        ),
        pytest.param(
            "DRASchedulerFilterTimeout=false", None, id="Filter: no timeout with the gate off"
        ),
    ],
)
def test_filter_timeout_gate(gates: str, expected: Status | None) -> None:
    plugin, handle = setup(gates, claims=(claim_obj(),), slices=(worker_slice("instance-1"),))
    ticks = itertools.count(0, 60)  # each reading of the clock is a minute later
    handle.clock.now = lambda: float(next(ticks))  # type: ignore[method-assign]
    _, statuses = cycle(plugin, the_pod(), WORKER)
    assert statuses == [expected]


@pytest.mark.parametrize(
    ("gates", "args", "error"),
    [
        pytest.param("", {"filterTimeout": "5s", "bindingTimeout": "60s"}, "", id="gates on"),
        pytest.param("DRASchedulerFilterTimeout=false", {}, "", id="filterTimeout unset"),
        pytest.param(
            "DRASchedulerFilterTimeout=false,DRADeviceBindingConditions=false",
            {"filterTimeout": "10s", "bindingTimeout": "10m0s"},
            "",
            id="our own dump's defaults load with the gates off",
        ),
        pytest.param(
            "DRASchedulerFilterTimeout=false",
            {"filterTimeout": "5s"},
            "filterTimeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled",
            id="ValidateDynamicResourcesArgs: filterTimeout with its gate off",
        ),
        pytest.param(
            "DRAResourceClaimDeviceStatus=false",
            {"bindingTimeout": "60s"},
            "bindingTimeout: Forbidden: DRADeviceBindingConditions or"
            " DRAResourceClaimDeviceStatus feature gate is disabled",
            id="ValidateDynamicResourcesArgs: bindingTimeout with its gates off",
        ),
    ],
)
def test_args_forbidden_when_their_gate_is_off(
    gates: str, args: dict[str, Any], error: str
) -> None:
    handle = FakeHandle(feature_gates=parse_feature_gates(gates))
    assert SPEC.args_model is not None
    parsed = SPEC.args_model.model_validate(args)
    if not error:
        assert isinstance(SPEC.factory(parsed, handle), DynamicResources)  # type: ignore[arg-type]
        return
    with pytest.raises(ValueError, match=error):
        SPEC.factory(parsed, handle)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("gates", "skipped"),
    [
        pytest.param("", False, id="preFilterExtendedResources: DRA-backed with the gate on"),
        pytest.param(
            "DRAExtendedResource=false", True, id="preFilterExtendedResources: gate off, skipped"
        ),
    ],
)
def test_extended_resource_gate_in_dynamic_resources(gates: str, skipped: bool) -> None:
    plugin, _ = setup(gates)
    _, status = plugin.pre_filter(CycleState(), GPU_POD, [WORKER])
    assert (status == Status.skip()) is skipped
    assert (plugin.sign_pod(GPU_POD) is not None) is skipped


def fit_plugin(gates: str) -> NodeResourcesFit:
    informers = FakeInformers()

    class GatedHandle:
        def __init__(self) -> None:
            self.informers = informers
            self.feature_gates = parse_feature_gates(gates)

    handle: Handle = GatedHandle()  # type: ignore[assignment]
    plugin = FIT_SPEC.factory(None, handle)
    assert isinstance(plugin, NodeResourcesFit)
    informers.put("deviceclasses", make_class("gpu-class").extended_resource(GPU).obj())
    return plugin


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        pytest.param("", None, id="Fits: a DRA-backed resource the node lacks is DRA's"),
        pytest.param(
            "DRAExtendedResource=false",
            Status.unresolvable(f"Insufficient {GPU}"),
            id="Fits: without DRAExtendedResource the node must have it",
        ),
    ],
)
def test_extended_resource_gate_in_node_resources_fit(gates: str, expected: Status | None) -> None:
    plugin = fit_plugin(gates)
    state = CycleState()
    plugin.pre_filter(state, GPU_POD, [])
    assert plugin.filter(state, GPU_POD, node_info(make_node("bare").obj())) == expected


def rule_on_instance_1() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1beta2",
        "kind": "DeviceTaintRule",
        "metadata": {"name": "broken"},
        "spec": {
            "deviceSelector": {"device": "instance-1"},
            "taint": {"key": "example.com/broken", "effect": "NoSchedule"},
        },
    }


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        pytest.param("", [None], id="DeviceTaintRules ignored with DRADeviceTaintRules off"),
        pytest.param(
            "DRADeviceTaintRules=true",
            [Status.unresolvable("cannot allocate all claims")],
            id="ListWithDeviceTaintRules: a rule's NoSchedule taint blocks the device",
        ),
        pytest.param(
            "DRADeviceTaintRules=true,DRADeviceTaints=false",
            [None],
            id="a rule's taint is ignored without DRADeviceTaints",
        ),
    ],
)
def test_device_taint_rules_gate(gates: str, expected: list[Status | None]) -> None:
    plugin, handle = setup(gates, claims=(claim_obj(),), slices=(worker_slice("instance-1"),))
    handle.informers.put("devicetaintrules", rule_on_instance_1())
    _, statuses = cycle(plugin, the_pod(), WORKER)
    assert statuses == expected
