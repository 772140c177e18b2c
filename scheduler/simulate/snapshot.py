"""Reading a cluster snapshot: Kubernetes YAML as ``kubectl get -o yaml`` writes it.

Accepts multi-document YAML whose documents are ``List`` objects (``v1
List``, ``PodList``, ...) or single objects, from any number of files.
Objects of a kind the scheduler knows (``scheduler.kube.resources``) are
served to the informers; others (ConfigMaps, VirtualMachines before a
plugin watches them) are kept and written back unchanged by ``-o yaml``.

Every problem raises ``SnapshotError`` naming the file, the document, the
item and the field (``snapshot.yaml: document 2, items[4] (Pod default/web):
spec.containers[0].resources.requests.cpu: invalid quantity 'lots'``):
never a traceback. Values the API server would have refused (a malformed
quantity, a missing name) are errors here, since a real snapshot cannot
contain them.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scheduler.framework.quantity import QuantityError
from scheduler.framework.resource import Resource
from scheduler.kube.resources import NODES, PODS
from scheduler.simulate.memory import resource_type_of

Raw = dict[str, Any]


# libyaml's parser when PyYAML was built with it: several times faster on
# snapshots of thousands of objects.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SafeDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Loader(_SafeLoader):  # type: ignore[valid-type,misc]
    """Timestamps stay strings, as in the API's JSON (PyYAML would make them
    ``datetime`` objects, which nothing downstream expects)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class SnapshotError(ValueError):
    """Malformed input, with where it is."""


@dataclass
class Snapshot:
    """Known objects (served to the scheduler) and the rest, in input order."""

    objects: list[Raw] = field(default_factory=list)
    passthrough: list[Raw] = field(default_factory=list)

    def extend(self, other: Snapshot) -> None:
        self.objects.extend(other.objects)
        self.passthrough.extend(other.passthrough)


def load_files(paths: Iterable[str]) -> Snapshot:
    snapshot = Snapshot()
    for path in paths:
        try:
            text = Path(path).read_text()
        except OSError as error:
            raise SnapshotError(f"{path}: cannot read: {error.strerror or error}") from None
        snapshot.extend(load_text(text, path))
    return snapshot


def load_text(text: str, source: str) -> Snapshot:
    snapshot = Snapshot()
    try:
        documents = list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise SnapshotError(f"{source}:{where}: not valid YAML: {problem}") from None
    for number, document in enumerate(documents, start=1):
        if document is None:
            continue
        where = f"{source}: document {number}"
        if not isinstance(document, Mapping):
            raise SnapshotError(f"{where}: expected an object, got {_type(document)}")
        kind = document.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and "items" in document:
            items = document.get("items") or []
            if not isinstance(items, list):
                raise SnapshotError(f"{where}: items: expected a list, got {_type(items)}")
            for index, item in enumerate(items):
                _add(snapshot, item, f"{where}, items[{index}]", _item_kind(kind))
        else:
            _add(snapshot, document, where, None)
    return snapshot


def _item_kind(list_kind: str) -> str | None:
    """``PodList`` -> ``Pod``: list items from the API may lack their kind."""
    return list_kind[: -len("List")] or None


def _add(snapshot: Snapshot, obj: Any, where: str, default_kind: str | None) -> None:
    if not isinstance(obj, Mapping):
        raise SnapshotError(f"{where}: expected an object, got {_type(obj)}")
    obj = dict(obj)
    if default_kind and not obj.get("kind"):
        obj["kind"] = default_kind
        obj.setdefault("apiVersion", "v1")
    for required in ("apiVersion", "kind"):
        if not isinstance(obj.get(required), str) or not obj[required]:
            raise SnapshotError(f"{where}: {required}: required")
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        raise SnapshotError(f"{where} ({obj['kind']}): metadata: expected an object")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise SnapshotError(f"{where} ({obj['kind']}): metadata.name: required")
    resource = resource_type_of(obj)
    if resource is None:
        snapshot.passthrough.append(obj)
        return
    if resource.namespaced and not metadata.get("namespace"):
        obj["metadata"] = {**metadata, "namespace": "default"}
    label = f"{where} ({obj['kind']} {_key(obj)})"
    if resource == PODS:
        _check_pod(obj, label)
    elif resource == NODES:
        _check_node(obj, label)
    snapshot.objects.append(obj)


def _key(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace")
    return f"{namespace}/{metadata.get('name')}" if namespace else str(metadata.get("name"))


def _mapping(obj: Mapping[str, Any], path: str, label: str) -> Mapping[str, Any]:
    value = obj.get(path.rpartition(".")[2])
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SnapshotError(f"{label}: {path}: expected an object, got {_type(value)}")
    return value


def _quantities(resources: Mapping[str, Any], path: str, label: str) -> None:
    if not resources:
        return
    if not isinstance(resources, Mapping):
        raise SnapshotError(f"{label}: {path}: expected an object, got {_type(resources)}")
    for name, value in resources.items():
        try:
            Resource.from_list({name: value})
        except (QuantityError, TypeError, ValueError):
            raise SnapshotError(f"{label}: {path}.{name}: invalid quantity {value!r}") from None


# The fields the scheduler reads, with the JSON type the API server enforces:
# "map", "list" (of objects, "[]" walks into each), "str", "int".
_POD_SHAPE = (
    ("metadata.labels", "map"),
    ("metadata.annotations", "map"),
    ("metadata.ownerReferences", "list"),
    ("spec.nodeName", "str"),
    ("spec.schedulerName", "str"),
    ("spec.priority", "int"),
    ("spec.nodeSelector", "map"),
    ("spec.affinity", "map"),
    ("spec.affinity.nodeAffinity", "map"),
    ("spec.affinity.podAffinity", "map"),
    ("spec.affinity.podAntiAffinity", "map"),
    ("spec.tolerations", "list"),
    ("spec.topologySpreadConstraints", "list"),
    ("spec.schedulingGates", "list"),
    ("spec.resourceClaims", "list"),
    ("spec.volumes", "list"),
    ("spec.overhead", "map"),
    ("spec.containers[].ports", "list"),
    ("spec.containers[].resources", "map"),
    ("spec.initContainers[].ports", "list"),
    ("spec.initContainers[].resources", "map"),
    ("status.conditions", "list"),
    ("status.containerStatuses", "list"),
)
_NODE_SHAPE = (
    ("metadata.labels", "map"),
    ("metadata.annotations", "map"),
    ("spec.taints", "list"),
    ("spec.unschedulable", "bool"),
    ("status.images", "list"),
    ("status.conditions", "list"),
)
_TYPES: dict[str, tuple[type, ...]] = {
    "map": (Mapping,),
    "list": (list,),
    "str": (str,),
    "int": (int,),
    "bool": (bool,),
}
_NAMES = {"map": "an object", "list": "a list", "str": "a string", "int": "an integer"}


def _check_shape(obj: Mapping[str, Any], shape: Iterable[tuple[str, str]], label: str) -> None:
    """Each listed field, where present, has its API type; a list's items
    are objects."""
    for path, kind in shape:
        for where, value in _walk(obj, path.split("."), ""):
            if value is None:
                continue
            if not isinstance(value, _TYPES[kind]) or (kind == "int" and isinstance(value, bool)):
                wanted = _NAMES.get(kind, "a " + kind)
                raise SnapshotError(f"{label}: {where}: expected {wanted}, got {_type(value)}")
            if isinstance(value, list):
                for index, item in enumerate(value):
                    if not isinstance(item, Mapping):
                        raise SnapshotError(
                            f"{label}: {where}[{index}]: expected an object, got {_type(item)}"
                        )


def _walk(value: Any, parts: list[str], where: str) -> Iterable[tuple[str, Any]]:
    """(path, value) for the dotted path; ``name[]`` visits every list item."""
    if not parts:
        yield where, value
        return
    if not isinstance(value, Mapping):
        return
    part, rest = parts[0], parts[1:]
    name = part.removesuffix("[]")
    child = value.get(name)
    path = f"{where}.{name}" if where else name
    if part.endswith("[]"):
        items: list[Any] = child if isinstance(child, list) else []
        for index, item in enumerate(items):
            yield from _walk(item, rest, f"{path}[{index}]")
    else:
        yield from _walk(child, rest, path)


def _check_pod(pod: Mapping[str, Any], label: str) -> None:
    _check_shape(pod, _POD_SHAPE, label)
    spec = _mapping(pod, "spec", label)
    _mapping(pod, "status", label)
    for list_name in ("containers", "initContainers"):
        containers = spec.get(list_name) or []
        if not isinstance(containers, list):
            raise SnapshotError(f"{label}: spec.{list_name}: expected a list")
        for index, container in enumerate(containers):
            path = f"spec.{list_name}[{index}]"
            if not isinstance(container, Mapping):
                raise SnapshotError(f"{label}: {path}: expected an object")
            resources = _mapping(container, f"{path}.resources", label)
            for part in ("requests", "limits"):
                _quantities(resources.get(part) or {}, f"{path}.resources.{part}", label)
    if not spec.get("containers"):
        raise SnapshotError(f"{label}: spec.containers: a pod needs at least one container")


def _check_node(node: Mapping[str, Any], label: str) -> None:
    _check_shape(node, _NODE_SHAPE, label)
    _mapping(node, "spec", label)
    status = _mapping(node, "status", label)
    for part in ("capacity", "allocatable"):
        _quantities(status.get(part) or {}, f"status.{part}", label)


def _type(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"a string {value!r}"
    return type(value).__name__


def snapshot_time(objects: Iterable[Mapping[str, Any]]) -> float | None:
    """The newest ``metadata.creationTimestamp`` in the snapshot (Unix time),
    so that a run's timestamps depend on its input alone; None if none."""
    newest: float | None = None
    for obj in objects:
        stamp = (obj.get("metadata") or {}).get("creationTimestamp")
        if not isinstance(stamp, str):
            continue
        try:
            moment = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            continue
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=datetime.UTC)
        value = moment.timestamp()
        newest = value if newest is None or value > newest else newest
    return newest


def dump_list(objects: Iterable[Raw]) -> str:
    """A ``v1 List`` of ``objects`` as YAML, readable by ``load_text``."""
    return yaml.dump(
        {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": list(objects)},
        Dumper=_SafeDumper,
        sort_keys=False,
    )
