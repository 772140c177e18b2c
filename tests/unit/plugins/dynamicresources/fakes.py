"""A fake Handle for DynamicResources: informer stores fed by hand, an API
that answers like the API server (resourceVersion bumps, conflicts on
request) and a clock that moves only when told."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any, TypeVar

from plugins.dynamicresources import SPEC, DynamicResources
from plugins.dynamicresources.cel import CelEnvironment
from scheduler.framework import FeatureGates, Handle, SharedKey, SharedObjects, object_key
from tests.support.clock import FakeClock
from tests.support.informers import FakeStore

Raw = dict[str, Any]
Handler = Callable[[Raw | None, Raw | None], None]
T = TypeVar("T")


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
        self.failures = 0  # the next N writes answer 500
        self.version = 100
        # while set and not open, every call waits for it (a slow API server)
        self.gate: asyncio.Event | None = None
        # calls on one object's path (status included) wait for its event
        self.held: dict[str, asyncio.Event] = {}

    async def bind(self, pod: Any, node_name: str) -> None:  # pragma: no cover - unused
        raise AssertionError("DynamicResources never binds")

    async def request(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> Any:
        self.calls.append((method, path))
        if self.gate is not None:
            await self.gate.wait()
        base = path.removesuffix("/status")
        if base in self.held:
            await self.held[base].wait()
        if method == "GET":
            return copy.deepcopy(self.objects[base])
        if self.conflicts:
            self.conflicts -= 1
            raise ApiError(409, "the object has been modified")
        if self.failures:
            self.failures -= 1
            raise ApiError(500, "internal error")
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
    """One profile's handle. ``peer`` makes another profile of the same
    process: same informers, API, clock and shared objects, its own name,
    events and metrics."""

    def __init__(
        self,
        profile_name: str = "default-scheduler",
        *,
        peer: FakeHandle | None = None,
        feature_gates: FeatureGates | None = None,
    ) -> None:
        self.feature_gates = (
            feature_gates
            if feature_gates is not None
            else peer.feature_gates
            if peer is not None
            else FeatureGates()
        )
        self.events = FakeEvents()
        self.metrics = FakeMetrics()
        self.profile_name = profile_name
        self.informers = peer.informers if peer is not None else FakeInformers()
        self.api = peer.api if peer is not None else FakeApi()
        self.clock = peer.clock if peer is not None else FakeClock()
        self._shared = peer._shared if peer is not None else SharedObjects()
        self.activated: list[str] = []  # pod keys, in order

    def activate(self, pods: Any) -> None:
        self.activated.extend(pod.key for pod in pods)

    def shared(self, key: SharedKey[T], build: Callable[[], T]) -> T:
        return self._shared.get_or_build(key, build)


def make_plugin(
    args: dict[str, Any] | None = None, handle: FakeHandle | None = None
) -> tuple[DynamicResources, FakeHandle]:
    handle = handle if handle is not None else FakeHandle()
    assert SPEC.args_model is not None
    plugin = SPEC.factory(SPEC.args_model.model_validate(args or {}), _as_handle(handle))
    assert isinstance(plugin, DynamicResources)
    return plugin, handle


def _as_handle(handle: FakeHandle) -> Handle:
    return handle  # type: ignore[return-value]


def steady_cel(**options: Any) -> CelEnvironment:
    """A CEL environment on a clock that never moves: its wall-time backstop
    never fires, so a test of library semantics does not depend on how busy
    the machine is."""
    return CelEnvironment(clock=lambda: 0.0, **options)
