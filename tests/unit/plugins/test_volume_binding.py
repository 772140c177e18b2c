"""VolumeBinding: PreFilter and Filter decisions, with upstream messages and reasons."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from plugins.volume_binding import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_NOT_ENOUGH_SPACE,
    REASON_PV_NOT_EXIST,
    REASON_UNBOUND_IMMEDIATE,
)
from scheduler.framework import Code, CycleState, Status
from scheduler.framework.status import status_code
from tests.support.builders import make_node, make_pod
from tests.support.storage import (
    FakeInformers,
    claim_volume,
    make_pv,
    make_pvc,
    make_storage_class,
)
from tests.unit.plugins.support import Obj, node_info, pod
from tests.unit.plugins.volume_binding_support import ZONE, build, using

CLASSES = [
    make_storage_class("late").wait_for_first_consumer().obj(),
    make_storage_class("now").obj(),
    make_storage_class("static-only")
    .wait_for_first_consumer()
    .provisioner("kubernetes.io/no-provisioner")
    .obj(),
    make_storage_class("zonal").wait_for_first_consumer().allowed_topology(ZONE, "a").obj(),
    make_storage_class("capacity")
    .wait_for_first_consumer()
    .provisioner("capacity.csi.example.com")
    .obj(),
]
PVS = [
    make_pv("pv-a").node_affinity(ZONE, "a").obj(),
    make_pv("local-a").storage_class("static-only").node_affinity(ZONE, "a").obj(),
    make_pv("local-a-big")
    .storage_class("static-only")
    .capacity("5Gi")
    .node_affinity(ZONE, "a")
    .obj(),
    make_pv("local-b").storage_class("static-only").node_affinity(ZONE, "b").obj(),
]
CLAIMS = [
    make_pvc("bound-a").bound_to("pv-a").obj(),
    make_pvc("bound-gone").bound_to("pv-gone").obj(),
    make_pvc("late").storage_class("late").request("1Gi").obj(),
    make_pvc("late-on-b").storage_class("late").selected_node("node-b").obj(),
    make_pvc("local").storage_class("static-only").request("1Gi").obj(),
    make_pvc("local-2").storage_class("static-only").request("1Gi").obj(),
    make_pvc("local-huge").storage_class("static-only").request("10Gi").obj(),
    make_pvc("zonal").storage_class("zonal").obj(),
    make_pvc("big").storage_class("capacity").request("10Gi").obj(),
    make_pvc("small").storage_class("capacity").request("1Gi").obj(),
    make_pvc("immediate").storage_class("now").obj(),
    make_pvc("classless").obj(),
    make_pvc("lost").volume_name("pv-x").phase("Lost").obj(),
    make_pvc("deleting").storage_class("late").deleting().obj(),
]
CSI_DRIVERS = [
    {"metadata": {"name": "capacity.csi.example.com"}, "spec": {"storageCapacity": True}},
]
CAPACITIES = [
    {
        "metadata": {"name": "cap-a", "namespace": "kube-system"},
        "storageClassName": "capacity",
        "capacity": "5Gi",
        "nodeTopology": {"matchLabels": {ZONE: "a"}},
    }
]


def informers() -> FakeInformers:
    return FakeInformers(
        persistentvolumes=PVS,
        persistentvolumeclaims=CLAIMS,
        storageclasses=CLASSES,
        csidrivers=CSI_DRIVERS,
        csistoragecapacities=CAPACITIES,
    )


def node(name: str, zone: str) -> Obj:
    return make_node(name).label(ZONE, zone).obj()


NODE_A = node("node-a", "a")
NODE_B = node("node-b", "b")


def run(claims: Sequence[str], raw_node: Obj) -> tuple[Status | None, Status | None]:
    binding = build(informers())[0]
    info = node_info(raw_node)
    incoming = pod(using("p", *claims))
    state = CycleState()
    _, pre_status = binding.pre_filter(state, incoming, [info])
    if status_code(pre_status) is not Code.SUCCESS:
        return pre_status, None
    return pre_status, binding.filter(state, incoming, info)


@pytest.mark.parametrize(
    ("claims", "raw_node", "reasons"),
    [
        pytest.param(["bound-a"], NODE_A, (), id="bound volume allows the node"),
        pytest.param(
            ["bound-a"], NODE_B, (REASON_NODE_CONFLICT,), id="bound volume's affinity excludes"
        ),
        pytest.param(["bound-gone"], NODE_A, (REASON_PV_NOT_EXIST,), id="bound to a missing PV"),
        pytest.param(["late"], NODE_B, (), id="WaitForFirstConsumer: provisioned anywhere"),
        pytest.param(["late-on-b"], NODE_B, (), id="selected node is this node"),
        pytest.param(
            ["late-on-b"], NODE_A, (REASON_BIND_CONFLICT,), id="selected node is another node"
        ),
        pytest.param(["local"], NODE_A, (), id="static volume matches on its node"),
        pytest.param(
            ["local", "local-2"], NODE_A, (), id="two claims, two volumes (never the same one)"
        ),
        pytest.param(
            ["local", "local-2"],
            node("node-c", "c"),
            (REASON_BIND_CONFLICT,),
            id="no volume reaches the node, no provisioner",
        ),
        pytest.param(["local-huge"], NODE_A, (REASON_BIND_CONFLICT,), id="no volume big enough"),
        pytest.param(["zonal"], NODE_A, (), id="allowed topology includes the node"),
        pytest.param(
            ["zonal"], NODE_B, (REASON_BIND_CONFLICT,), id="allowed topology excludes the node"
        ),
        pytest.param(["small"], NODE_A, (), id="CSI capacity suffices"),
        pytest.param(["big"], NODE_A, (REASON_NOT_ENOUGH_SPACE,), id="CSI capacity too small"),
        pytest.param(
            ["small"], NODE_B, (REASON_NOT_ENOUGH_SPACE,), id="no CSI capacity for the node"
        ),
        pytest.param(
            ["bound-a", "late-on-b"],
            node("node-c", "c"),
            (REASON_NODE_CONFLICT, REASON_BIND_CONFLICT),
            id="several reasons, in upstream order",
        ),
        pytest.param(
            ["bound-a", "late-on-b"],
            NODE_A,
            (REASON_BIND_CONFLICT,),
            id="selected node elsewhere",
        ),
    ],
)
def test_filter(claims: list[str], raw_node: Obj, reasons: tuple[str, ...]) -> None:
    pre_status, status = run(claims, raw_node)
    assert status_code(pre_status) is Code.SUCCESS
    if not reasons:
        assert status_code(status) is Code.SUCCESS
        return
    assert status is not None
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == reasons


def test_bound_claims_are_checked_until_the_first_failure() -> None:
    # As upstream: bound-a fails on node affinity, so bound-gone's missing
    # volume is never looked at.
    pre_status, status = run(["bound-a", "bound-gone"], NODE_B)
    assert status_code(pre_status) is Code.SUCCESS
    assert status is not None
    assert status.reasons == (REASON_NODE_CONFLICT,)


@pytest.mark.parametrize(
    ("claims", "code", "message"),
    [
        pytest.param([], Code.SKIP, "", id="no claims: skip"),
        pytest.param(
            ["gone"],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'persistentvolumeclaim "gone" not found',
            id="missing claim",
        ),
        pytest.param(
            ["immediate"],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            REASON_UNBOUND_IMMEDIATE,
            id="unbound Immediate claim",
        ),
        pytest.param(
            ["classless"],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            REASON_UNBOUND_IMMEDIATE,
            id="unbound claim without class binds immediately",
        ),
        pytest.param(
            ["lost"],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'persistentvolumeclaim "lost" bound to non-existent persistentvolume "pv-x"',
            id="lost claim",
        ),
        pytest.param(
            ["deleting"],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'persistentvolumeclaim "deleting" is being deleted',
            id="claim being deleted",
        ),
    ],
)
def test_pre_filter(claims: list[str], code: Code, message: str) -> None:
    pre_status, _ = run(claims, NODE_A)
    assert status_code(pre_status) is code
    if message:
        assert pre_status is not None
        assert pre_status.message() == message


def test_ephemeral_volume_waits_for_its_claim() -> None:
    binding = build(informers())[0]
    raw = make_pod("p").volume("scratch", ephemeral={"volumeClaimTemplate": {"spec": {}}}).obj()
    _, status = binding.pre_filter(CycleState(), pod(raw), [])
    assert status is not None
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch"'
    )


def test_ephemeral_claim_of_another_pod_is_refused() -> None:
    stores = informers()
    stores.store("persistentvolumeclaims").put(
        make_pvc("p-scratch").storage_class("late").owned_by("someone-else").obj()
    )
    binding = build(stores)[0]
    raw = make_pod("p").uid("me").volume("scratch", ephemeral={"volumeClaimTemplate": {}}).obj()
    _, status = binding.pre_filter(CycleState(), pod(raw), [])
    assert status is not None
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert "was not created for pod default/p (pod is not owner)" in status.message()


def test_smallest_matching_volume_is_chosen() -> None:
    stores = informers()
    stores.store("persistentvolumeclaims").put(
        make_pvc("any").storage_class("static-only").request("500Mi").obj()
    )
    binding, binder, _ = build(stores)
    info = node_info(NODE_A)
    incoming = pod(using("p", "any"))
    state = CycleState()
    binding.pre_filter(state, incoming, [info])
    assert binding.filter(state, incoming, info) is None
    volumes = binder.find_pod_volumes(
        incoming,
        binder.pod_volume_claims(incoming),
        info.node,  # type: ignore[arg-type]
    )[0]
    assert [b.pv["metadata"]["name"] for b in volumes.static_bindings] == ["local-a"]


def test_claim_selector_restricts_volumes() -> None:
    stores = informers()
    stores.store("persistentvolumes").put(
        make_pv("labelled").storage_class("static-only").capacity("2Gi").label("tier", "gold").obj()
    )
    stores.store("persistentvolumeclaims").put(
        make_pvc("picky").storage_class("static-only").selector(tier="gold").obj()
    )
    _, binder, _ = build(stores)
    incoming = pod(using("p", "picky"))
    info = node_info(node("node-c", "c"))
    volumes, reasons = binder.find_pod_volumes(
        incoming,
        binder.pod_volume_claims(incoming),
        info.node,  # type: ignore[arg-type]
    )
    assert reasons == ()
    assert [b.pv["metadata"]["name"] for b in volumes.static_bindings] == ["labelled"]


def test_volume_mode_and_access_modes_must_match() -> None:
    stores = informers()
    stores.store("persistentvolumes").put(
        make_pv("block").storage_class("static-only").volume_mode("Block").obj()
    )
    stores.store("persistentvolumes").put(
        make_pv("rox").storage_class("static-only").access_modes("ReadOnlyMany").obj()
    )
    _, binder, _ = build(stores)
    incoming = pod(using("p", "local"))
    info = node_info(node("node-c", "c"))
    _, reasons = binder.find_pod_volumes(
        incoming,
        binder.pod_volume_claims(incoming),
        info.node,  # type: ignore[arg-type]
    )
    assert reasons == (REASON_BIND_CONFLICT,)


def test_pod_with_only_other_volumes_is_skipped() -> None:
    binding = build(informers())[0]
    raw = make_pod("p").volume("cfg", configMap={"name": "c"}).obj()
    _, status = binding.pre_filter(CycleState(), pod(raw), [])
    assert status_code(status) is Code.SKIP
    assert claim_volume("x") == {"persistentVolumeClaim": {"claimName": "x"}}
