"""The composition root: builds every object and owns every long-lived task.

Nothing else in the engine creates a long-lived task. ``SchedulerApp.run``
starts them in one TaskGroup, each named, and stops them in this order when
``stop()`` is called (SIGTERM):

1. mark not-ready (``/readyz`` fails ``shutdown``), stop popping, close the
   queue (the scheduling loop returns);
2. drain binding cycles until ``bind_grace_seconds``; those still running are
   cancelled and roll back (unreserve, forget), so nothing stays assumed; then
   the plugins' one-shot background work (preemption) with the same grace
   (``BackgroundTasks``, which also runs the plugins' long-running workers);
3. stop the queue flushers, the leader elector (releasing the lease), the
   plugins' workers and the informers;
4. flush pod status patches and events (bounded), then close the client and
   the HTTP server (plugin listeners' threads are joined there).

Threads: plugin listeners (``PluginHttp.listen``) are served from their own
threads, owned by the ops server. While any is configured, ``run`` lowers the
interpreter's switch interval (``LISTENER_SWITCH_INTERVAL``) so a listener
thread gets the GIL from a busy scheduling cycle within 0.1 ms instead of
CPython's default 5 ms per hand-over, and restores it
on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import sys
import uuid
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from plugins.registry import DEFAULT_PLUGINS, in_tree_registry
from scheduler.cache.cache import Cache
from scheduler.cache.snapshot import Snapshot
from scheduler.cachedebug import NON_TERMINAL_PODS, CacheDebugger
from scheduler.clock import Clock, RealClock
from scheduler.config import (
    PluginRef,
    ResolvedProfile,
    SchedulerConfiguration,
    points_of_classes,
    resolve_profiles,
)
from scheduler.cycle.reporting import StatusWriter
from scheduler.cycle.scheduler import Scheduler
from scheduler.diagnostics import AttemptLog
from scheduler.eventhandlers import EventHandlers, ObjectEventHandlers
from scheduler.framework.events import Resource as EventResource
from scheduler.framework.interfaces import ExtensionPoint, Plugin
from scheduler.framework.objects import Pod, parse_pod
from scheduler.framework.registry import Registry, entry_point_plugins
from scheduler.handle import ProfileHandle
from scheduler.health import scheduler_health
from scheduler.informers.factory import FactoryInformerAccess, InformerFactory
from scheduler.kube.client import KubeClient
from scheduler.kube.events import EventSink
from scheduler.kube.resources import BY_GROUP_KIND, NODES, PODS
from scheduler.kube.writer import KubeApiWriter
from scheduler.leaderelection import ApiLeaseClient, LeaderElectionConfig, LeaderElector
from scheduler.metrics import CacheType, SchedulerMetrics
from scheduler.pluginservices import DaemonPluginServices
from scheduler.queue import QueueProfile, SchedulingQueue
from scheduler.runtime.background import BackgroundTasks
from scheduler.runtime.framework import Framework
from scheduler.runtime.waiting import WaitingPods
from scheduler.server import OpsServer

log = logging.getLogger(__name__)

CACHE_METRICS_PERIOD_SECONDS = 1.0
# The GIL hand-over bound while plugin listener threads run. Every socket
# call releases the GIL, so a request costs a few hand-overs (wake-up, read,
# write), each up to this long while the scheduling cycle is busy: at 0.5 ms
# the listener topped out near 700 requests/s under a busy cycle (requests
# queued for hundreds of ms at 1000/s); at 0.1 ms it kept up. The cycle pays
# a forced switch only when a listener thread actually waits.
LISTENER_SWITCH_INTERVAL = 0.0001


@dataclass(frozen=True)
class AppOptions:
    kubeconfig: str | None = None
    bind_address: str = "0.0.0.0"
    port: int = 10259
    bind_grace_seconds: float = 30.0
    flush_grace_seconds: float = 5.0
    max_binding: int = 64


def build_registry() -> Registry:
    """In-tree plugins plus those installed under the entry-point group."""
    return in_tree_registry().merged(entry_point_plugins())


def resolve(config: SchedulerConfiguration, registry: Registry) -> list[ResolvedProfile]:
    defaults = [PluginRef(name, weight) for name, weight in DEFAULT_PLUGINS]
    points_of = points_of_classes(spec.plugin_class for spec in registry.values())
    return resolve_profiles(config, registry, defaults, points_of)


def build_framework(
    profile: ResolvedProfile,
    registry: Registry,
    handle: ProfileHandle,
    waiting: WaitingPods,
    metrics: SchedulerMetrics,
) -> Framework:
    """Instantiate each enabled plugin once and group them by extension point."""
    instances: dict[str, Plugin] = {}
    by_point: dict[ExtensionPoint, list[Plugin]] = {}
    for point, refs in profile.plugins.items():
        for ref in refs:
            if ref.name not in instances:
                spec = registry[ref.name]
                instances[ref.name] = spec.factory(profile.plugin_args.get(ref.name), handle)
            by_point.setdefault(point, []).append(instances[ref.name])
    weights = {ref.name: ref.weight for ref in profile.plugins.get(ExtensionPoint.SCORE, ())}
    framework = Framework(profile.scheduler_name, by_point, weights, waiting, metrics)
    handle.bind_framework(framework)
    return framework


# Resources whose events reach the queue through their own handlers.
_POD_AND_NODE_EVENTS = frozenset(
    {
        EventResource.POD,
        EventResource.ASSIGNED_POD,
        EventResource.UNSCHEDULED_POD,
        EventResource.NODE,
        EventResource.WILDCARD,
    }
)


def object_event_resources(frameworks: Iterable[Framework]) -> list[EventResource]:
    """The other resources some plugin registered events for (upstream
    watches only those), in a stable order."""
    found: dict[EventResource, None] = {}
    for framework in frameworks:
        for registered in framework.events_to_register().values():
            for item in registered:
                resource = item.event.resource
                if resource not in _POD_AND_NODE_EVENTS and resource.value in BY_GROUP_KIND:
                    found[resource] = None
    return list(found)


def watch_object_events(
    factory: InformerFactory,
    queue: SchedulingQueue,
    frameworks: Iterable[Framework],
    metrics: SchedulerMetrics,
) -> None:
    """Feed the queue the cluster events of those other resources."""
    for resource in object_event_resources(frameworks):
        handlers = ObjectEventHandlers(queue, resource, timer=metrics)
        factory.informer(BY_GROUP_KIND[resource.value]).add_handler(
            handlers.added, handlers.updated, handlers.deleted
        )


class SchedulerApp:
    def __init__(  # noqa: PLR0915 - the composition root; faults splits it into named steps
        self,
        config: SchedulerConfiguration,
        client: KubeClient,
        options: AppOptions | None = None,
        *,
        clock: Clock | None = None,
        registry: Registry | None = None,
        metrics_registry: CollectorRegistry | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.options = options or AppOptions()
        self.client = client
        self.clock = clock or RealClock()
        self.metrics_registry = metrics_registry or CollectorRegistry()
        self.metrics = SchedulerMetrics(self.metrics_registry)
        self._stop = asyncio.Event()
        self._shutting_down = False
        self._synced = False

        registry = registry or build_registry()
        profiles = resolve(config, registry)
        self.informer_factory = InformerFactory(client, clock=self.clock)
        # Terminal pods hold no resources: leave them out, as upstream does. A
        # pod that turns terminal leaves the watch as a delete.
        pods = self.informer_factory.informer(PODS, field_selector=NON_TERMINAL_PODS)
        nodes = self.informer_factory.informer(NODES)
        informer_access = FactoryInformerAccess(self.informer_factory)
        self.event_sink = EventSink(client, hostname=socket.gethostname(), clock=self.clock)
        self.status_writer = StatusWriter(client.patch_pod_status, self.clock)
        api = KubeApiWriter(client)
        self.cache = Cache(self.clock)
        self.snapshot = Snapshot()
        self.waiting = WaitingPods()
        self.background = BackgroundTasks()
        self.attempt_log = AttemptLog()
        self.plugin_services = DaemonPluginServices(self.metrics_registry)

        handles: list[ProfileHandle] = []
        self.frameworks: dict[str, Framework] = {}
        recorders = {}
        for profile in profiles:
            recorder = recorders[profile.scheduler_name] = self.event_sink.recorder(
                profile.scheduler_name
            )
            handle = ProfileHandle(
                profile_name=profile.scheduler_name,
                clock=self.clock,
                snapshot=self.snapshot,
                informers=informer_access,
                events=recorder,
                api=api,
                waiting_pods=self.waiting,
                services=self.plugin_services,
                background=self.background,
                metrics=self.metrics,
            )
            handles.append(handle)
            framework = build_framework(profile, registry, handle, self.waiting, self.metrics)
            self.frameworks[profile.scheduler_name] = framework

        first = next(iter(self.frameworks.values()))
        self.queue = SchedulingQueue(
            less=first.less,
            clock=self.clock,
            profiles={
                name: QueueProfile(
                    pre_enqueue=framework.pre_enqueue,
                    events_by_plugin=framework.events_to_register(),
                )
                for name, framework in self.frameworks.items()
            },
            initial_backoff=float(config.pod_initial_backoff_seconds),
            max_backoff=float(config.pod_max_backoff_seconds),
            metrics=self.metrics,
        )
        for handle in handles:
            handle.bind_queue(self.queue)
        self.cache_debugger = CacheDebugger(
            client.list, self.cache, self.queue, schedulers=self.frameworks.keys(), clock=self.clock
        )

        def pod_lister(key: str) -> Pod | None:
            raw = pods.store.get(key)
            return parse_pod(raw) if raw is not None else None

        self.scheduler = Scheduler(
            queue=self.queue,
            cache=self.cache,
            frameworks=self.frameworks,
            recorders=recorders,
            status_writer=self.status_writer,
            pod_lister=pod_lister,
            clock=self.clock,
            metrics=self.metrics,
            attempts=self.attempt_log,
            snapshot=self.snapshot,
            percentage_of_nodes_to_score=config.percentage_of_nodes_to_score or 0,
            profile_percentages={
                p.scheduler_name: p.percentage_of_nodes_to_score for p in profiles
            },
            max_binding=self.options.max_binding,
            rng=rng,
        )
        handlers = EventHandlers(
            self.cache,
            self.queue,
            self.frameworks.keys(),
            on_pod_deleted=self._reject_waiting,
            timer=self.metrics,
            status=self.status_writer,
        )
        pods.add_handler(handlers.pod_added, handlers.pod_updated, handlers.pod_deleted)
        nodes.add_handler(handlers.node_added, handlers.node_updated, handlers.node_deleted)
        watch_object_events(
            self.informer_factory, self.queue, self.frameworks.values(), self.metrics
        )

        self.elector: LeaderElector | None = None
        election = config.leader_election
        if election.leader_elect:
            self.elector = LeaderElector(
                LeaderElectionConfig(
                    namespace=election.resource_namespace,
                    name=election.resource_name,
                    identity=f"{socket.gethostname()}_{uuid.uuid4()}",
                    lease_duration=election.lease_duration,
                    renew_deadline=election.renew_deadline,
                    retry_period=election.retry_period,
                ),
                ApiLeaseClient(client.request),
                self.clock,
            )
        if self.elector is not None:
            elector = self.elector
            self.metrics.leader_election(election.resource_name, lambda: elector.is_leader)
        self.server = self._ops_server(config)

    def _ops_server(self, config: SchedulerConfiguration) -> OpsServer:
        health = scheduler_health(
            shutting_down=lambda: self._shutting_down,
            handlers_synced=lambda: self._synced,
            leader_election=self.elector.healthy if self.elector else None,
        )
        return OpsServer(
            self.options.bind_address,
            self.options.port,
            self.metrics_registry,
            health,
            self.attempt_log,
            config_dump=lambda: config.model_dump(mode="json", by_alias=True),
            listeners=self.plugin_services.listeners,
            debug_routes=self.plugin_services.debug_routes,
            gate=self._plugin_gate,
            cache_report=self.cache_debugger.report_json,
        )

    def _plugin_gate(self, leader_only: bool) -> str | None:
        """Why plugin listeners refuse now (503), or None to serve."""
        if not self._synced:  # set once informers synced and plugins started
            return "not ready: informers syncing or plugins starting"
        if self._shutting_down:
            return "not ready: shutting down"
        if leader_only and self.elector is not None and not self.elector.is_leader:
            return "not the leader: ask the leading scheduler"
        return None

    def _reject_waiting(self, pod: Pod) -> None:
        waiting = self.waiting.get(pod.uid)
        if waiting is not None:
            waiting.reject("", "pod was deleted")

    # --------------------------------------------------------------- control
    def stop(self) -> None:
        """Begin the ordered shutdown (safe from a signal handler)."""
        self._stop.set()

    def request_cache_report(self) -> None:
        """Log the cache comparer's report soon (safe from a signal handler: SIGUSR2)."""
        self.cache_debugger.request_report()

    @property
    def ready(self) -> bool:
        return self._synced and not self._shutting_down

    async def run(self) -> None:
        previous_interval = sys.getswitchinterval()
        if self.plugin_services.listeners:
            sys.setswitchinterval(LISTENER_SWITCH_INTERVAL)
        try:
            await self._run()
        finally:
            sys.setswitchinterval(previous_interval)

    async def _run(self) -> None:
        await self.server.start()
        log.info(
            "pyscheduler starting",
            extra={
                "profiles": sorted(self.frameworks),
                "endpoints": f"{self.options.bind_address}:{self.server.bound_port}",
                "leaderElection": self.elector is not None,
            },
        )
        try:
            async with asyncio.TaskGroup() as group:
                informers = group.create_task(self.informer_factory.run(), name="informers")
                events = group.create_task(self.event_sink.run(), name="events")
                status = group.create_task(self.status_writer.run(), name="pod-status")
                cache_metrics = group.create_task(self._cache_metrics(), name="cache-metrics")
                debugger = group.create_task(self.cache_debugger.run(), name="cache-debugger")
                workers: list[asyncio.Task[None]] = []
                stopped = await self._until_stopped(self.informer_factory.wait_synced())
                if not stopped:  # plugins' start steps: a failure fails start-up
                    stopped = await self._until_stopped(self.plugin_services.start())
                if not stopped:
                    self._synced = True
                    log.info(
                        "informers synced; scheduling",
                        extra={"nodes": self.cache.node_count(), "pods": self.cache.pod_count()},
                    )
                    flushers = group.create_task(self.queue.run(), name="queue-flushers")
                    scheduling = group.create_task(self._lead_and_schedule(), name="scheduling")
                    workers = [
                        group.create_task(
                            self.background.run_workers(self.plugin_services.workers),
                            name="plugin-workers",
                        )
                    ]
                    await self._stop_or_done(scheduling)
                    await self._shutdown_scheduling(scheduling, flushers)
                self._shutting_down = True
                for task in (*workers, informers, cache_metrics, debugger):
                    task.cancel()
                await asyncio.wait(
                    {*workers, informers, cache_metrics, debugger}
                )  # before the flush
                await self._flush(status, events)
        finally:
            self._shutting_down = True
            await self.client.close()
            await self.server.stop()
            log.info("pyscheduler stopped")

    async def _until_stopped(self, awaitable: Awaitable[Any]) -> bool:
        """Await ``awaitable`` unless stop comes first; True if stopped."""
        work = asyncio.ensure_future(awaitable)
        stop = asyncio.ensure_future(self._stop.wait())
        await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
        if work.done():
            stop.cancel()
            work.result()
            return False
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await work
        return True

    async def _stop_or_done(self, task: asyncio.Task[None]) -> None:
        stop = asyncio.ensure_future(self._stop.wait())
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()

    async def _lead_and_schedule(self) -> None:
        if self.elector is None:
            await self.scheduler.run()
            return
        await self.elector.run(self.scheduler.run)

    async def _shutdown_scheduling(
        self, scheduling: asyncio.Task[None], flushers: asyncio.Task[None]
    ) -> None:
        self._shutting_down = True
        log.info(
            "shutting down: no new pods; %d binds in flight",
            self.scheduler.binding_in_flight(),
        )
        self.scheduler.stop_popping()
        self.queue.close()
        cancelled = await self.scheduler.drain(self.options.bind_grace_seconds)
        if cancelled:
            log.warning(
                "shutdown: %d binding cycles did not finish and were rolled back", cancelled
            )
        # Plugins' background API work (preemption): same grace, then cancelled.
        unfinished = await self.background.drain(self.options.bind_grace_seconds)
        if unfinished:
            log.warning("shutdown: %d background plugin tasks were cancelled", unfinished)
        for task in (scheduling, flushers):
            if not task.done():
                task.cancel()
        for task in (scheduling, flushers):
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _flush(self, status: asyncio.Task[None], events: asyncio.Task[None]) -> None:
        self.status_writer.close()
        try:
            await asyncio.wait_for(
                asyncio.gather(asyncio.shield(status), self.event_sink.drain()),
                self.options.flush_grace_seconds,
            )
        except TimeoutError:
            log.warning("shutdown: gave up flushing pod status and events")
        for task in (status, events):
            task.cancel()

    async def _cache_metrics(self) -> None:
        while True:
            self.metrics.cache_size(CacheType.NODES, self.cache.node_count())
            self.metrics.cache_size(CacheType.PODS, self.cache.pod_count())
            self.metrics.cache_size(CacheType.ASSUMED_PODS, self.cache.assumed_count())
            await self.clock.sleep(CACHE_METRICS_PERIOD_SECONDS)
