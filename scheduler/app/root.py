"""The composition root: builds every object and owns every long-lived task.

Nothing else in the engine creates a long-lived task. ``SchedulerApp.run``
starts them in one TaskGroup, each named, and stops them in this order when
``stop()`` is called (SIGTERM):

1. stop serving: mark not-ready, stop the plugin listeners (the autoscaling
   agent's port) and the HTTPS ops server (no new connections; requests in
   flight, such as one waiting on its TokenReview or SubjectAccessReview,
   finish while the client is still open), as upstream stops its secure
   serving as soon as it is told to stop;
2. stop popping, close the queue (the scheduling loop returns), drain binding
   cycles until ``bind_grace_seconds``; those still running are cancelled and
   roll back (unreserve, forget), so nothing stays assumed; then
   the plugins' one-shot background work (preemption) with the same grace
   (``BackgroundTasks``, which also runs the plugins' long-running workers);
3. stop the queue flushers, the leader elector (releasing the lease), the
   plugins' workers and the informers;
4. flush pod status patches and events (bounded), then close the client:
   last, as everything above may still talk to the API server.

On leadership loss (or a fatal error in any task, which cancels the rest)
the bind fence comes first: the elector calls ``Scheduler.fence`` the moment
it detects the loss, so no PreBind or Bind leaves after it; the binding
cycles are cancelled and have rolled back before the lease is released
(``Scheduler.lead``); then the steps above run with no binds left to drain.
The ops server gives requests in flight at most
``server.SHUTDOWN_GRACE_SECONDS``, so no exit waits on an ops client.

Threads: plugin listeners (``PluginHttp.listen``) are served from their own
threads, owned by the ops server. While any is configured, ``run`` lowers the
interpreter's switch interval (``scheduler.services.thread.LISTENER_SWITCH_INTERVAL``,
or ``PYSCHEDULER_LISTENER_SWITCH_INTERVAL`` seconds) so a listener
thread gets the GIL from a busy scheduling cycle within 0.1 ms instead of
CPython's default 5 ms per hand-over, and restores it
on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
import ssl
import time
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from scheduler.app.buildinfo import build_info_labels
from scheduler.config import (
    SchedulerConfiguration,
    advice,
)
from scheduler.cycle.concurrency import DEFAULT_BINDS, BindConcurrency
from scheduler.engine.assembly import build_registry, resolve
from scheduler.engine.core import Engine
from scheduler.framework.clock import Clock, RealClock
from scheduler.framework.features import FeatureGates
from scheduler.framework.gatecatalogue import CATALOGUE
from scheduler.framework.registry import Registry
from scheduler.kube.client import KubeClient
from scheduler.kube.reviews import Reviews
from scheduler.leaderelection import ApiLeaseClient, LeaderElectionConfig, LeaderElector
from scheduler.ops.cachedebug import CacheDebugger
from scheduler.ops.connlimits import Limits
from scheduler.ops.delegation import DelegatedAuth, plugin_token_reviewer
from scheduler.ops.gcpolicy import STARTUP_PAUSE_LIMIT_SECONDS, resume, settle_after_sync
from scheduler.ops.health import scheduler_health
from scheduler.ops.looplag import LoopLag
from scheduler.ops.metrics import CacheType
from scheduler.ops.podresources import PodResourceCollector
from scheduler.ops.server import OpsServer
from scheduler.ops.tls import serving_context
from scheduler.queue.queue import DEFAULT_MAX_IN_UNSCHEDULABLE
from scheduler.services.hosting import ListenerHost
from scheduler.services.thread import listener_switch_interval, switch_interval

__all__ = ["AppOptions", "SchedulerApp"]

log = logging.getLogger(__name__)

CACHE_METRICS_PERIOD_SECONDS = 1.0
# The ops port's review client: upstream's delegating authn/authz client
# (high limits, "since this will effectively limit API server requests to
# auth") with a 10 s request timeout, separate from the scheduling client.
REVIEW_QPS = 200.0
REVIEW_BURST = 400
REVIEW_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class AppOptions:
    kubeconfig: str | None = None
    bind_address: str = "0.0.0.0"
    port: int = 10259
    bind_grace_seconds: float = 30.0
    flush_grace_seconds: float = 5.0
    # --max-concurrent-binds (the ceiling), --adaptive-concurrent-binds.
    binds: BindConcurrency = DEFAULT_BINDS
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    # Secure serving: the given pair or a self-signed one; these paths open to all.
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    tls_min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    tls_cipher_suites: tuple[str, ...] = ()
    # kube-scheduler's --pod-max-in-unschedulable-pods-duration.
    max_in_unschedulable_seconds: float = DEFAULT_MAX_IN_UNSCHEDULABLE
    always_allow_paths: tuple[str, ...] = ("/healthz", "/readyz", "/livez")
    ops_limits: Limits = field(default_factory=Limits)
    # kube-scheduler's --disabled-metrics: families left out of /metrics.
    disabled_metrics: frozenset[str] = frozenset()


class SchedulerApp:
    def __init__(
        self,
        config: SchedulerConfiguration,
        client: KubeClient,
        options: AppOptions | None = None,
        *,
        clock: Clock | None = None,
        registry: Registry | None = None,
        metrics_registry: CollectorRegistry | None = None,
        rng: random.Random | None = None,
        authn_client: KubeClient | None = None,
        authz_client: KubeClient | None = None,
    ) -> None:
        self.config = config
        self.options = options or AppOptions()
        self.client = client
        self.clock = clock or RealClock()
        self.metrics_registry = metrics_registry or CollectorRegistry()
        self._stop = asyncio.Event()
        self._shutting_down = False
        self._serving = False
        self._synced = False
        self._review_client: KubeClient | None = None

        registry = registry or build_registry()
        self.engine = Engine(
            config,
            resolve(config, registry, self.options.feature_gates),
            registry,
            client,
            clock=self.clock,
            hostname=socket.gethostname(),
            metrics_registry=self.metrics_registry,
            binds=self.options.binds,
            rng=rng,
            feature_gates=self.options.feature_gates,
            max_in_unschedulable=self.options.max_in_unschedulable_seconds,
        )
        engine = self.engine
        self.metrics = engine.metrics
        self.metrics.build_info(build_info_labels())
        self.metrics.feature_gates(
            {
                name: (value, CATALOGUE[name][1])
                for name, value in self.options.feature_gates.every_gate().items()
            }
        )
        self.loop_lag = LoopLag(self.clock, self.metrics)
        client.report_to(self.metrics)
        self.informer_factory = engine.informer_factory
        self.event_sink = engine.event_sink
        self.status_writer = engine.status_writer
        self.cache = engine.cache
        self.snapshot = engine.snapshot
        self.waiting = engine.waiting
        self.background = engine.background
        self.plugin_services = engine.plugin_services
        self.attempt_log = engine.attempt_log
        self.frameworks = engine.frameworks
        self.queue = engine.queue
        self.scheduler = engine.scheduler
        self.cache_debugger = CacheDebugger(
            client.list, self.cache, self.queue, schedulers=self.frameworks.keys(), clock=self.clock
        )

        self.elector = self._leader_elector(config, client)
        self.server = self._ops_server(config, client, authn_client, authz_client)
        self.listeners = ListenerHost(
            self.options.bind_address,
            self.plugin_services.listeners,
            self.plugin_services.process_listeners,
            gate=self._plugin_gate,
            gate_expiry=self._plugin_gate_expiry,
        )

    def _leader_elector(
        self, config: SchedulerConfiguration, client: KubeClient
    ) -> LeaderElector | None:
        """The elector (and its ``leader_election_master_status``), or None
        without leader election."""
        election = config.leader_election
        if not election.leader_elect:
            return None
        elector = LeaderElector(
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
            on_slow_path=lambda: self.metrics.leader_election_slowpath(election.resource_name),
        )
        self.metrics.leader_election(election.resource_name, lambda: elector.is_leader)
        return elector

    def _ops_server(
        self,
        config: SchedulerConfiguration,
        client: KubeClient,
        authn: KubeClient | None,
        authz: KubeClient | None,
    ) -> OpsServer:
        """HTTPS with delegated authn/authz; reviews through the clients given
        (``--authentication/authorization-kubeconfig``), else through a sibling
        of ``client`` with its own pool and limiter (``REVIEW_QPS``/``REVIEW_BURST``,
        upstream's delegating client settings), never ``client`` itself."""
        if authn is None or authz is None:
            own = client.sibling(
                qps=REVIEW_QPS, burst=REVIEW_BURST, request_timeout=REVIEW_TIMEOUT_SECONDS
            )
            self._review_client = own
            authn, authz = authn or own, authz or own
        token_review = Reviews(authn).token
        self.plugin_services.set_token_reviewer(plugin_token_reviewer(token_review))
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
            config_dump=lambda: config.model_dump(mode="json", by_alias=True, exclude_none=True),
            config_warnings=advice.warnings(config),
            disabled_metrics=self.options.disabled_metrics,
            resource_metrics=self._resource_registry(),
            debug_routes=self.plugin_services.debug_routes,
            cache_report=self.cache_debugger.report_json,
            ssl_context=serving_context(
                self.options.tls_cert_file,
                self.options.tls_private_key_file,
                self.clock.wall(),
                min_version=self.options.tls_min_version,
                cipher_suites=self.options.tls_cipher_suites,
            ),
            guard=DelegatedAuth(
                token_review,
                Reviews(authz).access,
                self.clock,
                self.options.always_allow_paths,
            ),
            limits=self.options.ops_limits,
        )

    def _resource_registry(self) -> CollectorRegistry:
        """``/metrics/resources``: every pod the informer holds, at scrape time."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(PodResourceCollector(self.engine.pods.store.list))
        return registry

    def _plugin_gate(self, leader_only: bool) -> str | None:
        """Why plugin listeners refuse now (503), or None to serve."""
        if not self._synced:  # set once informers synced and plugins started
            return "not ready: informers syncing or plugins starting"
        if self._shutting_down:
            return "not ready: shutting down"
        if leader_only and self.elector is not None and not self.elector.is_leader:
            return "not the leader: ask the leading scheduler"
        return None

    def _plugin_gate_expiry(self, leader_only: bool) -> float | None:
        """Until when (``time.monotonic``: the one clock every process of the
        host shares) a process listener may serve on the gate it last heard:
        the end of the leadership our last renewal bought, which comes before
        any other replica may take the lease (``ElectionState.leading_until``).
        None: no limit (no election, or not leader-only)."""
        if not leader_only or self.elector is None:
            return None
        until = self.elector.leading_until
        if until is None:
            return None
        return round(until - self.clock.now() + time.monotonic(), 3)

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
        interval = None  # see scheduler.services.thread.LISTENER_SWITCH_INTERVAL
        if self.plugin_services.listeners:
            interval = listener_switch_interval(os.environ)
        with switch_interval(interval):
            await self._run()

    async def _run(self) -> None:
        await self.server.start()
        self._serving = True
        try:
            await self.listeners.start()
        except BaseException:
            await self._stop_serving()
            raise
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
                loop_lag = group.create_task(self.loop_lag.run(), name="loop-lag")
                gc_guard = group.create_task(self._resume_gc_later(), name="gc-start-up-guard")
                workers: list[asyncio.Task[None]] = []
                stopped = await self._until_stopped(self.informer_factory.wait_synced())
                if not stopped:  # plugins' start steps: a failure fails start-up
                    stopped = await self._until_stopped(self.plugin_services.start())
                if not stopped:
                    gc_guard.cancel()
                    settle_after_sync()
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
                    await self._stop_serving()
                    await self._shutdown_scheduling(scheduling, flushers)
                await self._stop_serving()
                for task in (*workers, informers, cache_metrics, debugger, loop_lag, gc_guard):
                    task.cancel()
                await asyncio.wait(
                    {*workers, informers, cache_metrics, debugger, loop_lag, gc_guard}
                )  # before the flush
                await self._flush(status, events)
        finally:
            await self._stop_serving()  # already done unless start-up failed
            await self.client.close()
            if self._review_client is not None:
                await self._review_client.close()
            log.info("pyscheduler stopped")

    async def _stop_serving(self) -> None:
        """Shutdown step 1: not ready, plugin listeners and the ops server
        closed, their requests in flight finished (once)."""
        self._shutting_down = True
        if self._serving:
            self._serving = False
            await self.listeners.stop()
            await self.server.stop()

    async def _until_stopped(self, awaitable: Awaitable[Any]) -> bool:
        """Await ``awaitable`` unless stop comes first; True if stopped."""
        work = asyncio.ensure_future(awaitable)
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:  # also when cancelled: leave no waiter behind
            stop.cancel()
            if not work.done():
                work.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await work
        if work.cancelled():
            return True
        work.result()
        return False

    async def _stop_or_done(self, task: asyncio.Task[None]) -> None:
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:  # also when cancelled: leave no waiter behind
            stop.cancel()

    async def _lead_and_schedule(self) -> None:
        if self.elector is None:
            await self.scheduler.run()
            return
        await self.elector.run(self.scheduler.lead, on_stopped_leading=self.scheduler.fence)

    async def _shutdown_scheduling(
        self, scheduling: asyncio.Task[None], flushers: asyncio.Task[None]
    ) -> None:
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

    async def _resume_gc_later(self) -> None:
        """The collector, off since the daemon started (``pause_for_startup``
        in the command line), goes on if the informers have not synced
        within ``STARTUP_PAUSE_LIMIT_SECONDS``; cancelled once they have."""
        await self.clock.sleep(STARTUP_PAUSE_LIMIT_SECONDS)
        resume()

    async def _cache_metrics(self) -> None:
        while True:
            self.metrics.cache_size(CacheType.NODES, self.cache.node_count())
            self.metrics.cache_size(CacheType.PODS, self.cache.pod_count())
            self.metrics.cache_size(CacheType.ASSUMED_PODS, self.cache.assumed_count())
            await self.clock.sleep(CACHE_METRICS_PERIOD_SECONDS)
