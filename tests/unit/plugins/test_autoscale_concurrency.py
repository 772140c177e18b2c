"""AutoscaleEnforcer across its two processes: agents (real HTTP, threads)
racing Filter, Reserve, Unreserve and informer events (the event loop's),
with the authority in a real child process.

The property: whatever the interleaving, the authority never lets a node's
reservation go above its total (no overcommit), the daemon's mirror keeps
every counter equal to its pods' sum, no 200 carries a permit above the
request, and once quiet the mirror equals the authority's state. The node is
sized so that every resource is contended: VMs growing take exactly the room
Reserve wants.
"""

from __future__ import annotations

import asyncio
import http.client
import random
import threading
from typing import Any, cast

import orjson

from plugins.autoscale_enforcer import AutoscaleEnforcer, AutoscaleEnforcerArgs
from plugins.autoscale_enforcer.authority import Dump
from scheduler.framework import Code, CycleState, Handle, Pod
from scheduler.services.process import ProcessListener
from tests.support.builders import make_node, make_vm
from tests.unit.plugins.support import node_info, pod
from tests.unit.plugins.test_autoscale_plugin import FakeHandle, config_map, plain_pod, vm_pod

VMS = 3
AGENT_REQUESTS = 300
SCHEDULER_ROUNDS = 300


def agent(port: int, name: str, seed: int, errors: list[BaseException]) -> None:
    rng = random.Random(seed)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for _ in range(AGENT_REQUESTS):
            size = rng.choice((1, 2))
            body = {"protoVersion": 2, "pod": {"namespace": "default", "name": name}}
            body |= {"resources": {"vCPUs": size, "mem": size}, "metrics": None}
            connection.request("POST", "/", orjson.dumps(body))
            response = connection.getresponse()
            payload = response.read()
            assert response.status == 200, payload
            permit = orjson.loads(payload)["permit"]
            assert 1 <= permit["vCPUs"] <= size, permit
            assert 1 <= permit["mem"] <= size, permit
    except BaseException as error:  # reported by the main thread
        errors.append(error)
    finally:
        connection.close()


async def reserved_and_permitted(plugin: AutoscaleEnforcer, handle: FakeHandle, pod: Pod) -> bool:
    """Reserve then Permit, as the framework runs them: with a real child,
    Reserve only asks and Permit holds the pod until the answer."""
    if plugin.reserve(CycleState(), pod, "n1") is not None:
        return False
    status, _timeout = plugin.permit(CycleState(), pod, "n1")
    if status is None:
        return True
    assert status.code is Code.WAIT, status
    verdict = await asyncio.wait_for(handle.hold(pod).verdict, 30)
    if verdict is not None:
        plugin.unreserve(CycleState(), pod, "n1")  # the framework's roll-back
    return verdict is None


def check_mirror(plugin: AutoscaleEnforcer) -> None:
    state = plugin.state
    assert state is not None
    state.check_invariants()


def authority_dump(listener: ProcessListener) -> dict[str, Any]:
    return cast(dict[str, Any], listener.call(Dump(), timeout=30))


async def test_agents_over_http_racing_reserve_never_overcommit_and_the_mirror_converges() -> None:
    handle = FakeHandle()
    plugin = AutoscaleEnforcer(
        AutoscaleEnforcerArgs(agent_port=0, init_config_map_timeout_seconds=5),
        cast(Handle, handle),
        random.Random(1),
    )
    (listener,) = handle.services.process_listeners
    await listener.start("127.0.0.1")
    try:
        listener.update_gate(None)
        node = make_node("n1").allocatable(cpu="8", memory="8Gi", pods="110").obj()
        handle.informers.put("nodes", node)
        for i in range(VMS):
            raw = make_vm(f"vm{i}").cpus(1, 2, 1).memory_slots(1, 2, 1).pod_name(f"vm{i}-pod")
            handle.informers.put("virtualmachines", raw.obj())
            handle.informers.put("pods", vm_pod(f"vm{i}-pod", f"vm{i}", node="n1"))
        handle.informers.put("configmaps", config_map())
        await handle.services.start()
        await race(plugin, handle, listener)
    finally:
        await listener.stop()


async def race(plugin: AutoscaleEnforcer, handle: FakeHandle, listener: ProcessListener) -> None:
    node = make_node("n1").allocatable(cpu="8", memory="8Gi", pods="110").obj()
    # 8 CPUs / 8 GiB: the VMs at their maximum (2 each) leave exactly 2 for
    # the pods the scheduler reserves, which take 2 each.
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=agent, args=(listener.port, f"vm{i}-pod", i, errors))
        for i in range(VMS)
    ]
    for thread in threads:
        thread.start()
    rng = random.Random(99)
    vm_pods = [vm_pod(f"vm{i}-pod", f"vm{i}", node="n1") for i in range(VMS)]
    reserved: list[str] = []
    for round_ in range(SCHEDULER_ROUNDS):
        candidate = pod(plain_pod(f"p{round_}", cpu="2", memory="2Gi"))
        step = rng.random()
        if step < 0.5:
            info = node_info(node, *vm_pods, *(plain_pod(k.split("/")[1]) for k in reserved))
            fits = plugin.filter(CycleState(), candidate, info) is None
            if fits and await reserved_and_permitted(plugin, handle, candidate):
                reserved.append(candidate.key)
        elif step < 0.8 and reserved:
            key = reserved.pop(rng.randrange(len(reserved)))
            plugin.unreserve(CycleState(), pod(plain_pod(key.split("/")[1])), "n1")
        elif step < 0.9:  # informer events that change nothing the agents rely on
            i = rng.randrange(VMS)
            raw_vm = make_vm(f"vm{i}").cpus(1, 2, 1).memory_slots(1, 2, 1)
            handle.informers.put("virtualmachines", raw_vm.pod_name(f"vm{i}-pod").obj())
        else:
            handle.informers.put("nodes", node)
        check_mirror(plugin)
        await asyncio.sleep(0)  # the mirror's updates arrive on the loop
    await asyncio.to_thread(lambda: [thread.join() for thread in threads])
    assert errors == []
    dump = authority_dump(listener)  # also delivers every update sent before it
    node_dump = dump["nodes"]["n1"]
    assert node_dump["reserved"]["cpu"] <= node_dump["total"]["cpu"]
    assert node_dump["reserved"]["mem"] <= node_dump["total"]["mem"]
    assert len(reserved) == sum(1 for key in node_dump["pods"] if key.startswith("default/p"))
    check_mirror(plugin)
    mirror = plugin.state
    assert mirror is not None
    assert dump == orjson.loads(orjson.dumps(mirror.dump(), option=orjson.OPT_NON_STR_KEYS))
