"""What a plugin may ask of the daemon beyond scheduling: HTTP endpoints,
metrics, a start-up step and background workers. Protocols and plain data only (no I/O here).

A plugin that serves clients (the AutoscaleEnforcer's agent API) describes
its endpoints with a synchronous ``HttpHandler`` over ``HttpRequest`` /
``HttpResponse``; the ops server (``scheduler.ops.server``) is the only code
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

Process listeners (``PluginHttp.listen_process``): the same guarantees, but
the handler runs in a child process of its own, so its clients never wait
for the daemon's GIL (a busy, preempted scheduling cycle holds it for tens of
milliseconds on a saturated machine). The child builds a ``ProcessEndpoint``
with the importable ``factory`` and talks to the plugin only by messages
(pickled, so plain data), in order, both ways:
- daemon to child: ``ProcessChannel.send`` (one-way, never blocks the
  caller) and ``ProcessChannel.call`` (a synchronous request, answered after
  every message sent before it);
- child to daemon: ``ChildChannel.send``; the daemon delivers each message to
  the plugin's ``on_message`` on its event loop, in order, and before a
  ``call`` returns every message the child sent before answering it.
The child serves one thread: ``ProcessEndpoint.handle``, ``receive`` and
``idle`` never run concurrently. ``ProcessChannel.ask`` is the call that
never blocks the daemon's loop (a future with a budget). The daemon checks
the child's liveness (a heartbeat every second, answered by the child's loop
before any client request); a child that does not answer for
``ListenerLimits.liveness_seconds`` (hung, stopped) is killed. If the child
dies, ``wait_lost`` returns and the plugin decides: ``restart`` spawns a new
one on the same port (the AutoscaleEnforcer rebuilds its state). In unit tests
(``DaemonPluginServices`` without a server) the endpoint is built in the
calling process and messages are delivered at once, still pickled.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import asyncio

    from prometheus_client import CollectorRegistry


@dataclass(frozen=True, slots=True)
class HttpRequest:
    method: str
    path: str
    body: bytes
    remote: str = ""
    authorization: str = ""  # the ``Authorization`` header, as sent ("" without one)


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    content_type: str
    body: bytes
    # Run on the daemon's event loop once the handler returned (listeners
    # only): effects on the scheduler such as waking pods or starting work.
    after: Callable[[], None] | None = None


HttpHandler = Callable[[HttpRequest], HttpResponse]


class PendingAnswer:
    """An answer a ``ProcessEndpoint`` decides later (e.g. once the daemon has
    reviewed the request's token): the connection answers nothing else, and
    reads nothing more, until ``resolve``. Resolving twice is an error; the
    endpoint must resolve every pending answer it hands out within a bounded
    time (its own timeout), as the connection waits for it. One thread (the
    child's loop) resolves and waits."""

    __slots__ = ("_callbacks", "response")

    def __init__(self) -> None:
        self.response: HttpResponse | None = None
        self._callbacks: list[Callable[[HttpResponse], None]] = []

    def resolve(self, response: HttpResponse) -> None:
        if self.response is not None:
            raise RuntimeError("a pending answer was resolved twice")
        self.response = response
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(response)

    def on_resolved(self, callback: Callable[[HttpResponse], None]) -> None:
        """Call ``callback`` with the response once resolved (at once if it is)."""
        if self.response is not None:
            callback(self.response)
        else:
            self._callbacks.append(callback)


@dataclass(frozen=True, slots=True)
class TokenUser:
    """Who a bearer token belongs to, as the API server's TokenReview says."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()


class TokenReviewError(Exception):
    """The token could not be reviewed (the API server did not answer)."""


# A debug route may also answer asynchronously (it runs on the daemon's loop):
# e.g. one that asks a process listener's child without blocking the loop.
DebugHandler = Callable[[HttpRequest], HttpResponse | Awaitable[HttpResponse]]


# How often the daemon checks a process listener's child is alive.
HEARTBEAT_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class ListenerLimits:
    """Per-connection and per-listener limits of a plugin listener (defaults:
    the listener's; a plugin may expose them in its args).

    - ``max_connections``: connections open at once; more are closed at accept;
    - ``request_seconds``: a request's head and body must arrive within this
      long of its first byte (never extended by more bytes: a client that
      trickles one byte at a time is closed when it runs out);
    - ``idle_seconds``: a keep-alive connection with nothing to do is closed;
    - ``high_water_bytes``: answers a client has not taken above which its
      connection is not read (back-pressure);
    - ``requests_per_turn``: requests answered per connection per loop turn (a
      pipelining client waits for the next turn, after the other connections
      and, in a process listener, the daemon's messages);
    - ``liveness_seconds`` (process listeners): a child whose loop does not
      answer the daemon's heartbeat this long is killed (hung or stopped).
    """

    max_connections: int = 1024
    request_seconds: float = 30.0
    idle_seconds: float = 75.0
    high_water_bytes: int = 256 << 10
    requests_per_turn: int = 16
    liveness_seconds: float = 5.0


class ChannelError(Exception):
    """A process listener's channel failed: the child is gone, not started,
    too slow to answer a ``call`` in time, or raised while answering it."""


class ChildChannel(Protocol):
    """The child's end of a process listener's channel."""

    def send(self, message: object) -> None:
        """Queue ``message`` for the daemon's ``on_message`` (in order)."""

    @property
    def immediate(self) -> bool:
        """True when the endpoint runs inline (unit tests): messages reach the
        daemon at once and cost nothing, so holding them back to batch them
        gains nothing."""


class ProcessEndpoint(Protocol):
    """What a process listener's ``factory`` returns, in the child."""

    def handle(self, request: HttpRequest) -> HttpResponse | PendingAnswer:
        """Answer one HTTP request (``HttpResponse.after`` is not supported),
        now or later (``PendingAnswer``)."""

    def receive(self, message: object) -> object:
        """A message from the daemon; what it returns answers a ``call``."""

    def idle(self) -> float | None:
        """Called after each batch of requests and messages (e.g. to send
        what changed); messages sent here reach the daemon before the answer
        to a ``call`` in that batch. Returns how soon (seconds) it wants to be
        called again though nothing happens (None: no need)."""


class ProcessChannel(Protocol):
    """The daemon's end of a process listener's channel."""

    def send(self, message: object) -> None:
        """Deliver ``message`` to the child's ``receive``, in order; never blocks."""

    def call(self, message: object, timeout: float) -> object:
        """Deliver ``message`` after every earlier one and wait (blocking, at
        most ``timeout`` seconds) for what ``receive`` returns; raises
        ``ChannelError``. Messages the child sent meanwhile are delivered to
        ``on_message`` first."""

    def ask(self, message: object, timeout: float) -> asyncio.Future[object]:
        """As ``call``, without blocking: a future (on the daemon's loop) for
        what ``receive`` returns, failing with ``ChannelError`` after
        ``timeout`` seconds or when the child is lost. Done at once when the
        endpoint runs inline (unit tests). Messages the child sent before
        answering are delivered to ``on_message`` before it resolves."""

    async def wait_lost(self) -> str:
        """Return (with the reason) once the child is gone, unless the daemon
        stopped it; never returns in unit tests."""

    async def restart(self) -> None:
        """After ``wait_lost`` returned: spawn a new child on the same port and
        wait until it is ready. What was sent while no child ran is dropped
        (the plugin sends its state again); raises ``RuntimeError`` if the new
        child fails to start."""


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

    def listen_process(
        self,
        name: str,
        port: int,
        factory: str,
        on_message: Callable[[object], None],
        *,
        max_body_bytes: int,
        leader_only: bool = True,
        nice: int = 0,
        limits: ListenerLimits | None = None,
    ) -> ProcessChannel:
        """Serve an extra ``port`` from a child process: ``factory``
        (``"package.module:function"``, called there with a ``ChildChannel``)
        builds its ``ProcessEndpoint`` (see the module docstring). The child
        runs at ``nice`` where permitted (below 0 needs CAP_SYS_NICE): its
        clients then wait less for a CPU on a busy machine. ``limits``:
        connection limits and the liveness budget (None: the defaults). With
        ``leader_only``, the leadership the daemon forwards expires on its own
        (before the lease can pass to another replica) unless renewed, so a
        child whose daemon stalls stops serving."""

    def debug(self, path: str, handler: DebugHandler) -> None:
        """Serve ``handler`` for GET ``/debug/plugins/<path>`` on the ops port
        (on the daemon's loop; a coroutine function is awaited)."""


class PluginServices(Protocol):
    @property
    def http(self) -> PluginHttp: ...

    @property
    def metrics_registry(self) -> CollectorRegistry:
        """The daemon's Prometheus registry (served at ``/metrics``)."""

    def on_start(self, name: str, step: StartStep) -> None:
        """Await ``step`` once the informers have synced, before scheduling
        starts; an exception fails start-up with its message."""

    async def review_token(self, token: str) -> TokenUser | None:
        """A TokenReview of ``token`` by the API server, through a client of
        its own (never the scheduling path's limiter): the user, or None when
        the API server says the token is not valid; raises
        ``TokenReviewError`` when it could not be asked."""

    def run(self, name: str, worker: Worker) -> None:
        """Run ``worker()`` as the daemon's task ``plugin:<name>`` from when
        scheduling starts until shutdown (cancelled after the scheduling loop,
        the binding cycles and ``Handle.spawn`` work have stopped, with the
        informers); one owner runs both kinds (``BackgroundTasks``). It should
        run until cancelled; an exception it lets out stops the daemon."""
