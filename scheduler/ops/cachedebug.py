"""The cache debugger: the async adapter around ``scheduler.cache.comparer``.

``report()`` lists every node and every non-terminal pod from the API server
(paged, not through the informers, so a stale informer cannot hide a
difference), takes a dump of the cache and the queue's pending keys, and runs
the pure comparison; the report also carries the cache's view of every node
(``CacheDump.node_views``), for a comparison made elsewhere (the chaos suite's
independent oracle). The composition root serves it at ``/debug/cache`` and
runs ``run`` as its ``cache-debugger`` task, which logs a report each time
SIGUSR2 asks for one. Nothing here mutates the cache or the queue.

The dump is taken after the lists return, in one synchronous step, so the
cache and queue parts are consistent with each other; the API part may be a
moment older (see the comparer's note on quiet clusters).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any

from scheduler.cache.cache import Cache
from scheduler.cache.comparer import DEFAULT_ASSUMED_BOUND_SECONDS, Difference, compare
from scheduler.framework.clock import Clock
from scheduler.framework.objects import parse_node, parse_pod
from scheduler.kube.resources import NODES, PODS, ResourceType
from scheduler.queue import SchedulingQueue

log = logging.getLogger(__name__)

NON_TERMINAL_PODS = "status.phase!=Succeeded,status.phase!=Failed"
Lister = Callable[..., Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class CacheReport:
    nodes: int  # listed from the API
    pods: int
    assumed: int  # in the cache
    differences: list[Difference]
    cache: dict[str, dict[str, Any]]  # node name -> the cache's view of it

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "pods": self.pods,
            "assumed": self.assumed,
            "differences": [difference.as_dict() for difference in self.differences],
            "cache": self.cache,
        }


async def list_all(
    lister: Lister, resource: ResourceType, field_selector: str | None = None
) -> list[dict[str, Any]]:
    """Every object of ``resource``, following ``continue`` tokens."""
    items: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        page = await lister(resource, continue_=token, field_selector=field_selector)
        items.extend(page.get("items") or ())
        token = (page.get("metadata") or {}).get("continue") or None
        if token is None:
            return items


class CacheDebugger:
    def __init__(
        self,
        lister: Lister,
        cache: Cache,
        queue: SchedulingQueue,
        *,
        schedulers: Collection[str],
        clock: Clock,
        assumed_bound: float = DEFAULT_ASSUMED_BOUND_SECONDS,
    ) -> None:
        self._lister = lister
        self._cache = cache
        self._queue = queue
        self._schedulers = frozenset(schedulers)
        self._clock = clock
        self._assumed_bound = assumed_bound
        self._requested = asyncio.Event()

    async def report(self) -> CacheReport:
        raw_nodes = await list_all(self._lister, NODES)
        raw_pods = await list_all(self._lister, PODS, NON_TERMINAL_PODS)
        dump = self._cache.dump()
        queued = {info.pod.key for infos in self._queue.pending_pods().values() for info in infos}
        queued.update(info.pod.key for info in self._queue.in_flight_pods())
        differences = compare(
            dump,
            [parse_node(raw) for raw in raw_nodes],
            [parse_pod(raw) for raw in raw_pods],
            queued=queued,
            schedulers=self._schedulers,
            now=self._clock.now(),
            assumed_bound=self._assumed_bound,
        )
        return CacheReport(
            len(raw_nodes),
            len(raw_pods),
            len(dump.assumed_since),
            differences,
            dump.node_views(),
        )

    async def report_json(self) -> dict[str, Any]:
        return (await self.report()).as_dict()

    def request_report(self) -> None:
        """Ask ``run`` to log a report soon; safe from a signal handler."""
        self._requested.set()

    async def run(self) -> None:
        """Log a report each time one is requested (the app's ``cache-debugger`` task)."""
        while True:
            await self._requested.wait()
            self._requested.clear()
            await self.log_report()

    async def log_report(self) -> None:
        """Log the report: one line, plus one per difference (SIGUSR2)."""
        try:
            report = await self.report()
        except Exception:
            log.exception("cache comparer: could not list from the API server")
            return
        log.info(
            "cache comparer: %d differences (%d nodes, %d pods listed, %d assumed)",
            len(report.differences),
            report.nodes,
            report.pods,
            report.assumed,
        )
        for difference in report.differences:
            log.warning("cache comparer: %s", difference)
