"""Suite-wide configuration: which tests are ``integration``, and no test
leaves asyncio tasks behind.

A test is ``integration`` when it runs against a real control plane: it uses
the ``control_plane`` fixture (directly or through ``kube``, ``namespace``,
``nodes``...), or it starts one itself and says so with
``@pytest.mark.integration``. Pure tests that live in ``tests/integration/``
(parsers and checks of the benchmark, argument errors of the CLI) are not, so
the integration counts mean what they say.

``no_leaked_tasks`` runs first for every coroutine test: after the test and
its fixtures are done, every task still pending on the test's loop (other
than the test's own) is a leak; the test fails naming them, and they are
cancelled so the leak does not spill into the next test.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

CONTROL_PLANE_FIXTURE = "control_plane"
LEAK_FIXTURE = "no_leaked_tasks"
# Tasks pending after teardown are given this many loop turns to finish
# (a cancelled task needs a turn or two to run its handlers).
SETTLE_TURNS = 20


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        uses_plane = CONTROL_PLANE_FIXTURE in getattr(item, "fixturenames", ())
        if uses_plane and item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.integration)


def pytest_itemcollected(item: pytest.Item) -> None:
    """Put ``no_leaked_tasks`` first, so it is torn down last."""
    if not isinstance(item, pytest.Function) or not asyncio.iscoroutinefunction(item.obj):
        return
    names = item.fixturenames
    if LEAK_FIXTURE in names:
        names.remove(LEAK_FIXTURE)
    names.insert(0, LEAK_FIXTURE)


@pytest.fixture
async def no_leaked_tasks() -> AsyncIterator[None]:
    own = asyncio.current_task()
    before = {task for task in asyncio.all_tasks() if task is not own}
    yield
    current = asyncio.current_task()
    for _ in range(SETTLE_TURNS):
        leaked = _pending(before, own, current)
        if not leaked:
            return
        await asyncio.sleep(0)
    leaked = _pending(before, own, current)
    for task in leaked:
        task.cancel()
    await asyncio.gather(*leaked, return_exceptions=True)
    names = sorted(_describe(task) for task in leaked)
    pytest.fail(f"the test left {len(leaked)} asyncio task(s) running: {names}", pytrace=False)


def _pending(
    before: set[asyncio.Task[object]],
    own: asyncio.Task[object] | None,
    current: asyncio.Task[object] | None,
) -> list[asyncio.Task[object]]:
    return [
        task
        for task in asyncio.all_tasks()
        if task not in before and task is not own and task is not current and not task.done()
    ]


def _describe(task: asyncio.Task[object]) -> str:
    coro = task.get_coro()
    where = getattr(coro, "__qualname__", repr(coro))
    return f"{task.get_name()} ({where})"
