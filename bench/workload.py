"""What is measured: the workload sizes and the objects created for them.

The templates are scheduler_perf's defaults (``node-default.yaml`` and
``pod-default.yaml``), so the figures compare with the upstream benchmark's:
nodes with capacity cpu 4, memory 32Gi, pods 110 and a Ready condition; pods
with one pause container requesting (and limited to) cpu 100m, memory 500Mi.

Invariant: the template functions return fresh dicts, so a run never shares
state with another, and both schedulers get byte-identical objects apart from
``spec.schedulerName``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

Obj = dict[str, Any]

NODE_CAPACITY = {"cpu": "4", "memory": "32Gi", "pods": "110"}
POD_REQUESTS = {"cpu": "100m", "memory": "500Mi"}
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"


class Mode(StrEnum):
    """How the measured pods reach the scheduler.

    - ``streaming``: created by parallel creators while the scheduler runs
      (scheduler_perf's way); the clock runs from the first creation to the
      last bind;
    - ``backlog``: all created, pending, before the scheduler starts; the
      clock runs from the first measured bind to the last (see
      ``bench.runner`` for why the first bind stands for the first pop);
    - ``churn``: created at a steady rate (``Workload.churn``) while the
      scheduler runs; the harness's kubelet (``bench.kubelet``) writes each
      bound pod's three status updates and deletes it after its lifetime, so
      the scheduler's informers decode every step of a pod's life; the clock
      runs from the first creation to the last bind, the CPU until every pod
      is gone and the scheduler has settled.
    """

    STREAMING = "streaming"
    BACKLOG = "backlog"
    CHURN = "churn"


@dataclass(frozen=True)
class Churn:
    """The churn mode's load: measured pods created at ``rate`` per second,
    each deleted ``lifetime_seconds`` after the kubelet reported it Running
    (a steady population of about ``rate * lifetime_seconds`` pods)."""

    rate: float = 100.0
    lifetime_seconds: float = 5.0

    def to_json(self) -> dict[str, float]:
        return {"rate": self.rate, "lifetime_seconds": self.lifetime_seconds}


INIT_NAMESPACE = "bench-init"
MEASURED_NAMESPACE = "bench-measured"
NAMESPACES = (INIT_NAMESPACE, MEASURED_NAMESPACE)


# (API collection path, body) of an object a workload needs besides nodes and pods
Extra = tuple[str, Obj]


def _no_cluster_objects(nodes: int) -> list[Extra]:
    return []


def _no_namespace_objects(namespace: str) -> list[Extra]:
    return []


HOSTNAME_LABEL = "kubernetes.io/hostname"


def _hostname(index: int) -> dict[str, str]:
    """scheduler_perf labels every node it creates with its hostname."""
    return {HOSTNAME_LABEL: node_name(index)}


@dataclass(frozen=True)
class Template:
    """How a workload's objects differ from scheduler_perf's defaults: the
    labels of the node with a given index, fields added to every pod's spec
    (copied, never shared), objects created once after the nodes and in each
    namespace before its pods (DRA's classes, slices and claim templates),
    and whether the resourceclaim controller must run."""

    node_labels: Callable[[int], Mapping[str, str]] = _hostname
    pod_spec: Mapping[str, Any] = field(default_factory=dict)
    cluster_objects: Callable[[int], list[Extra]] = _no_cluster_objects
    namespace_objects: Callable[[str], list[Extra]] = _no_namespace_objects
    controller_manager: bool = False
    # The measured pods' labels; the init pods use ``init_pod_spec`` and
    # ``init_pod_labels`` where given (scheduler_perf's per-op
    # ``podTemplatePath``), else the measured pods' ones.
    pod_labels: Mapping[str, str] = field(default_factory=dict)
    init_pod_spec: Mapping[str, Any] | None = None
    init_pod_labels: Mapping[str, str] | None = None

    def init_pod(self) -> tuple[Mapping[str, Any], Mapping[str, str]]:
        """The init pods' spec additions and labels."""
        spec = self.pod_spec if self.init_pod_spec is None else self.init_pod_spec
        labels = self.pod_labels if self.init_pod_labels is None else self.init_pod_labels
        return spec, labels


DEFAULT_TEMPLATE = Template()

ZONE_LABEL = "topology.kubernetes.io/zone"
# scheduler_perf's SchedulingNodeAffinity: every node labelled zone1
# (labelNodePrepareStrategy) besides its hostname, pods from
# pod-with-node-affinity.yaml.
NODE_AFFINITY_TEMPLATE = Template(
    node_labels=lambda index: {**_hostname(index), ZONE_LABEL: "zone1"},
    pod_spec={
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": ZONE_LABEL, "operator": "In", "values": ["zone1", "zone2"]}
                            ]
                        }
                    ]
                }
            }
        }
    },
)


# scheduler_perf's dra/performance-config.yaml, SchedulingWithResourceClaimTemplate:
# createResourceDriver publishes one ResourceSlice per node (pool = node name)
# with 10 devices "instance-<n>" (model A100, family GPU, driverVersion 1.2.3,
# dra.example.com/numa, capacity memory 1Gi); class test-class selects the
# driver; each pod gets its own claim from template test-claim-template.
DRA_DRIVER = "test-driver.cdi.k8s.io"
DRA_DEVICES_PER_NODE = 10
DRA_CLASS = "test-class"
DRA_CLAIM_TEMPLATE = "test-claim-template"
DRA_SELECTOR = (
    f'device.attributes["{DRA_DRIVER}"].driverVersion.major() >= 1 && '
    f'device.capacity["{DRA_DRIVER}"].memory.isGreaterThan(quantity("1Mi"))'
)
_RESOURCE = "/apis/resource.k8s.io/v1"


def _dra_cluster_objects(nodes: int) -> list[Extra]:
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DRA_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]},
    }
    objects: list[Extra] = [(f"{_RESOURCE}/deviceclasses", device_class)]
    for index in range(nodes):
        node = node_name(index)
        devices = [
            {
                "name": f"instance-{n}",
                "attributes": {
                    "model": {"string": "A100"},
                    "family": {"string": "GPU"},
                    "driverVersion": {"version": "1.2.3"},
                    "dra.example.com/numa": {"int": n},
                },
                "capacity": {"memory": {"value": "1Gi"}},
            }
            for n in range(DRA_DEVICES_PER_NODE)
        ]
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{DRA_DRIVER}"},
            "spec": {
                "driver": DRA_DRIVER,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        }
        objects.append((f"{_RESOURCE}/resourceslices", body))
    return objects


def _claim_template(selectors: tuple[str, ...]) -> Callable[[str], list[Extra]]:
    def objects(namespace: str) -> list[Extra]:
        exactly: Obj = {"deviceClassName": DRA_CLASS}
        if selectors:
            exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": DRA_CLAIM_TEMPLATE, "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": [{"name": "req-0", "exactly": exactly}]}}},
        }
        return [(f"{_RESOURCE}/namespaces/{namespace}/resourceclaimtemplates", body)]

    return objects


_DRA_POD_SPEC = {
    "resourceClaims": [{"name": "resource", "resourceClaimTemplateName": DRA_CLAIM_TEMPLATE}]
}
DRA_TEMPLATE = Template(
    pod_spec=_DRA_POD_SPEC,
    cluster_objects=_dra_cluster_objects,
    namespace_objects=_claim_template(()),
    controller_manager=True,
)
# The structured-parameters variant with upstream's selector_* CEL selector.
DRA_SELECTOR_TEMPLATE = replace(DRA_TEMPLATE, namespace_objects=_claim_template((DRA_SELECTOR,)))


# Not in scheduler_perf: issue 23's "many shared-counter devices" row. Each
# node's pool is two slices, one with a counter set (gpu-0: 40Gi of memory)
# and one with DRA_DEVICES_PER_NODE devices each consuming 4Gi of it, so the
# counters and the devices run out together; the init pods leave thousands
# of shared-counter allocations on other nodes while the measured pods are
# filtered, which must not make a node's Filter cost grow.
DRA_COUNTER_SET = "gpu-0"
DRA_COUNTER_MEMORY_GI = 4


def _dra_counter_cluster_objects(nodes: int) -> list[Extra]:
    objects = _dra_cluster_objects(0)  # the DeviceClass
    for index in range(nodes):
        node = node_name(index)
        pool = {"name": node, "generation": 1, "resourceSliceCount": 2}
        counters = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{DRA_DRIVER}-counters"},
            "spec": {
                "driver": DRA_DRIVER,
                "nodeName": node,
                "pool": pool,
                "sharedCounters": [
                    {
                        "name": DRA_COUNTER_SET,
                        "counters": {
                            "memory": {"value": f"{DRA_COUNTER_MEMORY_GI * DRA_DEVICES_PER_NODE}Gi"}
                        },
                    }
                ],
            },
        }
        devices = [
            {
                "name": f"partition-{n}",
                "attributes": {"dra.example.com/numa": {"int": n}},
                "consumesCounters": [
                    {
                        "counterSet": DRA_COUNTER_SET,
                        "counters": {"memory": {"value": f"{DRA_COUNTER_MEMORY_GI}Gi"}},
                    }
                ],
            }
            for n in range(DRA_DEVICES_PER_NODE)
        ]
        partitions = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{DRA_DRIVER}-devices"},
            "spec": {"driver": DRA_DRIVER, "nodeName": node, "pool": pool, "devices": devices},
        }
        objects += [
            (f"{_RESOURCE}/resourceslices", counters),
            (f"{_RESOURCE}/resourceslices", partitions),
        ]
    return objects


DRA_COUNTERS_TEMPLATE = replace(DRA_TEMPLATE, cluster_objects=_dra_counter_cluster_objects)


MOONS = ("moon-1", "moon-2", "moon-3")


def _moon_and_hostname(index: int) -> dict[str, str]:
    """labelNodePrepareStrategy's zones, round robin over the node index."""
    return {**_hostname(index), ZONE_LABEL: MOONS[index % len(MOONS)]}


# scheduler_perf's TopologySpreading: nodes in three zones round robin, init
# pods from pod-default.yaml, measured pods from pod-with-topology-spreading.yaml.
TOPOLOGY_SPREADING_TEMPLATE = Template(
    node_labels=_moon_and_hostname,
    pod_labels={"color": "blue"},
    pod_spec={
        "topologySpreadConstraints": [
            {
                "maxSkew": 5,
                "topologyKey": ZONE_LABEL,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"color": "blue"}},
            }
        ]
    },
    init_pod_spec={},
    init_pod_labels={},
)

# scheduler_perf's SchedulingPodAntiAffinity: init and measured pods both from
# pod-with-pod-anti-affinity.yaml, in two namespaces the term names (theirs are
# sched-0 and sched-1).
POD_ANTI_AFFINITY_TEMPLATE = Template(
    pod_labels={"color": "green"},
    pod_spec={
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"color": "green"}},
                        "topologyKey": HOSTNAME_LABEL,
                        "namespaces": [MEASURED_NAMESPACE, INIT_NAMESPACE],
                    }
                ]
            }
        }
    },
)


@dataclass(frozen=True)
class Workload:
    """Nodes to create, pods scheduled before measuring, and measured pods."""

    name: str
    nodes: int
    init_pods: int
    pods: int
    template: Template = DEFAULT_TEMPLATE
    modes: tuple[Mode, ...] = (Mode.STREAMING, Mode.BACKLOG)
    # Sample each scheduler's CPU while measuring (bench.cpuprofile).
    profile: bool = False
    # Allowed for the init pods, and again for the measured pods.
    timeout_seconds: float = 600.0
    # The load in churn mode (any workload can run in it with ``--mode churn``).
    churn: Churn = Churn()

    def to_json(self) -> dict[str, Any]:
        """The sizes and the pod template (node labels are a function: not data)."""
        return {
            "name": self.name,
            "nodes": self.nodes,
            "init_pods": self.init_pods,
            "pods": self.pods,
            "pod_spec": dict(self.template.pod_spec),
            **({"pod_labels": dict(self.template.pod_labels)} if self.template.pod_labels else {}),
            **({"churn": self.churn.to_json()} if Mode.CHURN in self.modes else {}),
        }

    def resized(
        self,
        nodes: int | None = None,
        init_pods: int | None = None,
        pods: int | None = None,
        rate: float | None = None,
    ) -> Workload:
        """This workload with some sizes (or the churn rate) overridden,
        renamed ``custom`` if any changed."""
        sized = replace(
            self,
            nodes=self.nodes if nodes is None else nodes,
            init_pods=self.init_pods if init_pods is None else init_pods,
            pods=self.pods if pods is None else pods,
            churn=self.churn if rate is None else replace(self.churn, rate=rate),
        )
        if replace(sized, name=self.name) != self:
            sized = replace(sized, name="custom")
        return sized


# SchedulingBasic at 5000 nodes (scheduler_perf's misc/performance-config.yaml
# has 1000 init pods and 1000 to 10000 measured ones); 5000 keeps the measured
# phase long enough for 1 s samples to mean something at Python's speed.
PRESETS = {
    "basic": Workload("SchedulingBasic", nodes=5000, init_pods=1000, pods=5000),
    "basic500": Workload("SchedulingBasic500", nodes=500, init_pods=500, pods=2000),
    "small": Workload("small", nodes=100, init_pods=100, pods=500),
    # Memory and snapshot cost at size: backlog only (scheduler_perf's
    # SchedulingDaemonset scale, 15000 nodes, with plain pods).
    "scale": Workload(
        "scale",
        nodes=15000,
        init_pods=0,
        pods=30000,
        modes=(Mode.BACKLOG,),
        profile=True,
        timeout_seconds=3600.0,
    ),
    # scheduler_perf's affinity/performance-config.yaml, 5000Nodes.
    "nodeaffinity": Workload(
        "SchedulingNodeAffinity",
        nodes=5000,
        init_pods=5000,
        pods=1000,
        template=NODE_AFFINITY_TEMPLATE,
    ),
    # scheduler_perf's topology_spreading/performance-config.yaml, 5000Nodes.
    "topologyspreading": Workload(
        "TopologySpreading",
        nodes=5000,
        init_pods=5000,
        pods=2000,
        template=TOPOLOGY_SPREADING_TEMPLATE,
    ),
    # scheduler_perf's affinity/performance-config.yaml, 5000Nodes.
    "podantiaffinity": Workload(
        "SchedulingPodAntiAffinity",
        nodes=5000,
        init_pods=1000,
        pods=1000,
        template=POD_ANTI_AFFINITY_TEMPLATE,
    ),
    # Issue 24: SchedulingBasic's templates at 5000 nodes, 6000 pods created at
    # 100/s, each run by the harness's kubelet (three status updates) and
    # deleted 5 s after it runs; not in scheduler_perf. Profiled: watch
    # decoding's share is one of its figures.
    "churn": Workload(
        "SchedulingChurn",
        nodes=5000,
        init_pods=1000,
        pods=6000,
        modes=(Mode.CHURN,),
        profile=True,
    ),
    # scheduler_perf's SchedulingWithResourceClaimTemplate/5000pods_500nodes:
    # 500 nodes x 10 devices, 2500 + 2500 pods with a claim each (fills them).
    "dra": Workload(
        "SchedulingWithResourceClaimTemplate",
        nodes=500,
        init_pods=2500,
        pods=2500,
        template=DRA_TEMPLATE,
    ),
    "dra-selector": Workload(
        "SchedulingWithResourceClaimTemplateSelector",
        nodes=500,
        init_pods=2500,
        pods=2500,
        template=DRA_SELECTOR_TEMPLATE,
    ),
    # The dra workload over partitionable devices (DRA_COUNTERS_TEMPLATE).
    "dra-counters": Workload(
        "SchedulingWithSharedCounters",
        nodes=500,
        init_pods=2500,
        pods=2500,
        template=DRA_COUNTERS_TEMPLATE,
    ),
}
DEFAULT_PRESET = "basic"


def node_name(index: int) -> str:
    return f"node-{index:05d}"


def init_pod_name(index: int) -> str:
    return f"init-{index:05d}"


def pod_name(index: int) -> str:
    return f"pod-{index:05d}"


def node_body(name: str, labels: Mapping[str, str] | None = None) -> Obj:
    metadata: Obj = {"name": name}
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": {},
        "status": {
            "capacity": dict(NODE_CAPACITY),
            "conditions": [{"type": "Ready", "status": "True"}],
            "phase": "Running",
        },
    }


def pod_body(
    name: str,
    namespace: str,
    scheduler_name: str,
    spec: Mapping[str, Any] | None = None,
    *,
    node: str = "",
    labels: Mapping[str, str] | None = None,
) -> Obj:
    """A pod for ``scheduler_name``; with ``node``, created already bound there
    (backlog mode's init pods: the cluster state without a scheduler)."""
    metadata: Obj = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            **copy.deepcopy(dict(spec or {})),
            **({"nodeName": node} if node else {}),
            "schedulerName": scheduler_name,
            "containers": [
                {
                    "name": "pause",
                    "image": PAUSE_IMAGE,
                    "ports": [{"containerPort": 80}],
                    "resources": {"requests": dict(POD_REQUESTS), "limits": dict(POD_REQUESTS)},
                }
            ],
        },
    }


def namespace_body(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
