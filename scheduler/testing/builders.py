"""Fluent builders for Pods and Nodes, as wire dicts or as parsed objects.

``make_node("n1").capacity(cpu="4", memory="8Gi").obj()`` reads like the
object it makes; ``.build()`` gives the framework's parsed ``Node``/``Pod``
(a pod without a UID gets ``namespace/name``, so tests can name pods by key).
Every builder returns a fresh dict, so cases never share state. The one
family of object builders: the project's own tests (``tests.support.builders``
re-exports them) and plugin authors' tests (``scheduler.testing``) use these.
"""

from __future__ import annotations

import copy
from typing import Any, Self

from scheduler.framework import Node, Pod, parse_node, parse_pod

__all__ = [
    "NodeBuilder",
    "Obj",
    "PodBuilder",
    "expression",
    "make_node",
    "make_pod",
    "term",
]

Obj = dict[str, Any]


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self._obj: Obj = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {
                "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
                "phase": "Running",
            },
        }

    def capacity(self, **resources: str) -> Self:
        self._obj["status"]["capacity"] = dict(resources)
        return self

    def allocatable(self, **resources: str) -> Self:
        self._obj["status"]["allocatable"] = dict(resources)
        return self

    def label(self, key: str, value: str) -> Self:
        self._obj["metadata"]["labels"][key] = value
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> Self:
        self._obj["spec"].setdefault("taints", []).append(
            {"key": key, "value": value, "effect": effect}
        )
        return self

    def unschedulable(self) -> Self:
        self._obj["spec"]["unschedulable"] = True
        return self

    def resource(self, name: str, quantity: str) -> Self:
        """One more resource (extended names are not kwarg-friendly), added to
        allocatable if set, else to capacity: whichever the scheduler reads."""
        status = self._obj["status"]
        status.get("allocatable", status["capacity"])[name] = quantity
        return self

    def uid(self, uid: str) -> Self:
        self._obj["metadata"]["uid"] = uid
        return self

    def resource_version(self, version: str) -> Self:
        self._obj["metadata"]["resourceVersion"] = version
        return self

    def zone(self, zone: str, region: str = "") -> Self:
        """The topology labels the snapshot's zone round-robin reads."""
        self.label("topology.kubernetes.io/zone", zone)
        if region:
            self.label("topology.kubernetes.io/region", region)
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._obj["metadata"].setdefault("annotations", {})[key] = value
        return self

    def image(self, size: int, *names: str) -> Self:
        """One ``status.images`` entry: its names and its size in bytes."""
        self._obj["status"].setdefault("images", []).append(
            {"names": list(names), "sizeBytes": size}
        )
        return self

    def declared_features(self, *features: str) -> Self:
        self._obj["status"]["declaredFeatures"] = list(features)
        return self

    def condition(self, type_: str, status: str) -> Self:
        """Set (or replace) a node condition such as Ready=False."""
        conditions = self._obj["status"].setdefault("conditions", [])
        conditions[:] = [c for c in conditions if c.get("type") != type_]
        conditions.append({"type": type_, "status": status})
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)

    def build(self) -> Node:
        """The parsed ``Node``, as the scheduler's cache holds it."""
        return parse_node(self.obj())


class PodBuilder:
    def __init__(self, name: str, namespace: str = "default") -> None:
        self._obj: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
        }

    def scheduler(self, name: str) -> Self:
        self._obj["spec"]["schedulerName"] = name
        return self

    def node(self, name: str) -> Self:
        self._obj["spec"]["nodeName"] = name
        return self

    def requests(self, **resources: str) -> Self:
        container = self._obj["spec"]["containers"][0]
        container.setdefault("resources", {})["requests"] = dict(resources)
        return self

    def limits(self, **resources: str) -> Self:
        """Limits of the first app container."""
        container = self._obj["spec"]["containers"][0]
        container.setdefault("resources", {})["limits"] = dict(resources)
        return self

    def pod_limits(self, **resources: str) -> Self:
        """Pod-level ``spec.resources.limits``."""
        self._obj["spec"].setdefault("resources", {})["limits"] = dict(resources)
        return self

    def claim_template(self, claim_name: str, template: str) -> Self:
        self._obj["spec"].setdefault("resourceClaims", []).append(
            {"name": claim_name, "resourceClaimTemplateName": template}
        )
        self._obj["spec"]["containers"][0].setdefault("resources", {})["claims"] = [
            {"name": claim_name}
        ]
        return self

    def uid(self, uid: str) -> Self:
        self._obj["metadata"]["uid"] = uid
        return self

    def priority(self, priority: int) -> Self:
        self._obj["spec"]["priority"] = priority
        return self

    def priority_class(self, name: str) -> Self:
        self._obj["spec"]["priorityClassName"] = name
        return self

    def start_time(self, timestamp: str) -> Self:
        self._obj.setdefault("status", {})["startTime"] = timestamp
        return self

    def preemption_policy(self, policy: str) -> Self:
        self._obj["spec"]["preemptionPolicy"] = policy
        return self

    def nominated(self, node_name: str) -> Self:
        self._obj.setdefault("status", {})["nominatedNodeName"] = node_name
        return self

    def toleration(
        self,
        key: str = "",
        value: str = "",
        effect: str = "",
        operator: str = "Equal",
    ) -> Self:
        toleration = {"key": key, "operator": operator, "value": value, "effect": effect}
        self._obj["spec"].setdefault("tolerations", []).append(
            {name: field for name, field in toleration.items() if field}
        )
        return self

    def scheduling_gate(self, name: str) -> Self:
        self._obj["spec"].setdefault("schedulingGates", []).append({"name": name})
        return self

    def container(self, name: str, **requests: str) -> Self:
        """Another app container with these requests."""
        container: Obj = {"name": name, "image": "registry.k8s.io/pause:3.10"}
        if requests:
            container["resources"] = {"requests": dict(requests)}
        self._obj["spec"]["containers"].append(container)
        return self

    def init_container(self, name: str, *, sidecar: bool = False, **requests: str) -> Self:
        """An init container; ``sidecar=True`` makes it restartable (restartPolicy Always)."""
        container: Obj = {"name": name, "image": "registry.k8s.io/pause:3.10"}
        if requests:
            container["resources"] = {"requests": dict(requests)}
        if sidecar:
            container["restartPolicy"] = "Always"
        self._obj["spec"].setdefault("initContainers", []).append(container)
        return self

    def overhead(self, **resources: str) -> Self:
        self._obj["spec"]["overhead"] = dict(resources)
        return self

    def pod_requests(self, **resources: str) -> Self:
        """Pod-level ``spec.resources.requests``."""
        self._obj["spec"].setdefault("resources", {})["requests"] = dict(resources)
        return self

    def container_status(
        self,
        name: str,
        *,
        requests: dict[str, str] | None = None,
        allocated: dict[str, str] | None = None,
        init: bool = False,
    ) -> Self:
        """A container status as the kubelet reports it during an in-place
        resize: actuated ``resources.requests`` and ``allocatedResources``."""
        status: Obj = {"name": name}
        if requests is not None:
            status["resources"] = {"requests": dict(requests)}
        if allocated is not None:
            status["allocatedResources"] = dict(allocated)
        field = "initContainerStatuses" if init else "containerStatuses"
        self._obj.setdefault("status", {}).setdefault(field, []).append(status)
        return self

    def pod_status_resources(
        self, *, requests: dict[str, str], allocated: dict[str, str] | None = None
    ) -> Self:
        """Pod-level ``status.resources`` (and ``status.allocatedResources``)."""
        status = self._obj.setdefault("status", {})
        status["resources"] = {"requests": dict(requests)}
        if allocated is not None:
            status["allocatedResources"] = dict(allocated)
        return self

    def request(self, name: str, quantity: str) -> Self:
        """One more request on the first container (for extended resource names)."""
        container = self._obj["spec"]["containers"][0]
        container.setdefault("resources", {}).setdefault("requests", {})[name] = quantity
        return self

    def limit(self, name: str, quantity: str) -> Self:
        """A limit on the first container (extended resources need limit = request)."""
        container = self._obj["spec"]["containers"][0]
        container.setdefault("resources", {}).setdefault("limits", {})[name] = quantity
        return self

    def host_port(self, port: int, protocol: str = "TCP", host_ip: str = "") -> Self:
        entry: Obj = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if host_ip:
            entry["hostIP"] = host_ip
        self._obj["spec"]["containers"][0].setdefault("ports", []).append(entry)
        return self

    def label(self, key: str, value: str) -> Self:
        self._obj["metadata"].setdefault("labels", {})[key] = value
        return self

    def resource_version(self, version: str) -> Self:
        self._obj["metadata"]["resourceVersion"] = version
        return self

    def phase(self, phase: str) -> Self:
        """``Running``, or a terminal ``Succeeded``/``Failed``."""
        self._obj.setdefault("status", {})["phase"] = phase
        return self

    def generation(self, generation: int) -> Self:
        self._obj["metadata"]["generation"] = generation
        return self

    def deleting(self, timestamp: str = "2024-01-01T00:00:00Z") -> Self:
        self._obj["metadata"]["deletionTimestamp"] = timestamp
        return self

    def condition(
        self,
        type_: str,
        status: str,
        *,
        reason: str = "",
        message: str = "",
        last_transition: str = "",
        observed_generation: int | None = None,
    ) -> Self:
        """A status condition such as ``PodScheduled=False``."""
        condition: Obj = {"type": type_, "status": status}
        if reason:
            condition["reason"] = reason
        if message:
            condition["message"] = message
        if last_transition:
            condition["lastTransitionTime"] = last_transition
        if observed_generation is not None:
            condition["observedGeneration"] = observed_generation
        self._obj.setdefault("status", {}).setdefault("conditions", []).append(condition)
        return self

    def node_selector(self, **labels: str) -> Self:
        self._obj["spec"].setdefault("nodeSelector", {}).update(labels)
        return self

    def required_node_affinity(self, *terms: Obj) -> Self:
        """``requiredDuringScheduling...`` node affinity with these terms (see ``term``)."""
        affinity = self._obj["spec"].setdefault("affinity", {}).setdefault("nodeAffinity", {})
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": list(terms)
        }
        return self

    def preferred_node_affinity(self, weight: int, preference: Obj) -> Self:
        """One more ``preferredDuringScheduling...`` node-affinity term."""
        affinity = self._obj["spec"].setdefault("affinity", {}).setdefault("nodeAffinity", {})
        affinity.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
            {"weight": weight, "preference": preference}
        )
        return self

    def image(self, image: str) -> Self:
        """The first container's image."""
        self._obj["spec"]["containers"][0]["image"] = image
        return self

    def spec_field(self, key: str, value: object) -> Self:
        """Any other spec field (``hostNetwork``, ``hostUsers``...)."""
        self._obj["spec"][key] = value
        return self

    def required_pod_affinity(self, topology_key: str, **match_labels: str) -> Self:
        """A required pod-affinity term selecting pods with these labels."""
        affinity = self._obj["spec"].setdefault("affinity", {}).setdefault("podAffinity", {})
        affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(
            {"labelSelector": {"matchLabels": dict(match_labels)}, "topologyKey": topology_key}
        )
        return self

    def volume(self, name: str, **source: Any) -> Self:
        """A pod volume: ``.volume("data", persistentVolumeClaim={"claimName": "c"})``."""
        self._obj["spec"].setdefault("volumes", []).append({"name": name, **source})
        return self

    def spread(
        self,
        max_skew: int,
        topology_key: str,
        when: str = "DoNotSchedule",
        *,
        selector: Obj | None = None,
        **extra: object,
    ) -> Self:
        """A topology spread constraint; ``selector`` is the labelSelector
        (absent if None); ``extra`` takes other fields by their API names
        (``minDomains=2``, ``nodeTaintsPolicy="Honor"``, ``matchLabelKeys=[...]``)."""
        constraint: Obj = {
            "maxSkew": max_skew,
            "topologyKey": topology_key,
            "whenUnsatisfiable": when,
            **extra,
        }
        if selector is not None:
            constraint["labelSelector"] = selector
        self._obj["spec"].setdefault("topologySpreadConstraints", []).append(constraint)
        return self

    def pod_affinity_term(
        self,
        kind: str,
        topology_key: str,
        selector: Obj | None,
        *,
        weight: int | None = None,
        **extra: object,
    ) -> Self:
        """A pod affinity term of ``kind`` (``podAffinity``/``podAntiAffinity``):
        required, or preferred with ``weight``; ``extra`` takes other term
        fields by API name (``namespaces``, ``namespaceSelector``,
        ``matchLabelKeys``, ``mismatchLabelKeys``)."""
        term: Obj = {"topologyKey": topology_key, **extra}
        if selector is not None:
            term["labelSelector"] = selector
        section = self._obj["spec"].setdefault("affinity", {}).setdefault(kind, {})
        if weight is None:
            section.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        else:
            section.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": term}
            )
        return self

    def required_pod_anti_affinity(self, topology_key: str, **match_labels: str) -> Self:
        """A required pod anti-affinity term selecting pods with these labels."""
        return self.pod_affinity_term(
            "podAntiAffinity", topology_key, {"matchLabels": dict(match_labels)}
        )

    def owner(self, kind: str, name: str, api_version: str = "apps/v1") -> Self:
        """A controlling owner reference (``ReplicaSet``, ``StatefulSet``...)."""
        self._obj["metadata"].setdefault("ownerReferences", []).append(
            {
                "apiVersion": api_version,
                "kind": kind,
                "name": name,
                "uid": f"{kind}-{name}",
                "controller": True,
            }
        )
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)

    def build(self) -> Pod:
        """The parsed ``Pod``; without a UID it gets ``namespace/name``."""
        raw = self.obj()
        metadata = raw["metadata"]
        metadata.setdefault("uid", f"{metadata['namespace']}/{metadata['name']}")
        return parse_pod(raw)


def expression(key: str, operator: str, *values: str) -> Obj:
    """A node selector requirement, for ``term``."""
    requirement: Obj = {"key": key, "operator": operator}
    if values:
        requirement["values"] = list(values)
    return requirement


def term(*expressions: Obj, fields: tuple[Obj, ...] = ()) -> Obj:
    """A node selector term: label expressions ANDed with match fields."""
    result: Obj = {}
    if expressions:
        result["matchExpressions"] = list(expressions)
    if fields:
        result["matchFields"] = list(fields)
    return result


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def make_pod(name: str, namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)
