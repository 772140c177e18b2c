"""Extended resources backed by a DeviceClass: the claim the scheduler makes
for them (upstream ``extendeddynamicresources.go``). Pure.

A pod requesting ``example.com/gpu: 2`` where a DeviceClass serves that name
gets, on a node that does not advertise the resource, a claim the scheduler
creates in PreBind: ``generateName: <pod>-extended-resources-``, annotated
``resource.kubernetes.io/extended-resource-claim: "true"``, controlled by the
pod, with one ExactCount request per (container, resource) named
``container-<i>-request-<j>`` (``i`` the container's index, init containers
first; ``j`` the resource's index among the container's sorted requests).
Init containers that run before the others reuse their requests where they
can and share the largest one; ``requestMappings`` say which request serves
which container, and go into ``pod.status.extendedResourceClaimStatus``.
Until PreBind the claim exists only in memory, named ``<extended-resources>``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from plugins.dynamicresources.model import Raw
from scheduler.framework import Pod, QuantityError
from scheduler.framework.deviceclasses import ExtendedResourceClasses
from scheduler.framework.quantity import to_units

ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
PLACEHOLDER_NAME = "<extended-resources>"
_EMPTY: Mapping[str, Any] = {}


def is_placeholder(claim: Raw) -> bool:
    return (claim.get("metadata") or _EMPTY).get("name") == PLACEHOLDER_NAME


def find_claim(pod: Pod, claims: Iterable[Raw]) -> Raw | None:
    """A claim the scheduler made for this pod's extended resources earlier."""
    for claim in claims:
        metadata = claim.get("metadata") or _EMPTY
        if metadata.get("namespace") != pod.namespace:
            continue
        if (metadata.get("annotations") or _EMPTY).get(ANNOTATION) != "true":
            continue
        for owner in metadata.get("ownerReferences") or ():
            if (
                owner.get("name") == pod.name
                and owner.get("controller")
                and owner.get("uid") == pod.uid
            ):
                return claim
    return None


def placeholder(pod: Pod, uid: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "namespace": pod.namespace,
            "name": PLACEHOLDER_NAME,
            "uid": uid,
            "generateName": f"{pod.name}-extended-resources-",
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod.name,
                    "uid": pod.uid,
                    "controller": True,
                }
            ],
            "annotations": {ANNOTATION: "true"},
        },
        "spec": {},
    }


def _count(container: Raw, resource: str) -> int:
    value = ((container.get("resources") or _EMPTY).get("requests") or _EMPTY).get(resource)
    if value is None:
        return 0
    try:
        return to_units(str(value))
    except QuantityError:
        return 0


def _request_for(
    index: int,
    container: Raw,
    resource: str,
    class_name: str,
    reusable: list[dict[str, Any] | None],
) -> tuple[dict[str, Any] | None, list[dict[str, str]]]:
    wanted = _count(container, resource)
    if wanted == 0:
        return None, []
    name = str(container.get("name") or "")
    mappings: list[dict[str, str]] = []
    covered = 0
    for request in reusable:
        if request is None:
            continue
        covered += request["exactly"]["count"]
        mappings.append(
            {"containerName": name, "resourceName": resource, "requestName": request["name"]}
        )
        if covered >= wanted:
            return None, mappings
    keys = sorted((container.get("resources") or _EMPTY).get("requests") or _EMPTY)
    request_name = f"container-{index}-request-{keys.index(resource)}"
    request = {
        "name": request_name,
        "exactly": {
            "deviceClassName": class_name,
            "allocationMode": "ExactCount",
            "count": wanted - covered,
        },
    }
    mappings.append({"containerName": name, "resourceName": resource, "requestName": request_name})
    return request, mappings


def requests_and_mappings(
    pod: Pod, resources: Iterable[str], classes: ExtendedResourceClasses
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The device requests for ``resources`` (served by DRA on this node)
    and the container -> request mappings, as upstream builds them."""
    init = list(pod.spec.get("initContainers") or ())
    containers = init + list(pod.spec.get("containers") or ())
    long_lived = [
        i for i, c in enumerate(containers) if i >= len(init) or c.get("restartPolicy") == "Always"
    ]
    short_lived = [i for i in range(len(init)) if i not in long_lived]
    requests: list[dict[str, Any]] = []
    mappings: list[dict[str, str]] = []
    for resource in sorted(resources):
        class_name = classes.class_for(resource)
        if class_name is None:
            continue
        long_requests: list[dict[str, Any] | None] = [None] * len(containers)
        long_mappings: list[dict[str, str]] = []
        for i in long_lived:
            request, found = _request_for(i, containers[i], resource, class_name, [])
            long_requests[i] = request
            long_mappings.extend(found)
        largest: dict[str, Any] | None = None
        short_names: set[str] = set()
        short_mappings: list[dict[str, str]] = []
        for i in short_lived:
            request, found = _request_for(i, containers[i], resource, class_name, long_requests[i:])
            if request is not None:
                short_names.add(request["name"])
                if largest is None or largest["exactly"]["count"] < request["exactly"]["count"]:
                    largest = request
            short_mappings.extend(found)
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest["name"])
            for mapping in short_mappings:
                if mapping["requestName"] in short_names:
                    mapping["requestName"] = largest["name"]
        if largest is not None:
            requests.append(largest)
        requests.extend(r for r in long_requests if r is not None)
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    requests.sort(key=lambda r: str(r["name"]))
    return requests, mappings


def with_requests(claim: Raw, requests: list[dict[str, Any]]) -> dict[str, Any]:
    """A node-specific copy of the (placeholder) claim with its requests."""
    copied: dict[str, Any] = copy.deepcopy(dict(claim))
    copied["spec"] = {"devices": {"requests": requests}}
    return copied


def for_create(claim: Raw) -> dict[str, Any]:
    """The body PreBind creates: no name or uid (``generateName`` names it)."""
    body: dict[str, Any] = copy.deepcopy(dict(claim))
    metadata = body["metadata"]
    for field in ("name", "uid", "resourceVersion"):
        metadata.pop(field, None)
    body.pop("status", None)
    return body
