"""Builders for storage objects (claims, volumes, classes, CSINodes) as wire
dicts, and in-memory stores standing in for their informers.

``make_pvc("data").storage_class("fast").request("1Gi").obj()``; a claim is
made bound with ``.bound_to("pv-1")`` (volumeName plus the bind-completed
annotation, as the PV controller leaves it).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Self

from scheduler.framework.volumes import ANN_BIND_COMPLETED, ANN_SELECTED_NODE
from tests.support.informers import FakeStore

Obj = dict[str, Any]


class PvcBuilder:
    def __init__(self, name: str, namespace: str = "default") -> None:
        self._obj: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"uid-{namespace}-{name}",
                "resourceVersion": "1",
            },
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {}}},
            "status": {"phase": "Pending"},
        }

    def storage_class(self, name: str) -> Self:
        self._obj["spec"]["storageClassName"] = name
        return self

    def request(self, storage: str) -> Self:
        self._obj["spec"]["resources"]["requests"]["storage"] = storage
        return self

    def access_modes(self, *modes: str) -> Self:
        self._obj["spec"]["accessModes"] = list(modes)
        return self

    def volume_name(self, name: str) -> Self:
        self._obj["spec"]["volumeName"] = name
        return self

    def bound_to(self, volume: str) -> Self:
        self.volume_name(volume)
        self.annotation(ANN_BIND_COMPLETED, "yes")
        self._obj["status"]["phase"] = "Bound"
        return self

    def selected_node(self, node: str) -> Self:
        return self.annotation(ANN_SELECTED_NODE, node)

    def annotation(self, key: str, value: str) -> Self:
        self._obj["metadata"].setdefault("annotations", {})[key] = value
        return self

    def selector(self, **match_labels: str) -> Self:
        self._obj["spec"]["selector"] = {"matchLabels": dict(match_labels)}
        return self

    def phase(self, phase: str) -> Self:
        self._obj["status"]["phase"] = phase
        return self

    def deleting(self) -> Self:
        self._obj["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
        return self

    def owned_by(self, uid: str) -> Self:
        self._obj["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": uid, "controller": True}
        ]
        return self

    def resource_version(self, version: str) -> Self:
        self._obj["metadata"]["resourceVersion"] = version
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


class PvBuilder:
    def __init__(self, name: str) -> None:
        self._obj: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "resourceVersion": "1"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": f"/tmp/{name}"},
            },
            "status": {"phase": "Available"},
        }

    def capacity(self, storage: str) -> Self:
        self._obj["spec"]["capacity"]["storage"] = storage
        return self

    def storage_class(self, name: str) -> Self:
        self._obj["spec"]["storageClassName"] = name
        return self

    def access_modes(self, *modes: str) -> Self:
        self._obj["spec"]["accessModes"] = list(modes)
        return self

    def node_affinity(self, key: str, *values: str) -> Self:
        """A required node affinity: label ``key`` In ``values``."""
        self._obj["spec"]["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}
                ]
            }
        }
        return self

    def claim_ref(self, name: str, namespace: str = "default", uid: str = "") -> Self:
        ref = {"kind": "PersistentVolumeClaim", "name": name, "namespace": namespace}
        if uid:
            ref["uid"] = uid
        self._obj["spec"]["claimRef"] = ref
        return self

    def label(self, key: str, value: str) -> Self:
        self._obj["metadata"].setdefault("labels", {})[key] = value
        return self

    def csi(self, driver: str, handle: str) -> Self:
        self._obj["spec"].pop("hostPath", None)
        self._obj["spec"]["csi"] = {"driver": driver, "volumeHandle": handle}
        return self

    def phase(self, phase: str) -> Self:
        self._obj["status"]["phase"] = phase
        return self

    def volume_mode(self, mode: str) -> Self:
        self._obj["spec"]["volumeMode"] = mode
        return self

    def resource_version(self, version: str) -> Self:
        self._obj["metadata"]["resourceVersion"] = version
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


class StorageClassBuilder:
    def __init__(self, name: str) -> None:
        self._obj: Obj = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": "example.com/no-op",
            "volumeBindingMode": "Immediate",
        }

    def provisioner(self, name: str) -> Self:
        self._obj["provisioner"] = name
        return self

    def wait_for_first_consumer(self) -> Self:
        self._obj["volumeBindingMode"] = "WaitForFirstConsumer"
        return self

    def no_binding_mode(self) -> Self:
        self._obj.pop("volumeBindingMode", None)
        return self

    def allowed_topology(self, key: str, *values: str) -> Self:
        self._obj.setdefault("allowedTopologies", []).append(
            {"matchLabelExpressions": [{"key": key, "values": list(values)}]}
        )
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


class CsiNodeBuilder:
    def __init__(self, name: str) -> None:
        self._obj: Obj = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": name},
            "spec": {"drivers": []},
        }

    def driver(self, name: str, count: int | None = None) -> Self:
        driver: Obj = {"name": name, "nodeID": self._obj["metadata"]["name"]}
        if count is not None:
            driver["allocatable"] = {"count": count}
        self._obj["spec"]["drivers"].append(driver)
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


def make_pvc(name: str, namespace: str = "default") -> PvcBuilder:
    return PvcBuilder(name, namespace)


def make_pv(name: str) -> PvBuilder:
    return PvBuilder(name)


def make_storage_class(name: str) -> StorageClassBuilder:
    return StorageClassBuilder(name)


def make_csi_node(name: str) -> CsiNodeBuilder:
    return CsiNodeBuilder(name)


def claim_volume(claim: str) -> Obj:
    """The source of a pod volume using ``claim``: ``.volume("v", **claim_volume("c"))``."""
    return {"persistentVolumeClaim": {"claimName": claim}}


class FakeInformers:
    """``InformerAccess`` over FakeStores, one per resource, made on demand."""

    def __init__(self, **objects: Iterable[Mapping[str, Any]]) -> None:
        self.stores: dict[str, FakeStore] = {
            resource: FakeStore(items) for resource, items in objects.items()
        }

    def store(self, resource: str) -> FakeStore:
        return self.stores.setdefault(resource, FakeStore())

    def on_change(self, resource: str, handler: Any) -> None:
        raise NotImplementedError


def for_create(obj: Mapping[str, Any]) -> Obj:
    """A copy fit for POST: without the uid and resourceVersion the API server sets."""
    body: Obj = copy.deepcopy(dict(obj))
    body["metadata"].pop("uid", None)
    body["metadata"].pop("resourceVersion", None)
    return body
