"""``MemoryCluster``: the client boundary (``ClusterClient``) over in-memory objects.

What the live scheduler does to the API server, applied to dicts instead:
lists and watches (with the pod field selector the informers use), pod
binding (``spec.nodeName`` plus ``PodScheduled=True``, as the API server's
binding storage does), strategic-merge status patches (``patches``, with the
``metadata.uid`` precondition), events, and the generic ``request`` plugins
use from PreBind and background work (GET, POST with ``generateName``, PUT
with the resourceVersion precondition, PATCH as a JSON merge patch or
strategic on ``status``, DELETE) on any known resource and its ``status``
subresource. A DELETE removes the object at once, as a kubelet finishing a
graceful termination would. Loaded pods are admitted as the API server and
the resourceclaim controller would (``admission``).

Invariants:
- A stored object is never mutated: every write stores a new dict, so the
  informers' stores can share the objects they were given.
- Every write bumps one cluster-wide resourceVersion and is delivered to
  each open watch in write order; a watch with a field selector sees an
  object that stops matching as DELETED and one that starts as ADDED.
- A list waits only while its resource is held (``hold``/``release``: the
  simulator lists pods last); nothing awaits inside a write, so a write and
  its watch events happen at one point of the event loop, as seen by the
  simulator's idle check (``pending_deliveries``).
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

from scheduler.kube.errors import HTTP_CONFLICT, HTTP_NOT_FOUND, ApiError
from scheduler.kube.resources import (
    BY_GROUP_KIND,
    KNOWN_RESOURCES,
    PODS,
    PRIORITY_CLASSES,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    ResourceType,
)
from scheduler.kube.wire import STRATEGIC_MERGE_PATCH as STRATEGIC
from scheduler.simulate.admission import (
    NameGenerator,
    admit_priority,
    claims_from_templates,
    gated_condition,
)
from scheduler.simulate.patches import (
    check_uid,
    field_matcher,
    merge_list,
    merge_patch,
    strategic_status,
)

Raw = dict[str, Any]
_UID_NAMESPACE = uuid.UUID("6f1d8a52-2b52-4a43-9a4e-3c1f5e0b7a11")
POD_SCHEDULED = "PodScheduled"
HTTP_UNPROCESSABLE = 422


def resource_type_of(obj: Mapping[str, Any]) -> ResourceType | None:
    """The known resource type of an object from its apiVersion and kind."""
    api_version = str(obj.get("apiVersion") or "")
    group = api_version.rpartition("/")[0]
    kind = str(obj.get("kind") or "")
    return BY_GROUP_KIND.get(f"{group}/{kind}" if group else kind)


def object_key(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace") or ""
    name = metadata.get("name") or ""
    return f"{namespace}/{name}" if namespace else name


def stable_uid(resource: ResourceType, key: str) -> str:
    """A uid derived from the object's identity, so repeated runs agree."""
    return str(uuid.uuid5(_UID_NAMESPACE, f"{resource.group_resource}/{key}"))


class _Watch:
    def __init__(self, resource: ResourceType, matches: Callable[[Mapping[str, Any]], bool]):
        self.resource = resource
        self.matches = matches
        self.events: deque[Raw] = deque()
        self.wake = asyncio.Event()

    def offer(self, new: Raw | None, old: Raw | None) -> None:
        was = old is not None and self.matches(old)
        now = new is not None and self.matches(new)
        if now and new is not None:
            self._put("MODIFIED" if was else "ADDED", new)
        elif was and old is not None:
            # Gone, or no longer selected: the last version, as DELETED.
            self._put("DELETED", new if new is not None else old)

    def _put(self, type_: str, obj: Raw) -> None:
        self.events.append({"type": type_, "object": obj})
        self.wake.set()


class MemoryCluster:
    """A ``ClusterClient`` holding every object in memory. ``clock`` gives
    the wall time of bind conditions."""

    def __init__(self, objects: Iterable[Raw], wall: Callable[[], float]) -> None:
        self._wall = wall
        self._version = 0
        self._objects: dict[ResourceType, dict[str, Raw]] = {}
        self._watches: list[_Watch] = []
        self.events: list[Raw] = []
        self.deleted: list[Raw] = []
        self.writes = 0
        self._names = NameGenerator()
        self._held: dict[ResourceType, asyncio.Event] = {}
        for obj in objects:
            resource = resource_type_of(obj)
            if resource is None:
                raise ValueError(f"not a known resource: {obj.get('kind')}")
            self._store(resource, self._with_identity(resource, obj))
        self._admit()

    def _admit(self) -> None:
        """Pods as admission and the resourceclaim controller leave them."""
        classes = self.objects(PRIORITY_CLASSES)

        def template(namespace: str, name: str) -> Raw | None:
            return self.get(RESOURCE_CLAIM_TEMPLATES, f"{namespace}/{name}")

        for key, pod in list(self._objects.get(PODS, {}).items()):
            admitted, claims = claims_from_templates(
                admit_priority(gated_condition(pod), classes), template, self._names
            )
            for claim in claims:
                self._store(RESOURCE_CLAIMS, self._with_identity(RESOURCE_CLAIMS, claim))
            self._objects[PODS][key] = admitted

    # ----------------------------------------------------------------- state
    def objects(self, resource: ResourceType) -> list[Raw]:
        return list(self._objects.get(resource, {}).values())

    def resources(self) -> list[ResourceType]:
        return list(self._objects)

    def get(self, resource: ResourceType, key: str) -> Raw | None:
        return self._objects.get(resource, {}).get(key)

    def pending_deliveries(self) -> int:
        return sum(len(watch.events) for watch in self._watches)

    def _with_identity(self, resource: ResourceType, obj: Raw) -> Raw:
        metadata = dict(obj.get("metadata") or {})
        metadata.setdefault("uid", stable_uid(resource, object_key(obj)))
        self._version += 1
        metadata["resourceVersion"] = str(self._version)
        return {**obj, "metadata": metadata}

    def _store(self, resource: ResourceType, obj: Raw) -> None:
        self._objects.setdefault(resource, {})[object_key(obj)] = obj

    def _write(self, resource: ResourceType, new: Raw | None, old: Raw | None) -> Raw | None:
        """Store ``new`` (or delete ``old``) with a fresh resourceVersion and
        tell the watches."""
        self.writes += 1
        self._version += 1
        if new is not None:
            metadata = {**(new.get("metadata") or {}), "resourceVersion": str(self._version)}
            new = {**new, "metadata": metadata}
            self._store(resource, new)
        elif old is not None:
            self._objects.get(resource, {}).pop(object_key(old), None)
            self.deleted.append(old)
        for watch in self._watches:
            if watch.resource == resource:
                watch.offer(new, old)
        return new

    def _require(self, resource: ResourceType, key: str) -> Raw:
        found = self.get(resource, key)
        if found is None:
            raise ApiError(
                HTTP_NOT_FOUND, "NotFound", f'{resource.group_resource} "{key}" not found'
            )
        return found

    # ------------------------------------------------------------ list, watch
    def hold(self, resource: ResourceType) -> None:
        """Lists of ``resource`` wait until ``release(resource)``."""
        self._held.setdefault(resource, asyncio.Event())

    def release(self, resource: ResourceType) -> None:
        held = self._held.pop(resource, None)
        if held is not None:
            held.set()

    async def list(
        self,
        resource: ResourceType,
        *,
        resource_version: str | None = None,
        limit: int = 500,
        continue_: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> dict[str, Any]:
        held = self._held.get(resource)
        if held is not None:
            await held.wait()
        matches = field_matcher(field_selector)
        items = [obj for obj in self.objects(resource) if matches(obj)]
        return {"metadata": {"resourceVersion": str(self._version)}, "items": items}

    async def watch(
        self,
        resource: ResourceType,
        *,
        resource_version: str,
        timeout_seconds: int,
        allow_bookmarks: bool = True,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        watch = _Watch(resource, field_matcher(field_selector))
        self._watches.append(watch)
        try:
            while True:
                while watch.events:
                    yield watch.events.popleft()
                watch.wake.clear()
                await watch.wake.wait()
        finally:
            self._watches.remove(watch)

    # ----------------------------------------------------------------- writes
    async def bind(self, pod_namespace: str, pod_name: str, pod_uid: str, node_name: str) -> None:
        pod = self._require(PODS, f"{pod_namespace}/{pod_name}")
        if pod_uid and (pod.get("metadata") or {}).get("uid") != pod_uid:
            raise ApiError(HTTP_CONFLICT, "Conflict", "Precondition failed: UID in precondition")
        if (pod.get("spec") or {}).get("nodeName"):
            raise ApiError(HTTP_CONFLICT, "Conflict", f"pod {pod_name} is already assigned")
        status = dict(pod.get("status") or {})
        condition = {
            "type": POD_SCHEDULED,
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": _rfc3339(self._wall()),
        }
        status["conditions"] = merge_list(status.get("conditions") or [], [condition], "type")
        spec = {**(pod.get("spec") or {}), "nodeName": node_name}
        self._write(PODS, {**pod, "spec": spec, "status": status}, pod)

    async def patch_pod_status(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        pod = self._require(PODS, f"{namespace}/{name}")
        check_uid(pod, patch)
        status = strategic_status(pod, patch)
        return self._write(PODS, {**pod, "status": status}, pod) or {}

    async def create_event(self, namespace: str, event: Mapping[str, Any]) -> None:
        self.events.append(dict(event))

    async def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        for index, event in enumerate(self.events):
            metadata = event.get("metadata") or {}
            if metadata.get("name") == name and metadata.get("namespace") == namespace:
                self.events[index] = merge_patch(event, patch)
                return
        raise ApiError(HTTP_NOT_FOUND, "NotFound", f'event "{name}" not found')

    async def create_core_event(self, namespace: str, event: Mapping[str, Any]) -> None:
        await self.create_event(namespace, event)  # never used: events.k8s.io is served

    async def patch_core_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        await self.patch_event(namespace, name, patch)

    async def request(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> Any:
        resource, namespace, name, subresource = _parse_path(path)
        key = f"{namespace}/{name}" if namespace and resource.namespaced else name
        method = method.upper()
        if method == "GET":
            if not name:
                return await self.list(resource)
            return self._require(resource, key)
        if method == "POST":
            if not isinstance(body, Mapping):
                raise ApiError(HTTP_UNPROCESSABLE, "Invalid", "a body is required")
            obj = dict(body)
            metadata = dict(obj.get("metadata") or {})
            if namespace and resource.namespaced:
                metadata.setdefault("namespace", namespace)
            if not metadata.get("name") and metadata.get("generateName"):
                metadata["name"] = self._names(str(metadata["generateName"]))
            obj["metadata"] = metadata
            created_key = object_key(obj)
            if self.get(resource, created_key) is not None:
                raise ApiError(HTTP_CONFLICT, "AlreadyExists", f'"{created_key}" already exists')
            metadata.setdefault("uid", stable_uid(resource, created_key))
            if resource == PODS:
                obj = gated_condition(obj)
            return self._write(resource, obj, None)
        old = self._require(resource, key)
        if method == "DELETE":
            self._write(resource, None, old)
            return old
        if method == "PUT":
            new = dict(body)
            wanted = (new.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != (old.get("metadata") or {}).get("resourceVersion"):
                raise ApiError(HTTP_CONFLICT, "Conflict", "the object has been modified")
            if subresource == "status":
                new = {**old, "status": new.get("status")}
        elif method == "PATCH" and subresource == "status" and content_type == STRATEGIC:
            check_uid(old, body or {})
            new = {**old, "status": strategic_status(old, body or {})}
        elif method == "PATCH":
            new = merge_patch(old, body)
            if subresource == "status":
                new = {**old, "status": new.get("status")}
        else:
            raise ApiError(405, "MethodNotAllowed", f"{method} {path}")
        return self._write(resource, new, old)

    async def close(self) -> None:
        for watch in self._watches:
            watch.wake.set()


def _parse_path(path: str) -> tuple[ResourceType, str, str, str]:
    """``/api/v1/namespaces/ns/pods/name/status`` -> (PODS, ns, name, status)."""
    parts = [p for p in path.split("?", maxsplit=1)[0].split("/") if p]
    if parts[:1] == ["api"]:
        rest = parts[2:]
    elif parts[:1] == ["apis"]:
        rest = parts[3:]
    else:
        raise ApiError(HTTP_NOT_FOUND, "NotFound", f"no such path {path}")
    namespace = ""
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        namespace, rest = rest[1], rest[2:]
    if not rest or rest[0] not in KNOWN_RESOURCES:
        raise ApiError(HTTP_NOT_FOUND, "NotFound", f"no such resource in {path}")
    resource = KNOWN_RESOURCES[rest[0]]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    return resource, namespace, name, subresource


def _rfc3339(unix: float) -> str:
    moment = datetime.datetime.fromtimestamp(unix, tz=datetime.UTC).replace(microsecond=0)
    return moment.isoformat().replace("+00:00", "Z")
