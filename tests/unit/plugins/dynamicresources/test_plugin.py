"""DynamicResources extension points (reference §7.6-7.7), over a fake Handle.

Fixtures as upstream's plugin tests: pod default/my-pod (uid 1234) using
claim my-pod-my-resource; class my-resource-class; node worker with one
slice {driver some-driver, pool worker, device instance-1}.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from plugins.dynamicresources.claims import FINALIZER
from plugins.dynamicresources.cycledata import STATE_KEY
from plugins.dynamicresources.hints import CLAIM_NAMES
from plugins.dynamicresources.plugin import DynamicResources
from scheduler.framework import (
    ActionType,
    Code,
    CycleState,
    EventResource,
    NodeScore,
    NodeToStatus,
    QueueingHint,
    Status,
)
from tests.support.builders import make_node, make_pod
from tests.support.drabuilders import (
    make_claim,
    make_class,
    make_slice,
    pod_claim_status,
    pod_uses_claim,
)
from tests.support.wait import eventually
from tests.unit.plugins.dynamicresources.fakes import FakeHandle, make_plugin
from tests.unit.plugins.support import node_info, pod

CLAIM = "my-pod-my-resource"
CLASS = "my-resource-class"
DRIVER = "some-driver"
POD_UID = "1234"


def claim_obj(name: str = CLAIM, **options: Any) -> dict[str, Any]:
    return (
        make_claim(name)
        .uid(f"uid-{name}")
        .resource_version("1")
        .request("req-1", CLASS, **options)
        .obj()
    )


def the_pod(name: str = "my-pod", uid: str = POD_UID, claim: str = CLAIM) -> Any:
    return pod(pod_uses_claim(make_pod(name).uid(uid).obj(), "my-resource", claim))


def worker_slice(*devices: str, node: str = "worker") -> dict[str, Any]:
    return make_slice(f"{node}-slice").driver(DRIVER).pool(node).node(node).device(*devices).obj()


def setup(
    *,
    claims: tuple[dict[str, Any], ...] = (),
    slices: tuple[dict[str, Any], ...] = (),
    classes: tuple[dict[str, Any], ...] | None = None,
) -> tuple[DynamicResources, FakeHandle]:
    plugin, handle = make_plugin()
    for device_class in classes if classes is not None else (make_class(CLASS).obj(),):
        handle.informers.put("deviceclasses", device_class)
    for slice_ in slices:
        handle.informers.put("resourceslices", slice_)
    for claim in claims:
        handle.informers.put("resourceclaims", claim)
    return plugin, handle


WORKER = node_info(make_node("worker").obj())
OTHER = node_info(make_node("other").obj())


def cycle(
    plugin: DynamicResources, target: Any, *nodes: Any
) -> tuple[CycleState, list[Status | None]]:
    state = CycleState()
    _, status = plugin.pre_filter(state, target, list(nodes))
    assert status is None, status
    return state, [plugin.filter(state, target, n) for n in nodes]


# ------------------------------------------------------------- PreEnqueue
def test_only_pods_without_claims_are_signed() -> None:
    """Upstream SignPod: a pod with claims is never signed (its verdicts read
    claims and slices); one without is, with nothing of it to sign."""
    plugin, _ = setup()
    assert plugin.sign_pod(pod(make_pod("plain").obj())) == ()
    assert plugin.sign_pod(the_pod()) is None


def test_pod_without_claims_is_skipped_everywhere() -> None:
    plugin, _ = setup()
    plain = pod(make_pod("plain").obj())
    state = CycleState()
    assert plugin.pre_enqueue(plain) is None
    assert plugin.pre_filter(state, plain, [WORKER])[1] == Status.skip()
    assert plugin.pre_bind_pre_flight(state, plain, "worker") == Status.skip()
    _, status = plugin.post_filter(state, plain, NodeToStatus())
    assert status == Status.unschedulable("no new claims to deallocate")


@pytest.mark.parametrize(
    ("target", "claims", "message"),
    [
        pytest.param(
            pod(make_pod("my-pod").uid(POD_UID).claim_template("my-resource", "tmpl").obj()),
            (),
            'pod "default/my-pod": ResourceClaim not created yet',
            id="missing-claim",
        ),
        pytest.param(
            the_pod(),
            (make_claim(CLAIM).deleting().obj(),),
            f'resourceclaim "{CLAIM}" is being deleted',
            id="deleted-claim",
        ),
        pytest.param(
            pod(
                pod_claim_status(
                    make_pod("my-pod").uid(POD_UID).claim_template("my-resource", "tmpl").obj(),
                    "my-resource",
                    CLAIM,
                )
            ),
            (make_claim(CLAIM).owner("my-pod", "other-uid").obj(),),
            f"ResourceClaim default/{CLAIM} was not created for Pod default/my-pod "
            "(Pod is not owner)",
            id="wrong-claim",
        ),
        pytest.param(
            the_pod(),
            (),
            f'resourceclaim.resource.k8s.io "{CLAIM}" not found',
            id="claim-not-found",
        ),
    ],
)
def test_pre_enqueue_gates(target: Any, claims: tuple[dict[str, Any], ...], message: str) -> None:
    plugin, _ = setup(claims=claims)
    assert plugin.pre_enqueue(target) == Status.unresolvable(message)


def test_template_claim_owned_by_the_pod_passes() -> None:
    target = pod(
        pod_claim_status(
            make_pod("my-pod").uid(POD_UID).claim_template("my-resource", "tmpl").obj(),
            "my-resource",
            CLAIM,
        )
    )
    plugin, _ = setup(claims=(make_claim(CLAIM).owner("my-pod", POD_UID).obj(),))
    assert plugin.pre_enqueue(target) is None


def test_template_claim_intentionally_not_created_is_skipped() -> None:
    target = pod(
        pod_claim_status(
            make_pod("my-pod").uid(POD_UID).claim_template("my-resource", "tmpl").obj(),
            "my-resource",
            None,
        )
    )
    plugin, _ = setup()
    assert plugin.pre_enqueue(target) is None
    assert plugin.pre_filter(CycleState(), target, [WORKER])[1] == Status.skip()


# -------------------------------------------------------------- PreFilter
def test_missing_class() -> None:
    plugin, _ = setup(claims=(claim_obj(),), classes=())
    _, status = plugin.pre_filter(CycleState(), the_pod(), [WORKER])
    assert status == Status.unresolvable(f"request req-1: device class {CLASS} does not exist")


@pytest.mark.parametrize(
    "classes",
    [
        pytest.param((), id="missing class"),
        pytest.param(None, id="claim being allocated for another pod"),
    ],
)
def test_post_filter_after_a_pre_filter_rejection_has_no_claims(
    classes: tuple[dict[str, Any], ...] | None,
) -> None:
    """Upstream stores the claims in the cycle state only when PreFilter
    succeeds, so PostFilter after a rejection says "no new claims to
    deallocate" (test_differential_dra caught "still not schedulable")."""
    plugin, _ = setup(claims=(claim_obj(),), classes=classes, slices=(worker_slice("x"),))
    if classes is None:
        plugin.tracker.signal_in_flight(f"uid-{CLAIM}", claim_obj())
    state = CycleState()
    _, status = plugin.pre_filter(state, the_pod(), [WORKER])
    assert status is not None
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    _, post = plugin.post_filter(state, the_pod(), NodeToStatus())
    assert post == Status.unschedulable("no new claims to deallocate")


def test_unknown_class_in_subrequest() -> None:
    claim = (
        make_claim(CLAIM)
        .first_available("req-1", {"name": "subreq-1", "deviceClassName": "does-not-exist"})
        .obj()
    )
    plugin, _ = setup(claims=(claim,))
    _, status = plugin.pre_filter(CycleState(), the_pod(), [WORKER])
    assert status == Status.unresolvable(
        "request req-1/subreq-1: device class does-not-exist does not exist"
    )


# ----------------------------------------------------------------- Filter
def test_no_resources() -> None:
    plugin, _ = setup(claims=(claim_obj(),))
    state, statuses = cycle(plugin, the_pod(), WORKER)
    assert statuses == [Status.unresolvable("cannot allocate all claims")]
    _, post = plugin.post_filter(state, the_pod(), NodeToStatus())
    assert post == Status.unschedulable("still not schedulable")


def test_with_resources_only_on_the_worker() -> None:
    plugin, _ = setup(claims=(claim_obj(),), slices=(worker_slice("instance-1"),))
    state, statuses = cycle(plugin, the_pod(), WORKER, OTHER)
    assert statuses == [None, Status.unresolvable("cannot allocate all claims")]
    allocation = state.read(STATE_KEY).node_allocations["worker"][0]
    assert allocation["devices"]["results"] == [
        {"request": "req-1", "driver": DRIVER, "pool": "worker", "device": "instance-1"}
    ]


def test_exhausted_resources() -> None:
    other = (
        make_claim("other")
        .request("req-1", CLASS)
        .allocation(
            {
                "devices": {
                    "results": [
                        {
                            "request": "req-1",
                            "driver": DRIVER,
                            "pool": "worker",
                            "device": "instance-1",
                        }
                    ]
                }
            }
        )
        .obj()
    )
    plugin, _ = setup(claims=(claim_obj(), other), slices=(worker_slice("instance-1"),))
    _, statuses = cycle(plugin, the_pod(), WORKER)
    assert statuses == [Status.unresolvable("cannot allocate all claims")]


def test_admin_access_allocation_does_not_block() -> None:
    other = (
        make_claim("other")
        .request("req-1", CLASS, admin=True)
        .allocation(
            {
                "devices": {
                    "results": [
                        {
                            "request": "req-1",
                            "driver": DRIVER,
                            "pool": "worker",
                            "device": "instance-1",
                            "adminAccess": True,
                        }
                    ]
                }
            }
        )
        .obj()
    )
    plugin, _ = setup(claims=(claim_obj(), other), slices=(worker_slice("instance-1"),))
    _, statuses = cycle(plugin, the_pod(), WORKER)
    assert statuses == [None]


def test_tainted_device() -> None:
    tainted = make_slice("worker-slice").driver(DRIVER).pool("worker").node("worker").obj()
    tainted["spec"]["devices"] = [
        {"name": "instance-1", "taints": [{"key": "k", "effect": "NoSchedule"}]}
    ]
    plugin, _ = setup(claims=(claim_obj(),), slices=(tainted,))
    _, statuses = cycle(plugin, the_pod(), WORKER)
    assert statuses == [Status.unresolvable("cannot allocate all claims")]


def test_cel_runtime_error_names_claim_request_and_expression() -> None:
    claim = claim_obj(selectors=(f'device.attributes["{DRIVER}"].healthy',))
    plugin, _ = setup(claims=(claim,), slices=(worker_slice("instance-1"),))
    _, statuses = cycle(plugin, the_pod(), WORKER)
    status = statuses[0]
    assert status is not None
    assert status.code is Code.ERROR
    assert status.message() == (
        f"claim default/{CLAIM}, request req-1: selector #0: CEL runtime error: "
        f'no such key: healthy (expression: device.attributes["{DRIVER}"].healthy)'
    )


def test_a_guarded_selector_skips_a_device_without_the_domain() -> None:
    """Upstream: ``"d" in device.attributes`` is false for a missing domain,
    so the guard makes the device unsuitable instead of failing the pod."""
    guarded = f'"{DRIVER}" in device.attributes && device.attributes["{DRIVER}"].healthy'
    claim = claim_obj(selectors=(guarded,))
    plugin, _ = setup(claims=(claim,), slices=(worker_slice("instance-1"),))
    _, statuses = cycle(plugin, the_pod(), WORKER)
    assert statuses == [Status.unresolvable("cannot allocate all claims")]


def test_cel_error_in_class_selector() -> None:
    plugin, _ = setup(
        claims=(claim_obj(),),
        slices=(worker_slice("instance-1"),),
        classes=(make_class(CLASS).selector("device.attributes[").obj(),),
    )
    _, statuses = cycle(plugin, the_pod(), WORKER)
    status = statuses[0]
    assert status is not None
    assert status.code is Code.ERROR
    assert status.message().startswith(
        f"claim default/{CLAIM}, request req-1: class {CLASS}: selector #0: CEL compile error"
    )


def allocated_claim(node: str, *reserved: tuple[str, str]) -> dict[str, Any]:
    builder = (
        make_claim(CLAIM)
        .uid(f"uid-{CLAIM}")
        .resource_version("5")
        .request("req-1", CLASS)
        .finalizer(FINALIZER)
        .allocation(
            {
                "devices": {
                    "results": [
                        {"request": "req-1", "driver": DRIVER, "pool": node, "device": "instance-1"}
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                },
            }
        )
    )
    for name, uid in reserved:
        builder = builder.reserved_for(name, uid)
    return builder.obj()


CLAIM_PATH = f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{CLAIM}"
DEALLOCATING = Status.unschedulable("deallocation of ResourceClaim started")


@pytest.mark.parametrize(
    ("conflicts", "failures", "meanwhile", "calls", "deallocated", "told"),
    [
        pytest.param(0, 0, (), ["PUT"], True, False, id="written at once"),
        pytest.param(
            1,
            0,
            (),
            ["PUT", "GET", "PUT"],
            True,
            False,
            id="a conflict re-reads the claim and writes again",
        ),
        pytest.param(
            5,
            0,
            (),
            ["PUT", "GET"] * 4 + ["PUT"],
            False,
            True,
            id="conflicting to the end tells the pod and retries it after the backoff",
        ),
        pytest.param(
            0,
            1,
            (),
            ["PUT"],
            False,
            True,
            id="an API error tells the pod and retries it after the backoff",
        ),
        pytest.param(
            1,
            0,
            (("other-pod", "other-uid"),),
            ["PUT", "GET"],
            False,
            False,
            id="a claim reserved for another pod meanwhile is left alone",
        ),
    ],
)
async def test_wrong_topology_deallocates_in_post_filter(
    *,
    conflicts: int,
    failures: int,
    meanwhile: tuple[tuple[str, str], ...],
    calls: list[str],
    deallocated: bool,
    told: bool,
) -> None:
    """PostFilter never says the deallocation completed: it starts it; a
    conflict is retried, a failure is a Warning event and an early retry."""
    plugin, handle = setup(claims=(allocated_claim("other"),), slices=(worker_slice("instance-1"),))
    handle.api.objects[CLAIM_PATH] = allocated_claim("other", *meanwhile)
    handle.api.conflicts, handle.api.failures = conflicts, failures
    state, statuses = cycle(plugin, the_pod(), WORKER)
    assert statuses == [Status.unresolvable("resourceclaim not available on the node")]
    _, post = plugin.post_filter(state, the_pod(), NodeToStatus())
    assert post == DEALLOCATING
    await plugin.writes.drain()
    assert [method for method, _ in handle.api.calls] == calls
    assert ("allocation" not in handle.api.objects[CLAIM_PATH]["status"]) is deallocated
    events = [reason for _, reason, _ in handle.events.recorded]
    assert events == (["ResourceClaimDeallocationFailed"] if told else [])
    assert handle.activated == (["default/my-pod"] if told else [])
    assert handle.clock.sleeps == ([1.0] if told else [])


async def test_post_filter_writes_one_deallocation_at_a_time() -> None:
    plugin, handle = setup(claims=(allocated_claim("other"),), slices=(worker_slice("instance-1"),))
    handle.api.gate = asyncio.Event()
    for _ in range(2):
        state, _ = cycle(plugin, the_pod(), WORKER)
        assert plugin.post_filter(state, the_pod(), NodeToStatus())[1] == DEALLOCATING
        await asyncio.sleep(0)
    assert plugin.writes.busy(f"default/{CLAIM}")
    handle.api.gate.set()
    await plugin.writes.drain()
    assert [method for method, _ in handle.api.calls] == ["PUT"]
    assert not plugin.writes.busy(f"default/{CLAIM}")


async def test_good_topology_only_adds_reserved_for() -> None:
    plugin, handle = setup(
        claims=(allocated_claim("worker"),), slices=(worker_slice("instance-1"),)
    )
    state, statuses = cycle(plugin, the_pod(), WORKER)
    assert statuses == [None]
    assert plugin.reserve(state, the_pod(), "worker") is None
    assert await plugin.pre_bind(state, the_pod(), "worker") is None
    assert [method for method, _ in handle.api.calls] == ["PUT"]  # status only
    written = plugin.tracker.get("default", CLAIM)
    assert written is not None
    assert written["status"]["reservedFor"] == [
        {"resource": "pods", "name": "my-pod", "uid": POD_UID}
    ]


async def test_reserved_okay_makes_no_api_calls() -> None:
    plugin, handle = setup(
        claims=(allocated_claim("worker", ("my-pod", POD_UID)),),
        slices=(worker_slice("instance-1"),),
    )
    state, statuses = cycle(plugin, the_pod(), WORKER)
    assert statuses == [None]
    assert plugin.reserve(state, the_pod(), "worker") is None
    assert await plugin.pre_bind(state, the_pod(), "worker") is None
    assert handle.api.calls == []


# -------------------------------------------------- Reserve / PreBind / ...
async def test_with_resources_reserve_and_pre_bind() -> None:
    plugin, handle = setup(claims=(claim_obj(),), slices=(worker_slice("instance-1"),))
    target = the_pod()
    state, _ = cycle(plugin, target, WORKER)
    assert plugin.tracker.allocated_state().devices == frozenset()
    assert plugin.reserve(state, target, "worker") is None
    in_flight = plugin.tracker.in_flight(f"uid-{CLAIM}")
    assert in_flight is not None
    assert FINALIZER in in_flight["metadata"]["finalizers"]
    assert plugin.tracker.allocated_state().devices == {(DRIVER, "worker", "instance-1")}

    assert await plugin.pre_bind(state, target, "worker") is None
    assert [method for method, _ in handle.api.calls] == ["PUT", "PUT"]  # finalizer, then status
    written = plugin.tracker.get("default", CLAIM)
    assert written is not None
    assert written["metadata"]["finalizers"] == [FINALIZER]
    assert written["status"]["allocation"]["devices"]["results"][0]["device"] == "instance-1"
    assert written["status"]["reservedFor"] == [
        {"resource": "pods", "name": "my-pod", "uid": POD_UID}
    ]
    assert plugin.tracker.in_flight(f"uid-{CLAIM}") is None
    assert plugin.tracker.allocated_state().devices == {(DRIVER, "worker", "instance-1")}


async def test_pre_bind_retries_conflicts() -> None:
    plugin, handle = setup(claims=(claim_obj(),), slices=(worker_slice("instance-1"),))
    handle.api.objects[f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{CLAIM}"] = (
        claim_obj()
    )
    target = the_pod()
    state, _ = cycle(plugin, target, WORKER)
    plugin.reserve(state, target, "worker")
    handle.api.conflicts = 1
    assert await plugin.pre_bind(state, target, "worker") is None
    assert [m for m, _ in handle.api.calls] == ["PUT", "GET", "PUT", "PUT"]


def test_skip_bind_unreserve_drops_in_flight() -> None:
    plugin, handle = setup(claims=(claim_obj(),), slices=(worker_slice("instance-1"),))
    target = the_pod()
    state, _ = cycle(plugin, target, WORKER)
    plugin.reserve(state, target, "worker")
    assert plugin.tracker.in_flight(f"uid-{CLAIM}") is not None
    plugin.unreserve(state, target, "worker")
    assert plugin.tracker.in_flight(f"uid-{CLAIM}") is None
    assert plugin.tracker.allocated_state().devices == frozenset()
    assert handle.api.calls == []


def test_in_flight_claim_blocks_another_pod() -> None:
    plugin, _ = setup(claims=(claim_obj(),), slices=(worker_slice("instance-1"),))
    first = the_pod()
    state, _ = cycle(plugin, first, WORKER)
    plugin.reserve(state, first, "worker")
    second = the_pod("second", "5678")
    _, status = plugin.pre_filter(CycleState(), second, [WORKER])
    assert status == Status.unresolvable(
        f"resource claim default/{CLAIM} is in the process of being allocated"
    )


async def test_no_device_given_twice_across_informer_timing() -> None:
    """#136269: the device stays in use through Reserve, PreBind, the written
    claim's assumption and the informer's late delivery of it."""
    slices = (worker_slice("instance-1"),)
    plugin, handle = setup(claims=(claim_obj("a"), claim_obj("b")), slices=slices)
    pod_a, pod_b = the_pod("pod-a", "ua", "a"), the_pod("pod-b", "ub", "b")
    state, _ = cycle(plugin, pod_a, WORKER)
    plugin.reserve(state, pod_a, "worker")

    def b_fits() -> bool:
        _, statuses = cycle(plugin, pod_b, WORKER)
        return statuses == [None]

    assert not b_fits()  # in flight
    assert await plugin.pre_bind(state, pod_a, "worker") is None
    assert not b_fits()  # assumed, informer not caught up
    written = handle.api.objects["/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/a"]
    handle.informers.put("resourceclaims", written)
    assert not b_fits()  # informer caught up
    deallocated = dict(written, status={})
    deallocated["metadata"] = dict(written["metadata"], resourceVersion="999")
    handle.informers.put("resourceclaims", deallocated)
    assert b_fits()  # freed


# ------------------------------------------------------------------ Score
def test_score_prefers_higher_priority_subrequest() -> None:
    claim = (
        make_claim(CLAIM)
        .first_available(
            "req-1",
            {"name": "subreq-0", "deviceClassName": "gold"},
            {"name": "subreq-1", "deviceClassName": CLASS},
        )
        .obj()
    )
    gold = make_class("gold").selector('device.attributes["some-driver"].gold').obj()
    gold_slice = make_slice("b-slice").driver(DRIVER).pool("b").node("other").obj()
    gold_slice["spec"]["devices"] = [{"name": "g", "attributes": {"gold": {"bool": True}}}]
    plain_slice = make_slice("a-slice").driver(DRIVER).pool("a").node("worker").obj()
    plain_slice["spec"]["devices"] = [{"name": "p", "attributes": {"gold": {"bool": False}}}]
    plugin, _ = setup(
        claims=(claim,), slices=(gold_slice, plain_slice), classes=(make_class(CLASS).obj(), gold)
    )
    state, statuses = cycle(plugin, the_pod(), WORKER, OTHER)
    assert statuses == [None, None]
    raw = [plugin.score(state, the_pod(), n)[0] for n in (WORKER, OTHER)]
    assert raw == [7, 8]
    scores = [NodeScore("worker", 7), NodeScore("other", 8)]
    plugin.normalize_score(state, the_pod(), scores)
    assert [s.score for s in scores] == [87, 100]


# ---------------------------------------------------------- queueing hints
@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(None, claim_obj(), QueueingHint.QUEUE, id="claim add for the pod"),
        pytest.param(
            make_claim("unrelated").obj(),
            make_claim("unrelated").finalizer("x").obj(),
            QueueingHint.QUEUE_SKIP,
            id="unrelated claim update",
        ),
        pytest.param(
            allocated_claim("worker")
            | {"metadata": {"name": "x", "namespace": "default", "uid": "x"}},
            make_claim("x").uid("x").obj(),
            QueueingHint.QUEUE,
            id="any claim deallocated",
        ),
        pytest.param(
            claim_obj(),
            make_claim(CLAIM).uid(f"uid-{CLAIM}").request("req-1", CLASS).finalizer("f").obj(),
            QueueingHint.QUEUE_SKIP,
            id="finalizer only",
        ),
        pytest.param(
            claim_obj(),
            allocated_claim("worker"),
            QueueingHint.QUEUE,
            id="status of the pod's claim",
        ),
    ],
)
def test_claim_hint(old: Any, new: Any, expected: QueueingHint) -> None:
    plugin, handle = setup(claims=(claim_obj(),))
    if new is not None:
        handle.informers.put("resourceclaims", new)
    assert plugin.is_schedulable_after_claim_change(the_pod(), old, new) is expected
    # the queue's index asks the pod only when the keys meet (CLAIM_NAMES' promise)
    keys = CLAIM_NAMES.event_keys(old, new)
    asked = keys is None or bool(set(keys) & set(CLAIM_NAMES.pod_keys(the_pod())))
    assert asked or expected is QueueingHint.QUEUE_SKIP


def test_the_claim_registration_carries_the_claim_names_interest() -> None:
    plugin, _ = setup()
    registered = [
        r for r in plugin.events_to_register() if r.event.resource is EventResource.RESOURCE_CLAIM
    ]
    assert [r.interest for r in registered] == [CLAIM_NAMES]


def test_claim_hint_skips_pod_still_missing_its_claim() -> None:
    plugin, _ = setup()
    waiting = pod(make_pod("my-pod").uid(POD_UID).claim_template("my-resource", "tmpl").obj())
    assert (
        plugin.is_schedulable_after_claim_change(waiting, None, claim_obj())
        is QueueingHint.QUEUE_SKIP
    )


def test_pod_hint() -> None:
    template_pod = make_pod("my-pod").uid(POD_UID).claim_template("my-resource", "tmpl").obj()
    plugin, _ = setup(claims=(make_claim(CLAIM).owner("my-pod", POD_UID).obj(),))
    before = pod(template_pod)
    after = pod(pod_claim_status(template_pod, "my-resource", CLAIM))
    other = pod(make_pod("x").uid("x").obj())
    assert plugin.is_schedulable_after_pod_change(before, before, after) is QueueingHint.QUEUE
    assert plugin.is_schedulable_after_pod_change(before, None, other) is QueueingHint.QUEUE_SKIP


def test_registered_events() -> None:
    plugin, _ = setup()
    registered = {
        (e.event.resource, e.event.action, e.hint is not None) for e in plugin.events_to_register()
    }
    node_changes = (
        ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
    )
    add_or_update = ActionType.ADD | ActionType.UPDATE
    assert registered == {
        (EventResource.NODE, node_changes, False),
        (EventResource.RESOURCE_CLAIM, add_or_update, True),
        (EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM, True),
        (EventResource.DEVICE_CLASS, add_or_update, False),
        (EventResource.RESOURCE_SLICE, add_or_update, False),
    }


# ----------------------------------------------------- binding conditions
def conditioned_slice() -> dict[str, Any]:
    slice_ = make_slice("worker-slice").driver(DRIVER).pool("worker").node("worker").obj()
    slice_["spec"]["devices"] = [
        {
            "name": "instance-1",
            "bindingConditions": ["IsPrepared"],
            "bindingFailureConditions": ["BindingFailed"],
        }
    ]
    return slice_


def with_device_status(claim: dict[str, Any], **conditions: str) -> dict[str, Any]:
    claim = dict(claim)
    status = dict(claim["status"])
    status["devices"] = [
        {
            "driver": DRIVER,
            "pool": "worker",
            "device": "instance-1",
            "conditions": [{"type": k, "status": v} for k, v in conditions.items()],
        }
    ]
    claim["status"] = status
    claim["metadata"] = dict(claim["metadata"], resourceVersion="900")
    return claim


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        pytest.param({"IsPrepared": "True", "BindingFailed": "False"}, None, id="device ready"),
        pytest.param(
            {"IsPrepared": "False", "BindingFailed": "True"},
            f"device binding failed: claim=default/{CLAIM}",
            id="device failed",
        ),
    ],
)
async def test_pre_bind_waits_for_binding_conditions(
    conditions: dict[str, str], expected: str | None
) -> None:
    plugin, handle = setup(claims=(claim_obj(),), slices=(conditioned_slice(),))
    target = the_pod()
    state, statuses = cycle(plugin, target, WORKER)
    assert statuses == [None]
    plugin.reserve(state, target, "worker")

    def driver_reports(seconds: float) -> None:
        written = plugin.tracker.get("default", CLAIM)
        assert written is not None
        assert written["status"]["allocation"]["allocationTimestamp"]
        handle.informers.put("resourceclaims", with_device_status(written, **conditions))

    handle.clock.on_sleep(driver_reports)
    status = await plugin.pre_bind(state, target, "worker")
    assert handle.clock.sleeps == [5.0]
    if expected is None:
        assert status is None
    else:
        assert status == Status.as_error(expected)
    assert handle.events.recorded == [
        (
            "Normal",
            "BindingConditionsPending",
            "waiting for binding conditions for device on node worker",
        )
    ]
    outcome = "success" if expected is None else "failed"
    assert handle.metrics.recorded == [
        ("binding_conditions", "default-scheduler", DRIVER, outcome, 5.0)
    ]


def stop_after(handle: FakeHandle, seconds: float) -> None:
    """Fail a wait that outlives ``seconds`` of fake time (instead of spinning)."""

    def check(_: float) -> None:
        assert handle.clock.elapsed <= seconds, "PreBind's wait is unbounded"

    handle.clock.on_sleep(check)


def conditioned(claim: dict[str, Any], **allocation: Any) -> dict[str, Any]:
    """The claim with binding conditions on its allocated device."""
    result = claim["status"]["allocation"]["devices"]["results"][0]
    result["bindingConditions"] = ["IsPrepared"]
    result["bindingFailureConditions"] = ["BindingFailed"]
    claim["status"]["allocation"].update(allocation)
    return claim


@pytest.mark.parametrize(
    "claim",
    [
        pytest.param(claim_obj(), id="allocated by this PreBind"),
        pytest.param(
            conditioned(allocated_claim("worker", ("my-pod", POD_UID))),
            id="reserved already, allocated elsewhere and never stamped",
        ),
        pytest.param(
            conditioned(
                allocated_claim("worker", ("my-pod", POD_UID)),
                allocationTimestamp="2999-01-01T00:00:00Z",
            ),
            id="reserved already, stamped in the future",
        ),
    ],
)
async def test_pre_bind_waits_for_binding_conditions_at_most_binding_timeout(
    claim: dict[str, Any],
) -> None:
    """Upstream's poll has bindingTimeout as its deadline: a driver that
    never reports cannot hold the binding forever, whatever the stamp."""
    plugin, handle = setup(claims=(claim,), slices=(conditioned_slice(),))
    stop_after(handle, 3600)
    target = the_pod()
    state, statuses = cycle(plugin, target, WORKER)
    assert statuses == [None]
    plugin.reserve(state, target, "worker")
    status = await plugin.pre_bind(state, target, "worker")
    assert status == Status.as_error("device binding timeout")
    assert handle.clock.elapsed == 600.0
    assert handle.metrics.recorded == [
        ("binding_conditions", "default-scheduler", DRIVER, "timeout", 600.0)
    ]


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        pytest.param(None, "2023-11-14T22:13:20Z", id="an unstamped allocation is stamped now"),
        pytest.param(
            "2023-01-01T00:00:00Z", "2023-01-01T00:00:00Z", id="a stamped one keeps its stamp"
        ),
    ],
)
async def test_reservation_only_pre_bind_stamps_the_allocation(
    stamp: str | None, expected: str
) -> None:
    """Upstream sets allocationTimestamp in every claim write of PreBind
    (binding conditions on), also when it only adds the reservation."""
    claim = allocated_claim("worker")
    if stamp is not None:
        claim["status"]["allocation"]["allocationTimestamp"] = stamp
    plugin, handle = setup(claims=(claim,), slices=(worker_slice("instance-1"),))
    state, statuses = cycle(plugin, the_pod(), WORKER)
    assert statuses == [None]
    assert plugin.reserve(state, the_pod(), "worker") is None
    assert await plugin.pre_bind(state, the_pod(), "worker") is None
    written = handle.api.objects[CLAIM_PATH]
    assert written["status"]["allocation"]["allocationTimestamp"] == expected
    assert written["status"]["reservedFor"] == [
        {"resource": "pods", "name": "my-pod", "uid": POD_UID}
    ]


async def test_pre_bind_does_not_wait_for_other_pods_claim_writes() -> None:
    """Background writes are awaited per claim: pod A's Unreserve patch,
    stuck on the API server, does not delay pod B's PreBind."""
    slices = (worker_slice("instance-1", "instance-2"),)
    plugin, handle = setup(claims=(claim_obj("a"), claim_obj("b")), slices=slices)
    pod_a, pod_b = the_pod("pod-a", "ua", "a"), the_pod("pod-b", "ub", "b")
    state_a, _ = cycle(plugin, pod_a, WORKER)
    plugin.reserve(state_a, pod_a, "worker")
    assert await plugin.pre_bind(state_a, pod_a, "worker") is None
    stuck = handle.api.held["/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/a"] = (
        asyncio.Event()
    )
    plugin.unreserve(state_a, pod_a, "worker")  # A's bind failed: patch claim a
    state_b, statuses = cycle(plugin, pod_b, WORKER)
    assert statuses == [None]
    plugin.reserve(state_b, pod_b, "worker")
    bind_b = asyncio.get_running_loop().create_task(plugin.pre_bind(state_b, pod_b, "worker"))

    async def b_bound() -> bool:
        return bind_b.done()

    await eventually(b_bound, timeout=5, interval=0.01, what="B's PreBind finished")
    assert bind_b.result() is None
    assert plugin.writes.busy("default/a")  # A's patch is still waiting
    stuck.set()
    await plugin.writes.drain()


def test_failed_binding_makes_the_claim_unavailable_and_post_filter_deallocates() -> None:
    claim = allocated_claim("worker")
    result = claim["status"]["allocation"]["devices"]["results"][0]
    result["bindingConditions"] = ["IsPrepared"]
    result["bindingFailureConditions"] = ["BindingFailed"]
    claim = with_device_status(claim, IsPrepared="False", BindingFailed="True")
    plugin, _ = setup(claims=(claim,), slices=(conditioned_slice(),))
    state, statuses = cycle(plugin, the_pod(), WORKER)
    assert statuses == [Status.unresolvable("resourceclaim not available on the node")]
    _, post = plugin.post_filter(state, the_pod(), NodeToStatus())
    assert post == DEALLOCATING


async def test_a_failed_bind_unreserves_and_the_next_attempt_reserves_again() -> None:
    """Unreserve's background patch finishes before the next PreBind reads
    whether the claim is already reserved for the pod."""
    plugin, handle = setup(claims=(claim_obj(),), slices=(worker_slice("instance-1"),))
    target = the_pod()
    state, _ = cycle(plugin, target, WORKER)
    plugin.reserve(state, target, "worker")
    assert await plugin.pre_bind(state, target, "worker") is None
    plugin.unreserve(state, target, "worker")  # Bind failed: patch in the background
    # The next attempt starts before the patch is done: its PreFilter still
    # sees the claim reserved for the pod.
    retry, statuses = cycle(plugin, target, WORKER)
    assert statuses == [None]
    calls_before = len(handle.api.calls)
    assert await plugin.pre_bind(retry, target, "worker") is None
    assert [m for m, _ in handle.api.calls[calls_before:]] == ["PATCH", "PUT"]
    written = plugin.tracker.get("default", CLAIM)
    assert written is not None
    assert written["status"]["reservedFor"] == [
        {"resource": "pods", "name": "my-pod", "uid": POD_UID}
    ]
