"""AutoscaleEnforcer state: reserve/unreserve, observed pods and VMs, agent
request arithmetic and migration decisions (the reference's test-case list)."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, NamedTuple

import pytest

from plugins.autoscale_enforcer.agent import (
    ONE,
    AgentInput,
    RequestError,
    choose_migration,
    handle_request,
    migration_order,
    too_much_pressure,
)
from plugins.autoscale_enforcer.state import ZERO, Amounts, State
from tests.unit.plugins.autoscale_support import (
    CPU,
    GI,
    amounts,
    make_config,
    state_with_node,
    vm,
)

UNIT = amounts(1, 1)
BYTE = 2**-30  # one byte, in the GiB shorthand of ``amounts``
SLOTS = Amounts(1, GI)  # protocols v2.0..v3.0: millicpu, whole 1 GiB memory slots
WHOLE = Amounts(CPU, GI)  # protocols v1.0..v1.1: whole vCPUs and slots


def with_vm_pod(
    state: State, key: str, reserved: Amounts, *, buffer: Amounts = ZERO, **vm_kwargs: object
) -> None:
    """A confirmed VM pod on n1 reserved at ``reserved`` (max = reserved + headroom)."""
    info = vm(key.split("/")[1], **vm_kwargs)  # type: ignore[arg-type]
    state.observe_pod(key, key, "n1", ZERO, info)
    pod = state.pods[key]
    state.replace_pod(pod, dataclasses.replace(pod, reserved=reserved, buffer=buffer))


# ---------------------------------------------------------------- reserve
@pytest.mark.parametrize(
    ("existing", "existing_buffer", "new", "fits"),
    [
        pytest.param(amounts(2, 2), ZERO, amounts(2, 2), True, id="within budget"),
        pytest.param(
            amounts(6, 6), amounts(4, 4), amounts(2, 2), True, id="with buffer, still fits"
        ),
        pytest.param(amounts(6, 6), ZERO, amounts(2, 2), True, id="exactly at budget"),
        pytest.param(amounts(6, 6), ZERO, amounts(3, 2), False, id="would become over budget"),
        pytest.param(
            amounts(7, 7),
            amounts(3, 3),
            amounts(2, 2),
            False,
            id="over budget only because of buffer",
        ),
        pytest.param(amounts(9, 9), ZERO, amounts(1, 1), False, id="already over budget"),
    ],
)
def test_reserve(existing: Amounts, existing_buffer: Amounts, new: Amounts, fits: bool) -> None:
    state = state_with_node(8, 8)
    state.observe_pod("default/other", "u-other", "n1", existing, None)
    if existing_buffer != ZERO:
        pod = state.pods["default/other"]
        state.replace_pod(pod, dataclasses.replace(pod, buffer=existing_buffer))
    before = state.nodes["n1"].reserved
    assert state.fits("n1", new) is fits
    assert state.reserve("default/vm", "u-vm", "n1", new, vm("vm")) is fits
    assert state.nodes["n1"].reserved == (before + new if fits else before)
    state.check_invariants()


def test_reserve_and_unreserve_are_idempotent_and_symmetric() -> None:
    state = state_with_node()
    state.unreserve("default/a", "n1")  # without a prior Reserve: a no-op
    assert state.nodes["n1"].reserved == ZERO
    assert state.reserve("default/a", "ua", "n1", amounts(2, 2), None)
    assert state.reserve("default/a", "ua", "n1", amounts(2, 2), None)
    assert state.nodes["n1"].reserved == amounts(2, 2)
    state.unreserve("default/a", "n1")
    state.unreserve("default/a", "n1")
    assert state.nodes["n1"].reserved == ZERO
    state.check_invariants()


def test_unreserve_keeps_a_pod_the_informer_confirmed_bound() -> None:
    state = state_with_node()
    assert state.reserve("default/a", "ua", "n1", amounts(2, 2), None)
    state.observe_pod("default/a", "ua", "n1", amounts(2, 2), None)
    state.unreserve("default/a", "n1")
    assert state.nodes["n1"].reserved == amounts(2, 2)


def test_filter_what_if_leaves_out_and_adds_pods_without_changing_state() -> None:
    state = state_with_node(8, 8)
    state.observe_pod("default/big", "u", "n1", amounts(6, 6), None)
    assert not state.fits("n1", amounts(3, 3))
    assert state.fits("n1", amounts(3, 3), without=["default/big"])
    assert not state.fits("n1", amounts(3, 3), without=["default/big"], extra=amounts(6, 0))
    assert state.nodes["n1"].reserved == amounts(6, 6)


# -------------------------------------------------------- observed events
def test_vm_pod_first_seen_bound_is_held_at_max_with_a_buffer() -> None:
    state = state_with_node(16, 16)
    state.observe_pod("default/vm", "u", "n1", ZERO, vm("vm", use=(1, 2), max_=(4, 4)))
    node = state.nodes["n1"]
    assert node.reserved == amounts(4, 4)
    assert node.buffer == amounts(3, 2)
    state.check_invariants()


@pytest.mark.parametrize(
    ("contact", "new_max", "reserved", "buffer"),
    [
        pytest.param(
            False, (6, 6), (6, 6), (5, 4), id="handleUpdatedLimits: max raised, no contact"
        ),
        pytest.param(
            False, (3, 3), (3, 3), (2, 1), id="handleUpdatedLimits: max lowered, no contact"
        ),
        pytest.param(
            False, (1, 1), (1, 2), (0, 0), id="handleUpdatedLimits: never below what it uses"
        ),
        pytest.param(
            True, (6, 6), (6, 6), (4, 4), id="handleUpdatedLimits: max raised after contact"
        ),
    ],
)
def test_a_changed_vm_maximum_moves_the_reservation_and_buffer_as_neon(
    contact: bool,
    new_max: tuple[int, int],
    reserved: tuple[int, int],
    buffer: tuple[int, int],
) -> None:
    """handleUpdatedLimits (v0.41.0): when a VM's max changes, using =
    reserved - buffer; reserved = max(new max, using); buffer = the rest."""
    state = state_with_node(16, 16)
    state.observe_pod("default/vm", "u", "n1", ZERO, vm("vm", use=(1, 2), max_=(4, 4)))
    if contact:
        handle_request(state, request("default/vm", amounts(2, 2)), migration_allowed=False)
    assert state.nodes["n1"].reserved == (amounts(2, 2) if contact else amounts(4, 4))
    state.observe_vm(vm("vm", use=(1, 2), max_=new_max))
    pod = state.pods["default/vm"]
    assert (pod.reserved, pod.buffer) == (amounts(*reserved), amounts(*buffer))
    state.check_invariants()


@pytest.mark.parametrize(
    ("use", "new_max", "reserved", "buffer"),
    [
        pytest.param((2, 1), (4, 4), (4, 4), (2, 3), id="resized: buffer is max minus new use"),
        pytest.param((1, 1), (1, 2), (1, 2), (0, 1), id="resized and max changed together"),
    ],
)
def test_a_vm_held_at_its_maximum_before_contact_keeps_buffer_at_max_minus_use(
    use: tuple[int, int],
    new_max: tuple[int, int],
    reserved: tuple[int, int],
    buffer: tuple[int, int],
) -> None:
    """Restart regression: a VM first seen bound is held at its maximum with
    buffer max - use; after a resize a restart builds buffer max - new use,
    the long-running state kept the old buffer (so it undercounted use)."""
    state = state_with_node(16, 16)
    state.observe_pod("default/vm", "u", "n1", ZERO, vm("vm", use=(1, 2), max_=(4, 4)))
    assert state.pods["default/vm"].buffer == amounts(3, 2)
    state.observe_vm(vm("vm", use=use, max_=new_max))
    pod = state.pods["default/vm"]
    assert (pod.reserved, pod.buffer) == (amounts(*reserved), amounts(*buffer))
    state.check_invariants()


def test_a_vm_whose_autoscaling_is_turned_on_is_held_at_its_maximum_as_after_a_restart() -> None:
    """Restart regression: a restart holds an autoscaled VM with no agent
    contact at its maximum; the long-running state kept it at its use."""
    state = state_with_node(16, 16)
    unscaled = vm("vm", use=(1, 2), max_=(4, 4), autoscaling=False)
    state.observe_pod("default/vm", "u", "n1", ZERO, unscaled)
    assert state.pods["default/vm"].reserved == amounts(1, 2)
    state.observe_vm(vm("vm", use=(1, 2), max_=(4, 4)))
    pod = state.pods["default/vm"]
    assert (pod.reserved, pod.buffer) == (amounts(4, 4), amounts(3, 2))
    state.check_invariants()


def test_vm_pod_no_agent_scales_is_held_at_its_use_and_follows_it_both_ways() -> None:
    state = state_with_node(16, 16)
    unscaled = vm("vm", use=(1, 2), max_=(4, 4), autoscaling=False)
    state.observe_pod("default/vm", "u", "n1", ZERO, unscaled)
    node = state.nodes["n1"]
    assert (node.reserved, node.buffer) == (amounts(1, 2), ZERO)  # before: (4, 4) buffered
    state.observe_vm(vm("vm", use=(3, 3), max_=(4, 4), autoscaling=False))  # resized by hand
    assert state.nodes["n1"].reserved == amounts(3, 3)
    state.observe_vm(vm("vm", use=(1, 1), max_=(4, 4), autoscaling=False))
    assert state.nodes["n1"].reserved == amounts(1, 1)
    state.check_invariants()


def test_non_vm_pod_follows_in_place_resize_and_deletion() -> None:
    state = state_with_node()
    state.observe_pod("default/p", "u", "n1", amounts(1, 1), None)
    state.observe_pod("default/p", "u", "n1", amounts(2, 1), None)
    assert state.nodes["n1"].reserved == amounts(2, 1)
    state.remove_pod("default/p")
    state.remove_pod("default/p")
    assert state.nodes["n1"].reserved == ZERO


def test_vm_resize_is_followed_before_agent_contact_and_never_undercounted_after() -> None:
    state = state_with_node()
    assert state.reserve("default/vm", "u", "n1", amounts(1, 1), vm("vm"))
    state.observe_vm(vm("vm", use=(2, 3)))
    assert state.nodes["n1"].reserved == amounts(2, 3)
    handle_request(state, request("default/vm", amounts(2, 3)), migration_allowed=False)
    state.observe_vm(vm("vm", use=(1, 1)))  # shrank: the agent will report it
    assert state.nodes["n1"].reserved == amounts(2, 3)
    state.observe_vm(vm("vm", use=(3, 3)))  # grew past its permit: count it
    assert state.nodes["n1"].reserved == amounts(3, 3)
    state.check_invariants()


def test_a_decrease_below_the_vms_use_is_answered_but_reserved_at_use_until_the_vm_shows_it() -> (
    None
):
    """Issue 25 #7 (Neon shares the defect): an agent's decrease is answered
    as asked, but the reservation never goes below the VM object's ``use``;
    once the VM shows the smaller size, it follows down to the last permit."""
    state = state_with_node()
    with_vm_pod(state, "default/vm", amounts(4, 4), use=(4, 4), max_=(6, 6))
    handle_request(state, request("default/vm", amounts(4, 4)), migration_allowed=False)
    outcome = handle_request(state, request("default/vm", amounts(1, 1)), migration_allowed=False)
    assert outcome.permit == amounts(1, 1)
    assert state.pods["default/vm"].reserved == amounts(4, 4)  # before: 1/1
    state.observe_vm(vm("vm", use=(2, 1), max_=(6, 6)))  # the VM caught up (cpu not yet)
    assert state.pods["default/vm"].reserved == amounts(2, 1)
    state.observe_vm(vm("vm", use=(1, 1), max_=(6, 6)))
    assert state.pods["default/vm"].reserved == amounts(1, 1)
    state.observe_vm(vm("vm", use=(3, 1), max_=(6, 6)))  # resized by hand above its permit
    assert state.pods["default/vm"].reserved == amounts(3, 1)
    state.check_invariants()


def test_node_allocatable_change_and_config_change_recompute_budgets() -> None:
    state = state_with_node(8, 8)
    state.upsert_node("n1", amounts(4, 4))
    assert state.nodes["n1"].total == amounts(4, 4)
    state.set_config(make_config(cpu_system="1"))
    assert state.nodes["n1"].total == amounts(3, 4)


def test_node_deletion_keeps_its_pods_until_they_go() -> None:
    """Restart regression: a restart counts the pods still bound to a node
    that came back; the long-running state forgot them with the node."""
    state = state_with_node()
    state.observe_pod("default/p", "u", "n1", amounts(1, 1), None)
    state.remove_node("n1")
    assert state.nodes["n1"].total == ZERO
    assert set(state.pods) == {"default/p"}
    state.upsert_node("n1", amounts(8, 8))
    assert state.nodes["n1"].reserved == amounts(1, 1)
    state.remove_node("n1")
    state.remove_pod("default/p")
    assert state.pods == {}
    assert state.nodes == {}
    state.check_invariants()


def test_a_recreated_pod_with_a_new_uid_replaces_the_old_one() -> None:
    state = state_with_node()
    state.observe_pod("default/p", "u1", "n1", amounts(1, 1), None)
    state.observe_pod("default/p", "u2", "n1", amounts(2, 2), None)
    assert state.nodes["n1"].reserved == amounts(2, 2)
    state.check_invariants()


# --------------------------------------------------------- agent requests
def request(
    key: str,
    resources: Amounts,
    *,
    unit: Amounts = UNIT,
    last_permit: Amounts | None = None,
    metrics: float | None = 0.5,
    check_unit: bool = False,
    grain: Amounts = ONE,
) -> AgentInput:
    return AgentInput(key, resources, unit, last_permit, metrics, check_unit, grain)


class Case(NamedTuple):
    """One agent request on a node of 8 CPU / 8 GiB (whole-unit shorthand)."""

    reserved: tuple[float, float]
    requested: tuple[float, float]
    permit: tuple[float, float]
    pressure: tuple[float, float] = (0, 0)
    others: tuple[float, float] = (0, 0)
    buffer: tuple[float, float] = (0, 0)
    unit: Amounts = UNIT
    last_permit: Amounts | None = None
    grain: Amounts = ONE  # what the request's protocol version can express


def case(id_: str, **fields: Any) -> Any:
    return pytest.param(Case(**fields), id=id_)


@pytest.mark.parametrize(
    "c",
    [
        case("simple upscale", reserved=(2, 2), requested=(3, 3), permit=(3, 3)),
        case("simple downscale", reserved=(3, 3), requested=(2, 2), permit=(2, 2)),
        case("no-op", reserved=(2, 2), requested=(2, 2), permit=(2, 2)),
        case(
            "no-op clears buffer", reserved=(4, 4), buffer=(2, 2), requested=(2, 2), permit=(2, 2)
        ),
        case(
            "upscale exactly to the limit",
            reserved=(2, 2),
            others=(4, 4),
            requested=(4, 4),
            permit=(4, 4),
        ),
        case(
            "upscale partially granted",
            reserved=(2, 2),
            others=(4, 5),
            requested=(4, 4),
            permit=(4, 3),
            pressure=(0, 1),
        ),
        case(
            "upscale blocked: half a unit left",
            reserved=(2, 2),
            others=(5.5, 5.5),
            requested=(4, 4),
            permit=(2, 2),
            pressure=(2, 2),
        ),
        case(
            "uneven compute unit: whole units only",
            reserved=(2, 2),
            others=(4, 4),
            requested=(4, 4),
            unit=amounts(1.5, 1.5),
            permit=(3.5, 3.5),
            pressure=(0.5, 0.5),
        ),
        case(
            "upscale rejected at the limit",
            reserved=(2, 2),
            others=(6, 6),
            requested=(4, 4),
            permit=(2, 2),
            pressure=(2, 2),
        ),
        case(
            "upscale rejected above the limit",
            reserved=(2, 2),
            others=(7, 7),
            requested=(4, 4),
            permit=(2, 2),
            pressure=(2, 2),
        ),
        case(
            "downscale approved while over the limit",
            reserved=(4, 4),
            others=(6, 6),
            requested=(3, 3),
            permit=(3, 3),
        ),
        case(
            "upscale approved up to lastPermit above the limit",
            reserved=(2, 2),
            others=(6, 6),
            requested=(4, 4),
            last_permit=amounts(3, 4),
            permit=(3, 4),
            pressure=(1, 0),
        ),
        case(
            "fractional compute units",
            reserved=(2, 2),
            requested=(3, 3),
            unit=amounts(0.25, 0.5),
            permit=(3, 3),
        ),
        case(
            "slots after bytes: 1-byte reservation, full grant of 5 slots (hypothesis)",
            reserved=(1, BYTE),
            others=(3, 3),
            requested=(1, 5),
            grain=SLOTS,
            permit=(1, 5),
        ),
        case(
            "slots after bytes: partial grant in whole slots, not 1 GiB + 1 byte",
            reserved=(1, BYTE),
            others=(3, 6),
            requested=(1, 5),
            grain=SLOTS,
            permit=(1, 2),
            pressure=(0, 3),
        ),
        case(
            "slots after bytes: lastPermit still honoured",
            reserved=(1, BYTE),
            others=(3, 8),
            requested=(1, 5),
            grain=SLOTS,
            last_permit=amounts(1, 3),
            permit=(1, 3),
            pressure=(0, 2),
        ),
        case(
            "whole vCPUs after millicpu: 1.5 CPU, 1 CPU free, grant 2 not 2.5",
            reserved=(1.5, 2),
            others=(5.5, 0),
            requested=(4, 2),
            grain=WHOLE,
            permit=(2, 2),
            pressure=(2, 0),
        ),
        case(
            "whole vCPUs after millicpu: decrease is exact whatever the grid",
            reserved=(1.5, 2),
            requested=(1, 1),
            grain=WHOLE,
            permit=(1, 1),
        ),
    ],
)
def test_agent_request(c: Case) -> None:
    state = state_with_node(8, 8)
    if c.others != (0, 0):
        state.observe_pod("default/other", "uo", "n1", amounts(*c.others), None)
    with_vm_pod(state, "default/vm", amounts(*c.reserved), buffer=amounts(*c.buffer), max_=(8, 8))
    node_before = state.nodes["n1"].reserved
    outcome = handle_request(
        state,
        request(
            "default/vm",
            amounts(*c.requested),
            unit=c.unit,
            last_permit=c.last_permit,
            grain=c.grain,
        ),
        migration_allowed=False,
    )
    assert outcome.permit == amounts(*c.permit)
    assert outcome.migrate is False
    node = state.nodes["n1"]
    assert node.reserved == node_before.minus(amounts(*c.reserved)) + amounts(*c.permit)
    assert node.pressure == amounts(*c.pressure)
    assert node.buffer == ZERO
    state.check_invariants()


def test_a_forged_last_permit_counts_only_up_to_the_vms_maximum() -> None:
    state = state_with_node(8, 8)
    state.observe_pod("default/other", "uo", "n1", amounts(6, 6), None)
    with_vm_pod(state, "default/vm", amounts(2, 2), max_=(3, 3))
    forged = request("default/vm", amounts(5, 5), last_permit=amounts(5, 5))
    outcome = handle_request(state, forged, migration_allowed=False)
    assert outcome.permit == amounts(3, 3)  # before: 5/5, the node at 11 of 8
    node = state.nodes["n1"]
    assert node.reserved == amounts(9, 9)  # over by the VM's own maximum only
    assert node.pressure == ZERO  # above its maximum is no want of room
    state.check_invariants()


def test_an_increase_stops_at_the_vms_maximum() -> None:
    """Restart regression: an increase above the VM's maximum was granted
    (a reservation the VM cannot use, above what a restart holds for it)."""
    state = state_with_node(8, 8)
    with_vm_pod(state, "default/vm", amounts(1, 1), max_=(2, 2))
    outcome = handle_request(state, request("default/vm", amounts(3, 4)), migration_allowed=False)
    assert outcome.permit == amounts(2, 2)  # before: 3/4
    node = state.nodes["n1"]
    assert (node.reserved, node.pressure) == (amounts(2, 2), ZERO)
    state.check_invariants()


class OffGrid(NamedTuple):
    """An increase from a reservation the request's version cannot express,
    on a node of 8 CPU / 8 GiB (whole-unit shorthand); ``permit`` None: refused."""

    reserved: tuple[float, float]
    others: tuple[float, float]
    requested: tuple[float, float]
    grain: Amounts
    permit: tuple[float, float] | None
    last_permit: Amounts | None = None


@pytest.mark.parametrize(
    "c",
    [
        pytest.param(
            OffGrid((1.5, 2), (6.5, 0), (4, 2), WHOLE, None),
            id="1.5 vCPU, node full, v1.x asks 4: refused (2 would exceed the total)",
        ),
        pytest.param(
            OffGrid((1.5, 2), (6.2, 0), (4, 2), WHOLE, None),
            id="1.5 vCPU, 0.3 free, v1.x asks 4: refused (rounding needs 0.5)",
        ),
        pytest.param(
            OffGrid((1.5, 2), (6, 0), (4, 2), WHOLE, (2, 2)),
            id="1.5 vCPU, exactly 0.5 free: rounded up to 2, node exactly full",
        ),
        pytest.param(
            OffGrid((1.5, 2), (5, 0), (4, 2), WHOLE, (3, 2)),
            id="1.5 vCPU, 1.5 free: 2 then one whole vCPU more",
        ),
        pytest.param(
            OffGrid((1, BYTE), (3, 8), (1, 5), SLOTS, None),
            id="1 byte, memory full, v2.x asks 5 slots: refused (never 0, never above)",
        ),
        pytest.param(
            OffGrid((1, BYTE), (3, 8 - 2 * BYTE), (1, 5), SLOTS, None),
            id="1 byte, 2 bytes free, v2.x asks 5 slots: refused",
        ),
        pytest.param(
            OffGrid((1, BYTE), (3, 7), (1, 5), SLOTS, (1, 1)),
            id="1 byte, 1 GiB free: rounded up to one slot",
        ),
        pytest.param(
            OffGrid((1, BYTE), (3, 8), (1, 5), SLOTS, (1, 3), last_permit=amounts(1, 3)),
            id="1 byte, memory full, lastPermit 3 slots: honoured as ever",
        ),
        pytest.param(
            OffGrid((1.5, 2), (6.5, 0), (1, 1), WHOLE, (1, 1)),
            id="1.5 vCPU, node full, v1.x shrinks to 1: a decrease is always exact",
        ),
        pytest.param(
            OffGrid((1.5, 2), (6.5, 0), (2, 3), WHOLE, None),
            id="memory increase fits but cpu must round up and cannot: whole request refused",
        ),
    ],
)
def test_an_increase_off_the_grid_never_takes_the_node_above_its_total(c: OffGrid) -> None:
    state = state_with_node(8, 8)
    state.observe_pod("default/other", "uo", "n1", amounts(*c.others), None)
    with_vm_pod(state, "default/vm", amounts(*c.reserved), max_=(8, 8))
    before = repr(state.nodes), repr(state.pods)
    ask = request("default/vm", amounts(*c.requested), grain=c.grain, last_permit=c.last_permit)
    if c.permit is None:
        with pytest.raises(RequestError) as caught:
            handle_request(state, ask, migration_allowed=False)
        assert caught.value.status == 400
        assert caught.value.message.startswith("cannot grant increase: reservation {cpu: ")
        assert (repr(state.nodes), repr(state.pods)) == before
        return
    outcome = handle_request(state, ask, migration_allowed=False)
    assert outcome.permit == amounts(*c.permit)
    node = state.nodes["n1"]
    if c.last_permit is None:
        assert node.reserved.fits_in(node.total), (node.reserved, node.total)
    state.check_invariants()


@pytest.mark.parametrize(
    ("key", "prepare", "resources", "status", "text"),
    [
        pytest.param("default/ghost", None, amounts(1, 1), 404, "pod not found", id="unknown pod"),
        pytest.param(
            "default/plain", "plain", amounts(1, 1), 404, "pod not found", id="non-VM pod"
        ),
        pytest.param(
            "default/vm",
            "migrating",
            amounts(3, 3),
            400,
            "agent has already been informed that pod is migrating",
            id="migrating pod changing size",
        ),
        pytest.param(
            "default/vm",
            "contacted",
            amounts(3, 2),
            400,
            "do not divide cleanly by previous compute unit",
            id="uneven request",
        ),
    ],
)
def test_refused_requests_change_nothing(
    key: str, prepare: str | None, resources: Amounts, status: int, text: str
) -> None:
    state = state_with_node()
    state.observe_pod("default/plain", "up", "n1", amounts(1, 1), None)
    with_vm_pod(state, "default/vm", amounts(2, 2))
    if prepare == "migrating":
        pod = state.pods["default/vm"]
        state.replace_pod(pod, dataclasses.replace(pod, migrating=True, migrate_told=True))
    if prepare == "contacted":
        handle_request(state, request("default/vm", amounts(2, 2)), migration_allowed=False)
    before = repr(state.nodes), repr(state.pods)
    with pytest.raises(RequestError) as caught:
        handle_request(
            state, request(key, resources, check_unit=True, metrics=9.9), migration_allowed=False
        )
    assert (
        caught.value.status,
        caught.value.message.startswith(text) or text in caught.value.message,
    ) == (status, True)
    assert (repr(state.nodes), repr(state.pods)) == before


def test_a_migrating_pod_told_in_slots_is_held_at_its_reservation_rounded_up() -> None:
    state = state_with_node()
    with_vm_pod(state, "default/vm", Amounts(CPU, 1), max_=(8, 8))
    pod = state.pods["default/vm"]
    state.replace_pod(pod, dataclasses.replace(pod, migrating=True))
    outcome = handle_request(
        state, request("default/vm", amounts(1, 5), grain=SLOTS), migration_allowed=False
    )
    assert (outcome.permit, outcome.migrate) == (amounts(1, 1), True)
    assert state.nodes["n1"].pressure == amounts(0, 4)
    state.check_invariants()


@pytest.mark.parametrize(
    ("resources", "warned"),
    [
        pytest.param(amounts(0.25, 1), False, id="at the VM minimum: no warning"),
        pytest.param(amounts(3, 2), True, id="between the bounds: warned"),
    ],
)
def test_uneven_request_after_v1_1_is_only_warned_and_not_at_the_vm_bounds(
    resources: Amounts, warned: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """handleResources (v0.6.0-v0.25.x): a warning, skipped at the bounds."""
    state = state_with_node()
    with_vm_pod(state, "default/vm", amounts(2, 2), min_=(0.25, 1), max_=(4, 4))
    handle_request(state, request("default/vm", amounts(2, 2)), migration_allowed=False)
    with caplog.at_level(logging.WARNING, logger="plugins.autoscale_enforcer.agent"):
        outcome = handle_request(
            state, request("default/vm", resources, check_unit=False), migration_allowed=False
        )
    assert outcome.permit == resources
    assert ("do not divide cleanly" in caplog.text) is warned


# --------------------------------------------------------------- pressure
@pytest.mark.parametrize(
    ("reserved", "pressure", "accounted", "buffer", "over"),
    [
        pytest.param((4, 4), (0, 0), (0, 0), (0, 0), False, id="at the watermark"),
        pytest.param((5, 4), (0, 0), (0, 0), (0, 0), True, id="cpu above the watermark"),
        pytest.param((4, 5), (0, 0), (0, 0), (0, 0), True, id="memory above the watermark"),
        pytest.param(
            (5, 4), (0, 0), (1, 0), (0, 0), False, id="excess accounted for by a migration"
        ),
        pytest.param((5, 4), (0, 0), (0, 0), (1, 0), False, id="excess covered by buffer"),
        pytest.param((5, 4), (1, 0), (1, 0), (0, 0), True, id="pressure on top of the excess"),
        pytest.param((3, 3), (2, 0), (0, 0), (0, 0), False, id="pressure below the watermark"),
        pytest.param(
            (3, 4),
            (0, 1),
            (0, 0),
            (0, 0),
            True,
            id="tooMuchPressure: memory exactly at the watermark with pressure (strict <)",
        ),
        pytest.param(
            (4, 3),
            (1, 0),
            (0, 0),
            (0, 0),
            False,
            id="tooMuchPressure: cpu exactly at the watermark is clearly not (<=)",
        ),
    ],
)
def test_too_much_pressure(
    reserved: tuple[int, int],
    pressure: tuple[int, int],
    accounted: tuple[int, int],
    buffer: tuple[int, int],
    over: bool,
) -> None:
    state = state_with_node(8, 8)  # watermark 0.5: 4 CPU, 4 GiB
    node = state.nodes["n1"]
    node.reserved, node.pressure = amounts(*reserved), amounts(*pressure)
    node.pressure_accounted_for, node.buffer = amounts(*accounted), amounts(*buffer)
    assert too_much_pressure(node) is over


def test_full_node_at_watermark_one_with_pressure_is_too_much_pressure() -> None:
    """tooMuchPressure (v0.41.0) with watermark 1.0: reserved == watermark == total."""
    state = state_with_node(8, 8, watermark=1.0)
    node = state.nodes["n1"]
    node.reserved, node.pressure = amounts(8, 8), amounts(0, 1)
    assert node.watermark == node.total
    assert too_much_pressure(node) is True


def _queue_node(pods: list[tuple[str, float | None, bool, bool]]) -> State:
    """n1 (8/8, watermark 4/4) holding 5/5 in two VM pods (key, loadAvg1M,
    opted in, has made a request)."""
    state = state_with_node(8, 8)
    sizes = [amounts(3, 3), amounts(2, 2)]
    for (key, load, opted_in, contacted), size in zip(pods, sizes, strict=True):
        with_vm_pod(state, key, size, migratable=opted_in)
        if contacted:
            handle_request(state, request(key, size, metrics=load), migration_allowed=False)
    return state


@pytest.mark.parametrize(
    ("pods", "asking", "migrates"),
    [
        pytest.param(
            [("default/idle", 0.1, True, True), ("default/busy", 3.0, True, True)],
            "default/idle",
            True,
            id="isNextInQueue: the least-loaded opted-in VM migrates",
        ),
        pytest.param(
            [("default/idle", 0.1, False, True), ("default/busy", 3.0, True, True)],
            "default/busy",
            False,
            id="isNextInQueue: the least loaded is not opted in, so nobody migrates",
        ),
        pytest.param(
            [("default/a-quiet", None, True, False), ("default/b", None, True, True)],
            "default/b",
            True,
            id="migrationQueue: unknown load, the only VM that made a request is picked",
        ),
        pytest.param(
            [("default/a", 0.5, True, True), ("default/b", None, True, True)],
            "default/b",
            False,
            id="isBetterMigrationTarget: unknown load after known load",
        ),
    ],
)
def test_migration_choice_follows_neons_queue(
    pods: list[tuple[str, float | None, bool, bool]], asking: str, migrates: bool
) -> None:
    state = _queue_node(pods)
    assert too_much_pressure(state.nodes["n1"])
    load = state.pods[asking].metrics
    outcome = handle_request(
        state,
        request(asking, state.pods[asking].reserved, metrics=load),
        migration_allowed=True,
    )
    assert outcome.wants_migration is migrates


def test_a_failed_migrations_source_reenters_the_queue_only_with_its_next_request() -> None:
    """removeIfPresent when the migration begins, addOrUpdate on the next
    request (which is therefore not itself a migration): the source of a
    failed migration scales again before it can be picked again."""
    state = _queue_node([("default/a", 0.1, True, True), ("default/b", 0.5, True, True)])
    state.set_migrating("default/a", True)
    state.set_migrating("default/a", False)  # the migration failed
    assert [pod.key for pod in migration_order(state.nodes["n1"])] == ["default/b"]
    again = handle_request(
        state, request("default/a", amounts(3, 3), metrics=0.1), migration_allowed=True
    )
    assert again.wants_migration is False
    assert [pod.key for pod in migration_order(state.nodes["n1"])] == ["default/a", "default/b"]
    picked = handle_request(
        state, request("default/a", amounts(3, 3), metrics=0.1), migration_allowed=True
    )
    assert picked.wants_migration is True


def test_migration_picks_the_least_loaded_opted_in_vm_and_tells_it_once_the_object_exists() -> None:
    state = state_with_node(8, 8)
    with_vm_pod(state, "default/busy", amounts(2, 2), migratable=True)
    with_vm_pod(state, "default/idle", amounts(2, 2), migratable=True)
    with_vm_pod(state, "default/pinned", amounts(1, 1))
    for key, load in (("default/busy", 3.0), ("default/idle", 0.1)):
        handle_request(state, request(key, amounts(2, 2), metrics=load), migration_allowed=False)
    assert choose_migration(state, "n1") is state.pods["default/idle"]
    asked = handle_request(
        state, request("default/idle", amounts(2, 2), metrics=0.1), migration_allowed=True
    )
    assert (asked.wants_migration, asked.migrate) == (True, False)
    state.set_migrating("default/idle", True)  # the migration object appeared
    told = handle_request(
        state, request("default/idle", amounts(3, 3), metrics=0.1), migration_allowed=True
    )
    assert (told.wants_migration, told.migrate) == (False, True)
    assert told.permit == amounts(2, 2)  # the increase became pressure
    node = state.nodes["n1"]
    assert node.migrating == amounts(2, 2)
    assert node.pressure_accounted_for == amounts(3, 3)
    assert choose_migration(state, "n1") is None  # accounted for now
    with pytest.raises(RequestError, match="already been informed"):
        handle_request(state, request("default/idle", amounts(3, 3)), migration_allowed=True)
    state.set_migrating("default/idle", False)  # the migration ended
    assert node.migrating == ZERO
    state.check_invariants()


def test_no_migration_when_disallowed_or_not_opted_in() -> None:
    state = state_with_node(8, 8)
    with_vm_pod(state, "default/a", amounts(3, 3))
    with_vm_pod(state, "default/b", amounts(2, 2), migratable=True)
    assert choose_migration(state, "n1") is None  # Neon's queue: no request yet
    outcome = handle_request(state, request("default/b", amounts(2, 2)), migration_allowed=False)
    assert outcome.wants_migration is False
    assert choose_migration(state, "n1") is state.pods["default/b"]
    outcome = handle_request(state, request("default/a", amounts(3, 3)), migration_allowed=True)
    assert outcome.wants_migration is False


@pytest.mark.parametrize(
    ("namespace", "counted"),
    [
        pytest.param("overprovisioning", False, id="ignoredNamespace: treated as absent"),
        pytest.param("default", True, id="other namespaces counted"),
    ],
)
def test_pods_in_ignored_namespaces_are_not_accounted(namespace: str, counted: bool) -> None:
    """Neon's ``ignoreNamespaces`` (v0.41.0 watch.go, Reserve): such pods are
    as if they did not exist (Filter still counts them from the node's pods,
    by their requests, as any pod we do not hold)."""
    state = state_with_node(ignoreNamespaces=["overprovisioning"])
    state.observe_pod(f"{namespace}/p", "u", "n1", amounts(2, 2), None)
    state.observe_pod(f"{namespace}/vm", "v", "n1", ZERO, vm("vm", namespace=namespace))
    assert (state.nodes["n1"].reserved != ZERO) is counted
    assert state.reserve(f"{namespace}/q", "w", "n1", amounts(1, 1), None)
    assert (f"{namespace}/q" in state.pods) is counted
    state.check_invariants()
