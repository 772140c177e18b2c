"""NodeVolumeLimits: unique CSI volumes per driver against CSINode allocatable counts."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from plugins.node_volume_limits import REASON_MAX_VOLUME_COUNT_EXCEEDED, NodeVolumeLimits
from scheduler.framework import Code, CycleState, QueueingHint, Status
from scheduler.framework.status import status_code
from scheduler.framework.volumes import StorageLister
from tests.support.builders import make_node, make_pod
from tests.support.storage import (
    FakeInformers,
    claim_volume,
    make_csi_node,
    make_pv,
    make_pvc,
    make_storage_class,
)
from tests.unit.plugins.support import Obj, node_info, pod

DRIVER = "ebs.csi.aws.com"
OTHER = "other.csi.example.com"

PVS = [make_pv(f"pv-{i}").csi(DRIVER, f"vol-{i}").obj() for i in range(4)] + [
    make_pv("pv-other").csi(OTHER, "o-1").obj(),
    make_pv("pv-intree").obj(),
]
CLAIMS = [make_pvc(f"c{i}").bound_to(f"pv-{i}").obj() for i in range(4)] + [
    make_pvc("c-other").bound_to("pv-other").obj(),
    make_pvc("c-intree").bound_to("pv-intree").obj(),
    make_pvc("unbound-1").storage_class("csi").obj(),
    make_pvc("unbound-2").storage_class("csi").obj(),
    make_pvc("migrated").storage_class("intree").obj(),
]
CLASSES = [
    make_storage_class("csi").provisioner(DRIVER).obj(),
    make_storage_class("intree").provisioner("kubernetes.io/aws-ebs").obj(),
]


def using(name: str, *claims: str, node: str = "") -> Obj:
    builder = make_pod(name)
    for index, claim in enumerate(claims):
        builder = builder.volume(f"v{index}", **claim_volume(claim))
    if node:
        builder = builder.node(node)
    return builder.obj()


def run(
    incoming: Sequence[str],
    placed: Sequence[Sequence[str]] = (),
    limit: int | None = 2,
    attachments: Sequence[Obj] = (),
) -> Status | None:
    csi_nodes = [make_csi_node("n").driver(DRIVER, limit).obj()] if limit is not None else []
    informers = FakeInformers(
        persistentvolumes=PVS,
        persistentvolumeclaims=CLAIMS,
        storageclasses=CLASSES,
        csinodes=csi_nodes,
        volumeattachments=attachments,
    )
    limits = NodeVolumeLimits(StorageLister(informers), "prefix")
    info = node_info(
        make_node("n").obj(),
        *(using(f"old{i}", *claims, node="n") for i, claims in enumerate(placed)),
    )
    new_pod = pod(using("p", *incoming))
    state = CycleState()
    _, pre_status = limits.pre_filter(state, new_pod, [info])
    if pre_status is not None:
        return pre_status
    return limits.filter(state, new_pod, info)


def attachment(pv: str, node: str = "n", attacher: str = DRIVER) -> Obj:
    return {
        "metadata": {"name": f"va-{pv}"},
        "spec": {"attacher": attacher, "nodeName": node, "source": {"persistentVolumeName": pv}},
    }


@pytest.mark.parametrize(
    ("incoming", "placed", "limit", "attachments", "code"),
    [
        pytest.param(["c0", "c1"], [], 2, [], Code.SUCCESS, id="exactly at the limit"),
        pytest.param(["c0"], [["c1"], ["c2"]], 2, [], Code.UNSCHEDULABLE, id="one over the limit"),
        pytest.param(
            ["c0"], [["c0"], ["c1"]], 2, [], Code.SUCCESS, id="a volume already attached is free"
        ),
        pytest.param(
            ["c0"], [["c1", "c-other"]], 1, [], Code.UNSCHEDULABLE, id="per driver: own driver full"
        ),
        pytest.param(
            ["c-other"], [["c1"]], 1, [], Code.SUCCESS, id="per driver: a driver without limit"
        ),
        pytest.param(["c0", "c1", "c2"], [], None, [], Code.SUCCESS, id="no CSINode: no limits"),
        pytest.param(
            ["unbound-1", "unbound-2"],
            [["c0"]],
            2,
            [],
            Code.UNSCHEDULABLE,
            id="unbound claims count under the class provisioner",
        ),
        pytest.param(
            ["migrated"],
            [["c0"], ["c1"]],
            2,
            [],
            Code.UNSCHEDULABLE,
            id="in-tree provisioner counts under its CSI driver",
        ),
        pytest.param(
            ["c-intree"], [["c0"], ["c1"]], 2, [], Code.SUCCESS, id="in-tree PV: no count"
        ),
        pytest.param(
            ["c0"],
            [["c1"]],
            2,
            [attachment("pv-2")],
            Code.UNSCHEDULABLE,
            id="a VolumeAttachment to the node counts",
        ),
        pytest.param(
            ["c0"],
            [["c1"]],
            2,
            [attachment("pv-1")],
            Code.SUCCESS,
            id="an attachment of a volume in use counts once",
        ),
        pytest.param(
            ["c0"],
            [["c1"]],
            2,
            [attachment("pv-2", node="elsewhere")],
            Code.SUCCESS,
            id="attachments to other nodes do not count",
        ),
    ],
)
def test_filter(
    incoming: list[str],
    placed: list[list[str]],
    limit: int | None,
    attachments: list[Obj],
    code: Code,
) -> None:
    status = run(incoming, placed, limit, attachments)
    assert status_code(status) is code
    if code is Code.UNSCHEDULABLE:
        assert status is not None
        assert status.reasons == (REASON_MAX_VOLUME_COUNT_EXCEEDED,)


def test_pre_filter_skips_pods_without_claims() -> None:
    assert status_code(run([])) is Code.SKIP


def test_missing_claim_of_the_pod_is_unresolvable() -> None:
    status = run(["gone"])
    assert status is not None
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (
        'looking up PVC default/gone: persistentvolumeclaim "gone" not found',
    )


def test_missing_claim_of_a_placed_pod_is_ignored() -> None:
    assert status_code(run(["c0"], [["gone"], ["c1"]], limit=2)) is Code.SUCCESS


def test_hint_csi_node_update_only_when_a_limit_grows() -> None:
    limits = NodeVolumeLimits(StorageLister(FakeInformers()), "prefix")
    waiting = pod(using("p", "c0"))
    small = make_csi_node("n").driver(DRIVER, 2).obj()
    large = make_csi_node("n").driver(DRIVER, 3).obj()
    assert limits.is_schedulable_after_csi_node_updated(waiting, small, large) is QueueingHint.QUEUE
    assert (
        limits.is_schedulable_after_csi_node_updated(waiting, large, small)
        is QueueingHint.QUEUE_SKIP
    )


@pytest.mark.parametrize(
    ("deleted", "hint"),
    [
        pytest.param(using("d", "c1", node="n"), QueueingHint.QUEUE, id="placed pod with a claim"),
        pytest.param(using("d", "c1"), QueueingHint.QUEUE_SKIP, id="unplaced pod"),
        pytest.param(using("d", node="n"), QueueingHint.QUEUE_SKIP, id="pod without volumes"),
    ],
)
def test_hint_pod_deleted(deleted: Obj, hint: QueueingHint) -> None:
    limits = NodeVolumeLimits(StorageLister(FakeInformers()), "prefix")
    waiting = pod(using("p", "c0"))
    assert limits.is_schedulable_after_pod_deleted(waiting, pod(deleted), None) is hint
