"""Per-VM overcommit as Neon HEAD accounts it (issue 25 leftover 4):
``spec.overcommit {cpu, memory}`` factors; the node counts a VM's
reservation divided by its factor (``applyOvercommit``, state/node.go) and
an increase's room is the node's room times the factor (``reconcilePod``)."""

from __future__ import annotations

from typing import Any

import pytest

from plugins.autoscale_enforcer.agent import AgentInput, handle_request
from plugins.autoscale_enforcer.state import ZERO, Amounts, node_amount, pod_room
from plugins.autoscale_enforcer.vm import VmError, vm_info
from tests.support.builders import make_vm
from tests.unit.plugins.autoscale_support import CPU, GI, amounts, state_with_node, vm


def _raw(overcommit: Any) -> dict[str, Any]:
    raw = make_vm("vm").obj()
    if overcommit is not None:
        raw["spec"]["overcommit"] = overcommit
    return raw


@pytest.mark.parametrize(
    ("overcommit", "factors"),
    [
        pytest.param(None, (1000, 1000), id="absent: 1.0 (overcommitFromOptionalQuantity)"),
        pytest.param({}, (1000, 1000), id="neither resource"),
        pytest.param({"cpu": "1500m"}, (1500, 1000), id="cpu only"),
        pytest.param({"cpu": 2, "memory": "1.25"}, (2000, 1250), id="numbers and quantities"),
    ],
)
def test_spec_overcommit_is_read_as_milli_factors(
    overcommit: Any, factors: tuple[int, int]
) -> None:
    info = vm_info(_raw(overcommit))
    assert (info.cpu_overcommit, info.mem_overcommit) == factors


@pytest.mark.parametrize(
    ("overcommit", "message"),
    [
        pytest.param({"memory": "0"}, "spec.overcommit.memory: must be > 0", id="zero (Neon: /0)"),
        pytest.param({"cpu": "x"}, "spec.overcommit.cpu", id="not a quantity"),
        pytest.param([1], "spec.overcommit: must be an object", id="not an object"),
    ],
)
def test_a_bad_overcommit_is_a_vm_error(overcommit: Any, message: str) -> None:
    with pytest.raises(VmError, match=message):
        vm_info(_raw(overcommit))


def test_node_amount_is_apply_overcommit_rounded_down() -> None:
    info = vm("vm", overcommit=(1.5, 3))
    assert node_amount(Amounts(1000, 10), info) == Amounts(666, 3)
    assert node_amount(Amounts(1000, 10), None) == Amounts(1000, 10)


def test_a_vm_takes_its_reservation_divided_by_its_factor_of_the_node() -> None:
    state = state_with_node(8, 8)
    info = vm("vm", use=(4, 12), max_=(8, 16), overcommit=(2, 2))
    assert state.reserve("default/vm", "u", "n1", amounts(4, 12), info)  # before: 12 GiB > 8
    node = state.nodes["n1"]
    assert node.reserved == amounts(2, 6)
    state.check_invariants()


def test_a_vm_first_seen_bound_buffers_in_node_units() -> None:
    state = state_with_node(16, 16)
    state.observe_pod("default/vm", "u", "n1", ZERO, vm("vm", use=(1, 2), overcommit=(2, 2)))
    node = state.nodes["n1"]
    assert (node.reserved, node.buffer) == (amounts(2, 2), amounts(1.5, 1))  # max 4/4, use 1/2
    state.check_invariants()


def test_an_increase_may_use_the_nodes_room_times_the_factor() -> None:
    """reconcilePod: remaining = (Total - Reserved) * factor."""
    state = state_with_node(8, 8)
    info = vm("vm", use=(1, 4), max_=(8, 20), overcommit=(1, 2))
    assert state.reserve("default/vm", "u", "n1", amounts(1, 4), info)
    assert state.nodes["n1"].reserved == amounts(1, 2)
    request = AgentInput("default/vm", amounts(1, 20), Amounts(CPU, GI), None, 0.5, False)
    outcome = handle_request(state, request, migration_allowed=False)
    assert outcome.permit == amounts(1, 16)  # 4 GiB + (8 - 2) GiB * 2
    assert state.nodes["n1"].reserved == amounts(1, 8)  # full, not above
    state.check_invariants()


@pytest.mark.parametrize(
    ("reserved", "remaining", "factor"),
    [
        pytest.param(1, 0, 1500, id="no room: none, though rounding left some"),
        pytest.param(1000, 1, 1500, id="one unit of node room"),
        pytest.param(7, 5, 3000, id="a factor of 3"),
        pytest.param(5, 9, 1250, id="a factor of 1.25"),
    ],
)
def test_pod_room_never_takes_the_node_past_its_room(
    reserved: int, remaining: int, factor: int
) -> None:
    info = vm("vm", overcommit=(factor / 1000, factor / 1000))
    room = pod_room(Amounts(reserved, reserved), Amounts(remaining, remaining), info).cpu
    taken = node_amount(Amounts(reserved, 0), info).cpu
    assert node_amount(Amounts(reserved + room, 0), info).cpu - taken <= remaining
    assert node_amount(Amounts(reserved + room + 1, 0), info).cpu - taken > remaining  # the most
