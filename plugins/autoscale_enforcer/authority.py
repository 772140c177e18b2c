"""The AutoscaleEnforcer's authority: the state, where agents are answered.

It runs in a process of its own (``PluginHttp.listen_process`` builds it with
``build``), so agent requests never wait for the daemon's GIL. It holds the
authoritative ``State``, fed by ``ClusterFeed`` from the informer events the
daemon forwards, and answers three kinds of work, one at a time, in the
order they arrive:

- messages from the daemon: informer events (``Event``), good configs
  (``SetConfig``), ``Start`` (rebuild, answered once the state exists),
  ``Reserve`` (answered: did the pod fit?), ``Unreserve`` and ``Dump``;
- agent requests (``handle``, ``AgentApi``); with ``Start.auth``
  (``agentAuthentication: ServiceAccountToken``) each one is first
  authenticated (``agent_auth``): a token not in the cache is sent to the
  daemon (``ReviewToken``) and its requests wait (``PendingAnswer``) for
  ``TokenReviewed``, or are answered 401 once the review timed out (``idle``);
- ``idle`` after each batch: the nodes that changed go back to the daemon as
  copies (``Nodes``, with the agent requests counted meanwhile and the
  events' reconcile counts, see ``reconcile``; those alone wait up to
  ``RECONCILE_FLUSH_SECONDS``), so the
  daemon's mirror for Filter and Score follows this state: at once after a
  call, within ``FLUSH_SECONDS`` otherwise.

Invariants: every change to the state happens here, so there is one order
and no lock is needed; a ``Reserve`` is decided on this state, never on the
daemon's mirror, so a mirror that lags can only make Filter stricter or
Reserve refuse, never overcommit a node; what the daemon must do (wake a
pod, create or delete a migration) goes back as a message.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from plugins.autoscale_enforcer.agent_api import AgentApi
from plugins.autoscale_enforcer.agent_auth import (
    CONTENT_TYPE_STATUS,
    AgentAuth,
    Allowed,
    Denied,
    status_body,
)
from plugins.autoscale_enforcer.cluster import FED_RESOURCES, ClusterFeed
from plugins.autoscale_enforcer.config import Config
from plugins.autoscale_enforcer.reconcile import ReconcileBook, ReconcileReport
from plugins.autoscale_enforcer.state import Amounts, NodeState, State
from plugins.autoscale_enforcer.vm import VmInfo
from scheduler.framework import (
    ChildChannel,
    HttpRequest,
    HttpResponse,
    PendingAnswer,
    TokenUser,
    object_key,
)

log = logging.getLogger(__name__)

Raw = Mapping[str, Any]
FACTORY = f"{__name__}:build"
# How long changes may wait to be sent to the daemon's mirror, so that one
# message carries several agent requests' (calls answer at once).
FLUSH_SECONDS = 0.005
# How long the reconcile counts of events that changed nothing may wait.
RECONCILE_FLUSH_SECONDS = 1.0


# ------------------------------------------------------ daemon -> authority
@dataclass(frozen=True, slots=True)
class Event:
    """An informer event: ``obj`` is the new object, or the last one if ``deleted``."""

    resource: str
    obj: Raw
    deleted: bool = False
    sent: float | None = None  # monotonic seconds when forwarded (the queue wait)


@dataclass(frozen=True, slots=True)
class SetConfig:
    config: Config


@dataclass(frozen=True, slots=True)
class Held:
    """A reservation the daemon knows of and no informer has confirmed (a pod
    being bound): carried over when a new authority process is built."""

    key: str
    uid: str
    node: str
    amount: Amounts
    vm: VmInfo | None


@dataclass(frozen=True, slots=True)
class AuthSettings:
    """``agentAuthentication: ServiceAccountToken`` (see ``agent_auth``)."""

    accounts: tuple[str, ...]
    ttl: float
    review_seconds: float


@dataclass(frozen=True, slots=True)
class Start:
    """Build the state from what was forwarded, then hold ``held`` (after a
    restart of this process); answered True once it exists. ``auth``: agent
    requests must be authenticated (None: they need not)."""

    config: Config
    held: tuple[Held, ...] = ()
    auth: AuthSettings | None = None


@dataclass(frozen=True, slots=True)
class TokenReviewed:
    """The daemon's TokenReview of ``token``: the user (None: not valid), or
    ``error`` when the API server could not be asked."""

    token: str
    user: TokenUser | None
    error: str = ""


@dataclass(frozen=True, slots=True)
class Reserve:
    """Answered True if the pod was reserved (or already held there)."""

    key: str
    uid: str
    node: str
    amount: Amounts
    vm: VmInfo | None


@dataclass(frozen=True, slots=True)
class Unreserve:
    key: str
    node: str


@dataclass(frozen=True, slots=True)
class Dump:
    """Answered with ``State.dump()`` (None before ``Start``)."""


# ------------------------------------------------------ authority -> daemon
@dataclass(frozen=True, slots=True)
class Nodes:
    """The nodes changed since the last ``Nodes`` (None: gone), and the agent
    requests answered meanwhile by (status, the pod's node)."""

    changed: list[tuple[str, NodeState | None]]
    requests: dict[tuple[int, str], int]
    reconcile: ReconcileReport | None = None  # the events applied meanwhile


@dataclass(frozen=True, slots=True)
class WantMigration:
    namespace: str
    pod_name: str
    vm_name: str


@dataclass(frozen=True, slots=True)
class ReviewToken:
    """Review this bearer token (answered with ``TokenReviewed``)."""

    token: str


@dataclass(frozen=True, slots=True)
class MigrationFinished:
    namespace: str
    name: str
    phase: str


_CALLS = (Reserve, Dump, Start)  # what the daemon sends with ``call``
REVIEW_TIMED_OUT = Denied(
    401, status_body(401, "Unauthorized", "Unauthorized: token review timed out")
)
UNAVAILABLE = Denied(503, status_body(503, "ServiceUnavailable", "agent API not ready"))


class Authority:
    """The ``ProcessEndpoint`` (see the module docstring)."""

    def __init__(self, channel: ChildChannel, clock: Callable[[], float] = time.monotonic) -> None:
        self._channel = channel
        self._clock = clock
        self._since: float | None = None  # when the oldest change not yet sent was seen
        self._flush_now = False  # a call was answered: send what changed with it
        self._stores: dict[str, dict[str, Raw]] = {resource: {} for resource in FED_RESOURCES}
        self._feed = ClusterFeed(self, self)
        self._api: AgentApi | None = None
        self._requests: Counter[tuple[int, str]] = Counter()
        self._reconcile = ReconcileBook()
        self._auth: AgentAuth | None = None
        # token -> the requests waiting for its review, in arrival order
        self._waiting: dict[str, list[tuple[HttpRequest, PendingAnswer]]] = {}

    @property
    def state(self) -> State | None:
        return self._feed.state

    # -------------------------------------------------- Stores, FeedEffects
    def get(self, resource: str, key: str) -> Raw | None:
        return self._stores[resource].get(key)

    def list(self, resource: str) -> Iterable[Raw]:
        return list(self._stores[resource].values())

    def migration_finished(self, namespace: str, name: str, phase: str) -> None:
        self._channel.send(MigrationFinished(namespace, name, phase))

    # ------------------------------------------------------ from the daemon
    def receive(self, message: object) -> object:
        if isinstance(message, Event):
            self._event(message)
            return None
        if isinstance(message, _CALLS):
            self._flush_now = True  # its effect goes out before its answer
        if isinstance(message, Reserve):
            state = self._started()
            return state.reserve(message.key, message.uid, message.node, message.amount, message.vm)
        if isinstance(message, Unreserve):
            if self.state is not None:
                self.state.unreserve(message.key, message.node)
            return None
        if isinstance(message, Dump):
            return None if self.state is None else self.state.dump()
        if isinstance(message, SetConfig):
            self._feed.set_config(message.config)
            return None
        if isinstance(message, TokenReviewed):
            self._token_reviewed(message)
            return None
        if isinstance(message, Start):
            state = self._feed.start(message.config)
            for held in message.held:
                state.hold(held.key, held.uid, held.node, held.amount, held.vm)
            if self._api is None:
                self._api = AgentApi(state, lambda: state.config.migration_enabled)
            auth = message.auth
            if auth is not None and self._auth is None:
                self._auth = AgentAuth.of(auth.accounts, auth.ttl, auth.review_seconds, self._clock)
            state.dirty.update(state.nodes)  # the daemon's mirror starts empty
            return True
        raise TypeError(f"unknown message {type(message).__name__}")

    def _started(self) -> State:
        state = self.state
        if state is None:
            raise RuntimeError("the AutoscaleEnforcer state is not built yet")
        return state

    def _event(self, event: Event) -> None:
        """Apply one forwarded event, counted for the reconcile metrics (an
        exception is a failure; the listener logs it and goes on)."""
        started = self._clock()
        key = object_key(event.obj)
        failed = True
        try:
            self._apply_event(event, key)
            failed = False
        finally:
            self._reconcile.done(
                event.resource,
                key,
                wait=None if event.sent is None else started - event.sent,
                duration=self._clock() - started,
                failed=failed,
                deleted=event.deleted,
            )

    def _apply_event(self, event: Event, key: str) -> None:
        store = self._stores[event.resource]
        if event.deleted:
            store.pop(key, None)
            self._feed.changed(event.resource, event.obj, None)
            return
        old = store.get(key)
        store[key] = event.obj
        self._feed.changed(event.resource, old, event.obj)

    # -------------------------------------------------------------- agents
    def handle(self, request: HttpRequest) -> HttpResponse | PendingAnswer:
        api = self._api
        if api is None:  # the daemon's gate opens after Start; kept for safety
            return HttpResponse(503, "text/plain", b"not ready")
        auth = self._auth
        if auth is None:
            return self._answer(api, request)
        decision = auth.check(request.authorization)
        if isinstance(decision, Allowed):
            return self._answer(api, request)
        if isinstance(decision, Denied):
            return self._denied(decision)
        pending = PendingAnswer()
        self._waiting.setdefault(decision.token, []).append((request, pending))
        if decision.start:
            self._channel.send(ReviewToken(decision.token))
        return pending

    def _denied(self, denied: Denied) -> HttpResponse:
        self._requests[(denied.status, "")] += 1
        return HttpResponse(denied.status, CONTENT_TYPE_STATUS, denied.body)

    def _token_reviewed(self, message: TokenReviewed) -> None:
        auth = self._auth
        if auth is None:
            return
        decision = auth.reviewed(message.token, message.user, message.error)
        self._resolve(message.token, decision)

    def _resolve(self, token: str, decision: Allowed | Denied) -> None:
        """Answer every request waiting for ``token``'s review, in order."""
        api = self._api
        for request, pending in self._waiting.pop(token, ()):
            try:
                if isinstance(decision, Allowed) and api is not None:
                    pending.resolve(self._answer(api, request))
                else:
                    denied = decision if isinstance(decision, Denied) else UNAVAILABLE
                    pending.resolve(self._denied(denied))
            except Exception:  # one connection's failure is not the others'
                log.exception("agent request waiting for its token review failed")

    def _answer(self, api: AgentApi, request: HttpRequest) -> HttpResponse:
        answer = api.handle(request.method, request.body)
        self._requests[(answer.status, answer.node)] += 1
        outcome = answer.outcome
        if outcome is not None and outcome.wants_migration:
            state = self._started()
            pod = state.pods.get(outcome.pod_key)
            if pod is not None and pod.vm is not None:
                namespace, pod_name = outcome.pod_key.split("/", 1)
                self._channel.send(WantMigration(namespace, pod_name, pod.vm.name))
        return HttpResponse(answer.status, answer.content_type, answer.body)

    def idle(self) -> float | None:
        """Answer 401 to requests whose token review timed out; then send
        what changed: at once after a call (Reserve must see its
        reservation in the mirror when it returns), else at most
        ``FLUSH_SECONDS`` after the first change (one message for several
        agent requests; the mirror may lag that long)."""
        review_due = self._expire_reviews()
        flush_due = self._flush()
        if review_due is None:
            return flush_due
        return review_due if flush_due is None else min(review_due, flush_due)

    def _expire_reviews(self) -> float | None:
        auth = self._auth
        if auth is None:
            return None
        for token in auth.expired():
            self._resolve(token, REVIEW_TIMED_OUT)
        return auth.next_expiry()

    def _flush(self) -> float | None:
        state = self.state
        changes = state is not None and bool(state.dirty or self._requests)
        if state is None or not (changes or self._reconcile.pending):
            self._flush_now = False
            return None
        now = self._clock()
        if self._since is None:
            self._since = now
        due = self._since + (FLUSH_SECONDS if changes else RECONCILE_FLUSH_SECONDS)
        if not (self._flush_now or self._channel.immediate or now >= due):
            return due - now
        requests, self._requests = dict(self._requests), Counter()
        self._since, self._flush_now = None, False
        self._channel.send(Nodes(state.take_dirty(), requests, self._reconcile.take()))
        return None


def build(channel: ChildChannel) -> Authority:
    return Authority(channel)
