"""The collector's policy: off during start-up, then on with the synced heap
frozen and young collections spaced out."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator

import pytest

from scheduler.ops.gcpolicy import YOUNG_THRESHOLD, pause_for_startup, resume, settle_after_sync


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
    gc.enable()


@pytest.mark.usefixtures("restored_gc")
def test_freezes_the_live_heap_and_raises_the_young_threshold() -> None:
    alive = [[index] for index in range(100)]
    _, middle, old = gc.get_threshold()
    settle_after_sync()
    assert gc.get_freeze_count() >= len(alive)
    assert gc.get_threshold() == (YOUNG_THRESHOLD, middle, old)


@pytest.mark.usefixtures("restored_gc")
def test_cycles_made_afterwards_are_still_collected() -> None:
    settle_after_sync()

    class Node:
        other: object = None

    first, second = Node(), Node()
    first.other, second.other = second, first
    del first, second
    assert gc.collect() >= 2


@pytest.mark.parametrize(
    "ending",
    [
        pytest.param(settle_after_sync, id="synced"),
        pytest.param(resume, id="the sync took too long"),
    ],
)
@pytest.mark.usefixtures("restored_gc")
def test_the_start_up_pause_ends_with_collections_on(ending: Callable[[], None]) -> None:
    pause_for_startup()
    assert not gc.isenabled()
    ending()
    assert gc.isenabled()
