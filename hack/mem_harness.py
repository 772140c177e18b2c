"""In-process memory of the scheduler at the ``scale`` preset's shape (no API server).

Runs the simulator's engine (``scheduler.simulate``: the daemon's informers,
cache, queue, plugins and binding) over a ``MemoryCluster`` whose lists and
watch events are handed over as fresh orjson decodes of the served bytes, as
the wire client does, and whose objects look like what kube-apiserver serves
for the bench's templates (defaults, admission's tolerations, managedFields).
After the last bind it reports the scheduler side's retained memory by
source line (tracemalloc; allocations made by the in-memory cluster itself
are left out) and, with TRACE=0, the process's peak RSS (VmHWM) instead (the
in-memory cluster's own objects included). COMPACT=0 turns off the informers'
compaction (``scheduler.informers.compact``) for a before/after figure.

    NODES=1500 PODS=3000 PYTHONPATH=. .venv/bin/python hack/mem_harness.py
"""

from __future__ import annotations

import asyncio
import copy
import os
import random
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
from prometheus_client import CollectorRegistry

from bench.simulate import CONFIG, SCHEDULER_NAME
from bench.workload import MEASURED_NAMESPACE, node_body, node_name, pod_body, pod_name
from scheduler.config import parse_config
from scheduler.cycle.concurrency import BindConcurrency
from scheduler.engine.assembly import build_registry, resolve
from scheduler.engine.core import Engine
from scheduler.kube.resources import NODES, PODS, ResourceType
from scheduler.simulate.clock import SimClock
from scheduler.simulate.memory import MemoryCluster

CREATED = "2026-11-30T23:50:36Z"

_POD_FIELDS_V1 = {
    "f:spec": {
        "f:containers": {
            'k:{"name":"pause"}': {
                ".": {},
                "f:image": {},
                "f:imagePullPolicy": {},
                "f:name": {},
                "f:ports": {
                    ".": {},
                    'k:{"containerPort":80,"protocol":"TCP"}': {
                        ".": {},
                        "f:containerPort": {},
                        "f:protocol": {},
                    },
                },
                "f:resources": {
                    ".": {},
                    "f:limits": {".": {}, "f:cpu": {}, "f:memory": {}},
                    "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}},
                },
                "f:terminationMessagePath": {},
                "f:terminationMessagePolicy": {},
            }
        },
        "f:dnsPolicy": {},
        "f:enableServiceLinks": {},
        "f:restartPolicy": {},
        "f:schedulerName": {},
        "f:securityContext": {},
        "f:terminationGracePeriodSeconds": {},
    }
}


def served_pod(index: int) -> dict[str, Any]:
    """``pod_body`` as kube-apiserver serves it back (captured from a bench run)."""
    pod = pod_body(pod_name(index), MEASURED_NAMESPACE, SCHEDULER_NAME)
    pod["metadata"].update(
        creationTimestamp=CREATED,
        generation=1,
        managedFields=[
            {
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": copy.deepcopy(_POD_FIELDS_V1),
                "manager": "Python",
                "operation": "Update",
                "time": CREATED,
            }
        ],
    )
    container = pod["spec"]["containers"][0]
    container.update(
        imagePullPolicy="IfNotPresent",
        terminationMessagePath="/dev/termination-log",
        terminationMessagePolicy="File",
    )
    container["ports"][0]["protocol"] = "TCP"
    pod["spec"].update(
        dnsPolicy="ClusterFirst",
        enableServiceLinks=True,
        preemptionPolicy="PreemptLowerPriority",
        priority=0,
        restartPolicy="Always",
        securityContext={},
        terminationGracePeriodSeconds=30,
        tolerations=[
            {
                "effect": "NoExecute",
                "key": f"node.kubernetes.io/{taint}",
                "operator": "Exists",
                "tolerationSeconds": 300,
            }
            for taint in ("not-ready", "unreachable")
        ],
    )
    pod["status"] = {"phase": "Pending", "qosClass": "Guaranteed"}
    return pod


def served_node(index: int) -> dict[str, Any]:
    node = node_body(node_name(index))
    node["metadata"]["creationTimestamp"] = CREATED
    status = node["status"]
    status["allocatable"] = dict(status["capacity"])
    status["conditions"][0].update(lastHeartbeatTime=None, lastTransitionTime=None)
    status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 0}}
    status["nodeInfo"] = dict.fromkeys(
        (
            "architecture",
            "bootID",
            "containerRuntimeVersion",
            "kernelVersion",
            "kubeProxyVersion",
            "kubeletVersion",
            "machineID",
            "operatingSystem",
            "osImage",
            "systemUUID",
        ),
        "",
    )
    return node


class WireCluster(MemoryCluster):
    """Lists and watch events as fresh decodes of their JSON, as from the wire."""

    async def list(self, resource: ResourceType, **kwargs: Any) -> dict[str, Any]:
        page = await super().list(resource, **kwargs)
        return _from_wire(page)

    async def watch(self, resource: ResourceType, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        async for event in super().watch(resource, **kwargs):
            yield _from_wire(event)


def _from_wire(value: dict[str, Any]) -> dict[str, Any]:
    decoded: dict[str, Any] = orjson.loads(orjson.dumps(value))
    return decoded


def _deep_size(root: Any) -> int:
    """Bytes of ``root`` and everything it holds, each object counted once."""
    seen: set[int] = set()
    stack = [root]
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple):
            stack.extend(obj)
    return total


def _memory_status() -> dict[str, str]:
    """VmHWM (peak RSS) and VmRSS of this process."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmHWM", "VmRSS"):
            found[name] = value.strip()
    return found


async def run(nodes: int, pods: int, trace: bool) -> dict[str, Any]:
    config = parse_config(CONFIG)
    registry = build_registry()
    clock = SimClock(time.time())
    objects = [served_node(i) for i in range(nodes)] + [served_pod(i) for i in range(pods)]
    if trace:
        tracemalloc.start(6)
    cluster = WireCluster(objects, clock.wall)
    del objects
    engine = Engine(
        config,
        resolve(config, registry),
        registry,
        cluster,
        clock=clock,
        hostname="mem-harness",
        metrics_registry=CollectorRegistry(),
        binds=BindConcurrency(64, adaptive=False),
        rng=random.Random(0),
    )
    if os.environ.get("COMPACT") == "0":  # the informers as they were before compaction
        for informer in engine.informer_factory.informers():
            informer._transform = None  # a before/after switch for this harness only
    started = time.process_time()
    async with asyncio.TaskGroup() as group:
        tasks = [
            group.create_task(engine.informer_factory.run()),
            group.create_task(engine.event_sink.run()),
            group.create_task(engine.status_writer.run()),
        ]
        await engine.informer_factory.wait_synced()
        synced = time.process_time()
        tasks.append(group.create_task(engine.queue.run()))
        tasks.append(group.create_task(engine.scheduler.run()))
        store = engine.informer_factory.informer(PODS).store
        while True:
            if sum(1 for pod in store.list() if pod["spec"].get("nodeName")) >= pods:
                break
            await asyncio.sleep(0.5)
        done = time.process_time()
        result: dict[str, Any] = {
            "nodes": nodes,
            "pods": pods,
            "sync_cpu_s": round(synced - started, 2),
            "cpu_per_pod_ms": round((done - synced) * 1000 / max(pods, 1), 3),
        }
        if trace:
            result["top"] = _top(tracemalloc.take_snapshot(), pods)
        else:
            result.update(_memory_status())
            for resource in (PODS, NODES):
                objects = engine.informer_factory.informer(resource).store.list()
                result[f"{resource.plural}_store_mib"] = round(_deep_size(objects) / 2**20, 1)
        for task in tasks:
            task.cancel()
    return result


_WIRE_DECODE = f"{__file__}:{_from_wire.__code__.co_firstlineno + 1}"


def _top(snapshot: tracemalloc.Snapshot, pods: int, limit: int = 25) -> list[str]:
    """Scheduler-side retained memory by its innermost scheduler or plugin frame;
    what the in-memory cluster allocated itself is left out, its wire copies
    (what the informers hold) are not."""
    total = 0
    by_line: dict[str, int] = {}
    for stat in snapshot.statistics("traceback"):
        frames = [f"{frame.filename}:{frame.lineno}" for frame in reversed(stat.traceback)]
        wire = frames[0] == _WIRE_DECODE
        if not wire and any("scheduler/simulate/" in frame for frame in frames):
            continue
        here = next(
            (f for f in frames if ("/scheduler/" in f or "/plugins/" in f) and "simulate" not in f),
            frames[0],
        )
        if wire:
            here = f"wire decode, for {here}"
        by_line[here] = by_line.get(here, 0) + stat.size
        total += stat.size
    lines = [f"total {total / 2**20:.1f} MiB ({total / max(pods, 1):.0f} B per pod)"]
    for where, size in sorted(by_line.items(), key=lambda item: -item[1])[:limit]:
        lines.append(f"{size / 2**20:8.1f} MiB  {where.replace(os.getcwd() + '/', '')}")
    return lines


def main() -> None:
    nodes = int(os.environ.get("NODES", "1500"))
    pods = int(os.environ.get("PODS", "3000"))
    trace = os.environ.get("TRACE", "1") != "0"
    result = asyncio.run(run(nodes, pods, trace))
    for line in result.pop("top", []):
        print(line)
    print(orjson.dumps(result).decode())


if __name__ == "__main__":
    main()
