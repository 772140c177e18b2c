"""Shared informers: one per resource type, run together, and the framework adapter."""

from __future__ import annotations

import asyncio
import random
from collections import deque
from typing import Any

import pytest

from scheduler.framework.handle import InformerAccess, RawObject
from scheduler.informers.factory import FactoryInformerAccess, InformerFactory
from scheduler.informers.informer import ReflectorOptions
from scheduler.kube.resources import NODES, PODS, RESOURCE_CLAIMS
from tests.support.builders import make_node
from tests.support.clock import FakeClock
from tests.support.wait import eventually
from tests.unit.informers.fakes import FakeListWatch, WatchStep, event


def make_factory(fake: FakeListWatch) -> InformerFactory:
    return InformerFactory(
        fake,
        options=ReflectorOptions(backoff_jitter=0),
        clock=FakeClock(),
        rng=random.Random(3),
    )


def test_one_informer_per_resource_type() -> None:
    factory = make_factory(FakeListWatch())
    assert factory.informer(PODS) is factory.informer(PODS)
    assert factory.informer(PODS) is not factory.informer(NODES)
    assert [i.resource for i in factory.informers()] == [PODS, NODES]


@pytest.mark.parametrize(
    ("first", "second", "conflict"),
    [
        pytest.param({"field_selector": "a"}, {}, False, id="later caller does not care"),
        pytest.param({"field_selector": "a"}, {"field_selector": "a"}, False, id="same selector"),
        pytest.param({"field_selector": "a"}, {"field_selector": "b"}, True, id="other selector"),
        pytest.param({}, {"label_selector": "x=y"}, True, id="selector after an unfiltered one"),
    ],
)
def test_selectors_are_fixed_by_the_first_request(
    first: dict[str, str], second: dict[str, str], conflict: bool
) -> None:
    factory = make_factory(FakeListWatch())
    factory.informer(PODS, **first)
    if conflict:
        with pytest.raises(ValueError, match="selector"):
            factory.informer(PODS, **second)
    else:
        assert factory.informer(PODS, **second).field_selector == "a"


async def test_run_starts_every_informer_including_late_ones() -> None:
    fake = FakeListWatch(states=[("5", [make_node("n1").obj()])])
    factory = make_factory(fake)
    factory.informer(NODES)
    assert not factory.has_synced()
    task = asyncio.create_task(factory.run())
    await asyncio.wait_for(factory.wait_synced(), timeout=5)
    late = factory.informer(PODS)
    await asyncio.wait_for(factory.wait_synced(), timeout=5)
    assert late.has_synced
    assert factory.has_synced()
    names = {t.get_name() for t in asyncio.all_tasks()}
    assert {"informer:nodes", "informer:pods"} <= names
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert fake.open_watches == 0
    assert not {"informer:nodes", "informer:pods"} & {t.get_name() for t in asyncio.all_tasks()}


async def test_an_informer_crash_surfaces_from_run() -> None:
    fake = FakeListWatch(states=[("5", [])])
    fake.list_failures = deque([RuntimeError("a bug, not an API failure")])
    factory = make_factory(fake)
    factory.informer(PODS)
    factory.informer(NODES)
    with pytest.raises(ExceptionGroup) as caught:
        await asyncio.wait_for(factory.run(), timeout=5)
    assert caught.group_contains(RuntimeError, match="a bug")
    assert fake.open_watches == 0


async def test_informer_access_maps_plurals_and_reports_old_and_new() -> None:
    node = make_node("n1").resource_version("1").obj()
    changed = make_node("n1").resource_version("2").label("x", "y").obj()
    fake = FakeListWatch(states=[("5", [node])])
    fake.watches = deque(
        [WatchStep([event("MODIFIED", changed), event("DELETED", changed)], hang=True)]
    )
    factory = make_factory(fake)
    access: InformerAccess = FactoryInformerAccess(factory)
    changes: list[tuple[Any, Any]] = []

    def version(obj: RawObject | None) -> str | None:
        return None if obj is None else str(obj["metadata"]["resourceVersion"])

    def on_change(old: RawObject | None, new: RawObject | None) -> None:
        changes.append((version(old), version(new)))

    access.on_change("nodes", on_change)
    assert access.store("nodes") is factory.informer(NODES).store
    access.store("resourceclaims")
    assert [i.resource for i in factory.informers()] == [NODES, RESOURCE_CLAIMS]
    task = asyncio.create_task(factory.run())

    async def all_seen() -> bool:
        return len(changes) == 3

    await eventually(all_seen, timeout=5, what="three changes")
    assert changes == [(None, "1"), ("1", "2"), ("2", None)]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_informer_access_refuses_unknown_resources() -> None:
    access = FactoryInformerAccess(make_factory(FakeListWatch()))
    with pytest.raises(KeyError, match="widgets"):
        access.store("widgets")
