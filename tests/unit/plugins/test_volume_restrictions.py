"""VolumeRestrictions: disk conflicts per node, ReadWriteOncePod claims cluster-wide."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from plugins.volume_restrictions import (
    REASON_DISK_CONFLICT,
    REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
)
from scheduler.framework import Code, CycleState, NodeInfo, QueueingHint
from scheduler.framework.status import status_code
from scheduler.framework.volumes import StorageLister
from tests.support.builders import make_node, make_pod
from tests.support.storage import FakeInformers, claim_volume, make_pvc
from tests.unit.plugins.support import Obj, node_info, pod


class FakeSnapshot:
    def __init__(self, infos: Sequence[NodeInfo]) -> None:
        self._infos = list(infos)

    def node_infos(self) -> Sequence[NodeInfo]:
        return self._infos

    def get(self, node_name: str) -> NodeInfo | None:
        return next((i for i in self._infos if i.name == node_name), None)

    def have_pods_with_affinity(self) -> Sequence[NodeInfo]:
        return []


def plugin(infos: Sequence[NodeInfo] = (), pvcs: Sequence[Obj] = ()) -> VolumeRestrictions:
    lister = StorageLister(FakeInformers(persistentvolumeclaims=pvcs))
    snapshot = FakeSnapshot(infos)
    return VolumeRestrictions(lister, lambda: snapshot)


def gce(pd: str, *, read_only: bool = False) -> Obj:
    return {"gcePersistentDisk": {"pdName": pd, "readOnly": read_only}}


def ebs(volume_id: str, *, read_only: bool = False) -> Obj:
    return {"awsElasticBlockStore": {"volumeID": volume_id, "readOnly": read_only}}


def iscsi(iqn: str, *, read_only: bool = False) -> Obj:
    return {"iscsi": {"iqn": iqn, "targetPortal": "p", "lun": 0, "readOnly": read_only}}


def rbd(monitors: list[str], image: str, *, pool: str = "rbd", read_only: bool = False) -> Obj:
    return {"rbd": {"monitors": monitors, "pool": pool, "image": image, "readOnly": read_only}}


def with_volume(name: str, source: Obj, node: str = "") -> Obj:
    builder = make_pod(name).volume("v", **source)
    if node:
        builder = builder.node(node)
    return builder.obj()


@pytest.mark.parametrize(
    ("incoming", "existing", "code"),
    [
        pytest.param(gce("a"), gce("b"), Code.SUCCESS, id="different GCE disks"),
        pytest.param(gce("a"), gce("a"), Code.UNSCHEDULABLE, id="same GCE disk read-write"),
        pytest.param(
            gce("a", read_only=True), gce("a", read_only=True), Code.SUCCESS, id="GCE disk both RO"
        ),
        pytest.param(gce("a", read_only=True), gce("a"), Code.UNSCHEDULABLE, id="GCE one RW"),
        pytest.param(ebs("x"), ebs("y"), Code.SUCCESS, id="different EBS volumes"),
        pytest.param(
            ebs("x", read_only=True),
            ebs("x", read_only=True),
            Code.UNSCHEDULABLE,
            id="same EBS volume even read-only",
        ),
        pytest.param(iscsi("iqn1"), iscsi("iqn1"), Code.UNSCHEDULABLE, id="same iSCSI IQN RW"),
        pytest.param(
            iscsi("iqn1", read_only=True),
            iscsi("iqn1", read_only=True),
            Code.SUCCESS,
            id="same iSCSI IQN both RO",
        ),
        pytest.param(
            rbd(["m1", "m2"], "img"), rbd(["m2", "m3"], "img"), Code.UNSCHEDULABLE, id="RBD overlap"
        ),
        pytest.param(rbd(["m1"], "img"), rbd(["m2"], "img"), Code.SUCCESS, id="RBD no overlap"),
        pytest.param(
            rbd(["m1"], "img"),
            rbd(["m1"], "img", pool="other"),
            Code.SUCCESS,
            id="RBD pool differs",
        ),
        pytest.param(gce("a"), ebs("a"), Code.SUCCESS, id="different kinds never conflict"),
    ],
)
def test_filter_disk_conflicts(incoming: Obj, existing: Obj, code: Code) -> None:
    info = node_info(make_node("n").obj(), with_volume("old", existing, "n"))
    incoming_pod = pod(with_volume("new", incoming))
    restrictions = plugin([info])
    state = CycleState()
    _, pre_status = restrictions.pre_filter(state, incoming_pod, [info])
    assert status_code(pre_status) is Code.SUCCESS
    status = restrictions.filter(state, incoming_pod, info)
    assert status_code(status) is code
    if code is Code.UNSCHEDULABLE:
        assert status is not None
        assert status.reasons == (REASON_DISK_CONFLICT,)


def test_pre_filter_skips_pods_without_restricted_volumes() -> None:
    restrictions = plugin(pvcs=[make_pvc("c").obj()])
    raw = make_pod("p").volume("v", **claim_volume("c")).volume("cm", configMap={"name": "x"})
    _, status = restrictions.pre_filter(CycleState(), pod(raw.obj()), [])
    assert status_code(status) is Code.SKIP


def test_pre_filter_missing_claim_is_unresolvable_with_the_lister_message() -> None:
    restrictions = plugin()
    _, status = restrictions.pre_filter(
        CycleState(), pod(make_pod("p").volume("v", **claim_volume("gone")).obj()), []
    )
    assert status is not None
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ('persistentvolumeclaim "gone" not found',)


RWOP = make_pvc("solo").access_modes("ReadWriteOncePod").obj()


def user(name: str, claim: str, node: str = "") -> Obj:
    builder = make_pod(name).volume("v", **claim_volume(claim))
    if node:
        builder = builder.node(node)
    return builder.obj()


@pytest.mark.parametrize(
    ("placed", "code"),
    [
        pytest.param([], Code.SKIP, id="claim not in use: skipped"),
        pytest.param([user("other", "solo", "n2")], Code.UNSCHEDULABLE, id="in use on any node"),
        pytest.param(
            [user("other", "shared", "n2")], Code.SKIP, id="another claim in use: skipped"
        ),
    ],
)
def test_read_write_once_pod_conflicts(placed: list[Obj], code: Code) -> None:
    n1 = node_info(make_node("n1").obj())
    n2 = node_info(make_node("n2").obj(), *placed)
    restrictions = plugin([n1, n2], [RWOP, make_pvc("shared").obj()])
    incoming = pod(user("p", "solo"))
    state = CycleState()
    _, pre_status = restrictions.pre_filter(state, incoming, [n1, n2])
    if code is Code.SKIP:
        assert status_code(pre_status) is Code.SKIP
        return
    status = restrictions.filter(state, incoming, n1)
    assert status is not None
    assert status.code is code
    assert status.reasons == (REASON_READ_WRITE_ONCE_POD_CONFLICT,)


def test_remove_pod_of_the_claim_user_lifts_the_conflict() -> None:
    holder = user("other", "solo", "n1")
    n1 = node_info(make_node("n1").obj(), holder)
    restrictions = plugin([n1], [RWOP])
    incoming = pod(user("p", "solo"))
    state = CycleState()
    restrictions.pre_filter(state, incoming, [n1])
    assert status_code(restrictions.filter(state, incoming, n1)) is Code.UNSCHEDULABLE
    what_if = state.clone()
    restrictions.remove_pod(what_if, incoming, pod(holder), n1)
    assert status_code(restrictions.filter(what_if, incoming, n1)) is Code.SUCCESS
    assert status_code(restrictions.filter(state, incoming, n1)) is Code.UNSCHEDULABLE
    restrictions.add_pod(what_if, incoming, pod(holder), n1)
    assert status_code(restrictions.filter(what_if, incoming, n1)) is Code.UNSCHEDULABLE


@pytest.mark.parametrize(
    ("deleted", "hint"),
    [
        pytest.param(user("other", "solo", "n1"), QueueingHint.QUEUE, id="user of the same claim"),
        pytest.param(user("other", "else", "n1"), QueueingHint.QUEUE_SKIP, id="unrelated pod"),
        pytest.param(
            with_volume("d", gce("a"), "n1"), QueueingHint.QUEUE, id="holder of a conflicting disk"
        ),
    ],
)
def test_hint_pod_deleted(deleted: Obj, hint: QueueingHint) -> None:
    waiting = pod(make_pod("p").volume("v", **claim_volume("solo")).volume("d", **gce("a")).obj())
    assert plugin().is_schedulable_after_pod_deleted(waiting, pod(deleted), None) is hint


@pytest.mark.parametrize(
    ("claim", "hint"),
    [
        pytest.param(make_pvc("solo").obj(), QueueingHint.QUEUE, id="the pod's claim"),
        pytest.param(make_pvc("solo", "other").obj(), QueueingHint.QUEUE_SKIP, id="other ns"),
        pytest.param(make_pvc("x").obj(), QueueingHint.QUEUE_SKIP, id="another claim"),
    ],
)
def test_hint_claim_added(claim: Obj, hint: QueueingHint) -> None:
    waiting = pod(user("p", "solo"))
    assert plugin().is_schedulable_after_claim_added(waiting, None, claim) is hint
