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
from typing import Any

Obj = dict[str, Any]

NODE_CAPACITY = {"cpu": "4", "memory": "32Gi", "pods": "110"}
POD_REQUESTS = {"cpu": "100m", "memory": "500Mi"}
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"

INIT_NAMESPACE = "bench-init"
MEASURED_NAMESPACE = "bench-measured"
NAMESPACES = (INIT_NAMESPACE, MEASURED_NAMESPACE)


def _no_labels(index: int) -> Mapping[str, str]:
    return {}


@dataclass(frozen=True)
class Template:
    """How a workload's objects differ from scheduler_perf's defaults: the
    labels of the node with a given index, and fields added to every pod's
    spec and labels (copied, never shared). The init pods use ``init_pod_spec``
    and ``init_pod_labels`` where given (scheduler_perf's per-op
    ``podTemplatePath``), else the measured pods' ones."""

    node_labels: Callable[[int], Mapping[str, str]] = _no_labels
    pod_spec: Mapping[str, Any] = field(default_factory=dict)
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
HOSTNAME_LABEL = "kubernetes.io/hostname"

# scheduler_perf's SchedulingNodeAffinity: every node labelled zone1
# (labelNodePrepareStrategy), pods from pod-with-node-affinity.yaml.
NODE_AFFINITY_TEMPLATE = Template(
    node_labels=lambda index: {ZONE_LABEL: "zone1"},
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


def _hostname(index: int) -> dict[str, str]:
    """scheduler_perf labels every node it creates with its hostname."""
    return {HOSTNAME_LABEL: node_name(index)}


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
    node_labels=_hostname,
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

    def to_json(self) -> dict[str, Any]:
        """The sizes and the pod template (node labels are a function: not data)."""
        return {
            "name": self.name,
            "nodes": self.nodes,
            "init_pods": self.init_pods,
            "pods": self.pods,
            "pod_spec": dict(self.template.pod_spec),
            **({"pod_labels": dict(self.template.pod_labels)} if self.template.pod_labels else {}),
        }

    def resized(
        self, nodes: int | None = None, init_pods: int | None = None, pods: int | None = None
    ) -> Workload:
        """This workload with some sizes overridden (renamed ``custom`` if any changed)."""
        sized = replace(
            self,
            nodes=self.nodes if nodes is None else nodes,
            init_pods=self.init_pods if init_pods is None else init_pods,
            pods=self.pods if pods is None else pods,
        )
        if (sized.nodes, sized.init_pods, sized.pods) != (self.nodes, self.init_pods, self.pods):
            sized = replace(sized, name="custom")
        return sized


# SchedulingBasic at 5000 nodes (scheduler_perf's misc/performance-config.yaml
# has 1000 init pods and 1000 to 10000 measured ones); 5000 keeps the measured
# phase long enough for 1 s samples to mean something at Python's speed.
PRESETS = {
    "basic": Workload("SchedulingBasic", nodes=5000, init_pods=1000, pods=5000),
    "small": Workload("small", nodes=100, init_pods=100, pods=500),
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
    labels: Mapping[str, str] | None = None,
) -> Obj:
    metadata: Obj = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            **copy.deepcopy(dict(spec or {})),
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
