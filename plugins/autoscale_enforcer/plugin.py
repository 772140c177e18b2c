"""AutoscaleEnforcer: the thin adapter between the framework and the pure state.

The state is fed by ``cluster.ClusterFeed`` (informers, config); agents are
answered by ``agent_api.AgentApi``; migrations are created and cleaned up by
``migration.MigrationController``. This module wires them to the Handle.

Extension points (lifecycle order): Filter, Score (+ NormalizeScore, which
randomizes only when configured), Reserve, Unreserve. Decisions read the
state built from shared informers (nodes, pods, VirtualMachines), never the
API: no call per Filter.

- VM pods carry the ``vm.neon.tech/name`` label and are sized by their VM's
  current ``use``; other pods by their requests.
- Filter and Score ask the state "what if" over the framework's view of the
  node (pods it lists that we hold, plus pods it lists that we do not), and
  change nothing. The pod is sized once per cycle (``_Sizing`` in the
  CycleState): both are called per node. Reserve holds the pod (refusing, and counting
  ``reserve_should_deny``, when it does not fit), Unreserve releases a pod
  Reserve held and no informer confirmed; both are idempotent.
- Start step: wait up to ``initConfigMapTimeoutSeconds`` for a valid config
  in the ConfigMap, check it names this profile, then rebuild the state from
  the informer stores (VM pods first seen bound are held at their maximum
  until their agent reports). Until then no agent request is answered.
- Config updates apply to every node at once; an invalid one keeps the last
  good config, is logged, counted and reported as a Warning event on the
  ConfigMap.
- The agent API (POST, port 10299) and ``GET /debug/plugins/autoscale-enforcer/state``
  are served by the daemon (``Handle.services``); followers answer 503.
- Threads: the agent API is served from its listener's own thread, so the
  state is guarded by one ``threading.Lock`` (``_lock``), held only for short
  synchronous sections: each Filter, Score, Reserve and Unreserve call, each
  informer event (``ClusterFeed``), each agent request's decision
  (``AgentApi``), the state dump and the metrics scrape. Nothing awaits or
  takes another lock while holding it. What an agent request does to the
  scheduler (waking pods, starting a migration) runs afterwards on the
  daemon's event loop (``HttpResponse.after``).
- Migration (``doMigration``, default on): when an agent of the pod to move
  asks, a VirtualMachineMigration is created by the migration worker; the
  informer shows it, the pod is marked migrating and its agent is told
  ``migrate`` on its next request; finished migrations we created are deleted.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from plugins.autoscale_enforcer import scoring
from plugins.autoscale_enforcer.agent import AgentOutcome
from plugins.autoscale_enforcer.agent_api import AgentApi
from plugins.autoscale_enforcer.args import AutoscaleEnforcerArgs
from plugins.autoscale_enforcer.cluster import ClusterFeed
from plugins.autoscale_enforcer.metrics import AutoscaleMetrics, Method
from plugins.autoscale_enforcer.migration import MigrationController
from plugins.autoscale_enforcer.protocol import MAX_HTTP_BODY_SIZE
from plugins.autoscale_enforcer.state import ZERO, Amounts, NodeState, State
from plugins.autoscale_enforcer.vm import VmError, VmInfo, vm_name_of_pod
from scheduler.framework import (
    CycleState,
    FilterPlugin,
    Handle,
    HttpRequest,
    HttpResponse,
    NodeInfo,
    NodeScore,
    Pod,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
    StateKey,
    Status,
    parse_pod,
)

log = logging.getLogger(__name__)

NAME = "AutoscaleEnforcer"
AGENT_LISTENER = "autoscale-enforcer-agents"
MIGRATION_WORKER = "autoscale-enforcer-migrations"
STATE_DUMP_PATH = "autoscale-enforcer/state"

MAX_WAITING_FOR_ROOM = 10_000
REASON_NO_ROOM = "Not enough resources for pod"
REASON_NO_ROOM_RESERVE = "Not enough resources to reserve for pod"
REASON_NOT_STARTED = "AutoscaleEnforcer has no configuration yet"


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
    amount: Amounts
    error: Status | None  # set: every node answers it

    def clone(self) -> _Sizing:
        return self  # immutable


_SIZING: StateKey[_Sizing] = StateKey(f"{NAME}/sizing")


class AutoscaleEnforcer(FilterPlugin, ScorePlugin, ScoreExtensions, ReservePlugin):
    name = NAME

    def __init__(
        self, args: AutoscaleEnforcerArgs, handle: Handle, rng: random.Random | None = None
    ) -> None:
        self._args = args
        self._handle = handle
        self._rng = rng if rng is not None else handle.rng_for(NAME)
        self._lock = threading.Lock()  # guards the state: see the module docstring
        try:
            self._metrics = AutoscaleMetrics(
                handle.services.metrics_registry, lambda: self._feed.state, self._lock
            )
        except ValueError as error:  # its metrics are already registered
            raise ValueError(
                f"{NAME} can be enabled in one profile only (also in {handle.profile_name!r})"
            ) from error
        self._calls = self._metrics.calls  # per method; the loop thread only
        self._migrations = MigrationController(handle.api, self._metrics, sleep=handle.clock.sleep)
        self._feed = ClusterFeed(args, handle, self._metrics, self._migrations.finished, self._lock)
        self._api: AgentApi | None = None
        # Pods Filter rejected for room: an agent shrinking a VM is no cluster
        # event, so they are woken here when room is freed. Bounded.
        self._waiting_for_room: dict[str, None] = {}
        # A wake-up is queued on the event loop (set by the listener thread,
        # cleared by the wake-up before it reads the waiting pods).
        self._wake_queued = False
        services = handle.services
        services.http.listen(
            AGENT_LISTENER, args.agent_port, self._serve_agent, max_body_bytes=MAX_HTTP_BODY_SIZE
        )
        services.http.debug(STATE_DUMP_PATH, self._serve_dump)
        services.on_start(NAME, self.start)
        services.run(MIGRATION_WORKER, self._migrations.run)

    # ------------------------------------------------------------ start-up
    async def start(self) -> None:
        """Wait for a valid config and rebuild the state (``ClusterFeed.start``)."""
        state = await self._feed.start()
        self._api = AgentApi(state, lambda: state.config.migration_enabled, self._lock)

    @property
    def _state(self) -> State | None:
        return self._feed.state

    # ------------------------------------------------------- pod sizing
    def _amount(self, state: State, pod: Pod) -> tuple[Amounts, VmInfo | None]:
        """What the pod would reserve; raises ``_PodError`` with the status to return."""
        name = vm_name_of_pod(pod.labels)
        if name is None:
            return Amounts(pod.requests.milli_cpu, pod.requests.memory), None
        raw = self._feed.vm(pod.namespace, name)
        if raw is None:
            raise _PodError(
                Status.unschedulable(f"VirtualMachine {pod.namespace}/{name} not found")
            )
        try:
            vm = self._feed.parse_vm(raw)
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
                reserved = reserved.minus(ours.reserved)
        for uid, other in listed.items():
            known = state.pods.get(other.key)
            if uid != pod.uid and (known is None or known.node != node.name):
                reserved = reserved + Amounts(other.requests.milli_cpu, other.requests.memory)
        return node, reserved + amount

    # --------------------------------------------------------- extension points
    def _fail(self, method: Method, status: Status) -> Status:
        self._metrics.extension_call_fails.labels(method, status.code.label).inc()
        return status

    def _sizing(self, cycle: CycleState, plugin_state: State, pod: Pod) -> _Sizing:
        """The pod's ``_Sizing`` for this cycle: worked out by the first call,
        read back by the others. Called holding the lock."""
        sizing = cycle.get(_SIZING)
        if sizing is not None and sizing.pod_uid == pod.uid:
            return sizing
        try:
            amount, _ = self._amount(plugin_state, pod)
            sizing = _Sizing(pod.uid, amount, None)
        except _PodError as error:
            sizing = _Sizing(pod.uid, ZERO, error.status)
        cycle.write(_SIZING, sizing)
        return sizing

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        self._calls[Method.FILTER] += 1
        with self._lock:
            return self._filter(state, pod, node_info)

    def _filter(self, cycle: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        plugin_state = self._state
        if plugin_state is None:
            return self._fail(Method.FILTER, Status.as_error(REASON_NOT_STARTED))
        sizing = self._sizing(cycle, plugin_state, pod)
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
        pods = [parse_pod(raw) for key in keys if (raw := self._feed.pod(key)) is not None]
        pending = [pod for pod in pods if not pod.node_name]
        if pending:
            self._handle.activate(pending)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        self._calls[Method.SCORE] += 1
        with self._lock:
            return self._score(state, pod, node_info)

    def _score(self, cycle: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        plugin_state = self._state
        if plugin_state is None:
            return 0, self._fail(Method.SCORE, Status.as_error(REASON_NOT_STARTED))
        sizing = self._sizing(cycle, plugin_state, pod)
        if sizing.error is not None:
            return 0, self._fail(Method.SCORE, Status.as_error(sizing.error.message()))
        found = self._reserved_after(plugin_state, pod, node_info, sizing.amount)
        if found is None:
            return 0, None
        node, after = found
        return scoring.score(after, node.total, plugin_state.max_total(), plugin_state.config), None

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
        plugin_state = self._state
        if plugin_state is None or not plugin_state.config.randomize:
            return values
        return scoring.randomized(values, self._rng)

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        self._calls[Method.RESERVE] += 1
        with self._lock:
            return self._reserve(pod, node_name)

    def _reserve(self, pod: Pod, node_name: str) -> Status | None:
        plugin_state = self._state
        if plugin_state is None:
            return self._fail(Method.RESERVE, Status.as_error(REASON_NOT_STARTED))
        try:
            amount, vm = self._amount(plugin_state, pod)
        except _PodError as error:
            return self._fail(Method.RESERVE, error.status)
        if not plugin_state.reserve(pod.key, pod.uid, node_name, amount, vm):
            self._metrics.reserve_should_deny.labels(node_name).inc()
            return self._fail(Method.RESERVE, Status.unschedulable(REASON_NO_ROOM_RESERVE))
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self._calls[Method.UNRESERVE] += 1
        with self._lock:
            if self._state is not None:
                self._state.unreserve(pod.key, node_name)

    # ------------------------------------------------------------------ HTTP
    def _serve_agent(self, request: HttpRequest) -> HttpResponse:
        api = self._api
        if api is None:  # the daemon gates this; kept for direct callers
            return HttpResponse(503, "text/plain", b"not ready")
        answer = api.handle(request.method, request.body)
        self._metrics.count_request(answer.status, answer.node)
        outcome = answer.outcome
        after = None
        if outcome is not None:
            wake = outcome.freed and self._queue_wake()
            if wake or outcome.wants_migration:
                after = self._follow_up(outcome, wake)
        return HttpResponse(answer.status, answer.content_type, answer.body, after)

    def _queue_wake(self) -> bool:
        """Whether room freed by an agent must wake pods: only when Filter
        turned some away for room and no wake-up is queued yet (that one will
        see them). Called after the request's locked section: a pod Filter
        rejected before it is already listed (Filter lists it under the lock);
        a Filter after it saw the freed room. Most requests free room with no
        pod waiting: no hand-off to the event loop then."""
        if not self._waiting_for_room or self._wake_queued:
            return False
        self._wake_queued = True
        return True

    def _follow_up(self, outcome: AgentOutcome, wake: bool) -> Callable[[], None]:
        """What the request asks of the scheduler, to run on its event loop."""

        def run() -> None:
            if wake:
                self._wake_queued = False  # before reading the waiting pods
                self._wake_waiting()
            if outcome.wants_migration:
                self._start_migration(outcome.pod_key)

        return run

    def _start_migration(self, pod_key: str) -> None:
        with self._lock:
            state = self._state
            pod = None if state is None else state.pods.get(pod_key)
        if pod is None or pod.vm is None:
            return
        namespace, pod_name = pod_key.split("/", 1)
        self._migrations.want(namespace, pod_name, pod.vm.name)

    def _serve_dump(self, request: HttpRequest) -> HttpResponse:
        state = self._state
        if state is None:
            return HttpResponse(503, "text/plain", b"not ready")
        with self._lock:
            body = orjson.dumps(state.dump(), option=orjson.OPT_NON_STR_KEYS)
        return HttpResponse(200, "application/json", body)

    # -------------------------------------------------------------- for tests
    @property
    def state(self) -> State | None:
        return self._state

    @property
    def lock(self) -> threading.Lock:
        """The lock guarding ``state`` (hold it to read the state from a test)."""
        return self._lock


def new(args: object, handle: Handle) -> AutoscaleEnforcer:
    if not isinstance(args, AutoscaleEnforcerArgs):
        args = AutoscaleEnforcerArgs()
    return AutoscaleEnforcer(args, handle)
