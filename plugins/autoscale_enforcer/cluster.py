"""The cluster as the AutoscaleEnforcer sees it: informer events feeding the state.

Two halves, one per process (see ``plugin`` and ``authority``):

- ``ConfigWatch`` (the daemon) watches the plugin's ConfigMap and owns the
  configuration's life: the last good config, the start-up wait for a first
  valid one, and updates (handed on whole, or refused with a log line, a
  metric and a Warning event on the ConfigMap).
- ``ClusterFeed`` (the authority, where the state lives) keeps the pure
  ``State`` in step with nodes, pods, VirtualMachines and their migrations.
  It reads objects from ``Stores`` (copies of the informers' stores, kept
  by the authority from the events the daemon forwards: ``forwarded`` says
  which) and asks the daemon for what it cannot do itself through
  ``FeedEffects`` (deleting a finished migration).

Invariants: no state exists before ``start`` (events before then are only
stored, and ``start`` rebuilds from the stores); after it every event is
applied synchronously, in the order the informers delivered them; a VM pod
first seen bound is held at its maximum until its agent reports
(``State.observe_pod``). Restart equivalence (a property test,
``test_autoscale_restart``): the state after any run of events equals, per
node and per pod, what ``start`` builds from the resulting objects alone,
but for what only a long-running state can know (an agent's grants until it
reports again, a pod Reserve held at its use); so a deleted VM's running
pods count by their requests, as a restart counts them.

Migrations are tracked per pod (issue 25 #2): a pod's ownerReferences say
whether it is the source or the target of a live migration
(``vm.migration_role``); the source is migrating while its migration is not
finished (the object's phase), the target never is, and a VirtualMachine
event applies to the source while both exist. Without ownerReferences (a
NeonVM that sets none yet), an ongoing migration object marks the pod its
``status.sourcePodName`` names, else the VM's pod.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

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
    VmInfoCache,
    migration_role,
    vm_info,
    vm_name_of_pod,
)
from scheduler.framework import Handle, Pod, parse_node, parse_pod

log = logging.getLogger(__name__)

EVENT_REASON_BAD_CONFIG = "InvalidConfig"
NODES, PODS = "nodes", "pods"
FED_RESOURCES = (NODES, PODS, VM_RESOURCE, MIGRATION_RESOURCE)

Raw = Mapping[str, Any]


class Stores(Protocol):
    def get(self, resource: str, key: str) -> Raw | None: ...

    def list(self, resource: str) -> Iterable[Raw]: ...


class FeedEffects(Protocol):
    def migration_finished(self, namespace: str, name: str, phase: str) -> None:
        """A migration we created finished: delete it."""


def forwarded(resource: str, old: Raw | None, new: Raw | None) -> bool:
    """Whether the authority needs this informer event. Pure.

    It holds bound pods only (a pending pod reserves nothing until Reserve,
    which says what it needs) and reads of a node only its allocatable, so
    pending pods' events, bound pods' status-only updates and nodes'
    heartbeats stay in the daemon. Deletions always go (a reservation may
    exist for a pod the authority never saw bound)."""
    if old is None or new is None:
        return resource != PODS or new is None or bool(_spec(new).get("nodeName"))
    if resource == PODS:
        if not _spec(new).get("nodeName"):
            return False
        old_metadata, new_metadata = _metadata(old), _metadata(new)
        return not (
            _same(_spec(old), _spec(new))
            and _same(old_metadata.get("labels"), new_metadata.get("labels"))
            and _same(old_metadata.get("ownerReferences"), new_metadata.get("ownerReferences"))
            and _same(_status(old).get("phase"), _status(new).get("phase"))
        )
    if resource == NODES:
        return not _same(_status(old).get("allocatable"), _status(new).get("allocatable"))
    return True


def _same(a: object, b: object) -> bool:
    return a is b or a == b  # stored subtrees are shared when equal: usually ``is``


def _spec(raw: Raw) -> Raw:
    return raw.get("spec") or {}


def _metadata(raw: Raw) -> Raw:
    return raw.get("metadata") or {}


def _status(raw: Raw) -> Raw:
    return raw.get("status") or {}


def vm_pod(vm: Raw, pods: Callable[[str], Raw | None]) -> Raw | None:
    """The pod the VM runs, if any: the one its ``status.podName`` names,
    labelled with the VM."""
    metadata = _metadata(vm)
    pod_name = _status(vm).get("podName")
    if not pod_name:
        return None
    raw_pod = pods(f"{metadata.get('namespace')}/{pod_name}")
    if raw_pod is None:
        return None
    labels = _metadata(raw_pod).get("labels") or {}
    return raw_pod if labels.get(LABEL_VM) == metadata.get("name") else None


def pod_waiting_for(vm: Raw, pods: Callable[[str], Raw | None]) -> Raw | None:
    """The pending pod a newly seen VM runs, if any: Filter may have turned
    it away for want of the VM, and a VM event is no cluster event for the
    queue."""
    raw_pod = vm_pod(vm, pods)
    return None if raw_pod is None or _spec(raw_pod).get("nodeName") else raw_pod


class ConfigWatch:
    """The plugin's ConfigMap, watched on the daemon (see the module docstring)."""

    def __init__(
        self,
        args: AutoscaleEnforcerArgs,
        handle: Handle,
        metrics: AutoscaleMetrics,
        on_config: Callable[[Config], None],
    ) -> None:
        self._args = args
        self._handle = handle
        self._metrics = metrics
        self._on_config = on_config
        self.config: Config | None = None  # the last good config
        self._error = "no ConfigMap seen"
        self._ready = asyncio.Event()
        selector = (
            f"metadata.namespace={args.config_map_namespace},metadata.name={args.config_map_name}"
        )
        handle.informers.on_change("configmaps", self._changed, field_selector=selector)

    async def first(self) -> Config:
        """Wait up to ``initConfigMapTimeoutSeconds`` for a valid config and
        check that it names this profile; raises ``RuntimeError`` otherwise."""
        ready = asyncio.ensure_future(self._ready.wait())
        timer = asyncio.ensure_future(
            self._handle.clock.sleep(self._args.init_config_map_timeout_seconds)
        )
        try:
            await asyncio.wait({ready, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
            timer.cancel()
        config = self.config
        if config is None:
            raise RuntimeError(
                f"no valid config in ConfigMap {self._args.config_map_namespace}/"
                f"{self._args.config_map_name} key {self._args.config_map_key!r} within "
                f"{self._args.init_config_map_timeout_seconds:g}s: {self._error}"
            )
        if config.scheduler_name != self._handle.profile_name:
            raise RuntimeError(
                f"config schedulerName {config.scheduler_name!r} does not match the profile "
                f"{self._handle.profile_name!r} the plugin is enabled in"
            )
        return config

    def _changed(self, old: Raw | None, new: Raw | None) -> None:
        if new is None:
            return  # deleted: the last config stays in force
        try:
            config = config_from_config_map(new, self._args.config_map_key)
            if self.config is not None:
                if config == self.config:
                    return
                check_update(self.config, config)
        except ConfigError as error:
            self._reject(new, str(error))
            return
        first = self.config is None
        self.config = config
        if not first:
            log.info("AutoscaleEnforcer config updated")
        self._on_config(config)
        self._ready.set()

    def _reject(self, config_map: Raw, message: str) -> None:
        self._error = message
        if self.config is None:
            log.warning("AutoscaleEnforcer: initial config rejected: %s", message)
            return
        log.error("AutoscaleEnforcer: config update rejected, keeping the last: %s", message)
        self._metrics.config_rejected.inc()
        self._handle.events.event(
            config_map, "Warning", EVENT_REASON_BAD_CONFIG, "Update", message[:1024]
        )


class ClusterFeed:
    """The state fed by informer events (see the module docstring)."""

    def __init__(self, stores: Stores, effects: FeedEffects) -> None:
        self._stores = stores
        self._effects = effects
        self._state: State | None = None
        self._vm_infos = VmInfoCache()
        # VM (namespace/name) -> keys of the migrations naming it: a pod of
        # that VM without ownerReferences seen after its migration gets the
        # migration applied, as a restart applies it.
        self._migrations: dict[str, set[str]] = {}

    @property
    def state(self) -> State | None:
        return self._state

    def start(self, config: Config) -> State:
        """Build the state from the stores (once; later calls return it)."""
        if self._state is None:
            self._state = self._rebuild(config)
        return self._state

    def set_config(self, config: Config) -> None:
        if self._state is not None:
            self._state.set_config(config)

    def changed(self, resource: str, old: Raw | None, new: Raw | None) -> None:
        """One informer event (``old``/``new`` as the informers give them)."""
        if resource == NODES:
            self._node_changed(old, new)
        elif resource == PODS:
            self._pod_changed(old, new)
        elif resource == VM_RESOURCE:
            self._vm_changed(old, new)
        elif resource == MIGRATION_RESOURCE:
            self._migration_changed(old, new)

    def _rebuild(self, config: Config) -> State:
        state = State(config)
        for raw in self._stores.list(NODES):
            node = parse_node(raw)
            state.upsert_node(
                node.name, Amounts(node.allocatable.milli_cpu, node.allocatable.memory)
            )
        for raw in self._stores.list(PODS):
            self._observe_pod(state, raw)
        for raw in self._stores.list(MIGRATION_RESOURCE):
            self._index_migration(raw, raw)
            self._apply_migration(state, raw, raw)
        return state

    # --------------------------------------------------------- informers
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
        role = migration_role(raw.get("metadata") or {}) if vm is not None else None
        target = role is not None and role.target
        state.observe_pod(pod.key, pod.uid, pod.node_name, requests, vm, migration_target=target)
        if role is not None and not role.target:  # the source: migrating until it finishes
            migration = self._stores.get(MIGRATION_RESOURCE, f"{pod.namespace}/{role.migration}")
            finished = migration is not None and phase_of(migration) in FINISHED_PHASES
            state.set_migrating(pod.key, not finished)
        elif role is None and vm is not None and self._state is state:
            for key in sorted(self._migrations.get(f"{vm.namespace}/{vm.name}", ())):
                migration = self._stores.get(MIGRATION_RESOURCE, key)
                if migration is not None:
                    self._apply_migration(state, migration, migration, effects=False)

    def _vm_changed(self, old: Raw | None, new: Raw | None) -> None:
        state = self._state
        if state is None:
            return
        if new is None:
            if old is not None:
                self._vm_deleted(state, old)
            return
        try:
            info = vm_info(new)
        except VmError as error:
            log.warning("ignoring VirtualMachine change: %s", error)
            return
        if state.pod_of_vm(f"{info.namespace}/{info.name}") is not None:
            state.observe_vm(info)
            return
        raw_pod = vm_pod(new, lambda key: self._stores.get(PODS, key))
        if raw_pod is None:
            return
        pod = parse_pod(raw_pod)
        if pod.node_name:
            # A VM pod seen before its VM was counted by requests: now count it as a VM.
            state.remove_pod(pod.key)
            self._observe_pod(state, raw_pod)

    def _vm_deleted(self, state: State, old: Raw) -> None:
        """A VM gone while its pods still run: each bound pod counts as a pod
        whose VM is unknown (by its requests), as a restart counts it from
        the objects and as a pod seen before its VM is counted."""
        metadata = _metadata(old)
        vm_key = f"{metadata.get('namespace')}/{metadata.get('name')}"
        for key in [key for key, pod in state.pods.items() if pod.vm_key == vm_key]:
            raw_pod = self._stores.get(PODS, key)
            if raw_pod is not None and _spec(raw_pod).get("nodeName"):
                state.remove_pod(key)
                self._observe_pod(state, raw_pod)

    def _migration_changed(self, old: Raw | None, new: Raw | None) -> None:
        state = self._state
        if (raw := new or old) is not None:
            self._index_migration(raw, new)
            if state is not None:
                self._apply_migration(state, raw, new)

    def _index_migration(self, raw: Raw, new: Raw | None) -> None:
        metadata = _metadata(raw)
        namespace = metadata.get("namespace") or ""
        vm_key = f"{namespace}/{_spec(raw).get('vmName') or ''}"
        key = f"{namespace}/{metadata.get('name') or ''}"
        keys = self._migrations.setdefault(vm_key, set())
        if new is not None:
            keys.add(key)
            return
        keys.discard(key)
        if not keys:
            del self._migrations[vm_key]

    def _apply_migration(
        self, state: State, raw: Raw, new: Raw | None, *, effects: bool = True
    ) -> None:
        """A migration marks its VM's pod migrating until it finishes or goes;
        finished ones we created are deleted (``effects``)."""
        metadata = raw.get("metadata") or {}
        namespace, name = metadata.get("namespace") or "", metadata.get("name") or ""
        vm_name = (raw.get("spec") or {}).get("vmName") or ""
        source = (raw.get("status") or {}).get("sourcePodName")
        pod = state.pods.get(f"{namespace}/{source}") if source else None
        if pod is None or pod.vm_key != f"{namespace}/{vm_name}":
            pod = state.pod_of_vm(f"{namespace}/{vm_name}")  # the source while both exist
        phase = "" if new is None else phase_of(new)
        ongoing = new is not None and phase not in FINISHED_PHASES
        if pod is not None and not pod.migration_target:
            state.set_migrating(pod.key, ongoing)
        if effects and new is not None and phase in FINISHED_PHASES and created_by_us(new):
            self._effects.migration_finished(namespace, name, phase)

    def _vm_of(self, pod: Pod) -> VmInfo | None:
        name = vm_name_of_pod(pod.labels)
        if name is None:
            return None
        raw = self._stores.get(VM_RESOURCE, f"{pod.namespace}/{name}")
        if raw is None:
            return None
        try:
            return self._vm_infos.parse(raw)
        except VmError:
            return None
