"""AutoscaleEnforcer: the thin adapter between the framework and the pure state.

Two processes (ARCHITECTURE.md, AutoscaleEnforcer):

- the **authority** (``authority.Authority``, a process of its own served by
  ``PluginHttp.listen_process``) holds the authoritative state and answers
  the agents (POST, port 10299), so their latency never depends on the
  scheduling loop holding the daemon's GIL;
- this plugin, in the daemon, forwards every informer event it needs
  (nodes, pods, VirtualMachines, migrations) and each good config to it, in
  order, and keeps a **mirror** of the state, updated from the nodes the
  authority reports changed. Filter and Score read the mirror; Reserve asks
  the authority without waiting (``ProcessChannel.ask``) and Permit holds the
  pod until the answer comes (``reserveTimeoutSeconds`` at most): the room is
  decided there, so a mirror that lags can only make Filter stricter or the
  pod wait and retry, never overcommit a node, and the daemon's loop never
  waits for the agent process; Unreserve is a one-way message.

Extension points (lifecycle order): Filter, Score (+ NormalizeScore, which
randomizes only when configured), Reserve, Unreserve, Permit. No API call per Filter.

- VM pods carry the ``vm.neon.tech/name`` label and are sized by their VM's
  current ``use``; other pods by their requests. The pod is sized once per
  cycle (``_Sizing`` in the CycleState): Filter and Score are called per node.
- Filter and Score ask the mirror "what if" over the framework's view of the
  node (pods it lists that we hold, plus pods it lists that we do not), and
  change nothing. Reserve holds the pod (refusing, and counting
  ``reserve_should_deny``, when it does not fit), Unreserve releases a pod
  Reserve held and no informer confirmed; both are idempotent.
- Start step: wait up to ``initConfigMapTimeoutSeconds`` for a valid config
  in the ConfigMap (``ConfigWatch``), check it names this profile, then have
  the authority rebuild the state from what was forwarded (VM pods first seen
  bound are held at their maximum until their agent reports). Until then no
  agent request is answered (the daemon's gate).
- Config updates apply to every node at once; an invalid one keeps the last
  good config, is logged, counted and reported as a Warning event on the
  ConfigMap.
- Room freed on a node (an agent shrinking, a pod leaving) wakes the pods
  Filter turned away for room: an agent's request is no cluster event.
- ``GET /debug/plugins/autoscale-enforcer/state`` dumps the authority's state
  (asked without blocking the daemon's loop).
- Migration (``doMigration``, default on): when an agent of the pod to move
  asks, the authority tells the daemon, whose migration worker creates a
  VirtualMachineMigration; the informer shows it, the pod is marked
  migrating and its agent is told ``migrate`` on its next request; finished
  migrations we created are deleted.
- With ``agentAuthentication: ServiceAccountToken`` the authority checks
  each agent request's bearer token (``agent_auth``); a token it has not
  cached comes here (``ReviewToken``), is reviewed through
  ``PluginServices.review_token`` (the ops port's review client) within
  ``agentTokenReviewTimeoutSeconds`` as a spawned task, and the verdict goes
  back (``TokenReviewed``; a failure or timeout as its error).
- If the authority's process dies (or hangs: the listener's heartbeat kills
  it), the plugin's worker restarts it with a doubling backoff and rebuilds
  its state: every object the informers hold is forwarded again, then
  ``Start`` carries the reservations only the daemon still knows of (pods
  being bound). Pods waiting at Permit are rejected and retried; none is lost.

Threads: everything here runs on the daemon's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from plugins.autoscale_enforcer import scoring
from plugins.autoscale_enforcer.args import AUTH_SERVICE_ACCOUNT_TOKEN, AutoscaleEnforcerArgs
from plugins.autoscale_enforcer.authority import (
    FACTORY,
    AuthSettings,
    Dump,
    Event,
    Held,
    MigrationFinished,
    Nodes,
    Reserve,
    ReviewToken,
    SetConfig,
    Start,
    TokenReviewed,
    Unreserve,
    WantMigration,
)
from plugins.autoscale_enforcer.cluster import (
    FED_RESOURCES,
    NODES,
    PODS,
    ConfigWatch,
    forwarded,
    pod_waiting_for,
)
from plugins.autoscale_enforcer.config import Config
from plugins.autoscale_enforcer.metrics import AutoscaleMetrics, Method
from plugins.autoscale_enforcer.migration import MigrationController
from plugins.autoscale_enforcer.protocol import MAX_HTTP_BODY_SIZE
from plugins.autoscale_enforcer.state import ZERO, Amounts, NodeState, State, node_amount
from plugins.autoscale_enforcer.vm import (
    VM_RESOURCE,
    VmError,
    VmInfo,
    VmInfoCache,
    vm_name_of_pod,
)
from scheduler.framework import (
    ChannelError,
    CycleState,
    FilterPlugin,
    Handle,
    HttpRequest,
    HttpResponse,
    NodeInfo,
    NodeScore,
    PermitPlugin,
    Pod,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
    StateKey,
    Status,
    TokenReviewError,
    parse_pod,
)

log = logging.getLogger(__name__)

NAME = "AutoscaleEnforcer"
AGENT_LISTENER = "autoscale-enforcer-agents"
MIGRATION_WORKER = "autoscale-enforcer-migrations"
AUTHORITY_WATCH = "autoscale-enforcer-authority"
TOKEN_REVIEW = "autoscale-enforcer-token-review"
STATE_DUMP_PATH = "autoscale-enforcer/state"

MAX_WAITING_FOR_ROOM = 10_000
START_TIMEOUT_SECONDS = 60.0
DUMP_TIMEOUT_SECONDS = 5.0
# Restarting a lost authority: the first try after this long, doubling to the cap;
# a process that lived HEALTHY_SECONDS resets the delay.
RESTART_BACKOFF_SECONDS = 0.5
RESTART_BACKOFF_MAX_SECONDS = 30.0
HEALTHY_SECONDS = 60.0
REASON_WAIT_AUTHORITY = "waiting for the agent API's process to confirm the reservation"
REASON_NO_ROOM = "Not enough resources for pod"
REASON_NO_ROOM_RESERVE = "Not enough resources to reserve for pod"
REASON_NOT_STARTED = "AutoscaleEnforcer has no configuration yet"

Raw = Mapping[str, Any]

_NO_ROOM = Status.unschedulable(REASON_NO_ROOM)


class _PodError(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


@dataclass(frozen=True, slots=True)
class _Sizing:
    """What the pod would reserve (or why it cannot be placed), worked out
    once per scheduling cycle: Filter and Score ask for every node, and the
    pod's VM and the config cannot change within a cycle (informers and
    config updates run on the same event loop, between cycles)."""

    pod_uid: str
    amount: Amounts  # what it takes of a node (after its VM's overcommit)
    error: Status | None  # set: every node answers it

    def clone(self) -> _Sizing:
        return self  # immutable


_SIZING: StateKey[_Sizing] = StateKey(f"{NAME}/sizing")


@dataclass(slots=True)
class _Pending:
    """A Reserve the authority has not answered yet: counted by Filter and
    Score on its node as if held, and held at Permit until answered."""

    node: str
    amount: Amounts  # node units (after its VM's overcommit)
    answer: asyncio.Future[object]


class AutoscaleEnforcer(FilterPlugin, ScorePlugin, ScoreExtensions, ReservePlugin, PermitPlugin):
    name = NAME

    def __init__(
        self, args: AutoscaleEnforcerArgs, handle: Handle, rng: random.Random | None = None
    ) -> None:
        self._handle = handle
        self._rng = rng if rng is not None else handle.rng_for(NAME)
        self._mirror: State | None = None  # from Start on
        # Scrapes read the mirror from the metrics thread, if any: a
        # consistent reading. Only the gauges take it; nothing else here
        # leaves the event loop.
        self._scrape_lock = threading.Lock()
        self._nodes = handle.informers.store(NODES)
        try:
            self._metrics = AutoscaleMetrics(
                handle.services.metrics_registry,
                lambda: self._mirror,
                self._scrape_lock,
                self._node_labels,
            )
        except ValueError as error:  # its metrics are already registered
            raise ValueError(
                f"{NAME} can be enabled in one profile only (also in {handle.profile_name!r})"
            ) from error
        self._calls = self._metrics.calls  # per method; the loop thread only
        self._migrations = MigrationController(handle.api, self._metrics, sleep=handle.clock.sleep)
        self._vms = handle.informers.store(VM_RESOURCE)
        self._pods = handle.informers.store(PODS)
        self._vm_infos = VmInfoCache()
        self._config = ConfigWatch(args, handle, self._metrics, self._config_changed)
        self._reserve_timeout = args.reserve_timeout_seconds
        self._auth = (
            AuthSettings(
                args.agent_service_accounts,
                args.agent_token_cache_ttl_seconds,
                args.agent_token_review_timeout_seconds,
            )
            if args.agent_authentication == AUTH_SERVICE_ACCOUNT_TOKEN
            else None
        )
        self._pending: dict[str, _Pending] = {}
        self._unreserved_while_lost: set[str] = set()
        self._authority_lost = False
        services = handle.services
        self._authority = services.http.listen_process(
            AGENT_LISTENER,
            args.agent_port,
            FACTORY,
            self._from_authority,
            max_body_bytes=MAX_HTTP_BODY_SIZE,
            nice=args.agent_process_nice,
            limits=args.agent_limits(),
        )
        for resource in FED_RESOURCES:
            handle.informers.on_change(resource, self._forwarder(resource))
        # Pods Filter rejected for room: an agent shrinking a VM is no cluster
        # event, so they are woken here when room is freed. Bounded.
        self._waiting_for_room: dict[str, None] = {}
        services.http.debug(STATE_DUMP_PATH, self._serve_dump)
        services.on_start(NAME, self.start)
        services.run(MIGRATION_WORKER, self._migrations.run)
        services.run(AUTHORITY_WATCH, self._watch_authority)

    def _node_labels(self, name: str) -> Mapping[str, str]:
        """The node's labels from the daemon's informer (the metrics' node
        labels; read from the scrape thread too: the store's objects are
        replaced on change, never changed)."""
        raw = self._nodes.get(name)
        labels = None if raw is None else (raw.get("metadata") or {}).get("labels")
        return labels if isinstance(labels, Mapping) else {}

    # ------------------------------------------------------------ start-up
    async def start(self) -> None:
        """Wait for a valid config, then have the authority rebuild the state."""
        config = await self._config.first()
        mirror = State(config)
        self._mirror = mirror
        try:
            await self._authority.ask(Start(config, auth=self._auth), START_TIMEOUT_SECONDS)
        except ChannelError:
            self._mirror = None
            raise
        log.info(
            "AutoscaleEnforcer state rebuilt",
            extra={"nodes": len(mirror.nodes), "pods": len(mirror.pods)},
        )

    async def _watch_authority(self) -> None:
        """Restart the authority whenever it is lost, with a doubling backoff."""
        clock = self._handle.clock
        delay = RESTART_BACKOFF_SECONDS
        started_at = clock.now()
        while True:
            reason = await self._authority.wait_lost()
            self._authority_lost = True
            if clock.now() - started_at >= HEALTHY_SECONDS:
                delay = RESTART_BACKOFF_SECONDS
            while True:
                log.error(
                    "%s: the agent API's process is gone (%s); restarting it in %gs",
                    NAME,
                    reason,
                    delay,
                )
                await clock.sleep(delay)
                delay = min(delay * 2, RESTART_BACKOFF_MAX_SECONDS)
                try:
                    await self._authority.restart()
                    await self._rebuild()
                except (ChannelError, RuntimeError) as error:
                    reason = str(error)
                    continue
                break
            started_at = clock.now()
            self._metrics.authority_restarts.inc()
            self._metrics.reconcile.restarted()
            log.info("%s: the agent API's process was restarted and its state rebuilt", NAME)

    async def _rebuild(self) -> None:
        """A new authority: forward what the informers hold, then ``Start`` with
        the reservations only this side knows of (pods being bound)."""
        mirror = self._mirror
        if mirror is None:  # lost before the start step: it rebuilds itself
            self._authority_lost = False
            return
        send = self._authority.send
        for resource in FED_RESOURCES:
            for raw in self._handle.informers.store(resource).list():
                if forwarded(resource, None, raw):
                    send(Event(resource, raw, sent=self._handle.clock.now()))
        skip = self._unreserved_while_lost
        held = tuple(
            Held(pod.key, pod.uid, pod.node, pod.reserved, pod.vm)
            for pod in mirror.pods.values()
            if not pod.confirmed and pod.key not in skip
        )
        self._authority_lost = False
        self._unreserved_while_lost = set()
        await self._authority.ask(
            Start(mirror.config, held, auth=self._auth), START_TIMEOUT_SECONDS
        )

    # ---------------------------------------------------- to the authority
    def _forwarder(self, resource: str) -> Callable[[Raw | None, Raw | None], None]:
        send = self._authority.send
        wake_vm_pods = resource == VM_RESOURCE

        def forward(old: Raw | None, new: Raw | None) -> None:
            if wake_vm_pods and old is None and new is not None and self._mirror is not None:
                waiting = pod_waiting_for(new, self._pods.get)
                if waiting is not None:
                    self._handle.activate([parse_pod(waiting)])
            if not forwarded(resource, old, new):
                return
            now = self._handle.clock.now()
            if new is not None:
                send(Event(resource, new, sent=now))
            elif old is not None:
                send(Event(resource, old, deleted=True, sent=now))

        return forward

    def _config_changed(self, config: Config) -> None:
        self._authority.send(SetConfig(config))
        if self._mirror is not None:
            self._mirror.set_config(config)  # budgets at once; the authority's copies follow
            self._mirror.dirty.clear()  # a mirror sends nothing on

    # -------------------------------------------------- from the authority
    def _from_authority(self, message: object) -> None:
        if isinstance(message, Nodes):
            self._apply(message)
        elif isinstance(message, WantMigration):
            self._migrations.want(message.namespace, message.pod_name, message.vm_name)
        elif isinstance(message, MigrationFinished):
            self._migrations.finished(message.namespace, message.name, message.phase)
        elif isinstance(message, ReviewToken):
            self._handle.spawn(TOKEN_REVIEW, self._review(message.token))
        else:
            log.error("%s: unknown message from the authority: %r", NAME, message)

    async def _review(self, token: str) -> None:
        """The authority's TokenReview, through the daemon's review client,
        answered back (the authority bounds its waiters' wait itself)."""
        assert self._auth is not None
        try:
            async with asyncio.timeout(self._auth.review_seconds):
                user = await self._handle.services.review_token(token)
        except TokenReviewError as error:
            self._authority.send(TokenReviewed(token, None, str(error) or "failed"))
        except TimeoutError:
            self._authority.send(TokenReviewed(token, None, "timed out"))
        else:
            self._authority.send(TokenReviewed(token, user))

    def _apply(self, message: Nodes) -> None:
        for (status, node), count in message.requests.items():
            self._metrics.count_request(status, node, count)
        if message.reconcile is not None:
            self._metrics.reconcile.add(message.reconcile)
        mirror = self._mirror
        if mirror is None or not message.changed:
            return
        freed = any(
            changed is not None and _has_more_room(mirror.nodes.get(name), changed)
            for name, changed in message.changed
        )
        with self._scrape_lock:
            mirror.apply_nodes(message.changed)
        if freed and self._waiting_for_room:
            self._wake_waiting()

    # ------------------------------------------------------- pod sizing
    def _amount(self, state: State, pod: Pod) -> tuple[Amounts, VmInfo | None]:
        """What the pod would reserve; raises ``_PodError`` with the status to return."""
        name = vm_name_of_pod(pod.labels)
        if name is None:
            return Amounts(pod.requests.milli_cpu, pod.requests.memory), None
        raw = self._vms.get(f"{pod.namespace}/{name}")
        if raw is None:
            raise _PodError(
                Status.unschedulable(f"VirtualMachine {pod.namespace}/{name} not found")
            )
        try:
            vm = self._vm_infos.parse(raw)
        except VmError as error:
            raise _PodError(Status.unresolvable(f"Error getting pod vmInfo: {error}")) from None
        if vm.slot_bytes != state.config.slot_bytes:
            raise _PodError(
                Status.unresolvable(
                    f"VM for pod has bad MemSlotSize: expected {state.config.slot_bytes}, "
                    f"found {vm.slot_bytes}"
                )
            )
        return Amounts(vm.cpu_use, vm.mem_use), vm

    def _reserved_after(
        self, state: State, pod: Pod, node_info: NodeInfo, amount: Amounts
    ) -> tuple[NodeState, Amounts] | None:
        """What the node would reserve with the pod, over the framework's view of
        it: pods it does not list are left out (a preemption what-if), pods it
        lists that we do not hold are added by their requests (assumed pods of
        other profiles). None for a node we cannot place on."""
        node = state.nodes.get(node_info.name)
        if node is None or node.budget is None:
            return None
        listed, held = node_info.pods, node.pods
        reserved = node.reserved
        if (
            len(listed) == len(held)
            and pod.key not in held
            and all(p.uid in listed for p in held.values())
        ):  # the common case: the same pods on both sides
            return node, reserved + amount
        for key, ours in held.items():
            if ours.uid not in listed or key == pod.key:
                reserved = reserved.minus(node_amount(ours.reserved, ours.vm))
        pending = self._pending
        for uid, other in listed.items():
            known = state.pods.get(other.key)
            if uid != pod.uid and (known is None or known.node != node.name):
                asked = pending.get(other.key)
                if asked is not None and asked.node == node.name:
                    reserved = reserved + asked.amount  # what its Reserve asked for
                else:
                    reserved = reserved + Amounts(other.requests.milli_cpu, other.requests.memory)
        return node, reserved + amount

    # --------------------------------------------------------- extension points
    def _fail(self, method: Method, status: Status) -> Status:
        self._metrics.extension_call_fails.labels(method, status.code.label).inc()
        return status

    def _sizing(self, cycle: CycleState, plugin_state: State, pod: Pod) -> _Sizing:
        """The pod's ``_Sizing`` for this cycle: worked out by the first call,
        read back by the others."""
        sizing = cycle.get(_SIZING)
        if sizing is not None and sizing.pod_uid == pod.uid:
            return sizing
        try:
            amount, vm = self._amount(plugin_state, pod)
            sizing = _Sizing(pod.uid, node_amount(amount, vm), None)
        except _PodError as error:
            sizing = _Sizing(pod.uid, ZERO, error.status)
        cycle.write(_SIZING, sizing)
        return sizing

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        self._calls[Method.FILTER] += 1
        plugin_state = self._mirror
        if plugin_state is None:
            return self._fail(Method.FILTER, Status.as_error(REASON_NOT_STARTED))
        sizing = self._sizing(state, plugin_state, pod)
        if sizing.error is not None:
            return self._fail(Method.FILTER, sizing.error)
        found = self._reserved_after(plugin_state, pod, node_info, sizing.amount)
        if found is None or not found[1].fits_in(found[0].total):
            self._remember_waiting(pod.key)
            return _NO_ROOM
        return None

    def _remember_waiting(self, key: str) -> None:
        waiting = self._waiting_for_room
        waiting[key] = None
        if len(waiting) > MAX_WAITING_FOR_ROOM:
            del waiting[next(iter(waiting))]

    def _wake_waiting(self) -> None:
        keys, self._waiting_for_room = list(self._waiting_for_room), {}
        pods = [parse_pod(raw) for key in keys if (raw := self._pods.get(key)) is not None]
        pending = [pod for pod in pods if not pod.node_name]
        if pending:
            self._handle.activate(pending)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        self._calls[Method.SCORE] += 1
        plugin_state = self._mirror
        if plugin_state is None:
            return 0, self._fail(Method.SCORE, Status.as_error(REASON_NOT_STARTED))
        sizing = self._sizing(state, plugin_state, pod)
        if sizing.error is not None:
            return 0, self._fail(Method.SCORE, Status.as_error(sizing.error.message()))
        found = self._reserved_after(plugin_state, pod, node_info, sizing.amount)
        if found is None:
            return 0, None
        node, after = found
        before = after.minus(sizing.amount)
        largest = plugin_state.max_total()
        return scoring.score(before, after, node.total, largest, plugin_state.config), None

    def score_extensions(self) -> ScoreExtensions:
        return self

    def normalize_score(
        self, state: CycleState, pod: Pod, scores: list[NodeScore]
    ) -> Status | None:
        values = self.normalize_values([entry.score for entry in scores])
        if values is not None:
            for entry, value in zip(scores, values, strict=True):
                entry.score = value
        return None

    def normalize_values(self, values: list[int]) -> list[int] | None:
        plugin_state = self._mirror
        if plugin_state is None or not plugin_state.config.randomize:
            return values
        return scoring.randomized(values, self._rng)

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self._calls[Method.RESERVE] += 1
        plugin_state = self._mirror
        if plugin_state is None:
            return self._fail(Method.RESERVE, Status.as_error(REASON_NOT_STARTED))
        if plugin_state.config.ignored(pod.key):
            return None  # Neon's Reserve: allowed, nothing accounted (ignoreNamespaces)
        try:
            amount, vm = self._amount(plugin_state, pod)
        except _PodError as error:
            return self._fail(Method.RESERVE, error.status)
        request = Reserve(pod.key, pod.uid, node_name, amount, vm)
        # A budget beyond Permit's, so the pod's own timeout rejects it first.
        answer = self._authority.ask(request, self._reserve_timeout + 1.0)
        if answer.done():  # inline (no ops server), or no process to ask
            return self._reserve_status(node_name, answer)
        self._pending[pod.key] = _Pending(node_name, node_amount(amount, vm), answer)
        answer.add_done_callback(lambda done: self._reserve_answered(pod, node_name, done))
        return None

    def _reserve_status(self, node_name: str, answer: asyncio.Future[object]) -> Status | None:
        """The authority's answer to a Reserve as a status (None: reserved)."""
        error = answer.exception()
        if error is not None:
            return self._fail(Method.RESERVE, Status.as_error(str(error)))
        if not answer.result():
            self._metrics.reserve_should_deny.inc(node_name)
            return self._fail(Method.RESERVE, Status.unschedulable(REASON_NO_ROOM_RESERVE))
        return None

    def _reserve_answered(self, pod: Pod, node_name: str, answer: asyncio.Future[object]) -> None:
        """The authority answered a Reserve Permit holds: allow or reject the pod."""
        pending = self._pending.get(pod.key)
        if pending is None or pending.answer is not answer:
            if not answer.cancelled():
                answer.exception()  # retrieved: nobody waits for it any more
            return  # unreserved meanwhile (Permit timed out, another plugin failed)
        del self._pending[pod.key]
        status = self._reserve_status(node_name, answer)
        waiting = self._handle.waiting_pod(pod.uid)
        if waiting is None:
            if status is not None:  # nobody held the pod: Permit is not enabled for us
                log.error(
                    "%s: pod %s went on to bind though its reservation was refused (%s); "
                    "enable the plugin at Permit too (multiPoint does)",
                    NAME,
                    pod.key,
                    status.message(),
                )
            return
        if status is None:
            waiting.allow(NAME)
        else:
            waiting.reject(NAME, status.message())

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self._calls[Method.UNRESERVE] += 1
        pending = self._pending.get(pod.key)
        if pending is not None and pending.node == node_name:
            del self._pending[pod.key]
        if self._mirror is not None:
            if self._authority_lost:
                self._unreserved_while_lost.add(pod.key)
            self._authority.send(Unreserve(pod.key, node_name))

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        """Hold the pod until the authority has answered its Reserve."""
        pending = self._pending.get(pod.key)
        if pending is None or pending.node != node_name:
            return None, 0.0
        return Status.wait(REASON_WAIT_AUTHORITY), self._reserve_timeout

    # ------------------------------------------------------------------ HTTP
    async def _serve_dump(self, request: HttpRequest) -> HttpResponse:
        """The authority's state (not the mirror): what agents are answered from."""
        if self._mirror is None:
            return HttpResponse(503, "text/plain", b"not ready")
        try:
            dump = await self._authority.ask(Dump(), DUMP_TIMEOUT_SECONDS)
        except ChannelError as error:
            return HttpResponse(503, "text/plain", str(error).encode())
        body = orjson.dumps(dump, option=orjson.OPT_NON_STR_KEYS)
        return HttpResponse(200, "application/json", body)

    # -------------------------------------------------------------- for tests
    @property
    def state(self) -> State | None:
        """The daemon's mirror of the authority's state."""
        return self._mirror


def _has_more_room(before: NodeState | None, after: NodeState) -> bool:
    """Whether a pod that did not fit ``before`` might fit ``after``."""
    if before is None:
        return True
    was, now = before.total.minus(before.reserved), after.total.minus(after.reserved)
    return now.cpu > was.cpu or now.mem > was.mem


def new(args: object, handle: Handle) -> AutoscaleEnforcer:
    if not isinstance(args, AutoscaleEnforcerArgs):
        args = AutoscaleEnforcerArgs()
    return AutoscaleEnforcer(args, handle)
