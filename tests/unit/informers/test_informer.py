"""The reflector state machine, driven by a scripted fake client and the fake clock."""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.informers.informer import Informer, ReflectorOptions, ResourceNotServed
from scheduler.kube.errors import ApiError, TransportError, WatchTimeout
from scheduler.kube.resources import PODS, VIRTUAL_MACHINES
from tests.support.builders import make_pod
from tests.support.clock import FakeClock
from tests.support.wait import eventually
from tests.unit.informers.fakes import (
    FakeListWatch,
    Recorder,
    WatchStep,
    bookmark,
    error_event,
    event,
)

OPTIONS = ReflectorOptions(page_size=2, backoff_jitter=0.0)


def pod(name: str, rv: str, uid: str = "") -> dict[str, Any]:
    return make_pod(name, "ns").uid(uid or f"uid-{name}").resource_version(rv).obj()


@dataclass
class Harness:
    fake: FakeListWatch
    informer: Informer
    recorder: Recorder
    clock: FakeClock
    task: asyncio.Task[None] | None = None

    async def until_idle(self) -> None:
        async def idle() -> bool:
            if self.task is not None and self.task.done():
                self.task.result()  # surface a crash instead of timing out
            return self.fake.idle

        await eventually(idle, timeout=5, what="informer waiting on its last watch")


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    fake, clock, recorder = FakeListWatch(), FakeClock(), Recorder()
    informer = Informer(fake, PODS, options=OPTIONS, clock=clock, rng=random.Random(1))
    informer.add_handler(recorder.on_add, recorder.on_update, recorder.on_delete)
    made = Harness(fake, informer, recorder, clock)
    yield made
    if made.task is not None:
        made.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await made.task
    assert fake.open_watches == 0, "the watch stream was not closed"


@dataclass
class Case:
    states: list[tuple[str, list[dict[str, Any]]]]
    watches: list[WatchStep]
    calls: list[tuple[str, ...]]
    watch_rvs: list[str]
    lists: int = 1
    sleeps: list[float] = field(default_factory=list)
    list_failures: list[Exception] = field(default_factory=list)


CASES = [
    pytest.param(
        Case(
            states=[("10", [pod("a", "1"), pod("b", "2"), pod("c", "3")])],
            watches=[],
            calls=[("add", "a", "1"), ("add", "b", "2"), ("add", "c", "3")],
            watch_rvs=["10"],
        ),
        id="lists every page, delivers adds, watches from the list rv",
    ),
    pytest.param(
        Case(
            states=[("10", [pod("a", "1")])],
            watches=[
                WatchStep(
                    [
                        event("ADDED", pod("b", "11")),
                        event("MODIFIED", pod("a", "12")),
                        event("DELETED", pod("b", "13")),
                        bookmark("20"),
                    ]
                )
            ],
            calls=[
                ("add", "a", "1"),
                ("add", "b", "11"),
                ("update", "a", "1", "12"),
                ("delete", "b"),
            ],
            watch_rvs=["10", "20"],
        ),
        id="watch events in order; a clean end re-watches from the bookmark",
    ),
    pytest.param(
        Case(
            states=[
                ("10", [pod("a", "1"), pod("b", "1"), pod("c", "1")]),
                ("30", [pod("a", "1"), pod("b", "25"), pod("d", "26")]),
            ],
            watches=[WatchStep([error_event(410)])],
            calls=[
                *[("add", "a", "1"), ("add", "b", "1"), ("add", "c", "1")],
                *[("delete", "c"), ("update", "b", "1", "25"), ("add", "d", "26")],
            ],
            watch_rvs=["10", "30"],
            lists=2,
        ),
        id="410 ERROR event: relist and deliver only the diff",
    ),
    pytest.param(
        Case(
            states=[("10", [pod("a", "1")]), ("30", [pod("b", "29")])],
            watches=[WatchStep(then=ApiError(410, "Gone", "too old resource version"))],
            calls=[("add", "a", "1"), ("delete", "a"), ("add", "b", "29")],
            watch_rvs=["10", "30"],
            lists=2,
        ),
        id="410 answer to the watch request: relist",
    ),
    pytest.param(
        Case(
            states=[("10", [pod("a", "1", uid="u1")]), ("30", [pod("a", "29", uid="u2")])],
            watches=[WatchStep([error_event(410)])],
            calls=[("add", "a", "1"), ("delete", "a"), ("add", "a", "29")],
            watch_rvs=["10", "30"],
            lists=2,
        ),
        id="recreated while not watching: delete then add",
    ),
    pytest.param(
        Case(
            states=[("10", [])],
            watches=[
                WatchStep([event("ADDED", pod("b", "11"))], then=TransportError("reset")),
                WatchStep(then=TransportError("refused")),
                WatchStep(then=WatchTimeout("silent")),
            ],
            calls=[("add", "b", "11")],
            watch_rvs=["10", "11", "11", "11"],
            sleeps=[0.8, 1.6, 3.2],
        ),
        id="connection errors: back off and resume from the last rv without relisting",
    ),
    pytest.param(
        Case(
            states=[("10", [])],
            watches=[WatchStep([error_event(500, "InternalError")])],
            calls=[],
            watch_rvs=["10", "10"],
            sleeps=[0.8],
        ),
        id="other ERROR event: back off and resume",
    ),
    pytest.param(
        Case(
            states=[("10", [pod("a", "1")])],
            watches=[],
            list_failures=[TransportError("refused"), ApiError(503, "ServiceUnavailable", "")],
            calls=[("add", "a", "1")],
            watch_rvs=["10"],
            lists=3,
            sleeps=[0.8, 1.6],
        ),
        id="list failures: back off and list again",
    ),
    pytest.param(
        Case(
            states=[("10", [])],
            watches=[WatchStep()],
            calls=[],
            watch_rvs=["10", "10"],
            sleeps=[0.8],
        ),
        id="a watch that ends at once without events backs off",
    ),
]


@pytest.mark.parametrize("case", CASES)
async def test_reflector(harness: Harness, case: Case) -> None:
    harness.fake.states = case.states
    harness.fake.watches = deque(case.watches)
    harness.fake.list_failures = deque(case.list_failures)
    harness.task = asyncio.create_task(harness.informer.run())
    await harness.until_idle()
    assert harness.recorder.calls == case.calls
    assert [call["rv"] for call in harness.fake.watch_calls] == case.watch_rvs
    assert harness.informer.stats.lists == case.lists
    assert harness.clock.sleeps == pytest.approx(case.sleeps)
    assert harness.informer.has_synced


async def test_backoff_is_capped_and_resets_after_a_working_watch(harness: Harness) -> None:
    failures = [WatchStep(then=TransportError("refused")) for _ in range(8)]
    working = WatchStep([event("ADDED", pod("a", "11"))], then=TransportError("reset"))
    harness.fake.states = [("10", [])]
    harness.fake.watches = deque([*failures, working, WatchStep(then=TransportError("x"))])
    harness.task = asyncio.create_task(harness.informer.run())
    await harness.until_idle()
    assert harness.clock.sleeps == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30, 0.8, 1.6])


async def test_watch_requests_bookmarks_and_a_randomized_timeout(harness: Harness) -> None:
    harness.task = asyncio.create_task(harness.informer.run())
    await harness.until_idle()
    [call] = harness.fake.watch_calls
    assert call["bookmarks"] is True
    assert 300 <= call["timeout"] < 600


async def test_has_synced_only_after_the_initial_list_is_delivered(harness: Harness) -> None:
    seen_synced: list[bool] = []
    harness.fake.states = [("10", [pod("a", "1")])]
    harness.informer.add_handler(
        lambda obj: seen_synced.append(harness.informer.has_synced),
        lambda old, new: None,
        lambda obj: None,
    )
    assert not harness.informer.has_synced
    harness.task = asyncio.create_task(harness.informer.run())
    await asyncio.wait_for(harness.informer.wait_synced(), timeout=5)
    assert seen_synced == [False]  # handlers run before has_synced flips
    assert harness.informer.has_synced


async def test_a_failing_handler_does_not_stop_the_others(harness: Harness) -> None:
    def broken(obj: dict[str, Any]) -> None:
        raise RuntimeError("bug in a handler")

    later = Recorder()
    harness.informer.add_handler(broken, lambda old, new: None, broken)
    harness.informer.add_handler(later.on_add, later.on_update, later.on_delete)
    harness.fake.states = [("10", [pod("a", "1")])]
    harness.fake.watches = deque([WatchStep([event("DELETED", pod("a", "2"))], hang=True)])
    harness.task = asyncio.create_task(harness.informer.run())
    await harness.until_idle()
    assert later.calls == [("add", "a", "1"), ("delete", "a")]


async def test_a_late_handler_first_gets_every_stored_object(harness: Harness) -> None:
    harness.fake.states = [("10", [pod("a", "1"), pod("b", "2")])]
    harness.task = asyncio.create_task(harness.informer.run())
    await harness.until_idle()
    late = Recorder()
    harness.informer.add_handler(late.on_add, late.on_update, late.on_delete)
    assert sorted(late.calls) == [("add", "a", "1"), ("add", "b", "2")]


async def test_list_items_get_kind_and_api_version(harness: Harness) -> None:
    harness.fake.states = [("10", [pod("a", "1")])]
    del harness.fake.states[0][1][0]["kind"]
    harness.task = asyncio.create_task(harness.informer.run())
    await harness.until_idle()
    stored = harness.informer.store.get("ns/a")
    assert stored is not None
    assert (stored["kind"], stored["apiVersion"]) == ("Pod", "v1")


async def test_cancelling_run_closes_the_watch_and_leaves_no_tasks(harness: Harness) -> None:
    before = asyncio.all_tasks()
    task = asyncio.create_task(harness.informer.run())
    harness.task = task
    await harness.until_idle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    harness.task = None
    assert harness.fake.open_watches == 0
    assert asyncio.all_tasks() == before


async def test_run_twice_at_once_is_refused(harness: Harness) -> None:
    harness.task = asyncio.create_task(harness.informer.run())
    await harness.until_idle()
    with pytest.raises(RuntimeError, match="already running"):
        await harness.informer.run()


async def test_a_type_the_server_does_not_serve_fails_run_naming_it() -> None:
    fake = FakeListWatch()
    fake.list_failures.append(
        ApiError(404, "NotFound", "the server could not find the requested resource")
    )
    informer = Informer(
        fake, VIRTUAL_MACHINES, options=OPTIONS, clock=FakeClock(), rng=random.Random(1)
    )
    with pytest.raises(ResourceNotServed, match=r"does not serve virtualmachines\.vm\.neon\.tech"):
        await asyncio.wait_for(informer.run(), timeout=5)
    assert not informer.has_synced


async def test_a_404_after_the_first_sync_is_retried(harness: Harness) -> None:
    harness.fake.states = [("10", [pod("a", "1")]), ("20", [pod("a", "1"), pod("b", "2")])]
    harness.fake.watches.append(WatchStep(then=ApiError(410, "Gone", "too old")))
    original, calls = harness.fake.list, [0]

    async def list_failing_second(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 2:  # the relist after 410: the type is (briefly) not served
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return await original(*args, **kwargs)

    harness.fake.list = list_failing_second  # type: ignore[method-assign]
    harness.task = asyncio.create_task(harness.informer.run())
    await harness.until_idle()
    assert not harness.task.done()
    assert calls[0] == 3  # the failed relist was retried
    assert sorted(harness.informer.store.keys()) == ["ns/a", "ns/b"]


async def test_a_transform_sees_every_object_before_the_store_and_handlers() -> None:
    def mark(obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, "transformed": True}

    fake, recorder = FakeListWatch(), Recorder()
    fake.states = [("10", [pod("a", "1")])]
    fake.watches = deque([WatchStep([event("ADDED", pod("b", "11"))])])
    informer = Informer(
        fake, PODS, options=OPTIONS, clock=FakeClock(), rng=random.Random(1), transform=mark
    )
    seen: list[bool] = []
    informer.add_handler(
        lambda obj: seen.append(obj.get("transformed", False)),
        recorder.on_update,
        recorder.on_delete,
    )
    task = asyncio.create_task(informer.run())

    async def idle() -> bool:
        return fake.idle

    await eventually(idle, timeout=5, what="informer waiting on its last watch")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == [True, True]
    assert all(obj.get("transformed") for obj in informer.store.list())
