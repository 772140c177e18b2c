"""``python -m bench.simulate``: the framework's own ceiling, no API server.

Runs a bench workload (``bench.workload``: scheduler_perf's node and pod
templates) through ``pyscheduler simulate``'s engine: the same informers,
cache, queue, plugins and binding cycles as the daemon, over an in-memory
cluster with simulated time. The init pods are bound round-robin before the
run (their requests count, as after scheduler_perf's init phase); the
measured pods are all pending. Reported: pods/s and CPU per pod from the
informers' sync to the last bind (the scheduling alone), and the whole run
including loading the snapshot.

Examples::

    python -m bench.simulate                          # SchedulingBasic, 5000 nodes
    python -m bench.simulate --nodes 500 --pods 1000 --out sim.json
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from typing import Any

import orjson

from bench.workload import (
    DEFAULT_PRESET,
    INIT_NAMESPACE,
    MEASURED_NAMESPACE,
    PRESETS,
    Workload,
    init_pod_name,
    node_body,
    node_name,
    pod_body,
    pod_name,
)
from scheduler.config import parse_config
from scheduler.engine.assembly import build_registry, resolve
from scheduler.kube.resources import PODS
from scheduler.simulate.run import Simulation

SCHEDULER_NAME = "pyscheduler"
CONFIG = f"""
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: {SCHEDULER_NAME}
"""


def objects(workload: Workload) -> list[dict[str, Any]]:
    nodes = [
        node_body(node_name(i), workload.template.node_labels(i)) for i in range(workload.nodes)
    ]
    init = []
    init_spec, init_labels = workload.template.init_pod()
    for index in range(workload.init_pods):
        pod = pod_body(
            init_pod_name(index), INIT_NAMESPACE, SCHEDULER_NAME, init_spec, labels=init_labels
        )
        pod["spec"]["nodeName"] = node_name(index % workload.nodes)
        init.append(pod)
    template = workload.template
    measured = [
        pod_body(
            pod_name(i),
            MEASURED_NAMESPACE,
            SCHEDULER_NAME,
            template.pod_spec,
            labels=template.pod_labels,
        )
        for i in range(workload.pods)
    ]
    # DRA's classes, slices and claim templates (the simulator plays the
    # resourceclaim controller, making each pod's claim from its template).
    extras = [body for _path, body in template.cluster_objects(workload.nodes)]
    for namespace in (INIT_NAMESPACE, MEASURED_NAMESPACE):
        extras += [body for _path, body in template.namespace_objects(namespace)]
    return [*nodes, *extras, *init, *measured]


def measure(workload: Workload, seed: int = 0) -> dict[str, Any]:
    config = parse_config(CONFIG)
    registry = build_registry()
    started_cpu, started_wall = time.process_time(), time.perf_counter()
    simulation = Simulation(
        config, resolve(config, registry), registry, objects(workload), seed=seed
    )
    outcome = asyncio.run(simulation.run())
    total_cpu = time.process_time() - started_cpu
    total_wall = time.perf_counter() - started_wall
    stats = outcome.stats
    bound = sum(
        1
        for pod in outcome.cluster.objects(PODS)
        if pod["metadata"]["namespace"] == MEASURED_NAMESPACE and pod["spec"].get("nodeName")
    )
    pods = max(workload.pods, 1)
    return {
        "workload": workload.name,
        "nodes": workload.nodes,
        "initPods": workload.init_pods,
        "pods": workload.pods,
        "bound": bound,
        "podsPerSecond": round(bound / stats.scheduling_wall_seconds, 1)
        if stats.scheduling_wall_seconds
        else None,
        "podsPerCpuSecond": round(bound / stats.scheduling_cpu_seconds, 1)
        if stats.scheduling_cpu_seconds
        else None,
        "cpuMillisecondsPerPod": round(1000 * stats.scheduling_cpu_seconds / pods, 3),
        "schedulingWallSeconds": round(stats.scheduling_wall_seconds, 3),
        "schedulingCpuSeconds": round(stats.scheduling_cpu_seconds, 3),
        "totalWallSeconds": round(total_wall, 3),
        "totalCpuSeconds": round(total_cpu, 3),
    }


def render(result: dict[str, Any]) -> str:
    return (
        f"simulate {result['workload']}: {result['nodes']} nodes, {result['initPods']} init pods, "
        f"{result['bound']}/{result['pods']} pods bound\n"
        f"  {result['podsPerSecond']} pods/s ({result['podsPerCpuSecond']} per CPU second), "
        f"{result['cpuMillisecondsPerPod']} ms CPU per pod "
        f"(scheduling: {result['schedulingWallSeconds']} s wall, "
        f"{result['schedulingCpuSeconds']} s CPU; whole run {result['totalWallSeconds']} s)\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.simulate", description=__doc__)
    parser.add_argument("--workload", choices=sorted(PRESETS), default=DEFAULT_PRESET)
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--init-pods", type=int)
    parser.add_argument("--pods", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="also write the result as JSON here")
    args = parser.parse_args(argv)
    workload = PRESETS[args.workload].resized(args.nodes, args.init_pods, args.pods)
    result = measure(workload, args.seed)
    sys.stdout.write(render(result))
    if args.out:
        with open(args.out, "wb") as out:
            out.write(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    return 0 if result["bound"] == workload.pods else 1


if __name__ == "__main__":
    sys.exit(main())
