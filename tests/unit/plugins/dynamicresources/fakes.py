"""A fake Handle for DynamicResources: informer stores fed by hand, an API
that answers like the API server (resourceVersion bumps, conflicts on
request) and a clock that moves only when told."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from plugins.dynamicresources import SPEC, DynamicResources
from scheduler.framework import Handle, object_key
from tests.support.clock import FakeClock
from tests.support.informers import FakeStore

Raw = dict[str, Any]
Handler = Callable[[Raw | None, Raw | None], None]


class FakeInformers:
    def __init__(self) -> None:
        self.stores: dict[str, FakeStore] = {}
        self.handlers: dict[str, list[Handler]] = {}

    def store(self, resource: str) -> FakeStore:
        return self.stores.setdefault(resource, FakeStore())

    def on_change(self, resource: str, handler: Handler) -> None:
        self.handlers.setdefault(resource, []).append(handler)

    def put(self, resource: str, obj: Raw) -> None:
        """Deliver an add or update, as the informer would."""
        store = self.store(resource)
        old = store.objects.get(object_key(obj))
        store.objects[object_key(obj)] = copy.deepcopy(obj)
        for handler in self.handlers.get(resource, ()):
            handler(old, store.objects[object_key(obj)])

    def delete(self, resource: str, obj: Raw) -> None:
        store = self.store(resource)
        old = store.objects.pop(object_key(obj), None)
        for handler in self.handlers.get(resource, ()):
            handler(old, None)


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class FakeApi:
    """Keeps written claims; each write bumps resourceVersion."""

    def __init__(self) -> None:
        self.objects: dict[str, Raw] = {}
        self.calls: list[tuple[str, str]] = []
        self.conflicts = 0  # the next N writes answer 409
        self.version = 100

    async def bind(self, pod: Any, node_name: str) -> None:  # pragma: no cover - unused
        raise AssertionError("DynamicResources never binds")

    async def request(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> Any:
        self.calls.append((method, path))
        base = path.removesuffix("/status")
        if method == "GET":
            return copy.deepcopy(self.objects[base])
        if self.conflicts:
            self.conflicts -= 1
            raise ApiError(409, "the object has been modified")
        if method == "DELETE":
            return {}
        if method == "PATCH":
            stored = self.objects.get(base)
            if stored is None:
                return {}
            gone = {item["uid"] for item in body["status"]["reservedFor"]}
            patched = copy.deepcopy(stored)
            status = patched.setdefault("status", {})
            status["reservedFor"] = [
                ref for ref in status.get("reservedFor", []) if ref["uid"] not in gone
            ]
            self.version += 1
            patched["metadata"]["resourceVersion"] = str(self.version)
            self.objects[base] = patched
            return copy.deepcopy(patched)
        if method == "POST":
            created = copy.deepcopy(body)
            created["metadata"]["name"] = created["metadata"]["generateName"] + "x1"
            created["metadata"]["uid"] = "created-uid"
            path = f"{path}/{created['metadata']['name']}"
            body = created
        self.version += 1
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(self.version)
        self.objects[path.removesuffix("/status") if method != "POST" else path] = stored
        return copy.deepcopy(stored)


class FakeMetrics:
    def __init__(self) -> None:
        self.recorded: list[tuple[Any, ...]] = []

    def preemption_attempt(self) -> None:  # pragma: no cover - not DRA's
        self.recorded.append(("preemption_attempt",))

    def preemption_victims(self, count: int) -> None:  # pragma: no cover - not DRA's
        self.recorded.append(("preemption_victims", count))

    def resourceclaim_create(self, status: str) -> None:
        self.recorded.append(("resourceclaim_create", status))

    def binding_conditions(self, profile: str, driver: str, status: str, seconds: float) -> None:
        self.recorded.append(("binding_conditions", profile, driver, status, seconds))

    def volume_scheduling_stage_error(self, operation: str) -> None:
        self.recorded.append(("volume_scheduling_stage_error", operation))


class FakeEvents:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str]] = []

    def event(self, regarding: Any, type_: str, reason: str, action: str, note: str) -> None:
        self.recorded.append((type_, reason, note))


class FakeHandle:
    def __init__(self) -> None:
        self.events = FakeEvents()
        self.informers = FakeInformers()
        self.api = FakeApi()
        self.clock = FakeClock()
        self.metrics = FakeMetrics()
        self.profile_name = "default-scheduler"


def make_plugin(args: dict[str, Any] | None = None) -> tuple[DynamicResources, FakeHandle]:
    handle = FakeHandle()
    assert SPEC.args_model is not None
    plugin = SPEC.factory(SPEC.args_model.model_validate(args or {}), _as_handle(handle))
    assert isinstance(plugin, DynamicResources)
    return plugin, handle


def _as_handle(handle: FakeHandle) -> Handle:
    return handle  # type: ignore[return-value]
