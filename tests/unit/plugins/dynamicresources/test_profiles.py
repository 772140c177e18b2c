"""Two profiles of one process share one DRA state (upstream's shared DRA
manager): neither gives an exclusive device that the other holds, whatever
stage the other's pod is at (in flight, binding, written, unreserved).

Profile A's pod-a uses claim a, profile B's pod-b claim b; the node has one
device. Fixtures as in test_plugin.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from plugins.dynamicresources.plugin import DynamicResources
from scheduler.framework import CycleState, Status
from tests.support.drabuilders import make_class
from tests.support.wait import eventually
from tests.unit.plugins.dynamicresources.fakes import FakeHandle, make_plugin
from tests.unit.plugins.dynamicresources.test_plugin import (
    WORKER,
    claim_obj,
    cycle,
    the_pod,
    worker_slice,
)

CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
CANNOT_ALLOCATE = Status.unresolvable("cannot allocate all claims")
Bind = asyncio.Task[Status | None] | None  # A's PreBind, if still running


def two_profiles() -> tuple[DynamicResources, DynamicResources, FakeHandle]:
    first, handle = make_plugin(handle=FakeHandle("profile-a"))
    second, _ = make_plugin(handle=FakeHandle("profile-b", peer=handle))
    handle.informers.put("deviceclasses", make_class("my-resource-class").obj())
    handle.informers.put("resourceslices", worker_slice("instance-1"))
    for name in ("a", "b"):
        handle.informers.put("resourceclaims", claim_obj(name))
    return first, second, handle


POD_A, POD_B = the_pod("pod-a", "ua", "a"), the_pod("pod-b", "ub", "b")


async def reserved(a: DynamicResources, handle: FakeHandle, state: CycleState) -> Bind:
    assert a.reserve(state, POD_A, "worker") is None
    return None


async def binding(a: DynamicResources, handle: FakeHandle, state: CycleState) -> Bind:
    """A's PreBind waits on the API server with its status write unsent."""
    assert a.reserve(state, POD_A, "worker") is None
    handle.api.gate = asyncio.Event()
    bind = asyncio.get_running_loop().create_task(a.pre_bind(state, POD_A, "worker"))

    async def write_sent() -> bool:
        return bool(handle.api.calls)

    await eventually(write_sent, timeout=5, interval=0, what="A's first write reached the API")
    return bind


async def written(a: DynamicResources, handle: FakeHandle, state: CycleState) -> Bind:
    """A's PreBind wrote the claim; the informer has not delivered it yet."""
    assert a.reserve(state, POD_A, "worker") is None
    assert await a.pre_bind(state, POD_A, "worker") is None
    informer = handle.informers.store("resourceclaims").objects["default/a"]
    assert "allocation" not in (informer.get("status") or {})
    return None


async def delivered(a: DynamicResources, handle: FakeHandle, state: CycleState) -> Bind:
    assert a.reserve(state, POD_A, "worker") is None
    assert await a.pre_bind(state, POD_A, "worker") is None
    handle.informers.put("resourceclaims", handle.api.objects[f"{CLAIMS}/a"])
    return None


Stage = Callable[[DynamicResources, FakeHandle, CycleState], Awaitable[Bind]]


@pytest.mark.parametrize(
    "stage",
    [
        pytest.param(reserved, id="in flight in the other profile after its Reserve"),
        pytest.param(binding, id="held while the other profile's PreBind waits for the API"),
        pytest.param(written, id="held once written, before the informer delivers the claim"),
        pytest.param(delivered, id="held once the informer delivered the written claim"),
    ],
)
async def test_a_device_held_by_one_profile_is_not_given_by_the_other(stage: Stage) -> None:
    a, b, handle = two_profiles()
    _, statuses = cycle(b, POD_B, WORKER)
    assert statuses == [None]  # before: the device is free for B too
    state, statuses = cycle(a, POD_A, WORKER)
    assert statuses == [None]
    bind = await stage(a, handle, state)
    _, statuses = cycle(b, POD_B, WORKER)
    assert statuses == [CANNOT_ALLOCATE]
    if bind is not None:
        assert handle.api.gate is not None
        handle.api.gate.set()
        assert await bind is None
        assert cycle(b, POD_B, WORKER)[1] == [CANNOT_ALLOCATE]


def test_a_claim_in_flight_in_one_profile_is_being_allocated_for_the_other() -> None:
    a, b, _ = two_profiles()
    state, _ = cycle(a, POD_A, WORKER)
    assert a.reserve(state, POD_A, "worker") is None
    sharing = the_pod("pod-c", "uc", "a")
    _, status = b.pre_filter(CycleState(), sharing, [WORKER])
    assert status == Status.unresolvable(
        "resource claim default/a is in the process of being allocated"
    )


def test_a_device_freed_by_one_profiles_unreserve_is_free_for_the_other() -> None:
    a, b, _ = two_profiles()
    state, _ = cycle(a, POD_A, WORKER)
    assert a.reserve(state, POD_A, "worker") is None
    assert cycle(b, POD_B, WORKER)[1] == [CANNOT_ALLOCATE]
    a.unreserve(state, POD_A, "worker")
    assert cycle(b, POD_B, WORKER)[1] == [None]


def test_every_profile_gets_the_one_dra_state_and_events_apply_once() -> None:
    a, b, handle = two_profiles()
    assert a.tracker is b.tracker
    assert a.inventory is b.inventory
    assert a.writes is b.writes
    assert len(handle.informers.handlers["resourceclaims"]) == 1
