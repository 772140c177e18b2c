"""Pods and nodes as the scheduler sees them: parsed once, then immutable.

The informer hands over the raw JSON dict of an API object; ``parse_pod`` and
``parse_node`` derive everything the hot path needs (requests, tolerations,
ports, ...) once per object version. The raw dict is kept for plugins that need
other fields and must never be mutated: copy before changing anything.

A pod whose spec cannot be interpreted (a malformed quantity, a field of the
wrong type, a negative request) is still returned, with ``parse_error`` set
to a message naming the field (``scheduler.framework.validation``), so that
the scheduler can tell the user what is wrong instead of losing or crashing
on the pod. A malformed node likewise gets ``parse_error`` and nothing
allocatable. Parsing never raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from scheduler.framework.nodeaffinity import (
    NO_REQUIRED_AFFINITY,
    PreferredTerms,
    RequiredNodeAffinity,
    preferred_node_affinity,
    required_node_affinity,
)
from scheduler.framework.podaffinity import NO_POD_AFFINITY, PodAffinityTerms, parse_pod_affinity
from scheduler.framework.quantity import QuantityError
from scheduler.framework.resource import ZERO, Resource, pod_requests
from scheduler.framework.validation import node_problems, pod_problems

Raw = Mapping[str, Any]


def object_key(obj: Raw) -> str:
    """``namespace/name``, or ``name`` for a cluster-scoped object."""
    metadata = obj.get("metadata") or {}
    name = metadata.get("name") or ""
    namespace = metadata.get("namespace")
    return f"{namespace}/{name}" if namespace else name


_EMPTY: Mapping[str, Any] = {}
_NO_IMAGES: Mapping[str, int] = MappingProxyType({})

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
# What a parser raises on a field of the wrong type (the API server never
# stores one, but the scheduler must not crash when it sees one).
_MALFORMED = (QuantityError, TypeError, AttributeError, ValueError, ArithmeticError, KeyError)


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def describe(self) -> str:
        """The upstream rendering used in messages: ``{key: value}``."""
        return f"{{{self.key}: {self.value}}}"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint) -> bool:
        """Upstream ``ToleratesTaint``: effect, key and operator rules."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return False


@dataclass(frozen=True, slots=True)
class HostPort:
    ip: str
    protocol: str
    port: int


@dataclass(frozen=True, slots=True)
class Pod:
    raw: Raw
    uid: str
    namespace: str
    name: str
    scheduler_name: str
    node_name: str
    nominated_node_name: str
    priority: int
    phase: str
    deleting: bool
    labels: Mapping[str, str]
    node_selector: Mapping[str, str]
    affinity: Raw | None
    tolerations: tuple[Toleration, ...]
    host_ports: tuple[HostPort, ...]
    scheduling_gates: tuple[str, ...]
    requests: Resource
    non_zero_requests: Resource
    resource_version: str
    generation: int
    parse_error: str = ""
    # nodeSelector AND required node affinity; preferred node-affinity terms
    # (None: none, or they do not parse: see preferred_affinity_error).
    required_affinity: RequiredNodeAffinity = NO_REQUIRED_AFFINITY
    preferred_affinity: PreferredTerms | None = None
    preferred_affinity_error: str = ""
    # Normalized image names of init containers, containers and image
    # volumes, in that order (repeats kept), and the number of containers.
    images: tuple[str, ...] = ()
    container_count: int = 0
    # Parsed pod (anti-)affinity terms (InterPodAffinity's hot path).
    pod_affinity: PodAffinityTerms = NO_POD_AFFINITY

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def assigned(self) -> bool:
        return bool(self.node_name)

    @property
    def spec(self) -> Raw:
        spec: Raw = self.raw.get("spec") or _EMPTY
        return spec

    def has_required_affinity(self) -> bool:
        """Pod (anti-)affinity terms that matter to other pods' placement."""
        affinity = self.affinity or _EMPTY
        return bool(affinity.get("podAffinity") or affinity.get("podAntiAffinity"))


@dataclass(frozen=True, slots=True)
class Node:
    raw: Raw
    name: str
    uid: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    allocatable: Resource
    resource_version: str
    parse_error: str = ""
    # status.images: every name of every image -> its size in bytes.
    images: Mapping[str, int] = field(default_factory=lambda: _NO_IMAGES)
    declared_features: frozenset[str] = frozenset()


def _tolerations(spec: Raw) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            key=_string(item.get("key")),
            operator=_string(item.get("operator")) or "Equal",
            value=_string(item.get("value")),
            effect=_string(item.get("effect")),
        )
        for item in spec.get("tolerations") or ()
    )


def _string(value: Any) -> str:
    """A string field (taints, tolerations are hashed and compared): absent is
    "", another type makes the object malformed (named by ``validation``)."""
    if not value:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _host_ports(spec: Raw) -> tuple[HostPort, ...]:
    """Upstream ``GetHostPorts``: the ports of restartable (sidecar) init
    containers, which run as long as the pod, then of the app containers."""
    sidecars = [c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
    ports = []
    for container in (*sidecars, *(spec.get("containers") or ())):
        for port in container.get("ports") or ():
            host_port = port.get("hostPort") or 0
            if isinstance(host_port, bool) or not isinstance(host_port, int):
                raise TypeError(f"hostPort: expected an integer, got {type(host_port).__name__}")
            if host_port > 0:
                ports.append(
                    HostPort(  # hashed (NodePorts signs pods by them): strings only
                        ip=_string(port.get("hostIP")) or "0.0.0.0",
                        protocol=_string(port.get("protocol")) or "TCP",
                        port=host_port,
                    )
                )
    return tuple(ports)


def normalized_image_name(name: str) -> str:
    """Upstream ImageLocality's CRI name: ``:latest`` when there is no tag."""
    if name.rfind(":") <= name.rfind("/"):
        return f"{name}:latest"
    return name


def _images(spec: Raw) -> tuple[str, ...]:
    names = [
        normalized_image_name(c.get("image") or "")
        for c in (*(spec.get("initContainers") or ()), *(spec.get("containers") or ()))
    ]
    for volume in spec.get("volumes") or ():
        image = volume.get("image")
        if image is not None:
            names.append(normalized_image_name(image.get("reference") or ""))
    return tuple(names)


def node_images(status: Raw) -> Mapping[str, int]:
    """``status.images`` of a node: every name of every image -> its size
    (the first image listing a name wins)."""
    images: dict[str, int] = {}
    try:
        for image in status.get("images") or ():
            size = int(image.get("sizeBytes") or 0)
            for name in image.get("names") or ():
                images.setdefault(name, size)
    except _MALFORMED:  # a malformed node: parse_node reports it; it has no images
        return _NO_IMAGES
    return images or _NO_IMAGES


def parse_pod(raw: Raw) -> Pod:
    """Never raises: a malformed pod comes back with ``parse_error`` naming the field."""
    try:
        return _parse_pod(raw)
    except _MALFORMED as error:
        return _malformed_pod(raw, _problems(pod_problems(raw), error))


def _problems(found: list[str], error: Exception) -> str:
    return "; ".join(found) if found else f"malformed: {error}"


def _mapping(value: Any) -> Mapping[str, Any]:
    """An object field that plugins iterate (labels, nodeSelector): a
    mapping, else the pod or node is malformed (TypeError, named by
    ``validation``)."""
    if not value:
        return _EMPTY
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return value


def _text(mapping: Any, key: str) -> str:
    value = mapping.get(key) if isinstance(mapping, Mapping) else None
    return value if isinstance(value, str) else ""


def _malformed_pod(raw: Raw, problem: str) -> Pod:
    """The pod's identity and nothing else: it requests nothing and fails
    every cycle with ``problem`` until it is fixed."""
    raw = raw if isinstance(raw, Mapping) else _EMPTY
    metadata, spec = raw.get("metadata"), raw.get("spec")
    return Pod(
        raw=raw,
        uid=_text(metadata, "uid"),
        namespace=_text(metadata, "namespace"),
        name=_text(metadata, "name"),
        scheduler_name=_text(spec, "schedulerName") or "default-scheduler",
        node_name=_text(spec, "nodeName"),
        nominated_node_name="",
        priority=0,
        phase=_text(raw.get("status"), "phase"),
        deleting=bool(_text(metadata, "deletionTimestamp")),
        labels=_EMPTY,
        node_selector=_EMPTY,
        affinity=None,
        tolerations=(),
        host_ports=(),
        scheduling_gates=(),
        requests=ZERO,
        non_zero_requests=ZERO,
        resource_version=_text(metadata, "resourceVersion"),
        generation=0,
        parse_error=problem,
    )


def _parse_pod(raw: Raw) -> Pod:
    metadata = raw.get("metadata") or _EMPTY
    spec = raw.get("spec") or _EMPTY
    status = raw.get("status") or _EMPTY
    parse_error = ""
    try:
        requests = pod_requests(spec, status=status)
        non_zero = pod_requests(spec, non_zero=True, status=status)
    except QuantityError as error:  # other errors: parse_pod names the malformed field
        requests = non_zero = ZERO
        parse_error = str(error)
    preferred, preferred_error = preferred_node_affinity(spec)
    return Pod(
        raw=raw,
        uid=metadata.get("uid") or "",
        namespace=metadata.get("namespace") or "",
        name=metadata.get("name") or "",
        scheduler_name=spec.get("schedulerName") or "default-scheduler",
        node_name=spec.get("nodeName") or "",
        nominated_node_name=status.get("nominatedNodeName") or "",
        priority=int(spec.get("priority") or 0),
        phase=status.get("phase") or "",
        deleting=bool(metadata.get("deletionTimestamp")),
        labels=_mapping(metadata.get("labels")),
        node_selector=_mapping(spec.get("nodeSelector")),
        affinity=spec.get("affinity"),
        tolerations=_tolerations(spec),
        host_ports=_host_ports(spec),
        scheduling_gates=tuple(g.get("name", "") for g in spec.get("schedulingGates") or ()),
        requests=requests,
        non_zero_requests=non_zero,
        resource_version=metadata.get("resourceVersion") or "",
        generation=int(metadata.get("generation") or 0),
        parse_error=parse_error,
        required_affinity=required_node_affinity(spec),
        preferred_affinity=preferred,
        preferred_affinity_error=preferred_error,
        images=_images(spec),
        container_count=len(spec.get("initContainers") or ()) + len(spec.get("containers") or ()),
        pod_affinity=parse_pod_affinity(
            spec.get("affinity"), metadata.get("namespace") or "", metadata.get("labels") or _EMPTY
        ),
    )


def parse_node(raw: Raw) -> Node:
    """Never raises: a malformed node comes back with ``parse_error`` naming
    the field, and nothing allocatable."""
    try:
        return _parse_node(raw)
    except _MALFORMED as error:
        return _malformed_node(raw, _problems(node_problems(raw), error))


def _malformed_node(raw: Raw, problem: str) -> Node:
    raw = raw if isinstance(raw, Mapping) else _EMPTY
    metadata = raw.get("metadata")
    return Node(
        raw=raw,
        name=_text(metadata, "name"),
        uid=_text(metadata, "uid"),
        labels=_EMPTY,
        taints=(),
        unschedulable=False,
        allocatable=ZERO,
        resource_version=_text(metadata, "resourceVersion"),
        parse_error=problem,
    )


def _parse_node(raw: Raw) -> Node:
    metadata = raw.get("metadata") or _EMPTY
    spec = raw.get("spec") or _EMPTY
    status = raw.get("status") or _EMPTY
    parse_error = ""
    try:
        allocatable = Resource.from_list(status.get("allocatable") or status.get("capacity"))
    except QuantityError as error:  # other errors: parse_node names the malformed field
        allocatable = ZERO
        parse_error = f"invalid allocatable: {error}"
    return Node(
        raw=raw,
        name=metadata.get("name") or "",
        uid=metadata.get("uid") or "",
        labels=_mapping(metadata.get("labels")),
        taints=tuple(
            Taint(
                key=_string(t.get("key")),
                value=_string(t.get("value")),
                effect=_string(t.get("effect")),
            )
            for t in spec.get("taints") or ()
        ),
        unschedulable=bool(spec.get("unschedulable")),
        allocatable=allocatable,
        resource_version=metadata.get("resourceVersion") or "",
        parse_error=parse_error,
        images=node_images(status),
        declared_features=frozenset(status.get("declaredFeatures") or ()),
    )
