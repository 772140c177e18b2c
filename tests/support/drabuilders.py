"""Fluent builders for resource.k8s.io/v1 objects as plain dicts (the wire form).

``make_slice("slice-1").node("node-1").device(make_device("device-1")).obj()``
reads like the object it makes; every ``obj()`` returns a fresh dict.
"""

from __future__ import annotations

import copy
from typing import Any, Self

Obj = dict[str, Any]
API_VERSION = "resource.k8s.io/v1"


class DeviceBuilder:
    def __init__(self, name: str) -> None:
        self._obj: Obj = {"name": name}

    def attr(self, name: str, value: Any, kind: str = "") -> Self:
        """An attribute; the type follows the Python value unless ``kind`` says
        (``kind="version"`` for a semantic version). A list is a list-type
        attribute (DRAListTypeAttributes: ``ints``, ``bools``, ``strings``,
        ``versions``), its type that of its first element or ``kind``."""
        if isinstance(value, list):
            kind = kind or _kind(value[0] if value else "")
            self._obj.setdefault("attributes", {})[name] = {f"{kind}s": value}
            return self
        self._obj.setdefault("attributes", {})[name] = {kind or _kind(value): value}
        return self

    def capacity(self, name: str, value: str, **policy: Any) -> Self:
        entry: Obj = {"value": value}
        if policy:
            entry["requestPolicy"] = policy
        self._obj.setdefault("capacity", {})[name] = entry
        return self

    def taint(self, key: str, effect: str = "NoSchedule", value: str = "") -> Self:
        taint = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        self._obj.setdefault("taints", []).append(taint)
        return self

    def consumes(self, counter_set: str, **counters: str) -> Self:
        self._obj.setdefault("consumesCounters", []).append(
            {"counterSet": counter_set, "counters": {k: {"value": v} for k, v in counters.items()}}
        )
        return self

    def multiple(self) -> Self:
        self._obj["allowMultipleAllocations"] = True
        return self

    def binding_conditions(self, conditions: list[str], failure: list[str]) -> Self:
        self._obj["bindingConditions"] = conditions
        self._obj["bindingFailureConditions"] = failure
        return self

    def binds_to_node(self) -> Self:
        self._obj["bindsToNode"] = True
        return self

    def node(self, name: str) -> Self:
        self._obj["nodeName"] = name
        return self

    def all_nodes(self) -> Self:
        self._obj["allNodes"] = True
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


def _kind(value: Any) -> str:
    return "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "string"


def make_device(name: str) -> DeviceBuilder:
    return DeviceBuilder(name)


def label_selector(**labels: str) -> Obj:
    return {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": k, "operator": "In", "values": [v]} for k, v in labels.items()
                ]
            }
        ]
    }


def name_selector(node: str) -> Obj:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        ]
    }


class SliceBuilder:
    def __init__(self, name: str) -> None:
        self._obj: Obj = {
            "apiVersion": API_VERSION,
            "kind": "ResourceSlice",
            "metadata": {"name": name, "resourceVersion": "1"},
            "spec": {
                "driver": "driver-a",
                "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 1},
            },
        }

    def driver(self, driver: str) -> Self:
        self._obj["spec"]["driver"] = driver
        return self

    def pool(self, name: str, generation: int = 1, count: int = 1) -> Self:
        self._obj["spec"]["pool"] = {
            "name": name,
            "generation": generation,
            "resourceSliceCount": count,
        }
        return self

    def node(self, name: str) -> Self:
        self._obj["spec"]["nodeName"] = name
        return self

    def all_nodes(self) -> Self:
        self._obj["spec"]["allNodes"] = True
        return self

    def selector(self, selector: Obj) -> Self:
        self._obj["spec"]["nodeSelector"] = selector
        return self

    def per_device(self) -> Self:
        self._obj["spec"]["perDeviceNodeSelection"] = True
        return self

    def device(self, *devices: DeviceBuilder | str) -> Self:
        for device in devices:
            built = make_device(device).obj() if isinstance(device, str) else device.obj()
            self._obj["spec"].setdefault("devices", []).append(built)
        return self

    def counters(self, name: str, **counters: str) -> Self:
        self._obj["spec"].setdefault("sharedCounters", []).append(
            {"name": name, "counters": {k: {"value": v} for k, v in counters.items()}}
        )
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


def make_slice(name: str) -> SliceBuilder:
    return SliceBuilder(name)


class ClassBuilder:
    def __init__(self, name: str) -> None:
        self._obj: Obj = {
            "apiVersion": API_VERSION,
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {},
        }

    def selector(self, expression: str) -> Self:
        self._obj["spec"].setdefault("selectors", []).append({"cel": {"expression": expression}})
        return self

    def driver(self, driver: str) -> Self:
        return self.selector(f'device.driver == "{driver}"')

    def config(self, driver: str, **parameters: Any) -> Self:
        self._obj["spec"].setdefault("config", []).append(
            {"opaque": {"driver": driver, "parameters": parameters}}
        )
        return self

    def extended_resource(self, name: str) -> Self:
        self._obj["spec"]["extendedResourceName"] = name
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


def make_class(name: str) -> ClassBuilder:
    return ClassBuilder(name)


def request(
    name: str,
    device_class: str = "class-a",
    *,
    count: int | None = None,
    mode: str = "",
    selectors: tuple[str, ...] = (),
    admin: bool | None = None,
    tolerations: tuple[Obj, ...] = (),
    capacity: dict[str, str] | None = None,
) -> Obj:
    """An ``exactly`` request body, or (with ``name`` only used by the caller)
    a subrequest body for ``first_available``."""
    body: Obj = {"name": name, "deviceClassName": device_class}
    if count is not None:
        body["count"] = count
    if mode:
        body["allocationMode"] = mode
    if selectors:
        body["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if admin is not None:
        body["adminAccess"] = admin
    if tolerations:
        body["tolerations"] = list(tolerations)
    if capacity is not None:
        body["capacity"] = {"requests": capacity}
    return body


class ClaimBuilder:
    def __init__(self, name: str, namespace: str = "default") -> None:
        self._obj: Obj = {
            "apiVersion": API_VERSION,
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
            "spec": {"devices": {}},
        }

    def request(self, name: str, device_class: str = "class-a", **options: Any) -> Self:
        body = request(name, device_class, **options)
        name = body.pop("name")
        self._obj["spec"]["devices"].setdefault("requests", []).append(
            {"name": name, "exactly": body}
        )
        return self

    def first_available(self, name: str, *subrequests: Obj) -> Self:
        self._obj["spec"]["devices"].setdefault("requests", []).append(
            {"name": name, "firstAvailable": list(subrequests)}
        )
        return self

    def match(self, attribute: str, *requests: str) -> Self:
        constraint: Obj = {"matchAttribute": attribute}
        if requests:
            constraint["requests"] = list(requests)
        self._obj["spec"]["devices"].setdefault("constraints", []).append(constraint)
        return self

    def distinct(self, attribute: str, *requests: str) -> Self:
        constraint: Obj = {"distinctAttribute": attribute}
        if requests:
            constraint["requests"] = list(requests)
        self._obj["spec"]["devices"].setdefault("constraints", []).append(constraint)
        return self

    def config(self, driver: str, *requests: str, **parameters: Any) -> Self:
        entry: Obj = {"opaque": {"driver": driver, "parameters": parameters}}
        if requests:
            entry["requests"] = list(requests)
        self._obj["spec"]["devices"].setdefault("config", []).append(entry)
        return self

    def uid(self, uid: str) -> Self:
        self._obj["metadata"]["uid"] = uid
        return self

    def owner(self, pod_name: str, pod_uid: str) -> Self:
        self._obj["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod_name,
                "uid": pod_uid,
                "controller": True,
            }
        ]
        return self

    def allocation(self, allocation: Obj) -> Self:
        self._obj.setdefault("status", {})["allocation"] = allocation
        return self

    def reserved_for(self, pod_name: str, pod_uid: str) -> Self:
        self._obj.setdefault("status", {}).setdefault("reservedFor", []).append(
            {"resource": "pods", "name": pod_name, "uid": pod_uid}
        )
        return self

    def finalizer(self, name: str) -> Self:
        self._obj["metadata"].setdefault("finalizers", []).append(name)
        return self

    def deleting(self) -> Self:
        self._obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return self

    def resource_version(self, version: str) -> Self:
        self._obj["metadata"]["resourceVersion"] = version
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


def make_claim(name: str, namespace: str = "default") -> ClaimBuilder:
    return ClaimBuilder(name, namespace)


def pod_uses_claim(pod: Obj, name: str, claim_name: str) -> Obj:
    """``pod`` (a PodBuilder's dict) with ``spec.resourceClaims`` naming a claim."""
    pod = copy.deepcopy(pod)
    pod["spec"].setdefault("resourceClaims", []).append(
        {"name": name, "resourceClaimName": claim_name}
    )
    return pod


def pod_claim_status(pod: Obj, name: str, claim_name: str | None) -> Obj:
    """``pod`` with the resourceclaim controller's record of a generated claim."""
    pod = copy.deepcopy(pod)
    pod.setdefault("status", {}).setdefault("resourceClaimStatuses", []).append(
        {"name": name, "resourceClaimName": claim_name}
    )
    return pod
