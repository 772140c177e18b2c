"""``python -m bench.ceiling``: the bare binder that gives the benchmark its ceiling.

It makes no decision: each pending pod of its scheduler name is bound to the
next node in round-robin order. Everything else is what our scheduler uses to
reach the API server, so the gap between the two is the cost of deciding:

- the same client (``scheduler.kube.client.KubeClient``) with the same QPS and
  burst, and the same informers (pods without terminal ones, nodes);
- binds run as tasks, at most ``--max-binding`` at once (our default, 64);
- with ``--events`` it also writes the "Scheduled" event that both schedulers
  write for each bound pod, through our event sink (``ceiling-events`` in the
  report): the API path's limit for the writes upstream's semantics require,
  so the gap to that one is the cost of deciding alone;
- ``/readyz`` answers 200 once both informers have synced, ``/metrics`` serves
  the process metrics, like the schedulers under test.

Invariants: a pod is queued once (its key is remembered until it is bound or
deleted); a failed bind is counted and dropped, never retried (the harness
then sees a pod left unbound and reports the run as incorrect).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence
from typing import Any

from aiohttp import web
from prometheus_client import REGISTRY, Counter, generate_latest

from scheduler.cycle.reporting import ACTION_BINDING, EVENT_SCHEDULED, TYPE_NORMAL, scheduled_note
from scheduler.framework.clock import RealClock
from scheduler.informers.factory import InformerFactory
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import ApiError, TransportError
from scheduler.kube.events import EventSink, Recorder
from scheduler.kube.resources import NODES, PODS

NON_TERMINAL_PODS = "status.phase!=Succeeded,status.phase!=Failed"
USER_AGENT = "bench-ceiling"

Raw = dict[str, Any]

BINDS = Counter("bench_ceiling_binds", "Binds by the ceiling binder, by result.", ["result"])


def _key(pod: Raw) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


class Ceiling:
    """Watches pods and nodes; binds every pending pod of ``scheduler_name``."""

    def __init__(
        self, client: KubeClient, scheduler_name: str, max_binding: int, *, events: bool = False
    ) -> None:
        self._client = client
        self._sink = EventSink(client, hostname="ceiling", clock=RealClock()) if events else None
        self._recorder: Recorder | None = (
            None if self._sink is None else self._sink.recorder(scheduler_name)
        )
        self._name = scheduler_name
        self._slots = asyncio.Semaphore(max_binding)
        self._pending: asyncio.Queue[Raw] = asyncio.Queue()
        self._queued: set[str] = set()
        self.factory = InformerFactory(client)
        self._pods = self.factory.informer(PODS, field_selector=NON_TERMINAL_PODS)
        self._nodes = self.factory.informer(NODES)
        self._pods.add_handler(self._offer, lambda _old, new: self._offer(new), self._forget)
        self._node_names: list[str] = []
        self._next = 0

    def _offer(self, pod: Raw) -> None:
        spec = pod.get("spec", {})
        if spec.get("nodeName") or spec.get("schedulerName") != self._name:
            return
        key = _key(pod)
        if key not in self._queued:
            self._queued.add(key)
            self._pending.put_nowait(pod)

    def _forget(self, pod: Raw) -> None:
        self._queued.discard(_key(pod))

    def ready(self) -> bool:
        return self.factory.has_synced()

    def _pick(self) -> str:
        if len(self._node_names) != len(self._nodes.store):
            self._node_names = sorted(node["metadata"]["name"] for node in self._nodes.store.list())
        node = self._node_names[self._next % len(self._node_names)]
        self._next += 1
        return node

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self.factory.run(), name="informers")
            if self._sink is not None:
                group.create_task(self._sink.run(), name="events")
            await self.factory.wait_synced()
            while True:
                pod = await self._pending.get()
                await self._slots.acquire()
                group.create_task(self._bind(pod, self._pick()))

    async def _bind(self, pod: Raw, node: str) -> None:
        metadata = pod["metadata"]
        try:
            await self._client.bind(
                metadata["namespace"], metadata["name"], metadata.get("uid", ""), node
            )
            BINDS.labels("bound").inc()
            if self._recorder is not None:
                self._recorder.event(
                    pod,
                    TYPE_NORMAL,
                    EVENT_SCHEDULED,
                    ACTION_BINDING,
                    scheduled_note(metadata["namespace"], metadata["name"], node),
                )
        except (ApiError, TransportError) as error:
            BINDS.labels("error").inc()
            print(f"bind {_key(pod)} -> {node}: {error}", file=sys.stderr, flush=True)
        finally:
            self._slots.release()
            self._queued.discard(_key(pod))


def _server(ceiling: Ceiling) -> web.Application:
    async def readyz(_request: web.Request) -> web.Response:
        ok = ceiling.ready()
        return web.Response(status=200 if ok else 503, text="ok" if ok else "informers syncing")

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(REGISTRY), content_type="text/plain")

    app = web.Application()
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/healthz", readyz)
    app.router.add_get("/metrics", metrics)
    return app


async def serve(args: argparse.Namespace) -> None:
    client = await KubeClient.connect(
        kubeconfig=args.kubeconfig, qps=args.qps, burst=args.qps, user_agent=USER_AGENT
    )
    ceiling = Ceiling(client, args.scheduler_name, args.max_binding, events=args.events)
    runner = web.AppRunner(_server(ceiling))
    await runner.setup()
    await web.TCPSite(runner, args.bind_address, args.port).start()
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stopping.set)
    loop.add_signal_handler(signal.SIGINT, stopping.set)
    work = asyncio.create_task(ceiling.run(), name="ceiling")
    try:
        await stopping.wait()
    finally:
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await work
        await runner.cleanup()
        await client.close()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.ceiling", description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--scheduler-name", required=True)
    parser.add_argument("--qps", type=int, required=True, help="client QPS and burst")
    parser.add_argument("--max-binding", type=int, default=64)
    parser.add_argument(
        "--events", action="store_true", help='also write a "Scheduled" event per bound pod'
    )
    parser.add_argument("--bind-address", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    asyncio.run(serve(parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
