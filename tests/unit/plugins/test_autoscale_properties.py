"""Property tests of the AutoscaleEnforcer state (hypothesis).

Any sequence of agent requests, pod events, VM resizes, node changes and
config updates keeps every node counter equal to its pods' sum (so never
negative), and the plugin's own decisions (Reserve, a granted increase)
never take a node's reservation above its total (an increase that would
have to round a reservation up to a coarser version's grid without room for
it is refused). Every permit is expressible in the request's version; a
partial grant is whole compute units, unless it stops at the VM's maximum."""

from __future__ import annotations

import pickle
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from plugins.autoscale_enforcer.agent import AgentInput, RequestError, handle_request
from plugins.autoscale_enforcer.state import Amounts, State, node_amount
from tests.unit.plugins.autoscale_support import CPU, GI, make_config, vm

NODES = ("n1", "n2", "n3")
PLAIN = tuple(f"default/p{i}" for i in range(4))
VMS = tuple(f"default/v{i}" for i in range(4))

cpus = st.integers(min_value=0, max_value=8 * CPU)
mems = st.integers(min_value=0, max_value=8 * GI)
positive = st.builds(
    Amounts, st.integers(min_value=1, max_value=8 * CPU), st.integers(min_value=1, max_value=8 * GI)
)
units = st.builds(
    Amounts,
    st.sampled_from([1, 250, CPU, 2 * CPU]),
    st.sampled_from([1, GI // 2, GI, 2 * GI]),
)
# What a protocol version can express: v4.0+, v2.0..v3.0, v1.x.
grains = st.sampled_from([Amounts(1, 1), Amounts(1, GI), Amounts(CPU, GI)])


def _up(value: int, step: int) -> int:
    return -(-value // step) * step


def _on_grid(amounts: Amounts, grain: Amounts) -> Amounts:
    """What the wire would carry: multiples of the version's grain."""
    return Amounts(_up(amounts.cpu, grain.cpu), _up(amounts.mem, grain.mem))


# v1 and v3 are overcommitted (Neon HEAD's spec.overcommit): the node counts
# their reservations divided by the factors.
OVERCOMMIT = {"default/v1": (1.5, 2.0), "default/v3": (3.0, 1.25)}


def _vm(key: str, use_cpu: int, use_gib: int) -> Any:
    return vm(
        key.split("/")[1],
        use=(use_cpu, use_gib),
        min_=(1, 1),
        max_=(4, 4),
        overcommit=OVERCOMMIT.get(key, (1, 1)),
    )


operations = st.one_of(
    st.tuples(st.just("node"), st.sampled_from(NODES), st.builds(Amounts, cpus, mems)),
    st.tuples(st.just("node-gone"), st.sampled_from(NODES)),
    st.tuples(st.just("config"), st.floats(min_value=0.1, max_value=1.0)),
    st.tuples(
        st.just("bound"),
        st.sampled_from(PLAIN),
        st.sampled_from(NODES),
        st.builds(Amounts, cpus, mems),
    ),
    st.tuples(
        st.just("bound-vm"),
        st.sampled_from(VMS),
        st.sampled_from(NODES),
        st.integers(1, 4),
        st.integers(1, 4),
    ),
    st.tuples(st.just("deleted"), st.sampled_from(PLAIN + VMS)),
    st.tuples(st.just("reserve"), st.sampled_from(PLAIN + VMS), st.sampled_from(NODES), positive),
    st.tuples(st.just("unreserve"), st.sampled_from(PLAIN + VMS), st.sampled_from(NODES)),
    st.tuples(st.just("resize"), st.sampled_from(VMS), st.integers(1, 4), st.integers(1, 4)),
    st.tuples(st.just("migrating"), st.sampled_from(VMS), st.booleans()),
    st.tuples(
        st.just("agent"),
        st.sampled_from(VMS),
        positive,
        units,
        st.one_of(st.none(), positive),
        st.booleans(),
        grains,
    ),
)


def _apply(state: State, op: tuple[Any, ...]) -> None:
    kind = op[0]
    if kind == "node":
        state.upsert_node(op[1], op[2])
    elif kind == "node-gone":
        state.remove_node(op[1])
    elif kind == "config":
        state.set_config(make_config(watermark=op[1]))
    elif kind == "bound":
        state.observe_pod(op[1], op[1], op[2], op[3], None)
    elif kind == "bound-vm":
        state.observe_pod(op[1], op[1], op[2], Amounts(), _vm(op[1], op[3], op[4]))
    elif kind == "deleted":
        state.remove_pod(op[1])
    elif kind == "reserve":
        info = _vm(op[1], 1, 1) if op[1] in VMS else None
        held = state.pods.get(op[1])
        already_there = held is not None and held.node == op[2]
        if state.reserve(op[1], op[1], op[2], op[3], info) and not already_there:
            node = state.nodes[op[2]]
            assert node.reserved.fits_in(node.total)
    elif kind == "unreserve":
        state.unreserve(op[1], op[2])
    elif kind == "resize":
        state.observe_vm(_vm(op[1], op[2], op[3]))
    elif kind == "migrating":
        state.set_migrating(op[1], op[2])
    elif kind == "agent":
        _agent(state, op)


def _agent(state: State, op: tuple[Any, ...]) -> None:
    _, key, resources, unit, last_permit, migrate, grain = op
    resources, unit = _on_grid(resources, grain), _on_grid(unit, grain)
    last_permit = None if last_permit is None else _on_grid(last_permit, grain)
    pod = state.pods.get(key)
    before = None if pod is None else (pod.reserved, state.nodes[pod.node].reserved)
    vm_max = None if pod is None or pod.vm is None else Amounts(pod.vm.cpu_max, pod.vm.mem_max)
    try:
        outcome = handle_request(
            state,
            AgentInput(key, resources, unit, last_permit, 0.5, check_unit=False, granularity=grain),
            migration_allowed=migrate,
        )
    except RequestError:
        return
    assert before is not None
    old_pod, old_node = before
    node = state.nodes[outcome.node]
    after = state.pods[key]
    # What the pod takes of its node (overcommit rounds down per pod).
    taken_before = node_amount(old_pod, after.vm)
    taken_after = node_amount(after.reserved, after.vm)
    permit = outcome.permit
    assert permit.cpu > 0
    assert permit.mem > 0
    assert permit.fits_in(resources)
    for attr in ("cpu", "mem"):
        value, step = getattr(permit, attr), getattr(grain, attr)
        assert value % step == 0, (attr, permit, grain)  # expressible in the version
        old = getattr(old_pod, attr)
        base = _up(old, step)  # the reservation on the version's grid
        grew = value > old
        forced = last_permit is not None and value <= getattr(last_permit, attr)
        raised = getattr(node.reserved, attr) > getattr(old_node, attr)
        if grew and not forced and raised:  # a grant never takes a node above its total
            assert getattr(node.reserved, attr) <= getattr(node.total, attr), (attr, node)
        partial = value < getattr(resources, attr)
        at_max = vm_max is not None and value >= getattr(vm_max, attr) - step
        if grew and partial and not forced and not at_max:  # whole compute units
            assert (value - base) % getattr(unit, attr) == 0
        if grew:  # the node counts exactly what the pod's growth takes of it
            delta = getattr(taken_after, attr) - getattr(taken_before, attr)
            assert getattr(node.reserved, attr) - getattr(old_node, attr) == delta


@settings(max_examples=300, deadline=None)
@given(st.lists(operations, max_size=40))
# Found by this test (stop 35): a VM pod reserved below its VM's use (the
# reserve's amount smaller than the use) was raised to the use by its first
# agent request, past the node's total. Reserve now never holds a VM below
# its use, so this reserve does not fit.
@example(
    ops=[
        ("node", "n1", Amounts(1, 0)),
        ("reserve", "default/v1", "n1", Amounts(1, 1)),
        ("agent", "default/v1", Amounts(2, 1), Amounts(1, 1), None, False, Amounts(1, 1)),
    ]
)
# Found by this test (stop 36): under overcommit a 1m growth of v3 (cpu
# factor 3) takes nothing more of its node (1000m and 1001m both count as
# 333m), so a grant need not raise the node's counter, and on a node already
# over its total (gone: total 0) such a grant does not take it further over.
@example(
    ops=[
        ("reserve", "default/v3", "n1", Amounts(1, 1)),
        ("agent", "default/v3", Amounts(1001, 1), Amounts(1, 1), None, False, Amounts(1, 1)),
    ]
)
@example(
    ops=[
        ("reserve", "default/v3", "n1", Amounts(1, 1)),
        ("node-gone", "n1"),
        ("agent", "default/v3", Amounts(1001, 1), Amounts(1, 1), None, False, Amounts(1, 1)),
    ]
)
def test_counters_stay_exact_and_grants_stay_within_total(ops: list[tuple[Any, ...]]) -> None:
    state = State(make_config())
    for name in NODES:
        state.upsert_node(name, Amounts(8 * CPU, 8 * GI))
    for op in ops:
        _apply(state, op)
        state.check_invariants()
        for node in state.nodes.values():
            for counter in (node.reserved, node.buffer, node.pressure, node.migrating):
                assert counter.cpu >= 0
                assert counter.mem >= 0


@settings(max_examples=300, deadline=None)
@given(st.lists(operations, max_size=40))
def test_a_mirror_fed_the_changed_nodes_stays_equal(ops: list[tuple[Any, ...]]) -> None:
    """What an agent process would send the daemon after each operation (the
    nodes it changed, pickled across the process boundary) keeps the daemon's
    mirror equal to the state, pod index and VM index included."""
    state = State(make_config())
    mirror = State(make_config())
    for name in NODES:
        state.upsert_node(name, Amounts(8 * CPU, 8 * GI))
    for op in [("sync",), *ops]:
        if op[0] != "sync":
            _apply(state, op)
        mirror.config = state.config
        mirror.apply_nodes(pickle.loads(pickle.dumps(state.take_dirty())))
        assert not state.dirty
        assert mirror.dump() == state.dump()
        assert mirror.pods == state.pods
        assert mirror.pod_index() == state.pod_index()
        mirror.check_invariants()
