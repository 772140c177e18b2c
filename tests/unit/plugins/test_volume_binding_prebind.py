"""VolumeBinding: Reserve/Unreserve assumptions and PreBind's writes and wait."""

from __future__ import annotations

import pytest

from plugins.volume_binding.args import VolumeBindingArgs
from plugins.volume_binding.plugin import VolumeBinding
from scheduler.config import ConfigError, parse_config
from scheduler.engine.assembly import build_registry, resolve
from scheduler.framework import Code, CycleState, Node, Pod
from scheduler.framework.status import status_code
from scheduler.framework.volumes import ANN_SELECTED_NODE
from tests.support.builders import make_node
from tests.support.clock import FakeClock
from tests.support.storage import FakeInformers, make_pv, make_pvc, make_storage_class
from tests.unit.plugins.support import Obj, node_info, pod
from tests.unit.plugins.volume_binding_support import (
    ZONE,
    FakeApi,
    FakeSleep,
    build,
    get,
    using,
)

NODE_A = make_node("node-a").label(ZONE, "a").obj()
NODE_B = make_node("node-b").label(ZONE, "b").obj()
PVCS = "persistentvolumeclaims"
PVS = "persistentvolumes"


def informers(*pods: Obj) -> FakeInformers:
    return FakeInformers(
        nodes=[NODE_A, NODE_B],
        pods=list(pods),
        storageclasses=[
            make_storage_class("late").wait_for_first_consumer().obj(),
            make_storage_class("static-only")
            .wait_for_first_consumer()
            .provisioner("kubernetes.io/no-provisioner")
            .obj(),
        ],
        persistentvolumes=[
            make_pv("local-a").storage_class("static-only").node_affinity(ZONE, "a").obj(),
            make_pv("local-a-big")
            .storage_class("static-only")
            .capacity("5Gi")
            .node_affinity(ZONE, "a")
            .obj(),
            make_pv("pv-bound").node_affinity(ZONE, "a").obj(),
        ],
        persistentvolumeclaims=[
            make_pvc("late").storage_class("late").obj(),
            make_pvc("local").storage_class("static-only").obj(),
            make_pvc("local-2").storage_class("static-only").obj(),
            make_pvc("bound").bound_to("pv-bound").obj(),
        ],
    )


def schedule(binding: VolumeBinding, incoming: Pod, node: Obj) -> CycleState:
    """PreFilter, Filter on ``node`` and Reserve it; asserts each succeeds."""
    state = CycleState()
    info = node_info(node)
    _, pre_status = binding.pre_filter(state, incoming, [info])
    assert pre_status is None
    assert binding.filter(state, incoming, info) is None
    assert binding.reserve(state, incoming, info.name) is None
    return state


def filter_status(binding: VolumeBinding, incoming: Pod, node: Obj) -> Code:
    state = CycleState()
    info = node_info(node)
    binding.pre_filter(state, incoming, [info])
    return status_code(binding.filter(state, incoming, info))


def provisioner_binds(stores: FakeInformers, claim: str, node: str, zone: str) -> None:
    """What an external provisioner and the PV controller would do."""
    current = get(stores, PVCS, f"default/{claim}")
    version = str(int(current["metadata"]["resourceVersion"]) + 1)
    stores.store(PVS).put(make_pv(f"pvc-{claim}").node_affinity(ZONE, zone).obj())
    stores.store(PVCS).put(
        make_pvc(claim)
        .storage_class("late")
        .selected_node(node)
        .bound_to(f"pvc-{claim}")
        .resource_version(version)
        .obj()
    )


def pv_controller_binds(stores: FakeInformers, claim: str, volume: str) -> None:
    current = get(stores, PVCS, f"default/{claim}")
    version = str(int(current["metadata"]["resourceVersion"]) + 1)
    stores.store(PVCS).put(
        make_pvc(claim)
        .storage_class("static-only")
        .bound_to(volume)
        .resource_version(version)
        .obj()
    )


async def test_provisioning_annotates_the_claim_then_waits_until_bound() -> None:
    raw = using("p", "late")
    stores = informers(raw)
    clock = FakeClock()
    sleep = FakeSleep(clock)
    binding, _, api = build(stores, clock=clock, sleep=sleep)
    incoming = pod(raw)
    state = schedule(binding, incoming, NODE_A)
    assert binding.pre_bind_pre_flight(state, incoming, "node-a") is None

    sleep.on_sleep.append(
        lambda: sleep.calls == 3 and provisioner_binds(stores, "late", "node-a", "a")
    )
    assert await binding.pre_bind(state, incoming, "node-a") is None

    assert [(method, path) for method, path, _ in api.requests] == [
        ("PUT", "/api/v1/namespaces/default/persistentvolumeclaims/late")
    ]
    written = api.requests[0][2]
    assert written["metadata"]["annotations"][ANN_SELECTED_NODE] == "node-a"
    assert written["metadata"]["resourceVersion"] == "1"  # the version decided on
    assert sleep.calls == 3


async def test_static_binding_sets_the_claim_ref_then_waits_until_bound() -> None:
    raw = using("p", "local")
    stores = informers(raw)
    sleep = FakeSleep(FakeClock())
    binding, _, api = build(stores, sleep=sleep)
    incoming = pod(raw)
    state = schedule(binding, incoming, NODE_A)

    sleep.on_sleep.append(lambda: pv_controller_binds(stores, "local", "local-a"))
    assert await binding.pre_bind(state, incoming, "node-a") is None

    assert [(method, path) for method, path, _ in api.requests] == [
        ("PUT", "/api/v1/persistentvolumes/local-a")
    ]
    claim_ref = get(stores, PVS, "local-a")["spec"]["claimRef"]
    assert (claim_ref["namespace"], claim_ref["name"], claim_ref["uid"]) == (
        "default",
        "local",
        "uid-default-local",
    )
    annotations = get(stores, PVS, "local-a")["metadata"]["annotations"]
    assert annotations["pv.kubernetes.io/bound-by-controller"] == "yes"


def test_reserve_makes_later_cycles_see_the_volume_taken() -> None:
    stores = informers()
    binding, binder, _ = build(stores)
    first, second = pod(using("p1", "local")), pod(using("p2", "local-2"))
    before = binder.find_pod_volumes(second, binder.pod_volume_claims(second), _node(NODE_A))[0]
    assert [b.pv["metadata"]["name"] for b in before.static_bindings] == ["local-a"]

    state = schedule(binding, first, NODE_A)
    after = binder.find_pod_volumes(second, binder.pod_volume_claims(second), _node(NODE_A))[0]
    assert [b.pv["metadata"]["name"] for b in after.static_bindings] == ["local-a-big"]

    binding.unreserve(state, first, "node-a")
    again = binder.find_pod_volumes(second, binder.pod_volume_claims(second), _node(NODE_A))[0]
    assert [b.pv["metadata"]["name"] for b in again.static_bindings] == ["local-a"]


def test_reserve_pins_a_provisioned_claim_to_the_node_until_unreserve() -> None:
    stores = informers()
    binding, _, _ = build(stores)
    first, sharer = pod(using("p1", "late")), pod(using("p2", "late"))
    assert filter_status(binding, sharer, NODE_B) is Code.SUCCESS

    state = schedule(binding, first, NODE_A)
    assert filter_status(binding, sharer, NODE_B) is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert filter_status(binding, sharer, NODE_A) is Code.SUCCESS
    assert "annotations" not in get(stores, PVCS, "default/late")["metadata"]  # not written

    binding.unreserve(state, first, "node-a")
    assert filter_status(binding, sharer, NODE_B) is Code.SUCCESS


def test_the_informer_catching_up_replaces_the_assumption() -> None:
    stores = informers()
    binding, _, _ = build(stores)
    first, sharer = pod(using("p1", "late")), pod(using("p2", "late"))
    schedule(binding, first, NODE_A)
    assert filter_status(binding, sharer, NODE_B) is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    # A newer version without the annotation (say the provisioner gave up).
    stores.store(PVCS).put(make_pvc("late").storage_class("late").resource_version("7").obj())
    assert filter_status(binding, sharer, NODE_B) is Code.SUCCESS


def test_all_bound_claims_skip_pre_bind() -> None:
    binding, _, _ = build(informers())
    incoming = pod(using("p", "bound"))
    state = schedule(binding, incoming, NODE_A)
    assert status_code(binding.pre_bind_pre_flight(state, incoming, "node-a")) is Code.SKIP


async def test_wait_gives_up_after_the_bind_timeout() -> None:
    raw = using("p", "late")
    clock = FakeClock()
    sleep = FakeSleep(clock)
    binding, _, _ = build(informers(raw), clock=clock, sleep=sleep, bind_timeout=30)
    incoming = pod(raw)
    state = schedule(binding, incoming, NODE_A)
    started = clock.now()
    status = await binding.pre_bind(state, incoming, "node-a")
    assert status is not None
    assert status.code is Code.ERROR
    assert status.message() == "binding volumes: context deadline exceeded"
    assert clock.now() - started == 30
    assert sleep.calls == 30


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(
            lambda stores: stores.store(PVCS).put(
                make_pvc("late").storage_class("late").resource_version("9").obj()
            ),
            'binding volumes: selectedNode annotation reset for PVC "late"',
            id="annotation removed",
        ),
        pytest.param(
            lambda stores: stores.store(PVCS).put(
                make_pvc("late")
                .storage_class("late")
                .selected_node("node-b")
                .resource_version("9")
                .obj()
            ),
            'binding volumes: provisioning failed for PVC "late"',
            id="another node selected",
        ),
        pytest.param(
            lambda stores: stores.store("pods").remove("default/p"),
            'binding volumes: pod does not exist any more: pods "p" not found',
            id="pod deleted",
        ),
    ],
)
async def test_wait_fails_when_binding_can_no_longer_happen(change: object, message: str) -> None:
    raw = using("p", "late")
    stores = informers(raw)
    sleep = FakeSleep(FakeClock())
    binding, _, _ = build(stores, sleep=sleep)
    incoming = pod(raw)
    state = schedule(binding, incoming, NODE_A)
    sleep.on_sleep.append(lambda: change(stores))  # type: ignore[operator]
    status = await binding.pre_bind(state, incoming, "node-a")
    assert status is not None
    assert status.code is Code.ERROR
    assert status.message() == message


async def test_failed_write_reverts_the_assumption() -> None:
    raw = using("p", "late")
    stores = informers(raw)
    api = FakeApi(stores)
    api.fail_on = "persistentvolumeclaims/late"
    binding, _, _ = build(stores, api=api)
    incoming, sharer = pod(raw), pod(using("p2", "late"))
    state = schedule(binding, incoming, NODE_A)
    assert filter_status(binding, sharer, NODE_B) is Code.UNSCHEDULABLE_AND_UNRESOLVABLE

    status = await binding.pre_bind(state, incoming, "node-a")
    assert status is not None
    assert status.code is Code.ERROR
    assert "409 Conflict" in status.message()
    assert filter_status(binding, sharer, NODE_B) is Code.SUCCESS


def test_args_defaults_and_validation() -> None:
    assert VolumeBindingArgs().bind_timeout_seconds == 600
    assert VolumeBindingArgs.model_validate({"bindTimeoutSeconds": 5}).bind_timeout_seconds == 5
    with pytest.raises(ValueError, match="should not be a negative value"):
        VolumeBindingArgs.model_validate({"bindTimeoutSeconds": -1})
    with pytest.raises(ValueError, match="StorageCapacityScoring"):
        VolumeBindingArgs.model_validate({"shape": [{"utilization": 0, "score": 10}]})
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        VolumeBindingArgs.model_validate({"unknown": 1})


def _node(raw: Obj) -> Node:
    info = node_info(raw)
    assert info.node is not None
    return info.node


CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: s
  pluginConfig:
  - name: VolumeBinding
    args: {bindTimeoutSeconds: %s}
"""


def test_bind_timeout_from_the_configuration_file() -> None:
    (profile,) = resolve(parse_config(CONFIG % 30), build_registry())
    assert profile.plugin_args["VolumeBinding"] == VolumeBindingArgs(bind_timeout_seconds=30)
    with pytest.raises(ConfigError) as raised:
        resolve(parse_config(CONFIG % -1), build_registry())
    assert str(raised.value) == (
        "profiles[0].pluginConfig[VolumeBinding].args.bindTimeoutSeconds: "
        "invalid BindTimeoutSeconds, should not be a negative value"
    )
