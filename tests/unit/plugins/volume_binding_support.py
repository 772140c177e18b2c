"""Shared set-up of the VolumeBinding tests: the plugin over fake stores and API."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from plugins.volume_binding.assume import AssumeCache
from plugins.volume_binding.binder import VolumeBinder
from plugins.volume_binding.plugin import VolumeBinding
from plugins.volume_binding.prebind import VolumeBindingWriter
from scheduler.framework import Pod, object_key
from scheduler.framework.volumes import StorageLister
from tests.support.builders import make_pod
from tests.support.clock import FakeClock
from tests.support.storage import FakeInformers, claim_volume
from tests.unit.plugins.support import Obj

ZONE = "topology.kubernetes.io/zone"


def using(name: str, *claims: str) -> Obj:
    builder = make_pod(name)
    for index, claim in enumerate(claims):
        builder = builder.volume(f"v{index}", **claim_volume(claim))
    return builder.obj()


class FakeApi:
    """Records PUTs and applies them to the stores, bumping resourceVersion
    (as the API server and then the informer would)."""

    def __init__(self, informers: FakeInformers, *, apply: bool = True) -> None:
        self.informers = informers
        self.apply = apply
        self.requests: list[tuple[str, str, Any]] = []
        self.fail_on: str = ""

    async def bind(self, pod: Pod, node_name: str) -> None:
        raise NotImplementedError

    async def request(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> Any:
        self.requests.append((method, path, body))
        if self.fail_on and self.fail_on in path:
            raise RuntimeError(f"409 Conflict: {path} was modified")
        written: dict[str, Any] = copy.deepcopy(dict(body))
        metadata = written["metadata"]
        metadata["resourceVersion"] = str(int(metadata.get("resourceVersion") or "0") + 1)
        if self.apply:
            resource = (
                "persistentvolumes" if "/persistentvolumes/" in path else ("persistentvolumeclaims")
            )
            self.informers.store(resource).put(written)
        return written


class FakeSleep:
    """Advances the fake clock instead of sleeping; runs ``on_sleep`` each time."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.calls = 0
        self.on_sleep: list[Any] = []

    async def __call__(self, seconds: float) -> None:
        self.calls += 1
        self.clock.advance(seconds)
        for action in self.on_sleep:
            action()


def build(
    informers: FakeInformers,
    *,
    api: FakeApi | None = None,
    clock: FakeClock | None = None,
    sleep: FakeSleep | None = None,
    bind_timeout: float = 600.0,
) -> tuple[VolumeBinding, VolumeBinder, FakeApi]:
    lister = StorageLister(informers)
    binder = VolumeBinder(
        lister,
        AssumeCache(lister.store("persistentvolumes"), "persistentvolumes"),
        AssumeCache(lister.store("persistentvolumeclaims"), "persistentvolumeclaims"),
    )
    api = api or FakeApi(informers)
    clock = clock or FakeClock()
    writer = VolumeBindingWriter(
        api, binder, lister, clock, bind_timeout, sleep=sleep or FakeSleep(clock)
    )
    return VolumeBinding(binder, writer), binder, api


def get(informers: FakeInformers, resource: str, key: str) -> Mapping[str, Any]:
    obj = informers.store(resource).get(key)
    assert obj is not None, f"{resource} {key} missing"
    return obj


__all__ = ["ZONE", "FakeApi", "FakeSleep", "build", "get", "object_key", "using"]
