"""The volume plugins' factories build them from a Handle's informers, and
every volume plugin registers the events that can make its pods schedulable."""

from __future__ import annotations

from typing import Any, cast

import pytest

from plugins.registry import in_tree_registry
from scheduler.engine.profilehandle import NoPluginMetrics
from scheduler.framework import (
    EnqueueExtensions,
    EventResource,
    FilterPlugin,
    Handle,
    PreBindPlugin,
    PreFilterPlugin,
    ReservePlugin,
)
from tests.support.clock import FakeClock
from tests.support.storage import FakeInformers


class FakeHandle:
    def __init__(self) -> None:
        self.informers = FakeInformers()
        self.clock = FakeClock()
        self.api: Any = object()
        self.metrics = NoPluginMetrics()

    def snapshot(self) -> Any:
        return None


@pytest.mark.parametrize(
    ("name", "points", "resources"),
    [
        pytest.param(
            "VolumeRestrictions",
            (PreFilterPlugin, FilterPlugin),
            {EventResource.POD, EventResource.NODE, EventResource.PERSISTENT_VOLUME_CLAIM},
            id="VolumeRestrictions",
        ),
        pytest.param(
            "NodeVolumeLimits",
            (PreFilterPlugin, FilterPlugin),
            {
                EventResource.CSI_NODE,
                EventResource.POD,
                EventResource.PERSISTENT_VOLUME_CLAIM,
                EventResource.VOLUME_ATTACHMENT,
            },
            id="NodeVolumeLimits",
        ),
        pytest.param(
            "VolumeBinding",
            (PreFilterPlugin, FilterPlugin, ReservePlugin, PreBindPlugin),
            {
                EventResource.STORAGE_CLASS,
                EventResource.PERSISTENT_VOLUME_CLAIM,
                EventResource.PERSISTENT_VOLUME,
                EventResource.NODE,
                EventResource.CSI_NODE,
                EventResource.CSI_DRIVER,
                EventResource.CSI_STORAGE_CAPACITY,
            },
            id="VolumeBinding",
        ),
        pytest.param(
            "VolumeZone",
            (PreFilterPlugin, FilterPlugin),
            {
                EventResource.STORAGE_CLASS,
                EventResource.NODE,
                EventResource.PERSISTENT_VOLUME_CLAIM,
                EventResource.PERSISTENT_VOLUME,
            },
            id="VolumeZone",
        ),
    ],
)
def test_factory_and_events(
    name: str, points: tuple[type, ...], resources: set[EventResource]
) -> None:
    spec = in_tree_registry()[name]
    args = spec.args_model.model_validate({}) if spec.args_model else None
    handle = FakeHandle()
    assert handle.informers.stores == {}
    plugin = spec.factory(args, cast(Handle, handle))
    assert plugin.name == name
    # Stores opened by the factory, so that readiness waits for their lists.
    assert "persistentvolumeclaims" in handle.informers.stores
    for point in points:
        assert isinstance(plugin, point)
    assert isinstance(plugin, EnqueueExtensions)
    assert {item.event.resource for item in plugin.events_to_register()} == resources
