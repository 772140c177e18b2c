"""What a plugin may ask of the daemon beyond scheduling: HTTP endpoints,
metrics, a start-up step and background workers. Protocols and plain data only (no I/O here).

A plugin that serves clients (the AutoscaleEnforcer's agent API) describes
its endpoints with a synchronous ``HttpHandler`` over ``HttpRequest`` /
``HttpResponse``; the ops server (``scheduler.server``) is the only code
that speaks HTTP.

Threads: a ``PluginHttp.listen`` handler runs on its listener's own thread
(own event loop), so a busy scheduling cycle never delays its clients. It
therefore interleaves with the scheduling cycle and the informer handlers:
state it shares with them must be guarded by a ``threading.Lock`` that every
side holds only for short synchronous sections (never across an await, never
while taking another lock). It must not touch the daemon's event-loop objects
(queue, API writer, informers): such effects go in ``HttpResponse.after``,
which the daemon runs on its event loop after the answer. ``debug`` routes
run on the event loop, like everything else.

Guarantees the daemon gives to ``PluginHttp.listen`` handlers:
- they are not called before the informers have synced and every start
  step has finished (until then: 503, ``text/plain``);
- with ``leader_only``, followers answer 503 (``text/plain``) while leader
  election is on and this process does not lead;
- at most ``max_body_bytes`` of the body are read; the rest is never seen;
- an exception in a handler answers 500 (``text/plain``) and is logged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry


@dataclass(frozen=True, slots=True)
class HttpRequest:
    method: str
    path: str
    body: bytes
    remote: str = ""


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    content_type: str
    body: bytes
    # Run on the daemon's event loop once the handler returned (listeners
    # only): effects on the scheduler such as waking pods or starting work.
    after: Callable[[], None] | None = None


HttpHandler = Callable[[HttpRequest], HttpResponse]
StartStep = Callable[[], Awaitable[None]]
Worker = Callable[[], Coroutine[object, object, None]]


class PluginHttp(Protocol):
    def listen(
        self,
        name: str,
        port: int,
        handler: HttpHandler,
        *,
        max_body_bytes: int,
        leader_only: bool = True,
    ) -> None:
        """Serve ``handler`` for every method and path on an extra ``port``,
        from the listener's own thread (see the module docstring)."""

    def debug(self, path: str, handler: HttpHandler) -> None:
        """Serve ``handler`` for GET ``/debug/plugins/<path>`` on the ops port."""


class PluginServices(Protocol):
    @property
    def http(self) -> PluginHttp: ...

    @property
    def metrics_registry(self) -> CollectorRegistry:
        """The daemon's Prometheus registry (served at ``/metrics``)."""

    def on_start(self, name: str, step: StartStep) -> None:
        """Await ``step`` once the informers have synced, before scheduling
        starts; an exception fails start-up with its message."""

    def run(self, name: str, worker: Worker) -> None:
        """Run ``worker()`` as the daemon's task ``plugin:<name>`` from when
        scheduling starts until shutdown (cancelled after the scheduling loop,
        the binding cycles and ``Handle.spawn`` work have stopped, with the
        informers); one owner runs both kinds (``BackgroundTasks``). It should
        run until cancelled; an exception it lets out stops the daemon."""
