"""Restart equivalence of the AutoscaleEnforcer state (issue 25, hypothesis).

A random run of node, pod, VirtualMachine and migration events, Reserves
and agent requests goes through a ``ClusterFeed`` over a fake cluster (the
raw objects the informers would hold). Then a fresh feed is built from those
objects alone, as a restarted scheduler (or a restarted agent process) does,
and its accounting is compared with the long-running one's:

- the same nodes with the same budgets, the same pods on the same nodes,
  of the same VMs, migrating (or a migration's target) alike;
- a pod's known use (``reserved - buffer``) is the same where no agent has
  contacted us, and exactly what the objects say (a VM's ``use``, a pod's
  requests) after the restart; a pod without an agent (a plain pod, a VM
  without autoscaling) is held exactly alike; the restart never holds less
  than the long-running state (it assumes the worst: Neon's buffer), but
  for a VM whose maximum was lowered below what its agent was granted;
- once every agent that had contacted us sends its last request again (as
  Neon's agents do after a scheduler restart), every pod's reservation and
  buffer and every node counter but capacity pressure (recomputed against
  the room at that request) are equal.

Named regression cases for each defect the property found follow it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugins.autoscale_enforcer.agent import AgentInput, RequestError, handle_request
from plugins.autoscale_enforcer.cluster import MIGRATION_RESOURCE, NODES, PODS, ClusterFeed
from plugins.autoscale_enforcer.state import ZERO, Amounts, PodState, State
from plugins.autoscale_enforcer.vm import (
    LABEL_AUTOSCALING_ENABLED,
    LABEL_VM,
    VM_RESOURCE,
    vm_info,
)
from tests.unit.plugins.autoscale_support import CPU, GI, make_config

Raw = Mapping[str, Any]
NODE_NAMES = ("n1", "n2")
PLAIN = ("p0", "p1", "p2")
# v0, v1 have an agent (autoscaling enabled); v2 has none.
VMS = ("v0", "v1", "v2")
AUTOSCALED = ("v0", "v1")
NS = "default"


class Cluster:
    """The informers' stores as the feed reads them, and the events it gets."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Raw]] = {
            NODES: {},
            PODS: {},
            VM_RESOURCE: {},
            MIGRATION_RESOURCE: {},
        }
        self.feed: ClusterFeed | None = None

    def get(self, resource: str, key: str) -> Raw | None:
        return self.objects[resource].get(key)

    def list(self, resource: str) -> Iterable[Raw]:
        return list(self.objects[resource].values())

    def migration_finished(self, namespace: str, name: str, phase: str) -> None:
        pass

    def put(self, resource: str, key: str, obj: Raw | None) -> None:
        old = self.objects[resource].get(key)
        if obj is None:
            if old is None:
                return
            del self.objects[resource][key]
        else:
            self.objects[resource][key] = obj
        if self.feed is not None:
            self.feed.changed(resource, old, obj)


def node_obj(name: str, cpu: int, mem: int) -> Raw:
    return {
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "status": {"allocatable": {"cpu": f"{cpu}m", "memory": str(mem), "pods": "110"}},
    }


def pod_obj(
    name: str,
    node: str,
    *,
    uid: str,
    cpu: int = 0,
    mem: int = 0,
    vm: str | None = None,
    phase: str = "Running",
    owner: str | None = None,
) -> Raw:
    metadata: dict[str, Any] = {"name": name, "namespace": NS, "uid": uid, "labels": {}}
    if vm is not None:
        metadata["labels"][LABEL_VM] = vm
    if owner is not None:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "vm.neon.tech/v1",
                "kind": "VirtualMachineMigration",
                "name": owner,
                "uid": f"uid-{owner}",
            }
        ]
    container = {"name": "c", "resources": {"requests": {"cpu": f"{cpu}m", "memory": str(mem)}}}
    return {
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "schedulerName": "autoscale-scheduler",
            "nodeName": node,
            "containers": [container],
        },
        "status": {"phase": phase},
    }


# v1 is overcommitted (Neon HEAD's spec.overcommit).
OVERCOMMIT = {"v1": {"cpu": "1500m", "memory": "2"}}


def vm_obj(name: str, use: tuple[int, int], max_: tuple[int, int], pod: str) -> Raw:
    labels = {LABEL_AUTOSCALING_ENABLED: "true"} if name in AUTOSCALED else {}
    spec: dict[str, Any] = {}
    if name in OVERCOMMIT:
        spec["overcommit"] = OVERCOMMIT[name]
    return {
        "apiVersion": "vm.neon.tech/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {
            "schedulerName": "autoscale-scheduler",
            "guest": {
                "cpus": {"min": 1, "max": max_[0], "use": use[0]},
                "memorySlots": {"min": 1, "max": max_[1], "use": use[1]},
                "memorySlotSize": "1Gi",
            },
            **spec,
        },
        "status": {"podName": pod},
    }


def migration_obj(name: str, vm: str, source_pod: str, phase: str) -> Raw:
    return {
        "apiVersion": "vm.neon.tech/v1",
        "kind": "VirtualMachineMigration",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"vmName": vm},
        "status": {"phase": phase, "sourcePodName": source_pod},
    }


@dataclass
class Agent:
    requested: Amounts
    last_permit: Amounts | None  # the permit it was last answered
    sent: Amounts | None  # the lastPermit it sent then


@dataclass
class World:
    """The long-running run: the cluster, its feed, and what each agent last asked."""

    cluster: Cluster = field(default_factory=Cluster)
    agents: dict[str, Agent] = field(default_factory=dict)
    generation: int = 0
    # VMs whose maximum went down while running: an agent may hold more
    # than the new maximum (what a restart holds) until it reports.
    lowered: set[str] = field(default_factory=set)
    # Pods we Reserved (at their VM's use) rather than first saw bound.
    reserved_by_us: set[str] = field(default_factory=set)

    @property
    def state(self) -> State:
        feed = self.cluster.feed
        assert feed is not None
        assert feed.state is not None
        return feed.state

    def uid(self) -> str:
        self.generation += 1
        return f"uid-{self.generation}"

    def vm_raw(self, name: str) -> Raw | None:
        return self.cluster.get(VM_RESOURCE, f"{NS}/{name}")

    def vm_guest(self, name: str) -> tuple[tuple[int, int], tuple[int, int]] | None:
        raw = self.vm_raw(name)
        if raw is None:
            return None
        guest = raw["spec"]["guest"]
        cpus, slots = guest["cpus"], guest["memorySlots"]
        return (cpus["use"], slots["use"]), (cpus["max"], slots["max"])

    def set_vm(self, name: str, use: tuple[int, int], max_: tuple[int, int]) -> None:
        use = (min(use[0], max_[0]), min(use[1], max_[1]))
        guest = self.vm_guest(name)
        if guest is not None and (max_[0] < guest[1][0] or max_[1] < guest[1][1]):
            self.lowered.add(name)
        self.cluster.put(VM_RESOURCE, f"{NS}/{name}", vm_obj(name, use, max_, f"{name}-pod"))


CPUS = st.integers(1, 4)
NODE_CPU = st.integers(2, 16).map(lambda n: n * CPU)
NODE_MEM = st.integers(2, 16).map(lambda n: n * GI)
AMOUNT = st.builds(
    Amounts, st.integers(1, 4).map(lambda n: n * CPU), st.integers(1, 4).map(lambda n: n * GI)
)

_vm_op = st.tuples(st.just("vm"), st.sampled_from(VMS), CPUS, CPUS, CPUS, CPUS)
_vm_bound = st.tuples(st.just("vm-bound"), st.sampled_from(VMS), st.sampled_from(NODE_NAMES))
_schedule = st.tuples(
    st.just("schedule"), st.sampled_from(VMS + PLAIN), st.sampled_from(NODE_NAMES)
)
_agent_op = st.tuples(st.just("agent"), st.sampled_from(AUTOSCALED), AMOUNT, st.booleans())
_applies = st.tuples(st.just("agent-applies"), st.sampled_from(AUTOSCALED))
# one_of picks a branch uniformly: the VM and agent branches are listed
# several times so that most runs have VMs with agents.
operations = st.one_of(
    _vm_op,
    _vm_op,
    _vm_op,
    _vm_bound,
    _vm_bound,
    _schedule,
    _schedule,
    _agent_op,
    _agent_op,
    _agent_op,
    _applies,
    _applies,
    st.tuples(st.just("node"), st.sampled_from(NODE_NAMES), NODE_CPU, NODE_MEM),
    st.tuples(st.just("node-gone"), st.sampled_from(NODE_NAMES)),
    st.tuples(
        st.just("plain"),
        st.sampled_from(PLAIN),
        st.sampled_from(NODE_NAMES),
        st.integers(0, 3 * CPU),
        st.integers(0, 3 * GI),
    ),
    st.tuples(st.just("resize"), st.sampled_from(VMS), CPUS, CPUS),
    st.tuples(st.just("max"), st.sampled_from(VMS), CPUS, CPUS),
    st.tuples(st.just("deleted"), st.sampled_from(VMS + PLAIN)),
    st.tuples(st.just("terminal"), st.sampled_from(VMS + PLAIN)),
    st.tuples(st.just("vm-deleted"), st.sampled_from(VMS)),
    st.tuples(st.just("migration"), st.sampled_from(VMS)),
    st.tuples(
        st.just("migration-end"), st.sampled_from(VMS), st.sampled_from(["Succeeded", "Failed"])
    ),
)


def pod_key(name: str) -> str:
    pod = f"{name}-pod" if name in VMS else name
    return f"{NS}/{pod}"


def apply(world: World, op: tuple[Any, ...]) -> None:  # noqa: PLR0915 - one branch per event kind
    cluster, kind = world.cluster, op[0]
    if kind == "node":
        cluster.put(NODES, op[1], node_obj(op[1], op[2], op[3]))
    elif kind == "node-gone":
        cluster.put(NODES, op[1], None)
    elif kind == "plain":
        name, node, cpu, mem = op[1:]
        old = cluster.get(PODS, pod_key(name))
        uid = old["metadata"]["uid"] if old is not None else world.uid()
        cluster.put(PODS, pod_key(name), pod_obj(name, node, uid=uid, cpu=cpu, mem=mem))
    elif kind == "vm":
        name, use_cpu, use_mem, max_cpu, max_mem = op[1:]
        world.set_vm(name, (use_cpu, use_mem), (max(use_cpu, max_cpu), max(use_mem, max_mem)))
    elif kind == "vm-bound":  # bound by someone else (or before we started)
        name, node = op[1:]
        if cluster.get(PODS, pod_key(name)) is None:
            raw = pod_obj(f"{name}-pod", node, uid=world.uid(), vm=name)
            cluster.put(PODS, pod_key(name), raw)
    elif kind == "schedule":
        _schedule(world, op[1], op[2])
    elif kind in ("resize", "max"):
        guest = world.vm_guest(op[1])
        if guest is not None:
            use, max_ = guest
            if kind == "resize":
                world.set_vm(op[1], (op[2], op[3]), max_)
            else:
                world.set_vm(op[1], use, (op[2], op[3]))
    elif kind == "deleted":
        cluster.put(PODS, pod_key(op[1]), None)
        world.agents.pop(pod_key(op[1]), None)
        world.reserved_by_us.discard(pod_key(op[1]))
    elif kind == "terminal":
        raw = cluster.get(PODS, pod_key(op[1]))
        if raw is not None:
            raw = copy.deepcopy(dict(raw))
            raw["status"] = {"phase": "Succeeded"}
            cluster.put(PODS, pod_key(op[1]), raw)
            world.agents.pop(pod_key(op[1]), None)
            world.reserved_by_us.discard(pod_key(op[1]))
    elif kind == "vm-deleted":
        cluster.put(VM_RESOURCE, f"{NS}/{op[1]}", None)
    elif kind == "agent":
        _agent(world, pod_key(op[1]), op[2], send_last_permit=op[3])
    elif kind == "agent-applies":  # the agent resizes its VM to its permit (NeonVM patch)
        agent, guest = world.agents.get(pod_key(op[1])), world.vm_guest(op[1])
        if agent is not None and agent.last_permit is not None and guest is not None:
            permit = agent.last_permit
            world.set_vm(op[1], (permit.cpu // CPU, permit.mem // GI), guest[1])
    elif kind == "migration":
        _migration(world, op[1], "Running")
    elif kind == "migration-end":
        _migration(world, op[1], op[2])


def _schedule(world: World, name: str, node: str) -> None:
    """Reserve, then bind: the pod appears bound to the node."""
    cluster, key = world.cluster, pod_key(name)
    if cluster.get(PODS, key) is not None:
        return
    state, uid = world.state, world.uid()
    vm = None
    if name in VMS:
        raw = world.vm_raw(name)
        if raw is None:
            return
        vm = vm_info(raw)
        amount = Amounts(vm.cpu_use, vm.mem_use)
        pod = pod_obj(f"{name}-pod", node, uid=uid, vm=name)
    else:
        amount = Amounts(CPU, GI)
        pod = pod_obj(name, node, uid=uid, cpu=CPU, mem=GI)
    if state.reserve(key, uid, node, amount, vm):
        world.reserved_by_us.add(key)
        cluster.put(PODS, key, pod)


def _agent(world: World, key: str, resources: Amounts, *, send_last_permit: bool) -> None:
    state = world.state
    pod = state.pods.get(key)
    if pod is None:
        return
    node = state.nodes[pod.node]
    agent = world.agents.get(key)
    sent = agent.last_permit if agent is not None and send_last_permit else None
    try:
        outcome = handle_request(
            state,
            AgentInput(key, resources, node.unit, sent, 0.5, check_unit=False),
            migration_allowed=False,
        )
    except RequestError:
        return
    world.agents[key] = Agent(resources, outcome.permit, sent)


def _migration(world: World, vm: str, phase: str) -> None:
    """A live migration of the VM's pod: the migration object and the
    source pod's ownerReference (NeonVM sets it as the migration starts)."""
    cluster, key = world.cluster, pod_key(vm)
    name = f"mig-{vm}"
    raw = cluster.get(PODS, key)
    if phase == "Running" and raw is None:
        return
    if phase != "Running" and cluster.get(MIGRATION_RESOURCE, f"{NS}/{name}") is None:
        return
    cluster.put(MIGRATION_RESOURCE, f"{NS}/{name}", migration_obj(name, vm, f"{vm}-pod", phase))
    if raw is not None and phase == "Running":
        owned = copy.deepcopy(dict(raw))
        owned["metadata"] = dict(owned["metadata"])
        owned["metadata"]["ownerReferences"] = pod_obj("x", "", uid="x", owner=name)["metadata"][
            "ownerReferences"
        ]
        cluster.put(PODS, key, owned)


def start(cluster: Cluster) -> ClusterFeed:
    feed = ClusterFeed(cluster, cluster)
    cluster.feed = feed
    feed.start(make_config())
    return feed


def restarted(world: World) -> State:
    """A fresh feed over the same objects: the state a restart builds."""
    feed = ClusterFeed(world.cluster, world.cluster)
    return feed.start(make_config())


def known_use(world: World, pod: PodState) -> Amounts:
    """What the objects say the pod uses: its VM's ``use``, else its requests."""
    if pod.vm is None:
        return pod.reserved
    return Amounts(pod.vm.cpu_use, pod.vm.mem_use)


def _shape(pod: PodState) -> tuple[Any, ...]:
    return (pod.node, pod.uid, pod.vm_key, pod.migrating, pod.migration_target)


def compare(world: World, fresh: State) -> None:
    long = world.state
    long.check_invariants()
    fresh.check_invariants()
    budgets = {name: node.budget for name, node in long.nodes.items() if node.budget}
    assert budgets == {name: node.budget for name, node in fresh.nodes.items() if node.budget}
    assert {k: _shape(p) for k, p in long.pods.items()} == {
        k: _shape(p) for k, p in fresh.pods.items()
    }
    assert long.pod_index() == fresh.pod_index()
    for key, pod in long.pods.items():
        again = fresh.pods[key]
        assert again.vm == pod.vm, key
        use = known_use(world, again)
        assert again.reserved.minus(again.buffer) == use, (key, again)
        if pod.vm is None or pod.vm.name not in world.lowered:
            assert pod.reserved.fits_in(again.reserved), (key, pod, again)
        if not pod.agent_contact:  # (with contact: compared once its agent reports)
            assert pod.reserved.minus(pod.buffer) == use, (key, pod, again)
        if pod.vm is None or not pod.vm.autoscaling_enabled:
            assert (pod.reserved, pod.buffer) == (again.reserved, again.buffer), (key, pod, again)


def _report(state: State, key: str, holds: Amounts) -> bool:
    """The pod's agent reports what it holds (its permit, within its VM's
    bounds) with that as ``lastPermit``; False if refused."""
    pod = state.pods[key]
    assert pod.vm is not None
    vm = pod.vm
    holds = Amounts(min(holds.cpu, vm.cpu_max), min(holds.mem, vm.mem_max))
    node = state.nodes[pod.node]
    try:
        handle_request(
            state,
            AgentInput(key, holds, node.unit, holds, 0.5, check_unit=False),
            migration_allowed=False,
        )
    except RequestError:
        return False
    return True


def recontact(world: World, fresh: State) -> set[str]:
    """Every agent that had contacted us reports what it holds again, to
    the restarted state (as Neon's agents do to a new scheduler) and to the
    long-running one (its next request): the pods both answered."""
    answered = set()
    long = world.state
    for key, agent in sorted(world.agents.items()):
        held = long.pods.get(key)
        if held is None or not held.agent_contact or held.vm is None or agent.last_permit is None:
            continue
        reported = key in fresh.pods and _report(fresh, key, agent.last_permit)
        if reported and _report(long, key, agent.last_permit):
            answered.add(key)
    return answered


def _used(state: State) -> dict[str, Amounts]:
    """Per node, what its pods are known to use (reserved less buffers)."""
    return {
        name: node.reserved.minus(node.buffer)
        for name, node in state.nodes.items()
        if node.budget is not None or node.pods
    }


def assert_converged(world: World, fresh: State, answered: set[str]) -> None:
    """Pods whose agents reported, and pods no agent scales, are held alike;
    an autoscaled VM no agent has contacted is held at its maximum after
    the restart, as before it unless Reserve held it at its use."""
    long = world.state
    for key, pod in long.pods.items():
        again = fresh.pods[key]
        autoscaled = pod.vm is not None and pod.vm.autoscaling_enabled
        if pod.agent_contact and key not in answered:
            continue  # refused (e.g. told to migrate): nothing to compare
        if autoscaled and not pod.agent_contact:
            assert pod.vm is not None
            top = Amounts(pod.vm.cpu_max, pod.vm.mem_max)
            use = Amounts(pod.vm.cpu_use, pod.vm.mem_use)
            assert (again.reserved, again.buffer) == (top, top.minus(use)), (key, again)
            alike = [(again.reserved, again.buffer)]
            if key in world.reserved_by_us:  # Reserve held it at its use
                alike.append((use, ZERO))
            assert (pod.reserved, pod.buffer) in alike, (key, pod, again)
            continue
        assert (pod.reserved, pod.buffer) == (again.reserved, again.buffer), (key, pod, again)
    if all(key in answered for key, pod in long.pods.items() if pod.agent_contact):
        assert _used(long) == _used(fresh)


def run(ops: Iterable[tuple[Any, ...]]) -> World:
    world = World()
    for name in NODE_NAMES:
        world.cluster.put(NODES, name, node_obj(name, 8 * CPU, 8 * GI))
    start(world.cluster)
    for name in VMS:  # VMs exist from the start (``vm-deleted`` and ``vm`` change that)
        world.set_vm(name, (1, 1), (4, 4))
    for op in ops:
        apply(world, op)
        world.state.check_invariants()
    return world


def check_restart(ops: Iterable[tuple[Any, ...]]) -> None:
    world = run(ops)
    fresh = restarted(world)
    compare(world, fresh)
    answered = recontact(world, fresh)
    fresh.check_invariants()
    world.state.check_invariants()
    assert_converged(world, fresh, answered)


@settings(max_examples=400, deadline=None)
@given(st.lists(operations, min_size=5, max_size=40))
def test_a_restart_rebuilds_the_long_running_accounting(ops: list[tuple[Any, ...]]) -> None:
    check_restart(ops)


@pytest.mark.parametrize(
    "ops",
    [
        pytest.param(
            [("vm-bound", "v0", "n1"), ("node-gone", "n1")],
            id="a deleted node's pods are still held, as a restart counts them",
        ),
        pytest.param(
            [("vm-bound", "v0", "n1"), ("resize", "v0", 2, 1)],
            id="a VM held at its maximum keeps buffer max - use when resized",
        ),
        pytest.param(
            [("vm", "v0", 1, 2, 4, 4), ("vm-bound", "v0", "n1"), ("vm", "v0", 1, 1, 1, 2)],
            id="a VM held at its maximum stays there when resized and its maximum lowered",
        ),
        pytest.param(
            [("vm-bound", "v0", "n1"), ("agent", "v0", Amounts(4 * CPU, 8 * GI), False)],
            id="an increase stops at the VM's maximum",
        ),
        pytest.param(
            [("vm-bound", "v0", "n1"), ("vm-deleted", "v0")],
            id="a VM deleted while its pod runs: the pod counts by its requests",
        ),
    ],
)
def test_restart_regressions(ops: list[tuple[Any, ...]]) -> None:
    check_restart(ops)


def test_a_pod_without_owner_references_seen_after_its_migration_is_migrating() -> None:
    """Restart regression: a VM's pod recreated (no ownerReferences, as from
    an older NeonVM) while a migration naming it runs is migrating after a
    restart; the long-running state applied the migration only to the pod
    that existed when the migration came."""
    world = run([("vm-bound", "v0", "n1"), ("migration", "v0"), ("deleted", "v0")])
    apply(world, ("vm-bound", "v0", "n1"))
    assert world.state.pods[pod_key("v0")].migrating  # before: False
    check_restart(
        [("vm-bound", "v0", "n1"), ("migration", "v0"), ("deleted", "v0"), ("vm-bound", "v0", "n1")]
    )
