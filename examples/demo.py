"""The demo: pyscheduler placing a small workload on a real, local control plane.

Run it with ``make demo`` (which also builds everything on a fresh machine), or
``PYTHONPATH=. .venv/bin/python examples/demo.py``. It

1. starts etcd and kube-apiserver on loopback (``localcluster.ControlPlane``);
2. creates three nodes with ``kubectl apply -f examples/nodes.yaml``;
3. starts the scheduler as a real process, exactly as a Deployment would run
   it: ``pyscheduler --config examples/scheduler-config.yaml --kubeconfig ...``,
   and waits for ``/readyz``;
4. creates the pods of ``examples/pods.yaml`` and waits (polling, with a
   deadline) until the scheduler has acted on every pod it owns;
5. prints where each pod landed or why it waits, the nodes' usage, the
   scheduler's ``/debug/pods`` diagnosis of one waiting pod and a few metrics;
6. applies ``examples/preemption.yaml``: an urgent pod that fits nowhere
   preempts a lower-priority one and is bound to the node it was nominated to
   (the demo finishes the victim's termination, as a kubelet would);
7. applies ``examples/dra.yaml``: a simulated driver's DeviceClass and
   ResourceSlice; a pod whose claim selects a GPU by memory lands next to
   it, with the allocation written to its claim, and a pod asking for more
   GPUs than any node has waits with the reason;
8. snapshots the cluster with ``kubectl get -o yaml``, simulates it with one
   node fewer (``pyscheduler simulate --remove-node``) and explains the waiting
   pod with the kubectl plugin (``kubectl pyscheduler explain``);
9. stops the scheduler with SIGTERM, then the control plane.

Invariant: whatever happens (an error, Ctrl-C, SIGTERM), every process the demo
started is stopped and its temporary files are removed before it exits; the
children also die with the demo if it is killed outright.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import yaml
from prometheus_client.parser import text_string_to_metric_families

from localcluster import ControlPlane, ControlPlaneOptions
from localcluster.cluster import free_port
from localcluster.process import ComponentProcess
from scheduler.framework import Resource, parse_node, parse_pod

T = TypeVar("T")
Obj = dict[str, Any]

EXAMPLES = Path(__file__).resolve().parent
CONFIG = EXAMPLES / "scheduler-config.yaml"
NODES = EXAMPLES / "nodes.yaml"
PODS = EXAMPLES / "pods.yaml"
PREEMPTION = EXAMPLES / "preemption.yaml"
DRA = EXAMPLES / "dra.yaml"
DRA_POD, DRA_CLAIM = "gpu-trainer", "big-gpu"  # lands next to its device
DRA_WAITING = "gpu-hungry"  # its claim cannot be satisfied
URGENT_POD = "urgent"  # the preemptor in examples/preemption.yaml
NAMESPACE = "demo"
EXPLAINED_POD = "no-toleration"  # the waiting pod whose /debug/pods diagnosis is shown
# Read by the demo without a token (exact paths, or prefixes ending in *).
DEMO_OPEN_PATHS = "/healthz,/readyz,/livez,/metrics,/debug/pods/*"
READY_TIMEOUT = 30.0
ACT_TIMEOUT = 30.0
SIGTERM_TIMEOUT = 20.0
POD_SCHEDULED = "PodScheduled"
DEFAULT_SCHEDULER = "default-scheduler"
METRICS = (
    ("scheduler_schedule_attempts_total", "attempts by result"),
    ("scheduler_pending_pods", "pods waiting in each queue"),
    ("scheduler_unschedulable_pods", "unschedulable pods by the plugin that rejected them"),
)


class DemoError(RuntimeError):
    """Something the demo waited for did not happen."""


# --------------------------------------------------------------------- pure
def scheduler_name(config_path: Path) -> str:
    """The (first) profile's schedulerName in the scheduler configuration."""
    config = yaml.safe_load(config_path.read_text())
    return str(config["profiles"][0]["schedulerName"])


def manifest_order(path: Path, kind: str) -> list[str]:
    """Names of the objects of ``kind`` in a manifest file, in file order."""
    docs = yaml.safe_load_all(path.read_text())
    return [doc["metadata"]["name"] for doc in docs if doc and doc.get("kind") == kind]


def in_order(objects: Sequence[Obj], names: Sequence[str]) -> list[Obj]:
    """``objects`` sorted as ``names`` lists them; unlisted ones last, by name."""
    rank = {name: index for index, name in enumerate(names)}

    def key(obj: Obj) -> tuple[int, str]:
        name = str(obj["metadata"]["name"])
        return rank.get(name, len(rank)), name

    return sorted(objects, key=key)


def _condition(pod: Obj, kind: str) -> Obj | None:
    for item in (pod.get("status") or {}).get("conditions") or ():
        if item.get("type") == kind:
            return dict(item)
    return None


def outcome(pod: Obj, ours: str, node_count: int) -> tuple[str, bool]:
    """What happened to ``pod``, and whether that is settled (no more to wait for)."""
    spec = pod["spec"]
    scheduled = _condition(pod, POD_SCHEDULED) or {}
    if spec.get("nodeName"):
        if scheduled.get("status") == "True":
            return f"scheduled by {spec.get('schedulerName', DEFAULT_SCHEDULER)}", True
        return "placed by hand (spec.nodeName)", True
    gates = [gate["name"] for gate in spec.get("schedulingGates") or ()]
    if gates:
        return f"gated: {', '.join(gates)}", True
    owner = spec.get("schedulerName", DEFAULT_SCHEDULER)
    if owner != ours:
        return f"not ours: schedulerName={owner}", True
    if scheduled.get("status") == "False" and scheduled.get("message"):
        # A verdict reached before every node was known is not the last word.
        final = str(scheduled["message"]).startswith(f"0/{node_count} nodes")
        return f"{scheduled.get('reason')}: {scheduled['message']}", final
    return "pending: not attempted yet", False


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> str:
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers) - 1)]
    lines = []
    for row in [headers, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append(indent + "  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def _cpu(milli: int) -> str:
    return f"{milli // 1000}" if milli % 1000 == 0 else f"{milli / 1000:g}"


def _memory(size: int) -> str:
    gib = size / 2**30
    return f"{gib:g}Gi" if gib >= 1 else f"{size // 2**20}Mi"


def pod_rows(pods: Sequence[Obj], ours: str, node_count: int) -> list[list[str]]:
    return [
        [
            pod["metadata"]["name"],
            pod["spec"].get("nodeName") or "-",
            outcome(pod, ours, node_count)[0],
        ]
        for pod in pods
    ]


def node_rows(nodes: Sequence[Obj], pods: Sequence[Obj]) -> list[list[str]]:
    """Requested / allocatable per node, counting every bound pod, whoever bound it."""
    used: dict[str, Resource] = {}
    names: dict[str, list[str]] = {}
    for raw in pods:
        pod = parse_pod(raw)
        if pod.node_name and not pod.terminal:
            used[pod.node_name] = used.get(pod.node_name, Resource()) + pod.requests
            names.setdefault(pod.node_name, []).append(pod.name)
    rows = []
    for raw in nodes:
        node = parse_node(raw)
        taken, free = used.get(node.name, Resource()), node.allocatable
        taints = [
            f"{t['key']}={t.get('value', '')}:{t['effect']}"
            for t in raw["spec"].get("taints") or ()
        ]
        rows.append(
            [
                node.name,
                f"{_cpu(taken.milli_cpu)}/{_cpu(free.milli_cpu)}",
                f"{_memory(taken.memory)}/{_memory(free.memory)}",
                ", ".join(taints) or "-",
                ", ".join(names.get(node.name, ())) or "-",
            ]
        )
    return rows


def diagnosis_lines(body: Obj) -> list[str]:
    """The last attempt recorded by /debug/pods, one line per node's verdict."""
    attempts = body.get("attempts") or []
    if not attempts:
        return ["  (no attempt recorded)"]
    last = attempts[-1]
    lines = [f"  last attempt (cycle {last.get('cycle')}): {last.get('result')}"]
    if last.get("message"):
        lines.append(f"  {last['message']}")
    rows = [
        [node, str(verdict.get("plugin")), str(verdict.get("code")), "; ".join(verdict["reasons"])]
        for node, verdict in sorted((last.get("nodes") or {}).items())
    ]
    if rows:
        lines.append(table(["NODE", "PLUGIN", "CODE", "REASONS"], rows, indent="    "))
    return lines


def metric_lines(text: str, ours: str) -> list[str]:
    samples: dict[str, list[str]] = {name: [] for name, _ in METRICS}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in samples and sample.labels.get("profile", ours) == ours:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
                samples[sample.name].append(f"    {sample.name}{{{labels}}} {sample.value:g}")
    lines = []
    for name, what in METRICS:
        lines.append(f"  {what}:")
        lines.extend(sorted(samples[name]) or ["    (none)"])
    return lines


# ---------------------------------------------------------------------- I/O
def say(text: str = "") -> None:
    print(text, flush=True)


def wait_for(probe: Callable[[], T | None], timeout: float, what: str) -> T:
    """Poll ``probe`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise DemoError(f"{what}: not done within {timeout:g}s")
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)


def http_get(url: str) -> tuple[int, str]:
    # The ops port's certificate is self-signed: not verified for a loopback read.
    unverified = ssl.create_default_context()
    unverified.check_hostname = False
    unverified.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=5, context=unverified) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def kubectl(plane: ControlPlane, *args: str) -> None:
    argv = [str(plane.binary), "kubectl", f"--kubeconfig={plane.kubeconfig}", *args]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise DemoError(f"kubectl {' '.join(args)} failed:\n{result.stderr}")
    for line in result.stdout.splitlines():
        say(f"    {line}")


def items(plane: ControlPlane, path: str) -> list[Obj]:
    listed = plane.get_json(path)
    if not isinstance(listed, dict):
        raise DemoError(f"GET {path}: expected an object, got {type(listed).__name__}")
    found: list[Obj] = listed["items"]
    return found


def start_scheduler(plane: ControlPlane, port: int) -> ComponentProcess:
    binary = Path(sys.executable).parent / "pyscheduler"
    argv = [
        str(binary),
        f"--config={CONFIG}",
        f"--kubeconfig={plane.kubeconfig}",
        f"--secure-port={port}",
        "--bind-address=127.0.0.1",
        # The demo reads these without a token; in a cluster only the probes are open.
        f"--authorization-always-allow-paths={DEMO_OPEN_PATHS}",
    ]
    process = ComponentProcess("pyscheduler", argv, plane.layout.logs / "pyscheduler.log")
    process.start()
    return process


def wait_ready(process: ComponentProcess, base: str) -> None:
    def ready() -> bool:
        if not process.running():
            raise DemoError(f"pyscheduler exited with code {process.exit_code()}")
        try:
            return http_get(f"{base}/readyz")[0] == 200
        except OSError:
            return False

    wait_for(ready, READY_TIMEOUT, "pyscheduler ready")


def stop_scheduler(process: ComponentProcess) -> None:
    """SIGTERM, as the kubelet sends, and report how the scheduler exits."""
    if process.pid is None or not process.running():
        process.stop()
        return
    started = time.monotonic()
    os.kill(process.pid, signal.SIGTERM)
    try:
        code = wait_for(
            lambda: (process.exit_code(),) if not process.running() else None,
            SIGTERM_TIMEOUT,
            "pyscheduler exit after SIGTERM",
        )[0]
        elapsed = time.monotonic() - started
        say(f"  pyscheduler exited with code {code}, {elapsed:.1f}s after SIGTERM")
    except DemoError as error:
        say(f"  {error}; killing it")
    process.stop(grace_seconds=1.0)


# --------------------------------------------------------------------- demo
def run(plane: ControlPlane, processes: list[ComponentProcess]) -> None:
    ours = scheduler_name(CONFIG)
    began = time.monotonic()
    say("[1/8] starting etcd and kube-apiserver on loopback")
    plane.start()
    say(f"  API server {plane.server} ready in {time.monotonic() - began:.1f}s")

    say(f"[2/8] kubectl apply -f {NODES.relative_to(EXAMPLES.parent)}")
    kubectl(plane, "apply", f"--filename={NODES}")
    node_count = len(items(plane, "/api/v1/nodes"))

    port = free_port()
    say(f"[3/8] pyscheduler --config {CONFIG.relative_to(EXAMPLES.parent)} --secure-port {port}")
    started = time.monotonic()
    scheduler = start_scheduler(plane, port)
    processes.append(scheduler)
    base = f"https://127.0.0.1:{port}"
    wait_ready(scheduler, base)
    say(f"  pid {scheduler.pid}, GET {base}/readyz: 200 after {time.monotonic() - started:.1f}s")

    say(f"[4/8] kubectl apply -f {PODS.relative_to(EXAMPLES.parent)}")
    started = time.monotonic()
    kubectl(plane, "apply", f"--filename={PODS}")
    pods_path = f"/api/v1/namespaces/{NAMESPACE}/pods"

    def settled() -> list[Obj] | None:
        pods = items(plane, pods_path)
        done = all(outcome(pod, ours, node_count)[1] for pod in pods)
        return pods if done and pods else None

    acted = wait_for(settled, ACT_TIMEOUT, "the scheduler acting on every pod")
    pods = in_order(acted, manifest_order(PODS, "Pod"))
    say(f"  the scheduler acted on every pod within {time.monotonic() - started:.1f}s")

    say("[5/8] results")
    say()
    say(f"Pods (namespace {NAMESPACE}, this scheduler is {ours!r}):")
    say(table(["POD", "NODE", "OUTCOME"], pod_rows(pods, ours, node_count)))
    say()
    say("Nodes (requested/allocatable, counting pods placed by anyone):")
    nodes = in_order(items(plane, "/api/v1/nodes"), manifest_order(NODES, "Node"))
    rows = node_rows(nodes, pods)
    say(table(["NODE", "CPU", "MEMORY", "TAINTS", "PODS"], rows))
    say()
    url = f"{base}/debug/pods/{NAMESPACE}/{EXPLAINED_POD}"
    say(f"Why does {EXPLAINED_POD} wait?  GET {url}")
    status, body = http_get(url)
    if status != 200:
        raise DemoError(f"GET {url}: {status} {body}")
    for line in diagnosis_lines(json.loads(body)):
        say(line)
    say()
    say(f"Metrics  GET {base}/metrics")
    for line in metric_lines(http_get(f"{base}/metrics")[1], ours):
        say(line)
    say()
    later_steps(plane, base)


def later_steps(plane: ControlPlane, base: str) -> None:
    """Steps 6 to 8: preemption, devices, and the what-if tools."""
    preempt(plane)
    say()
    allocate_devices(plane)
    say()
    what_if(plane, base)
    say()


def preempt(plane: ControlPlane) -> None:
    """Step 6: a high-priority pod makes room for itself."""
    say(f"[6/8] kubectl apply -f {PREEMPTION.relative_to(EXAMPLES.parent)}")
    for attempt in range(3):  # admission may not know the new PriorityClass yet
        try:
            kubectl(plane, "apply", f"--filename={PREEMPTION}")
            break
        except DemoError:
            if attempt == 2:
                raise
            time.sleep(1.0)
    pods_path = f"/api/v1/namespaces/{NAMESPACE}/pods"

    def nominated() -> tuple[str, Obj] | None:
        pods = {pod["metadata"]["name"]: pod for pod in items(plane, pods_path)}
        node = (pods.get(URGENT_POD, {}).get("status") or {}).get("nominatedNodeName")
        victims = [pod for pod in pods.values() if pod["metadata"].get("deletionTimestamp")]
        return (node, victims[0]) if node and victims else None

    node, victim = wait_for(nominated, ACT_TIMEOUT, "the urgent pod nominated, a victim deleted")
    name = victim["metadata"]["name"]
    target = _condition(victim, "DisruptionTarget") or {}
    say(f"  {URGENT_POD} is nominated to {node}; {name} is terminating")
    say(f"    {name}: DisruptionTarget={target.get('status')} ({target.get('reason')})")
    say(f"  no kubelet here: finishing {name} off as its kubelet would (grace period 0)")
    kubectl(plane, "delete", "pod", name, f"--namespace={NAMESPACE}", "--grace-period=0", "--force")

    def bound() -> str | None:
        pod = plane.get_json(f"{pods_path}/{URGENT_POD}")
        return str(pod["spec"].get("nodeName") or "") or None if isinstance(pod, dict) else None

    say(f"  {URGENT_POD} bound to {wait_for(bound, ACT_TIMEOUT, 'the urgent pod bound')}")
    events = items(plane, f"/apis/events.k8s.io/v1/namespaces/{NAMESPACE}/events")
    for event in events:
        if event.get("reason") == "Preempted":
            say(f"  event on {event['regarding']['name']}: Preempted: {event.get('note')}")


def allocate_devices(plane: ControlPlane) -> None:
    """Step 7: DynamicResources allocates a device and explains a claim it cannot."""
    say(f"[7/8] kubectl apply -f {DRA.relative_to(EXAMPLES.parent)}")
    kubectl(plane, "apply", f"--filename={DRA}")
    pods_path = f"/api/v1/namespaces/{NAMESPACE}/pods"

    def settled() -> tuple[str, str] | None:
        trainer = plane.get_json(f"{pods_path}/{DRA_POD}")
        hungry = plane.get_json(f"{pods_path}/{DRA_WAITING}")
        if not isinstance(trainer, dict) or not isinstance(hungry, dict):
            return None
        node = str(trainer["spec"].get("nodeName") or "")
        told = str((_condition(hungry, POD_SCHEDULED) or {}).get("message") or "")
        return (node, told) if node and told else None

    node, told = wait_for(settled, ACT_TIMEOUT, "the DRA pods settled")
    claim = plane.get_json(
        f"/apis/resource.k8s.io/v1/namespaces/{NAMESPACE}/resourceclaims/{DRA_CLAIM}"
    )
    status = claim.get("status", {}) if isinstance(claim, dict) else {}
    results = status.get("allocation", {}).get("devices", {}).get("results", [])
    devices = ", ".join(f"{r['pool']}/{r['device']}" for r in results)
    holders = ", ".join(ref["name"] for ref in status.get("reservedFor", []))
    say(f"  {DRA_POD} bound to {node}")
    say(f"  claim {DRA_CLAIM}: allocated {devices}, reserved for {holders}")
    say(f"  {DRA_WAITING} waits: {told}")


def run_tool(*argv: str) -> None:
    """One of our commands as a user runs it, its output indented."""
    result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
    if result.returncode != 0:
        raise DemoError(f"{' '.join(argv)} failed ({result.returncode}):\n{result.stderr}")
    for line in result.stdout.splitlines():
        say(f"    {line}")


def what_if(plane: ControlPlane, base: str) -> None:
    """Step 7: a snapshot of the demo's cluster, simulated without one node;
    and the live diagnosis through the kubectl plugin."""
    tools = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="pyscheduler-demo-") as directory:
        snapshot = Path(directory) / "snapshot.yaml"
        say("[8/8] kubectl get nodes,pods,priorityclasses -A -o yaml > snapshot.yaml")
        argv = [str(plane.binary), "kubectl", f"--kubeconfig={plane.kubeconfig}", "get"]
        argv += ["nodes,pods,priorityclasses", "-A", "-o", "yaml"]
        result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
        if result.returncode != 0:
            raise DemoError(f"kubectl get failed:\n{result.stderr}")
        snapshot.write_text(result.stdout)
        count = len((yaml.safe_load(result.stdout) or {}).get("items") or ())
        say(f"  {count} objects; what if we drained 'small'?")
        say(
            f"  pyscheduler simulate snapshot.yaml --config {CONFIG.relative_to(EXAMPLES.parent)} "
            "--remove-node small --seed 1"
        )
        run_tool(
            str(tools / "pyscheduler"),
            "simulate",
            str(snapshot),
            "--config",
            str(CONFIG),
            "--remove-node",
            "small",
            "--seed",
            "1",
        )
    say(
        f"  kubectl pyscheduler explain {NAMESPACE}/{EXPLAINED_POD} --url {base} "
        "--insecure-skip-tls-verify"
    )
    run_tool(
        str(tools / "kubectl-pyscheduler"),
        "explain",
        f"{NAMESPACE}/{EXPLAINED_POD}",
        "--url",
        base,
        "--insecure-skip-tls-verify",  # the scheduler's self-signed serving certificate
        f"--kubeconfig={plane.kubeconfig}",
    )


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


Steps = Callable[[ControlPlane, list[ComponentProcess]], None]


def drive(steps: Steps) -> int:
    """Run a demo's steps on a fresh control plane; the teardown always runs."""
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)  # even if started with SIGINT ignored
    began = time.monotonic()
    plane = ControlPlane(ControlPlaneOptions(controller_manager=False))
    processes: list[ComponentProcess] = []
    code = 0
    try:
        steps(plane, processes)
    except KeyboardInterrupt:
        say("\ninterrupted")
        code = 130
    except DemoError as error:
        say(f"\ndemo failed: {error}")
        for process in processes:
            say(f"--- {process.name} log (last lines) ---\n{process.tail(30)}")
        code = 1
    finally:
        # A second Ctrl-C must not cut the teardown short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        say("Teardown")
        for process in reversed(processes):
            stop_scheduler(process)
        plane.stop()
        say(f"  control plane stopped; demo took {time.monotonic() - began:.1f}s")
    return code


def main() -> int:
    return drive(run)


if __name__ == "__main__":
    sys.exit(main())
