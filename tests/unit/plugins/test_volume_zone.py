"""VolumeZone: the zone and region labels of bound volumes against the node's."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from plugins.volume_zone import REASON_CONFLICT, VolumeZone
from plugins.volume_zone.plugin import LABEL_BETA_ZONE, LABEL_REGION, LABEL_ZONE
from scheduler.framework import Code, CycleState, QueueingHint, Status
from scheduler.framework.status import status_code
from scheduler.framework.volumes import StorageLister
from tests.support.builders import make_node, make_pod
from tests.support.storage import (
    FakeInformers,
    claim_volume,
    make_pv,
    make_pvc,
    make_storage_class,
)
from tests.unit.plugins.support import Obj, node_info, pod

PVS = [
    make_pv("pv-a").label(LABEL_ZONE, "a").obj(),
    make_pv("pv-ab").label(LABEL_ZONE, "a__b").obj(),
    make_pv("pv-beta").label(LABEL_BETA_ZONE, "b").obj(),
    make_pv("pv-region").label(LABEL_REGION, "r1").label(LABEL_ZONE, "a").obj(),
    make_pv("pv-plain").obj(),
]
CLAIMS = [
    make_pvc("on-a").bound_to("pv-a").obj(),
    make_pvc("on-ab").bound_to("pv-ab").obj(),
    make_pvc("on-beta").bound_to("pv-beta").obj(),
    make_pvc("on-region").bound_to("pv-region").obj(),
    make_pvc("plain").bound_to("pv-plain").obj(),
    make_pvc("wffc").storage_class("late").obj(),
    make_pvc("immediate").storage_class("now").obj(),
    make_pvc("classless").obj(),
    make_pvc("no-mode").storage_class("no-mode").obj(),
    make_pvc("lost-pv").bound_to("pv-gone").obj(),
]
CLASSES = [
    make_storage_class("late").wait_for_first_consumer().obj(),
    make_storage_class("now").obj(),
    make_storage_class("no-mode").no_binding_mode().obj(),
]


def plugin() -> VolumeZone:
    informers = FakeInformers(
        persistentvolumes=PVS, persistentvolumeclaims=CLAIMS, storageclasses=CLASSES
    )
    return VolumeZone(StorageLister(informers))


def using(*claims: str) -> Obj:
    builder = make_pod("p")
    for index, claim in enumerate(claims):
        builder = builder.volume(f"v{index}", **claim_volume(claim))
    return builder.obj()


ZONE_A = {LABEL_ZONE: "a"}
ZONE_B = {LABEL_ZONE: "b"}


def run(claims: Sequence[str], labels: dict[str, str]) -> tuple[Status | None, Status | None]:
    zone = plugin()
    raw_node = make_node("n").obj()
    raw_node["metadata"]["labels"].update(labels)
    info = node_info(raw_node)
    incoming = pod(using(*claims))
    state = CycleState()
    _, pre_status = zone.pre_filter(state, incoming, [info])
    if status_code(pre_status) is not Code.SUCCESS:
        return pre_status, None
    return pre_status, zone.filter(state, incoming, info)


@pytest.mark.parametrize(
    ("claims", "labels", "code"),
    [
        pytest.param(["on-a"], ZONE_A, Code.SUCCESS, id="volume zone equals node zone"),
        pytest.param(["on-a"], ZONE_B, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, id="zone differs"),
        pytest.param(["on-ab"], ZONE_B, Code.SUCCESS, id="multi-zone volume includes node zone"),
        pytest.param(["on-a"], {}, Code.SUCCESS, id="node without topology labels passes"),
        pytest.param(
            ["on-a"],
            {"kubernetes.io/hostname": "n", LABEL_REGION: "r1"},
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            id="node has a region but no zone",
        ),
        pytest.param(["on-beta"], ZONE_B, Code.SUCCESS, id="beta volume label, GA node label"),
        pytest.param(
            ["on-beta"], ZONE_A, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, id="beta label zone differs"
        ),
        pytest.param(
            ["on-region"],
            {LABEL_ZONE: "a", LABEL_REGION: "r2"},
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            id="region differs",
        ),
        pytest.param(
            ["on-a", "on-ab"],
            ZONE_A,
            Code.SUCCESS,
            id="every volume allows the zone",
        ),
    ],
)
def test_filter(claims: list[str], labels: dict[str, str], code: Code) -> None:
    pre_status, status = run(claims, labels)
    assert status_code(pre_status) is Code.SUCCESS
    assert status_code(status) is code
    if code is not Code.SUCCESS:
        assert status is not None
        assert status.reasons == (REASON_CONFLICT,)


@pytest.mark.parametrize(
    ("claims", "code", "message"),
    [
        pytest.param(["plain"], Code.SKIP, "", id="volume without topology labels: skip"),
        pytest.param(["wffc"], Code.SKIP, "", id="unbound WaitForFirstConsumer claim: skip"),
        pytest.param([], Code.SKIP, "", id="no claims: skip"),
        pytest.param(
            ["gone"],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'persistentvolumeclaim "gone" not found',
            id="missing claim",
        ),
        pytest.param(
            ["lost-pv"],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'persistentvolume "pv-gone" not found',
            id="missing volume",
        ),
        pytest.param(
            ["immediate"],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "PersistentVolume had no name",
            id="unbound Immediate claim",
        ),
        pytest.param(
            ["classless"],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "PersistentVolumeClaim had no pv name and storageClass name",
            id="unbound claim without class",
        ),
        pytest.param(
            ["no-mode"],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            'VolumeBindingMode not set for StorageClass "no-mode"',
            id="class without binding mode",
        ),
    ],
)
def test_pre_filter(claims: list[str], code: Code, message: str) -> None:
    pre_status, _ = run(claims, ZONE_A)
    assert status_code(pre_status) is code
    if message:
        assert pre_status is not None
        assert pre_status.reasons == (message,)


def test_hint_volume_change_only_when_topology_changes() -> None:
    waiting = pod(using("on-a"))
    zone = plugin()
    old = make_pv("pv-a").label(LABEL_ZONE, "a").obj()
    relabeled = make_pv("pv-a").label(LABEL_ZONE, "b").obj()
    resized = make_pv("pv-a").label(LABEL_ZONE, "a").capacity("5Gi").obj()
    assert zone.is_schedulable_after_volume_change(waiting, old, relabeled) is QueueingHint.QUEUE
    assert zone.is_schedulable_after_volume_change(waiting, old, resized) is QueueingHint.QUEUE_SKIP
    assert zone.is_schedulable_after_volume_change(waiting, None, old) is QueueingHint.QUEUE


def test_hint_storage_class_added_only_for_wait_for_first_consumer() -> None:
    waiting = pod(using("wffc"))
    zone = plugin()
    late = make_storage_class("x").wait_for_first_consumer().obj()
    now = make_storage_class("y").obj()
    assert zone.is_schedulable_after_storage_class_added(waiting, None, late) is QueueingHint.QUEUE
    assert (
        zone.is_schedulable_after_storage_class_added(waiting, None, now) is QueueingHint.QUEUE_SKIP
    )


def test_hint_claim_change_for_the_pods_claims_only() -> None:
    waiting = pod(using("on-a"))
    zone = plugin()
    mine, other = make_pvc("on-a").obj(), make_pvc("x").obj()
    assert zone.is_schedulable_after_claim_change(waiting, None, mine) is QueueingHint.QUEUE
    assert zone.is_schedulable_after_claim_change(waiting, None, other) is QueueingHint.QUEUE_SKIP
