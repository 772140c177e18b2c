"""The AutoscaleEnforcer demo: NeonVM VMs placed by their current size, and
autoscaler-agents asking for more, on a real, local control plane.

Run it with ``make demo`` (after the main demo) or
``PYTHONPATH=. .venv/bin/python examples/autoscale_demo.py``. It

1. starts etcd and kube-apiserver on loopback and installs our minimal NeonVM
   CRDs (``tests/support/neonvm-crds.yaml``);
2. applies ``examples/autoscale/cluster.yaml`` (two 5 CPU / 5Gi nodes, the
   plugin's ConfigMap) and starts pyscheduler with
   ``examples/autoscale/scheduler-config.yaml`` (AutoscaleEnforcer enabled);
3. applies ``examples/autoscale/vms.yaml`` (three VMs of 2 CPU / 2Gi, maximum
   4 / 4, and their runner pods) and waits until all three are placed;
4. plays three autoscaler-agents over HTTP on port 10299, each speaking a
   different protocol version: one is granted what it asks, one partially,
   one denied, as each node's room dictates;
5. prints the plugin's state dump and its agent metrics, then stops everything.

Same invariant as the main demo: every process it started is stopped and its
files removed before it exits.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

from examples.demo import (
    DEMO_OPEN_PATHS,
    DemoError,
    drive,
    http_get,
    items,
    kubectl,
    say,
    table,
    wait_for,
    wait_ready,
)
from localcluster import ControlPlane
from localcluster.cluster import free_port
from localcluster.process import ComponentProcess

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "autoscale"
CONFIG = EXAMPLE / "scheduler-config.yaml"
CLUSTER = EXAMPLE / "cluster.yaml"
VMS = EXAMPLE / "vms.yaml"
CRDS = ROOT / "tests" / "support" / "neonvm-crds.yaml"
NAMESPACE = "vms"
AGENT_PORT = 10299
RUNNERS = ("compute-a-runner", "compute-b-runner", "compute-c-runner")
Obj = dict[str, Any]


def post(url: str, body: Obj) -> tuple[int, str]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def start_scheduler(plane: ControlPlane, port: int) -> ComponentProcess:
    binary = Path(sys.executable).parent / "pyscheduler"
    argv = [
        str(binary),
        f"--config={CONFIG}",
        f"--kubeconfig={plane.kubeconfig}",
        f"--secure-port={port}",
        "--bind-address=127.0.0.1",
        # The demo reads these without a token; in a cluster only the probes are open.
        f"--authorization-always-allow-paths={DEMO_OPEN_PATHS},/debug/plugins/*",
    ]
    process = ComponentProcess("pyscheduler", argv, plane.layout.logs / "pyscheduler.log")
    process.start()
    return process


def placements(plane: ControlPlane) -> dict[str, str] | None:
    pods = items(plane, f"/api/v1/namespaces/{NAMESPACE}/pods")
    placed = {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in pods}
    return placed if len(placed) == len(RUNNERS) and all(placed.values()) else None


def agent_plan(placed: dict[str, str]) -> list[tuple[str, str, Obj, Obj]]:
    """(what, pod, request resources, extra fields) for the three agents: the
    lone VM grows into its node's room; of the two sharing a node, the first
    gets part of what is left, the second nothing."""
    by_node: dict[str, list[str]] = {}
    for pod, node in sorted(placed.items()):
        by_node.setdefault(node, []).append(pod)
    (lone,) = next(pods for pods in by_node.values() if len(pods) == 1)
    first, second = next(pods for pods in by_node.values() if len(pods) == 2)
    return [
        ("v2.1 asks 2 -> 4 CPU / 4 slots", lone, {"vCPUs": 4, "mem": 4}, {"protoVersion": 4}),
        (
            "v4.0 asks 2 -> 4 CPU / 4Gi",
            first,
            {"vCPUs": 4, "mem": "4Gi"},
            {"protoVersion": 6, "computeUnit": {"vCPUs": 1, "mem": "1Gi"}},
        ),
        (
            "v5.0 asks 2 -> 3 CPU / 3Gi",
            second,
            {"vCPUs": "3", "mem": "3Gi"},
            {"protoVersion": 7, "computeUnit": {"vCPUs": 1, "mem": "1Gi"}},
        ),
    ]


def run(plane: ControlPlane, processes: list[ComponentProcess]) -> None:
    say("[1/5] starting etcd and kube-apiserver; installing our minimal NeonVM CRDs")
    plane.start()
    kubectl(plane, "apply", f"--filename={CRDS}")
    wait_for(lambda: _served(plane), 30, "VirtualMachine CRD served")
    say(f"[2/5] kubectl apply -f {CLUSTER.relative_to(ROOT)}")
    say(f"      pyscheduler --config {CONFIG.relative_to(ROOT)}")
    kubectl(plane, "apply", f"--filename={CLUSTER}")
    port = free_port()
    scheduler = start_scheduler(plane, port)
    processes.append(scheduler)
    base = f"https://127.0.0.1:{port}"
    wait_ready(scheduler, base)
    say(f"  pid {scheduler.pid} ready; agents POST to http://127.0.0.1:{AGENT_PORT}/")

    say(f"[3/5] kubectl apply -f {VMS.relative_to(ROOT)}  (3 VMs using 2 CPU / 2Gi, max 4 / 4)")
    kubectl(plane, "apply", f"--filename={VMS}")
    placed = wait_for(lambda: placements(plane), 30, "every VM pod placed")
    say("  placed by current size (by maximum only two would fit):")
    say(table(["POD", "NODE"], [[pod, node] for pod, node in sorted(placed.items())], "    "))

    say("[4/5] three autoscaler-agents ask for more")
    rows = []
    for what, pod, resources, extra in agent_plan(placed):
        body = {"pod": {"namespace": NAMESPACE, "name": pod}, "resources": resources}
        body |= {"metrics": {"loadAvg1M": 0.5}, **extra}
        status, answer = post(f"http://127.0.0.1:{AGENT_PORT}/", body)
        if status != 200:
            rows.append([pod, placed[pod], what, answer, f"HTTP {status}"])
            continue
        permit: Obj = json.loads(answer)["permit"]
        rows.append([pod, placed[pod], what, json.dumps(permit), _verdict(resources, permit)])
    say(table(["POD", "NODE", "REQUEST", "PERMIT", "VERDICT"], rows, "  "))

    say("[5/5] the plugin's view")
    status, dump = http_get(f"{base}/debug/plugins/autoscale-enforcer/state")
    if status != 200:
        raise DemoError(f"state dump: {status} {dump}")
    nodes = json.loads(dump)["nodes"]
    say(
        table(
            ["NODE", "RESERVED CPU", "RESERVED MEM", "PRESSURE CPU", "PRESSURE MEM"],
            [
                [
                    name,
                    f"{n['reserved']['cpu'] / 1000:g}/{n['total']['cpu'] / 1000:g}",
                    f"{n['reserved']['mem'] / 2**30:g}Gi/{n['total']['mem'] / 2**30:g}Gi",
                    f"{n['pressure']['cpu'] / 1000:g}",
                    f"{n['pressure']['mem'] / 2**30:g}Gi",
                ]
                for name, n in sorted(nodes.items())
            ],
            "  ",
        )
    )
    metrics = http_get(f"{base}/metrics")[1]
    say(
        "  "
        + "\n  ".join(
            line
            for line in metrics.splitlines()
            if line.startswith("autoscaling_plugin_resource_requests_total")
        )
    )
    say()


def _served(plane: ControlPlane) -> bool:
    try:
        plane.get_json("/apis/vm.neon.tech/v1/virtualmachines")
    except Exception:  # not served yet
        return False
    return True


def _cpu_milli(value: Any) -> int:
    text = str(value)
    return int(text[:-1]) if text.endswith("m") else int(float(text) * 1000)


def _verdict(asked: Obj, permit: Obj) -> str:
    if permit == asked or (
        _cpu_milli(permit["vCPUs"]) == _cpu_milli(asked["vCPUs"])
        and str(permit["mem"]) == str(asked["mem"])
    ):
        return "granted"
    if _cpu_milli(permit["vCPUs"]) > 2000:
        return "partially granted"
    return "denied (node full)"


def main() -> int:
    return drive(run)


if __name__ == "__main__":
    sys.exit(main())
