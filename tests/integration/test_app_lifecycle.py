"""The composition root owns every long-lived task, names them, stops them in
the documented order, and leaves none behind."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from scheduler.app.root import AppOptions, SchedulerApp
from scheduler.config import parse_config
from scheduler.kube.client import KubeClient
from tests.support.cluster import Cluster
from tests.support.scheduler import scheduler_config, unique_scheduler_name
from tests.support.sockets import can_count, open_sockets
from tests.support.wait import eventually

LONG_LIVED = {
    "informers",
    "events",
    "pod-status",
    "cache-metrics",
    "cache-debugger",
    "queue-flushers",
    "scheduling",
}
# Serving stops first: a request in flight may still need the client for its
# TokenReview/SubjectAccessReview, so the client closes last.
SHUTDOWN_ORDER = [
    "stop server",
    "server stopped",
    "stop popping",
    "close queue",
    "drain binds",
    "informers stopped",
    "flush status",
    "flush events",
    "close client",
]


def spy(order: list[str], target: object, method: str, label: str) -> None:
    """Record ``label`` when ``target.method`` is called (sync or async)."""
    original: Callable[..., Any] = getattr(target, method)
    if asyncio.iscoroutinefunction(original):

        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            order.append(label)
            return await original(*args, **kwargs)

        setattr(target, method, async_wrapper)
    else:

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            order.append(label)
            return original(*args, **kwargs)

        setattr(target, method, wrapper)


def spy_stop(order: list[str], target: object, method: str, label: str) -> None:
    """Record ``label`` when the coroutine of ``target.method`` ends."""
    original: Callable[[], Awaitable[None]] = getattr(target, method)

    async def wrapper() -> None:
        try:
            await original()
        finally:
            order.append(label)

    setattr(target, method, wrapper)


async def test_shutdown_follows_the_documented_order_and_leaks_no_task(
    control_plane: Cluster,
) -> None:
    config = parse_config(scheduler_config(unique_scheduler_name()))
    sockets_before = open_sockets() if can_count() else set()
    client = await KubeClient.connect(
        kubeconfig=str(control_plane.kubeconfig), qps=100, burst=100, user_agent="lifecycle"
    )
    app = SchedulerApp(config, client, AppOptions(bind_address="127.0.0.1", port=0))
    order: list[str] = []
    spy(order, app.scheduler, "stop_popping", "stop popping")
    spy(order, app.queue, "close", "close queue")
    spy(order, app.scheduler, "drain", "drain binds")
    spy_stop(order, app.informer_factory, "run", "informers stopped")
    spy(order, app.status_writer, "close", "flush status")
    spy(order, app.event_sink, "drain", "flush events")
    spy(order, client, "close", "close client")
    spy(order, app.server, "stop", "stop server")
    spy_stop(order, app.server, "stop", "server stopped")

    running = asyncio.create_task(app.run())

    async def ready() -> bool:
        return app.ready

    await eventually(ready, what="scheduler ready")
    names = {task.get_name() for task in asyncio.all_tasks()}
    assert names >= LONG_LIVED, f"missing long-lived tasks: {LONG_LIVED - names}"

    app.stop()
    await asyncio.wait_for(running, 30)

    assert order == SHUTDOWN_ORDER
    leftover = [t.get_name() for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert leftover == []
    # No connection (watches, requests, the HTTPS server's) outlives stop: one
    # left closing would surface as an "unclosed transport" in a later test.
    if can_count():
        assert open_sockets() - sockets_before == set()
