"""The cluster as the AutoscaleEnforcer sees it: informers feeding the state.

``ClusterFeed`` subscribes to the shared informers (the plugin's ConfigMap
through a field selector, nodes, pods, VirtualMachines and their migrations)
and keeps the pure ``State`` in step with them. It owns the configuration's
life: the last good config, the start-up wait for a first valid one, and
updates (applied to every node at once, or refused with a log line, a
metric and a Warning event on the ConfigMap).

Invariants: no state exists before a valid config (events before then are
only stored by the informers, and ``start`` rebuilds from the stores); after
``start`` every informer event is applied synchronously, in the order the
informers deliver them, holding the plugin's state lock (the agent API runs
on its own thread); a VM pod first seen bound is held at its maximum until
its agent reports (``State.observe_pod``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from plugins.autoscale_enforcer.args import AutoscaleEnforcerArgs
from plugins.autoscale_enforcer.config import (
    Config,
    ConfigError,
    check_update,
    config_from_config_map,
)
from plugins.autoscale_enforcer.metrics import AutoscaleMetrics
from plugins.autoscale_enforcer.migration import FINISHED_PHASES, created_by_us, phase_of
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
from scheduler.framework import Handle, Pod, parse_node, parse_pod

log = logging.getLogger(__name__)

EVENT_REASON_BAD_CONFIG = "InvalidConfig"
MAX_CACHED_VMS = 100_000

Raw = Mapping[str, Any]
MigrationFinished = Callable[[str, str, str], None]  # namespace, name, phase
Handler = Callable[[Raw | None, Raw | None], None]


class ClusterFeed:
    def __init__(
        self,
        args: AutoscaleEnforcerArgs,
        handle: Handle,
        metrics: AutoscaleMetrics,
        on_migration_finished: MigrationFinished,
        lock: threading.Lock,
    ) -> None:
        self._args = args
        self._lock = lock
        self._handle = handle
        self._metrics = metrics
        self._on_migration_finished = on_migration_finished
        self._state: State | None = None
        self._config: Config | None = None  # the last good config
        self._config_error = "no ConfigMap seen"
        self._config_ready = asyncio.Event()
        # Parsed VMs by namespace/name, valid for one object version (informer
        # objects are immutable and replaced on change, so identity is the
        # version): Filter and Score size the same VM once per node per cycle.
        self._vm_infos: dict[str, tuple[Raw, VmInfo]] = {}

        informers = handle.informers
        selector = (
            f"metadata.namespace={args.config_map_namespace},metadata.name={args.config_map_name}"
        )
        self._vms = informers.store(VM_RESOURCE)
        self._pods = informers.store("pods")
        self._nodes = informers.store("nodes")
        self._vm_migrations = informers.store(MIGRATION_RESOURCE)
        locked = self._locked
        informers.on_change("configmaps", locked(self._config_map_changed), field_selector=selector)
        informers.on_change("nodes", locked(self._node_changed))
        informers.on_change("pods", locked(self._pod_changed))
        informers.on_change(VM_RESOURCE, locked(self._vm_changed))
        informers.on_change(MIGRATION_RESOURCE, locked(self._migration_changed))

    def _locked(self, handler: Handler) -> Handler:
        lock = self._lock

        def run(old: Raw | None, new: Raw | None) -> None:
            with lock:
                handler(old, new)

        return run

    @property
    def state(self) -> State | None:
        return self._state

    def vm(self, namespace: str, name: str) -> Raw | None:
        return self._vms.get(f"{namespace}/{name}")

    def pod(self, key: str) -> Raw | None:
        return self._pods.get(key)

    # ------------------------------------------------------------ start-up
    async def start(self) -> State:
        """Wait for a valid config, then rebuild the state from the stores."""
        ready = asyncio.ensure_future(self._config_ready.wait())
        timer = asyncio.ensure_future(
            self._handle.clock.sleep(self._args.init_config_map_timeout_seconds)
        )
        try:
            await asyncio.wait({ready, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
            timer.cancel()
        if not self._config_ready.is_set():
            raise RuntimeError(
                f"no valid config in ConfigMap {self._args.config_map_namespace}/"
                f"{self._args.config_map_name} key {self._args.config_map_key!r} within "
                f"{self._args.init_config_map_timeout_seconds:g}s: {self._config_error}"
            )
        config = self._config
        assert config is not None  # set before the event
        if config.scheduler_name != self._handle.profile_name:
            raise RuntimeError(
                f"config schedulerName {config.scheduler_name!r} does not match the profile "
                f"{self._handle.profile_name!r} the plugin is enabled in"
            )
        with self._lock:
            state = self._state = self._rebuild(config)
        log.info(
            "AutoscaleEnforcer state rebuilt",
            extra={"nodes": len(state.nodes), "pods": len(state.pods)},
        )
        return state

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
    def _config_map_changed(self, old: Raw | None, new: Raw | None) -> None:
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

    def _reject_config(self, config_map: Raw, message: str) -> None:
        self._config_error = message
        if self._config is None:
            log.warning("AutoscaleEnforcer: initial config rejected: %s", message)
            return
        log.error("AutoscaleEnforcer: config update rejected, keeping the last: %s", message)
        self._metrics.config_rejected.inc()
        self._handle.events.event(
            config_map, "Warning", EVENT_REASON_BAD_CONFIG, "Update", message[:1024]
        )

    def _node_changed(self, old: Raw | None, new: Raw | None) -> None:
        state = self._state
        if state is None:
            return
        if new is None:
            if old is not None:
                state.remove_node(parse_node(old).name)
            return
        node = parse_node(new)
        state.upsert_node(node.name, Amounts(node.allocatable.milli_cpu, node.allocatable.memory))

    def _pod_changed(self, old: Raw | None, new: Raw | None) -> None:
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

    def _observe_pod(self, state: State, raw: Raw) -> None:
        pod = parse_pod(raw)
        if pod.terminal:
            state.remove_pod(pod.key)
            return
        if not pod.node_name:
            return
        vm = self._vm_of(pod)
        requests = Amounts(pod.requests.milli_cpu, pod.requests.memory)
        state.observe_pod(pod.key, pod.uid, pod.node_name, requests, vm)

    def _vm_changed(self, old: Raw | None, new: Raw | None) -> None:
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

    def _migration_changed(self, old: Raw | None, new: Raw | None) -> None:
        state = self._state
        if state is not None and (raw := new or old) is not None:
            self._apply_migration(state, raw, new)

    def _apply_migration(self, state: State, raw: Raw, new: Raw | None) -> None:
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
            self._on_migration_finished(namespace, name, phase)

    def _vm_of(self, pod: Pod) -> VmInfo | None:
        name = vm_name_of_pod(pod.labels)
        if name is None:
            return None
        raw = self._vms.get(f"{pod.namespace}/{name}")
        if raw is None:
            return None
        try:
            return self.parse_vm(raw)
        except VmError:
            return None

    def parse_vm(self, raw: Raw) -> VmInfo:
        """The VM's info, parsed once per object version; raises ``VmError``."""
        metadata = raw.get("metadata") or {}
        key = f"{metadata.get('namespace')}/{metadata.get('name')}"
        cached = self._vm_infos.get(key)
        if cached is not None and cached[0] is raw:
            return cached[1]
        info = vm_info(raw)
        if len(self._vm_infos) > MAX_CACHED_VMS:
            self._vm_infos.clear()
        self._vm_infos[key] = (raw, info)
        return info
