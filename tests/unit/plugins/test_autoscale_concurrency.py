"""AutoscaleEnforcer under threads: agent requests (the listener's thread)
racing Filter, Reserve, Unreserve and informer events (the event loop's).

The property: whatever the interleaving, a node's reservation never goes
above its total (no overcommit), every counter equals its pods' sum, and no
200 carries a permit above the request. The node is sized so that every
resource is contended: VMs growing take exactly the room Reserve wants.
The switch interval is lowered so the threads interleave at fine grain.
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Iterator

import orjson
import pytest

from plugins.autoscale_enforcer import AutoscaleEnforcer
from plugins.autoscale_enforcer.state import Amounts
from scheduler.framework import CycleState, HttpRequest
from tests.support.builders import make_node, make_vm
from tests.unit.plugins.autoscale_support import amounts
from tests.unit.plugins.support import node_info, pod
from tests.unit.plugins.test_autoscale_plugin import FakeHandle, plain_pod, started, vm_pod

VMS = 3
AGENT_REQUESTS = 400
SCHEDULER_ROUNDS = 400


@pytest.fixture
def fine_grained_switching() -> Iterator[None]:
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def check(plugin: AutoscaleEnforcer, lock: threading.Lock) -> None:
    with lock:
        state = plugin.state
        assert state is not None
        state.check_invariants()
        node = state.nodes["n1"]
        assert node.reserved.fits_in(node.total), (node.reserved, node.total)


def agent(listener_handler: object, name: str, seed: int, errors: list[BaseException]) -> None:
    handler = listener_handler
    assert callable(handler)
    rng = random.Random(seed)
    try:
        for _ in range(AGENT_REQUESTS):
            size = rng.choice((1, 2))
            body = {"protoVersion": 2, "pod": {"namespace": "default", "name": name}}
            body |= {"resources": {"vCPUs": size, "mem": size}, "metrics": None}
            response = handler(HttpRequest("POST", "/", orjson.dumps(body)))
            assert response.status == 200, response.body
            permit = orjson.loads(response.body)["permit"]
            assert 1 <= permit["vCPUs"] <= size, permit
            assert 1 <= permit["mem"] <= size, permit
    except BaseException as error:  # reported by the main thread
        errors.append(error)


async def test_agents_racing_reserve_and_unreserve_never_overcommit(
    fine_grained_switching: None,
) -> None:
    def vms(handle: FakeHandle) -> None:
        for i in range(VMS):
            raw = make_vm(f"vm{i}").cpus(1, 2, 1).memory_slots(1, 2, 1).pod_name(f"vm{i}-pod")
            handle.informers.put("virtualmachines", raw.obj())
            handle.informers.put("pods", vm_pod(f"vm{i}-pod", f"vm{i}", node="n1"))

    plugin, handle = await started(before=vms)
    lock = plugin.lock
    (listener,) = handle.services.listeners
    # 8 CPUs / 8 GiB: the VMs at their maximum (2 each) leave exactly 2 for
    # the pods the scheduler reserves, which take 2 each.
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=agent, args=(listener.handler, f"vm{i}-pod", i, errors))
        for i in range(VMS)
    ]
    for thread in threads:
        thread.start()
    rng = random.Random(99)
    node = make_node("n1").allocatable(cpu="8", memory="8Gi", pods="110").obj()
    vm_pods = [vm_pod(f"vm{i}-pod", f"vm{i}", node="n1") for i in range(VMS)]
    reserved: list[str] = []
    reserve_ok = 0
    for round_ in range(SCHEDULER_ROUNDS):
        raw = plain_pod(f"p{round_}", cpu="2", memory="2Gi")
        candidate = pod(raw)
        step = rng.random()
        if step < 0.5:
            info = node_info(node, *vm_pods, *(plain_pod(k.split("/")[1]) for k in reserved))
            if plugin.filter(CycleState(), candidate, info) is None:
                status = plugin.reserve(CycleState(), candidate, "n1")
                if status is None:
                    reserved.append(candidate.key)
                    reserve_ok += 1
        elif step < 0.8 and reserved:
            key = reserved.pop(rng.randrange(len(reserved)))
            plugin.unreserve(CycleState(), pod(plain_pod(key.split("/")[1])), "n1")
        elif step < 0.9:  # informer events that change nothing the agents rely on
            i = rng.randrange(VMS)
            raw_vm = make_vm(f"vm{i}").cpus(1, 2, 1).memory_slots(1, 2, 1)
            handle.informers.put("virtualmachines", raw_vm.pod_name(f"vm{i}-pod").obj())
        else:
            handle.informers.put("nodes", node)
        check(plugin, lock)
    for thread in threads:
        thread.join()
    assert errors == []
    check(plugin, lock)
    with lock:
        state = plugin.state
        assert state is not None
        held = sum((p.reserved for p in state.nodes["n1"].pods.values()), Amounts(0, 0))
        assert held == state.nodes["n1"].reserved
        assert held.fits_in(amounts(8, 8))
