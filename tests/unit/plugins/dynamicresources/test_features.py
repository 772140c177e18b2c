"""The DRA feature gates in both positions (issue 23 #9).

Each gate is settable through ``--feature-gates`` and switches what
upstream's code switches: the allocator cases follow
``k8s.io/dynamic-resource-allocation`` v0.36.2 (``structured/internal/
{stable,incubating}``: ``Allocate``, ``validateDeviceRequest``,
``isSelectable``, ``allocateDevice``, ``GatherPools``/``buildPool``), the
plugin cases ``pkg/scheduler/framework/plugins/dynamicresources``
(``PreFilter``, ``Filter``, ``PreBind``/``bindClaim``,
``ValidateDynamicResourcesArgs``). Ids name the upstream function or test.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from plugins.dynamicresources.allocator import AllocatedState, AllocationError, Allocator
from plugins.dynamicresources.features import GATES, Features
from plugins.dynamicresources.inventory import DeviceInventory
from plugins.dynamicresources.model import parse_claim, parse_class, parse_slice
from plugins.dynamicresources.state import usage_of
from scheduler.app.gateflags import FeatureGateError, parse_feature_gates
from scheduler.framework.features import CATALOGUE, KNOWN_GATES
from tests.support.drabuilders import Obj, make_claim, make_class, make_device, make_slice, request
from tests.unit.plugins.dynamicresources.fakes import steady_cel

NODE = ("node-1", {"region": "region-1"})
CLASSES = [make_class("class-a").driver("driver-a").obj()]
CEL = steady_cel()

TAINTS_OFF = Features(device_taints=False)
PARTITIONABLE_OFF = Features(partitionable_devices=False)
BINDING_OFF = Features(binding_conditions=False)
CAPACITY_OFF = Features(consumable_capacity=False)  # incubating allocator
STABLE = Features(consumable_capacity=False, binding_conditions=False)  # stable allocator
PRIORITIZED_OFF = Features(prioritized_list=False)
ADMIN_OFF = Features(admin_access=False)
ON = Features()


# ------------------------------------------------------------------ the gates
@pytest.mark.parametrize("gate", GATES)
def test_every_dra_gate_read_by_the_plugin_is_known_with_its_v136_default(gate: str) -> None:
    assert KNOWN_GATES[gate] is CATALOGUE[gate][0]


@pytest.mark.parametrize(
    "gate",
    [g for g in GATES if g != "DRAAdminAccess"],  # locked, below
)
@pytest.mark.parametrize("value", [True, False])
def test_a_dra_gate_is_settable_both_ways(gate: str, value: bool) -> None:
    gates = parse_feature_gates(f"{gate}={str(value).lower()}")
    assert gates.enabled(gate) is value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "DRAAdminAccess=false",
            "cannot set feature gate DRAAdminAccess to false, feature is locked to true",
            id="DRAAdminAccess is GA and locked in 1.36",
        ),
        pytest.param(
            "DRANodeAllocatableResources=true",
            "DRANodeAllocatableResources=true: pyscheduler implements only the v1.36 default"
            ".*DRANodeAllocatableResources: DynamicResources does not implement devices that"
            " consume the node's CPU and memory",
            id="devices consuming node resources (alpha) are refused, saying why",
        ),
        pytest.param(
            "DRAWorkloadResourceClaims=true",
            "DRAWorkloadResourceClaims=true: pyscheduler implements only the v1.36 default"
            ".*DRAWorkloadResourceClaims: DynamicResources does not implement claims reserved"
            " for a PodGroup",
            id="PodGroup claims (alpha) are refused, saying why",
        ),
    ],
)
def test_dra_gates_still_refused(text: str, message: str) -> None:
    with pytest.raises(FeatureGateError, match=message):
        parse_feature_gates(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", ON, id="v1.36 defaults: all on but DRADeviceTaintRules"),
        pytest.param(
            "DRADeviceTaintRules=true", Features(device_taint_rules=True), id="taint rules on"
        ),
        pytest.param(
            "DRADeviceBindingConditions=false",
            BINDING_OFF,
            id="AllocatorFeatures: DeviceBindingAndStatus needs DRADeviceBindingConditions",
        ),
        pytest.param(
            "DRAResourceClaimDeviceStatus=false",
            BINDING_OFF,
            id="AllocatorFeatures: DeviceBindingAndStatus needs DRAResourceClaimDeviceStatus",
        ),
        pytest.param(
            "DRADeviceTaints=false,DRAPartitionableDevices=false,DRAPrioritizedList=false,"
            "DRAConsumableCapacity=false,DRAExtendedResource=false,DRASchedulerFilterTimeout=false",
            Features(
                prioritized_list=False,
                partitionable_devices=False,
                device_taints=False,
                consumable_capacity=False,
                extended_resource=False,
                filter_timeout=False,
            ),
            id="every other gate off",
        ),
    ],
)
def test_features_from_gates(text: str, expected: Features) -> None:
    assert Features.from_gates(parse_feature_gates(text)) == expected


# ------------------------------------------------------------- the allocator
def allocate(features: Features, claims: list[Obj], slices: list[Obj]) -> list[list[str]] | None:
    counter = itertools.count()
    allocator = Allocator(
        AllocatedState(),
        {c["metadata"]["name"]: parse_class(c) for c in CLASSES},
        [parse_slice(s) for s in slices],
        CEL,
        new_share_id=lambda: f"share-{next(counter)}",
        features=features,
    )
    results = allocator.allocate(*NODE, [parse_claim(c) for c in claims])
    if results is None:
        return None
    return [
        [f"{r['request']} -> {r['device']}" for r in result["devices"]["results"]]
        for result in results
    ]


def claim(name: str = "claim-0", **options: Any) -> Obj:
    return make_claim(name).request("req-0", "class-a", **options).obj()


def local(*devices: Any) -> Obj:
    return make_slice("slice-1").node("node-1").device(*devices).obj()


TAINTED = local(
    make_device("device-1").taint("k", "NoSchedule"),
    make_device("device-2").taint("k", "NoExecute"),
)
PARTITIONED = [
    make_slice("slice-1")
    .node("node-1")
    .pool("pool-1", 1, 2)
    .device(make_device("device-1").consumes("counter-set-1", memory="4Gi"))
    .obj(),
    make_slice("slice-2")
    .node("node-1")
    .pool("pool-1", 1, 2)
    .counters("counter-set-1", memory="8Gi")
    .obj(),
]
UNKNOWN_COUNTER_SET = [
    make_slice("slice-1")
    .node("node-1")
    .pool("pool-1", 1, 2)
    .device(make_device("device-1").consumes("nope", memory="1Gi"))
    .obj(),
    PARTITIONED[1],
]
CONDITIONED = local(make_device("device-1").binding_conditions(["IsPrepared"], ["BindingFailed"]))
SHAREABLE = local(make_device("device-1").multiple().capacity("capacity-0", "4"))
PRIORITIZED = make_claim("claim-0").first_available("req-0", request("sub-0", "class-a")).obj()
DISTINCT = make_claim("claim-0").request("req-0").request("req-1").distinct("driver-a/numa").obj()
NUMA = local(make_device("device-1").attr("numa", 1), make_device("device-2").attr("numa", 2))


@pytest.mark.parametrize(
    ("features", "claims", "slices", "expected"),
    [
        pytest.param(ON, [claim()], [TAINTED], None, id="tainted-two-devices: taints block"),
        pytest.param(
            TAINTS_OFF,
            [claim()],
            [TAINTED],
            [["req-0 -> device-1"]],
            id="allocateDevice: DRADeviceTaints off ignores taints",
        ),
        pytest.param(
            ON,
            [claim()],
            PARTITIONED,
            [["req-0 -> device-1"]],
            id="partitionable-devices-single-device",
        ),
        pytest.param(
            PARTITIONABLE_OFF,
            [claim()],
            PARTITIONED,
            None,
            id="allocateDevice: DRAPartitionableDevices off, no device consuming counters",
        ),
        pytest.param(
            PARTITIONABLE_OFF,
            [claim()],
            UNKNOWN_COUNTER_SET,
            None,
            id="buildPool: DRAPartitionableDevices off, counters not validated",
        ),
        pytest.param(
            ON, [claim()], [CONDITIONED], [["req-0 -> device-1"]], id="device-binding-conditions"
        ),
        pytest.param(
            BINDING_OFF,
            [claim()],
            [CONDITIONED],
            None,
            id="isSelectable: binding-conditions-without-feature-gate",
        ),
        pytest.param(
            ON,
            [
                claim("claim-0", capacity={"capacity-0": "2"}),
                claim("claim-1", capacity={"capacity-0": "2"}),
            ],
            [SHAREABLE],
            [["req-0 -> device-1"], ["req-0 -> device-1"]],
            id="consumable-capacity: two claims share a device",
        ),
        pytest.param(
            CAPACITY_OFF,
            [claim("claim-0"), claim("claim-1")],
            [SHAREABLE],
            None,
            id="allocateDevice: DRAConsumableCapacity off makes allowMultipleAllocations exclusive",
        ),
        pytest.param(
            STABLE,
            [claim("claim-0", capacity={"capacity-0": "8"})],
            [SHAREABLE],
            [["req-0 -> device-1"]],
            id="stable allocator: capacity requests are ignored",
        ),
        pytest.param(
            ON,
            [DISTINCT],
            [NUMA],
            [["req-0 -> device-1", "req-1 -> device-2"]],
            id="with-distinct-constraint",
        ),
        pytest.param(
            CAPACITY_OFF,
            [DISTINCT],
            [NUMA],
            [["req-0 -> device-1", "req-1 -> device-2"]],
            id="incubating allocator: distinctAttribute whatever DRAConsumableCapacity",
        ),
    ],
)
def test_allocator_in_both_positions(
    features: Features, claims: list[Obj], slices: list[Obj], expected: list[list[str]] | None
) -> None:
    assert allocate(features, claims, slices) == expected


@pytest.mark.parametrize(
    ("features", "claims", "message"),
    [
        pytest.param(
            CAPACITY_OFF,
            [claim(capacity={"capacity-0": "2"})],
            "claim default/claim-0, request req-0: has capacity requests, but the"
            " DRAConsumableCapacity feature is disabled",
            id="Allocate (incubating): capacity requests need DRAConsumableCapacity",
        ),
        pytest.param(
            STABLE,
            [DISTINCT],
            r"claim default/claim-0, constraint #0: empty constraint"
            r" \(unsupported constraint type\?\)",
            id="Allocate (stable): distinctAttribute is an unknown constraint",
        ),
        pytest.param(
            PRIORITIZED_OFF,
            [PRIORITIZED],
            "claim default/claim-0, request req-0: has subrequests, but the DRAPrioritizedList"
            " feature is disabled",
            id="prioritized-list-disabled",
        ),
        pytest.param(
            ADMIN_OFF,
            [claim(admin=True)],
            "claim default/claim-0, request req-0: admin access is requested, but the feature"
            " is disabled",
            id="admin-access-disabled",
        ),
    ],
)
def test_allocator_refuses_fields_whose_feature_is_off(
    features: Features, claims: list[Obj], message: str
) -> None:
    allocate(ON, claims, [NUMA])  # with the feature on: no error
    with pytest.raises(AllocationError, match=message):
        allocate(features, claims, [NUMA])


def test_shared_allocations_hold_their_device_exclusively_without_consumable_capacity() -> None:
    """foreachAllocatedDevice: the shareID counts only with the feature on."""
    allocation = {
        "devices": {
            "results": [
                {"driver": "d", "pool": "p", "device": "x", "shareID": "s1", "consumedCapacity": {}}
            ]
        }
    }
    assert usage_of(allocation).exclusive == ()
    assert usage_of(allocation, consumable_capacity=False).exclusive == (("d", "p", "x"),)


# ------------------------------------------------------ DeviceTaintRules
def taint_rule(name: str, effect: str = "NoSchedule", **selector: str) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1beta2",
        "kind": "DeviceTaintRule",
        "metadata": {"name": name},
        "spec": {
            "deviceSelector": selector,
            "taint": {"key": "example.com/broken", "effect": effect},
        },
    }


def taints_by_device(inventory: DeviceInventory) -> dict[str, list[str]]:
    return {
        "/".join(device.id): [t.effect for t in device.taints]
        for slice_ in inventory.slices()
        for device in slice_.devices
        if device.taints
    }


TWO_POOLS = [
    make_slice("slice-1").driver("driver-a").pool("pool-1").node("node-1").device("d1", "d2").obj(),
    make_slice("slice-2").driver("driver-b").pool("pool-2").node("node-1").device("d1").obj(),
]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param(
            {},
            {
                "driver-a/pool-1/d1": ["NoSchedule"],
                "driver-a/pool-1/d2": ["NoSchedule"],
                "driver-b/pool-2/d1": ["NoSchedule"],
            },
            id="applyPatches: no selector taints every device",
        ),
        pytest.param(
            {"driver": "driver-b"}, {"driver-b/pool-2/d1": ["NoSchedule"]}, id="by driver"
        ),
        pytest.param(
            {"pool": "pool-1"},
            {"driver-a/pool-1/d1": ["NoSchedule"], "driver-a/pool-1/d2": ["NoSchedule"]},
            id="by pool",
        ),
        pytest.param(
            {"driver": "driver-a", "device": "d1"},
            {"driver-a/pool-1/d1": ["NoSchedule"]},
            id="by driver and device",
        ),
        pytest.param({"driver": "driver-c"}, {}, id="mismatched driver"),
    ],
)
def test_taint_rules_taint_the_devices_they_select(
    selector: dict[str, str], expected: dict[str, list[str]]
) -> None:
    inventory = DeviceInventory()
    for slice_ in TWO_POOLS:
        inventory.slice_changed(None, slice_)
    assert taints_by_device(inventory) == {}
    inventory.taint_rule_changed(None, taint_rule("rule", **selector))
    assert taints_by_device(inventory) == expected
    inventory.slice_changed(TWO_POOLS[0], TWO_POOLS[0])  # a slice update keeps them
    assert taints_by_device(inventory) == expected
    inventory.taint_rule_changed(taint_rule("rule", **selector), None)
    assert taints_by_device(inventory) == {}


@pytest.mark.parametrize(
    "gates",
    [
        pytest.param("", id="DRAConsumableCapacity on"),
        pytest.param("DRAConsumableCapacity=false", id="DRAConsumableCapacity off"),
    ],
)
def test_allow_multiple_allocations_is_in_cel_in_both_positions(gates: str) -> None:
    # upstream's scheduler compiles with the stored-expressions environment,
    # which declares the field whatever the gate, and always sets it (the
    # differential test against kube-scheduler shows it)
    features = Features.from_gates(parse_feature_gates(gates))
    env = steady_cel(list_type_attributes=features.list_type_attributes)
    device = parse_slice(SHAREABLE).devices[0].cel
    assert env.compile("device.allowMultipleAllocations").matches(device) is True
