"""Randomized scheduling workloads whose outcome does not depend on the order
of placement, for the differential test against upstream kube-scheduler.

``generate(seed, pod_count)`` builds, deterministically from the seed, a set
of nodes, pods already bound to some of them (``placed``: they hold ports
and resources) and the pods to schedule. Every pod either fits whatever the
others did, or never fits: infeasibility comes only from the nodes and the
placed pods, never from pods scheduled earlier in the same run.

- Capacity to spare: every node has room for all the schedulable pods'
  cpu, memory, pods and GPUs at once (a "hog" placed pod fills a node's cpu
  completely, so that node is the same for every pod).
- Host ports: a shared port (8080, 9090) is wanted by at most one pod of the
  run; any other pod's host port is unique.
- What must fail fails for a reason that does not move: a request larger
  than any node, a selector no node matches, an untolerated taint, a cordon.

Features are small functions applied in order (``NODE_FEATURES`` and
``POD_FEATURES``), each drawing from the run's random generator; a later
feature (spreading, pod affinity, priorities) adds its own function and keeps
the order-independence rule above.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support.builders import NodeBuilder, PodBuilder, expression, make_node, make_pod, term

Obj = dict[str, Any]

NODE_CPU = "32"
NODE_MEMORY = "64Gi"
GPU = "example.com/gpu"
NODE_GPUS = 8
MAX_GPU_PODS = 6  # < NODE_GPUS: every GPU pod fits on any GPU node
ZONES = ("a", "b", "c")
TEAMS = ("ml", "db")
SHARED_PORTS = (8080, 9090)
UNIQUE_PORT_BASE = 30000


@dataclass
class Draft:
    """What the pod features know about the run so far."""

    rng: random.Random
    node_names: list[str]
    index: int
    used_shared_ports: set[int] = field(default_factory=set)
    gpu_pods: int = 0


@dataclass
class Workload:
    seed: int
    nodes: list[Obj]
    placed: list[Obj]  # bound with spec.nodeName; namespace set when created
    pods: list[Obj]  # to schedule; schedulerName and namespace set by the runner


NodeFeature = Callable[[random.Random, NodeBuilder, int], None]
PodFeature = Callable[[Draft, PodBuilder], None]


# ------------------------------------------------------------------ nodes
def node_labels(rng: random.Random, node: NodeBuilder, index: int) -> None:
    node.label("topology.kubernetes.io/zone", rng.choice(ZONES))
    disk = rng.choice(("ssd", "hdd", None))
    if disk:
        node.label("disktype", disk)
    node.label("cores", str(rng.choice((4, 8, 16, 32, 64))))


def node_gpus(rng: random.Random, node: NodeBuilder, index: int) -> None:
    if rng.random() < 0.3:
        node.resource(GPU, str(NODE_GPUS))


def node_taints(rng: random.Random, node: NodeBuilder, index: int) -> None:
    roll = rng.random()
    if roll < 0.2:
        node.taint("dedicated", rng.choice(TEAMS), "NoSchedule")
    elif roll < 0.3:
        node.taint("maintenance", "", "NoExecute")
    elif roll < 0.45:
        node.taint("spot", "true", "PreferNoSchedule")


def node_cordon(rng: random.Random, node: NodeBuilder, index: int) -> None:
    if rng.random() < 0.1:
        node.unschedulable()


NODE_FEATURES: list[NodeFeature] = [node_labels, node_gpus, node_taints, node_cordon]


def placed_pods(rng: random.Random, node_name: str, index: int) -> list[Obj]:
    """Pods already running on a node: a cpu hog, host-port holders."""
    pods: list[Obj] = []
    if rng.random() < 0.15:
        pods.append(make_pod(f"hog-{index}").node(node_name).requests(cpu=NODE_CPU).obj())
    if rng.random() < 0.3:
        holder = make_pod(f"ports-{index}").node(node_name).requests(memory="64Mi")
        holder.host_port(rng.choice(SHARED_PORTS))
        if rng.random() < 0.5:
            holder.host_port(rng.choice(SHARED_PORTS), "UDP", "10.0.0.1")
        pods.append(holder.obj())
    return pods


# ------------------------------------------------------------------- pods
def pod_requests(draft: Draft, pod: PodBuilder) -> None:
    rng = draft.rng
    roll = rng.random()
    if roll < 0.07:
        pod.requests(cpu="100", memory="128Mi")  # more than any node
    elif roll < 0.11:
        pod.requests(cpu="200m", memory="1Ti")
    else:
        pod.requests(cpu=f"{rng.randint(1, 4) * 100}m", memory=f"{rng.randint(1, 8) * 64}Mi")
    roll = rng.random()
    if roll < 0.1:
        pod.init_container("setup", cpu=f"{rng.randint(1, 5) * 100}m")
    elif roll < 0.14:
        pod.init_container("migrate", cpu="40")  # init needs more than any node
    if rng.random() < 0.1:
        pod.init_container("proxy", sidecar=True, cpu="100m", memory="32Mi")
    roll = rng.random()
    if roll < 0.06 and draft.gpu_pods < MAX_GPU_PODS:
        draft.gpu_pods += 1
        pod.request(GPU, "1").limit(GPU, "1")
    elif roll < 0.09:
        pod.request(GPU, "100").limit(GPU, "100")


def pod_node_selector(draft: Draft, pod: PodBuilder) -> None:
    rng = draft.rng
    if rng.random() < 0.25:
        choice = rng.randrange(4)
        if choice == 0:
            pod.node_selector(**{"topology.kubernetes.io/zone": rng.choice(ZONES)})
        elif choice == 1:
            pod.node_selector(disktype="ssd")
        elif choice == 2:
            pod.node_selector(accelerator="tpu")  # no node has it
        else:
            pod.node_selector(disktype=rng.choice(("ssd", "hdd")), cores="32")


def _expression(draft: Draft) -> Obj:
    rng = draft.rng
    kind = rng.randrange(7)
    zone = "topology.kubernetes.io/zone"
    if kind == 0:
        return expression(zone, "In", *rng.sample(ZONES, rng.randint(1, 2)))
    if kind == 1:
        return expression(zone, "NotIn", rng.choice(ZONES))
    if kind == 2:
        return expression("disktype", rng.choice(("Exists", "DoesNotExist")))
    if kind == 3:
        return expression("cores", rng.choice(("Gt", "Lt")), str(rng.choice((8, 16, 32))))
    if kind == 4:
        return expression("disktype", "In", "ssd")
    if kind == 5:
        return expression("gpu-model", "Exists")  # no node has it
    return expression("disktype", "NotIn", "hdd")


def _name_term(draft: Draft) -> Obj:
    """A term pinning node names (matchFields take exactly one value each)."""
    rng = draft.rng
    name = "no-such-node" if rng.random() < 0.2 else rng.choice(draft.node_names)
    operator = "NotIn" if rng.random() < 0.15 else "In"
    fields = [expression("metadata.name", operator, name)]
    if rng.random() < 0.15:  # a second name in the same term: both must hold
        fields.append(expression("metadata.name", "In", rng.choice(draft.node_names)))
    return term(fields=tuple(fields))


def pod_node_affinity(draft: Draft, pod: PodBuilder) -> None:
    rng = draft.rng
    if rng.random() < 0.25:
        terms = []
        for _ in range(rng.randint(1, 2)):
            if rng.random() < 0.2:
                terms.append(_name_term(draft))
            else:
                terms.append(term(*(_expression(draft) for _ in range(rng.randint(1, 2)))))
        pod.required_node_affinity(*terms)
    if rng.random() < 0.2:
        for _ in range(rng.randint(1, 2)):
            pod.preferred_node_affinity(rng.randint(1, 100), term(_expression(draft)))


def pod_host_ports(draft: Draft, pod: PodBuilder) -> None:
    rng = draft.rng
    if rng.random() < 0.15:
        free = [port for port in SHARED_PORTS if port not in draft.used_shared_ports]
        if free and rng.random() < 0.7:
            port = rng.choice(free)
            draft.used_shared_ports.add(port)
        else:
            port = UNIQUE_PORT_BASE + draft.index
        protocol = "UDP" if rng.random() < 0.2 else "TCP"
        host_ip = "10.0.0.1" if rng.random() < 0.2 else ""
        pod.host_port(port, protocol, host_ip)


def pod_tolerations(draft: Draft, pod: PodBuilder) -> None:
    rng = draft.rng
    roll = rng.random()
    if roll < 0.2:
        pod.toleration("dedicated", rng.choice(TEAMS), "NoSchedule")
    elif roll < 0.27:
        pod.toleration("maintenance", operator="Exists", effect="NoExecute")
    elif roll < 0.3:
        pod.toleration(operator="Exists")
    if rng.random() < 0.03:
        pod.toleration("node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule")


def pod_gates(draft: Draft, pod: PodBuilder) -> None:
    if draft.rng.random() < 0.03:
        pod.scheduling_gate("example.com/hold")


POD_FEATURES: list[PodFeature] = [
    pod_requests,
    pod_node_selector,
    pod_node_affinity,
    pod_host_ports,
    pod_tolerations,
    pod_gates,
]


def generate(
    seed: int,
    pod_count: int = 50,
    *,
    node_features: list[NodeFeature] | None = None,
    pod_features: list[PodFeature] | None = None,
) -> Workload:
    rng = random.Random(seed)
    nodes: list[Obj] = []
    placed: list[Obj] = []
    for index in range(rng.randint(5, 9)):
        name = f"d{seed}-n{index}"
        node = make_node(name).capacity(cpu=NODE_CPU, memory=NODE_MEMORY, pods="110")
        for feature in node_features or NODE_FEATURES:
            feature(rng, node, index)
        nodes.append(node.obj())
        placed.extend(placed_pods(rng, name, index))
    names = [node["metadata"]["name"] for node in nodes]
    pods: list[Obj] = []
    draft = Draft(rng, names, 0)
    for index in range(pod_count):
        draft.index = index
        pod = make_pod(f"p{index:03d}")
        for pod_feature in pod_features or POD_FEATURES:
            pod_feature(draft, pod)
        pods.append(pod.obj())
    return Workload(seed, nodes, placed, pods)
