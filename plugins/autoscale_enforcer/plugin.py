"""AutoscaleEnforcer: the thin adapter between the framework and the pure state.

Extension points (lifecycle order): Filter, Score (+ NormalizeScore, which
randomizes only when configured), Reserve, Unreserve. Decisions read the
state built from shared informers (nodes, pods, VirtualMachines), never the
API: no call per Filter.

- VM pods carry the ``vm.neon.tech/name`` label and are sized by their VM's
  current ``use``; other pods by their requests.
- Filter and Score ask the state "what if" over the framework's view of the
  node (pods it lists that we hold, plus pods it lists that we do not), and
  change nothing. Reserve holds the pod (refusing, and counting
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
- Migration (``doMigration``, default on): when an agent of the pod to move
  asks, a VirtualMachineMigration is created by the migration worker; the
  informer shows it, the pod is marked migrating and its agent is told
  ``migrate`` on its next request; finished migrations we created are deleted.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Mapping
from typing import Any

import orjson

from plugins.autoscale_enforcer import scoring
from plugins.autoscale_enforcer.agent_api import AgentApi
from plugins.autoscale_enforcer.args import AutoscaleEnforcerArgs
from plugins.autoscale_enforcer.config import (
    Config,
    ConfigError,
    check_update,
    config_from_config_map,
)
from plugins.autoscale_enforcer.metrics import AutoscaleMetrics, Method
from plugins.autoscale_enforcer.migration import (
    FINISHED_PHASES,
    MigrationController,
    created_by_us,
    phase_of,
)
from plugins.autoscale_enforcer.protocol import MAX_HTTP_BODY_SIZE
from plugins.autoscale_enforcer.state import Amounts, State
from plugins.autoscale_enforcer.vm import (
    LABEL_VM,
    MIGRATION_RESOURCE,
    VM_RESOURCE,
    VmError,
    VmInfo,
    vm_info,
    vm_name_of_pod,
)
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
    Status,
    parse_node,
    parse_pod,
)

log = logging.getLogger(__name__)

NAME = "AutoscaleEnforcer"
AGENT_LISTENER = "autoscale-enforcer-agents"
MIGRATION_WORKER = "autoscale-enforcer-migrations"
STATE_DUMP_PATH = "autoscale-enforcer/state"

MAX_WAITING_FOR_ROOM = 10_000
MAX_CACHED_VMS = 100_000
REASON_NO_ROOM = "Not enough resources for pod"
REASON_NO_ROOM_RESERVE = "Not enough resources to reserve for pod"
REASON_NOT_STARTED = "AutoscaleEnforcer has no configuration yet"
EVENT_REASON_BAD_CONFIG = "InvalidConfig"

ConfigMapRaw = Mapping[str, Any]


class _PodError(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


class AutoscaleEnforcer(FilterPlugin, ScorePlugin, ScoreExtensions, ReservePlugin):
    name = NAME

    def __init__(
        self, args: AutoscaleEnforcerArgs, handle: Handle, rng: random.Random | None = None
    ) -> None:
        self._args = args
        self._handle = handle
        self._rng = rng or random.Random()
        self._state: State | None = None
        self._config: Config | None = None  # the last good config
        self._config_error = "no ConfigMap seen"
        self._config_ready = asyncio.Event()
        self._metrics = AutoscaleMetrics(handle.services.metrics_registry, lambda: self._state)

        informers = handle.informers
        selector = (
            f"metadata.namespace={args.config_map_namespace},metadata.name={args.config_map_name}"
        )
        self._vms = informers.store(VM_RESOURCE)
        self._pods = informers.store("pods")
        self._nodes = informers.store("nodes")
        self._vm_migrations = informers.store(MIGRATION_RESOURCE)
        informers.on_change("configmaps", self._config_map_changed, field_selector=selector)
        informers.on_change("nodes", self._node_changed)
        informers.on_change("pods", self._pod_changed)
        informers.on_change(VM_RESOURCE, self._vm_changed)
        informers.on_change(MIGRATION_RESOURCE, self._migration_changed)
        self._migrations = MigrationController(handle.api, self._metrics)

        self._api: AgentApi | None = None
        # Parsed VMs by namespace/name, valid for one resourceVersion: Filter and
        # Score size the same VM once per node per cycle.
        self._vm_infos: dict[str, tuple[str, VmInfo]] = {}
        # Pods Filter rejected for room: an agent shrinking a VM is no cluster
        # event, so they are woken here when room is freed. Bounded.
        self._waiting_for_room: dict[str, None] = {}
        services = handle.services
        services.http.listen(
            AGENT_LISTENER, args.agent_port, self._serve_agent, max_body_bytes=MAX_HTTP_BODY_SIZE
        )
        services.http.debug(STATE_DUMP_PATH, self._serve_dump)
        services.on_start(NAME, self.start)
        services.run(MIGRATION_WORKER, self._migrations.run)

    # ------------------------------------------------------------ start-up
    async def start(self) -> None:
        """Wait for a valid config, then rebuild the state from the stores."""
        try:
            async with asyncio.timeout(self._args.init_config_map_timeout_seconds):
                await self._config_ready.wait()
        except TimeoutError:
            raise RuntimeError(
                f"no valid config in ConfigMap {self._args.config_map_namespace}/"
                f"{self._args.config_map_name} key {self._args.config_map_key!r} within "
                f"{self._args.init_config_map_timeout_seconds:g}s: {self._config_error}"
            ) from None
        config = self._config
        assert config is not None  # set before the event
        if config.scheduler_name != self._handle.profile_name:
            raise RuntimeError(
                f"config schedulerName {config.scheduler_name!r} does not match the profile "
                f"{self._handle.profile_name!r} the plugin is enabled in"
            )
        self._state = self._rebuild(config)
        state = self._state
        self._api = AgentApi(state, lambda: state.config.migration_enabled)
        log.info(
            "AutoscaleEnforcer state rebuilt",
            extra={"nodes": len(self._state.nodes), "pods": len(self._state.pods)},
        )

    def _rebuild(self, config: Config) -> State:
        state = State(config)
        for raw in self._nodes.list():
            node = parse_node(raw)
            state.upsert_node(
                node.name, Amounts(node.allocatable.milli_cpu, node.allocatable.memory)
            )
        for raw in self._pods.list():
            self._observe_pod(state, raw)
        for raw in self._vm_migrations.list():
            self._apply_migration(state, raw, raw)
        return state

    # --------------------------------------------------------- informers
    def _config_map_changed(self, old: ConfigMapRaw | None, new: ConfigMapRaw | None) -> None:
        if new is None:
            return  # deleted: the last config stays in force
        try:
            config = config_from_config_map(new, self._args.config_map_key)
            if self._config is not None:
                if config == self._config:
                    return
                check_update(self._config, config)
        except ConfigError as error:
            self._reject_config(new, str(error))
            return
        self._config = config
        if self._state is not None:
            self._state.set_config(config)
            log.info("AutoscaleEnforcer config updated")
        self._config_ready.set()

    def _reject_config(self, config_map: ConfigMapRaw, message: str) -> None:
        self._config_error = message
        if self._config is None:
            log.warning("AutoscaleEnforcer: initial config rejected: %s", message)
            return
        log.error("AutoscaleEnforcer: config update rejected, keeping the last: %s", message)
        self._metrics.config_rejected.inc()
        self._handle.events.event(
            config_map, "Warning", EVENT_REASON_BAD_CONFIG, "Update", message[:1024]
        )

    def _node_changed(self, old: ConfigMapRaw | None, new: ConfigMapRaw | None) -> None:
        state = self._state
        if state is None:
            return
        if new is None:
            if old is not None:
                state.remove_node(parse_node(old).name)
            return
        node = parse_node(new)
        state.upsert_node(node.name, Amounts(node.allocatable.milli_cpu, node.allocatable.memory))

    def _pod_changed(self, old: ConfigMapRaw | None, new: ConfigMapRaw | None) -> None:
        state = self._state
        if state is None:
            return
        if new is None:
            if old is not None:
                pod = parse_pod(old)
                held = state.pods.get(pod.key)
                if held is not None and held.uid == pod.uid:
                    state.remove_pod(pod.key)
            return
        self._observe_pod(state, new)

    def _observe_pod(self, state: State, raw: ConfigMapRaw) -> None:
        pod = parse_pod(raw)
        if pod.terminal:
            state.remove_pod(pod.key)
            return
        if not pod.node_name:
            return
        vm = self._vm_of(pod)
        requests = Amounts(pod.requests.milli_cpu, pod.requests.memory)
        state.observe_pod(pod.key, pod.uid, pod.node_name, requests, vm)

    def _vm_changed(self, old: ConfigMapRaw | None, new: ConfigMapRaw | None) -> None:
        state = self._state
        if state is None or new is None:
            return
        try:
            info = vm_info(new)
        except VmError as error:
            log.warning("ignoring VirtualMachine change: %s", error)
            return
        if state.pod_of_vm(f"{info.namespace}/{info.name}") is not None:
            state.observe_vm(info)
            return
        pod_name = (new.get("status") or {}).get("podName")
        raw_pod = self._pods.get(f"{info.namespace}/{pod_name}") if pod_name else None
        labels = {} if raw_pod is None else (raw_pod.get("metadata") or {}).get("labels") or {}
        if raw_pod is None or labels.get(LABEL_VM) != info.name:
            return
        pod = parse_pod(raw_pod)
        if pod.node_name:
            # A VM pod seen before its VM was counted by requests: now count it as a VM.
            state.remove_pod(pod.key)
            self._observe_pod(state, raw_pod)
        elif old is None:
            # Filter may have rejected it for want of this VM; VM events are no
            # cluster events for the queue, so wake it here.
            self._handle.activate([pod])

    def _migration_changed(self, old: ConfigMapRaw | None, new: ConfigMapRaw | None) -> None:
        state = self._state
        if state is not None and (raw := new or old) is not None:
            self._apply_migration(state, raw, new)

    def _apply_migration(self, state: State, raw: ConfigMapRaw, new: ConfigMapRaw | None) -> None:
        """A migration marks its VM's pod migrating until it finishes or goes;
        finished ones we created are deleted."""
        metadata = raw.get("metadata") or {}
        namespace, name = metadata.get("namespace") or "", metadata.get("name") or ""
        vm_name = (raw.get("spec") or {}).get("vmName") or ""
        pod = state.pod_of_vm(f"{namespace}/{vm_name}")
        phase = "" if new is None else phase_of(new)
        ongoing = new is not None and phase not in FINISHED_PHASES
        if pod is not None:
            state.set_migrating(pod.key, ongoing)
        if new is not None and phase in FINISHED_PHASES and created_by_us(new):
            self._migrations.finished(namespace, name, phase)

    def _vm_of(self, pod: Pod) -> VmInfo | None:
        name = vm_name_of_pod(pod.labels)
        if name is None:
            return None
        raw = self._vms.get(f"{pod.namespace}/{name}")
        if raw is None:
            return None
        try:
            return self._parse_vm(raw)
        except VmError:
            return None

    def _parse_vm(self, raw: ConfigMapRaw) -> VmInfo:
        metadata = raw.get("metadata") or {}
        key = f"{metadata.get('namespace')}/{metadata.get('name')}"
        version = str(metadata.get("resourceVersion") or "")
        cached = self._vm_infos.get(key)
        if cached is not None and version and cached[0] == version:
            return cached[1]
        info = vm_info(raw)
        if len(self._vm_infos) > MAX_CACHED_VMS:
            self._vm_infos.clear()
        self._vm_infos[key] = (version, info)
        return info

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
            vm = self._parse_vm(raw)
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

    def _what_if(self, state: State, pod: Pod, node_info: NodeInfo) -> tuple[Amounts, Amounts]:
        """(leave out, extra): the framework's view of the node against ours."""
        listed = node_info.pods
        node = state.nodes.get(node_info.name)
        held = {} if node is None else node.pods
        without = [key for key, p in held.items() if p.uid not in listed or key == pod.key]
        extra = Amounts()
        for uid, other in listed.items():
            ours = state.pods.get(other.key)
            if uid != pod.uid and (ours is None or ours.node != node_info.name):
                extra = extra + Amounts(other.requests.milli_cpu, other.requests.memory)
        left_out = Amounts()
        for key in without:
            left_out = left_out + held[key].reserved
        return left_out, extra

    # --------------------------------------------------------- extension points
    def _fail(self, method: Method, status: Status) -> Status:
        self._metrics.extension_call_fails.labels(method, status.code.label).inc()
        return status

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        self._metrics.extension_calls.labels(Method.FILTER).inc()
        plugin_state = self._state
        if plugin_state is None:
            return self._fail(Method.FILTER, Status.as_error(REASON_NOT_STARTED))
        try:
            amount, _ = self._amount(plugin_state, pod)
        except _PodError as error:
            return self._fail(Method.FILTER, error.status)
        node = plugin_state.nodes.get(node_info.name)
        if node is None or node.budget is None:
            return Status.unschedulable(REASON_NO_ROOM)
        left_out, extra = self._what_if(plugin_state, pod, node_info)
        after = node.reserved.minus(left_out) + extra + amount
        if not after.fits_in(node.total):
            self._remember_waiting(pod.key)
            return Status.unschedulable(REASON_NO_ROOM)
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
        self._metrics.extension_calls.labels(Method.SCORE).inc()
        plugin_state = self._state
        if plugin_state is None:
            return 0, self._fail(Method.SCORE, Status.as_error(REASON_NOT_STARTED))
        try:
            amount, _ = self._amount(plugin_state, pod)
        except _PodError as error:
            return 0, self._fail(Method.SCORE, Status.as_error(error.status.message()))
        node = plugin_state.nodes.get(node_info.name)
        if node is None or node.budget is None:
            return 0, None
        left_out, extra = self._what_if(plugin_state, pod, node_info)
        after = node.reserved.minus(left_out) + extra + amount
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
        self._metrics.extension_calls.labels(Method.RESERVE).inc()
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
        self._metrics.extension_calls.labels(Method.UNRESERVE).inc()
        if self._state is not None:
            self._state.unreserve(pod.key, node_name)

    # ------------------------------------------------------------------ HTTP
    def _serve_agent(self, request: HttpRequest) -> HttpResponse:
        api = self._api
        if api is None:  # the daemon gates this; kept for direct callers
            return HttpResponse(503, "text/plain", b"not ready")
        answer = api.handle(request.method, request.body)
        code = str(answer.status)
        self._metrics.requests.labels(code).inc()
        if answer.node:
            self._metrics.request_results.labels(code, answer.node).inc()
        outcome = answer.outcome
        if outcome is not None and outcome.freed:
            self._wake_waiting()
        if outcome is not None and outcome.wants_migration:
            self._start_migration(outcome.pod_key)
        return HttpResponse(answer.status, answer.content_type, answer.body)

    def _start_migration(self, pod_key: str) -> None:
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
        body = orjson.dumps(state.dump(), option=orjson.OPT_NON_STR_KEYS)
        return HttpResponse(200, "application/json", body)

    # -------------------------------------------------------------- for tests
    @property
    def state(self) -> State | None:
        return self._state


def new(args: object, handle: Handle) -> AutoscaleEnforcer:
    if not isinstance(args, AutoscaleEnforcerArgs):
        args = AutoscaleEnforcerArgs()
    return AutoscaleEnforcer(args, handle)
