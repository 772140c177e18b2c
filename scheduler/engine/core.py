"""The engine's object graph, shared by the live daemon and the simulator.

``Engine`` wires, from the resolved profiles and one ``ClusterClient``:
the informers (pods without terminal ones, nodes, and whatever other
resources some plugin registered events for), the event handlers, the cache
and snapshot, the queue, one ``Framework`` per profile with its handle, the
scheduling loop, the pod status writer, the event sink and the attempt log.

It creates no task and starts nothing: the owner runs ``informer_factory.run``,
``event_sink.run``, ``status_writer.run``, ``queue.run`` and
``scheduler.run`` in its own TaskGroup (``SchedulerApp`` with the ops server
and leader election around them; ``scheduler.simulate`` with a simulated
clock and an in-memory cluster). Building the same graph in one place is
what makes a simulated run take the same decisions, with the same messages,
as the daemon.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from prometheus_client import CollectorRegistry

from scheduler.cache.cache import Cache
from scheduler.cache.snapshot import Snapshot
from scheduler.config import ResolvedProfile, SchedulerConfiguration
from scheduler.cycle.concurrency import DEFAULT_BINDS, BindConcurrency
from scheduler.cycle.randomness import CycleRandomness
from scheduler.cycle.reporting import StatusWriter
from scheduler.cycle.scheduler import Scheduler
from scheduler.engine.eventhandlers import EventHandlers, ObjectEventHandlers
from scheduler.engine.profilehandle import ProfileHandle
from scheduler.framework.clock import Clock
from scheduler.framework.events import Resource as EventResource
from scheduler.framework.features import FeatureGates
from scheduler.framework.interfaces import ExtensionPoint, Plugin
from scheduler.framework.objects import Pod, parse_pod
from scheduler.framework.registry import Registry
from scheduler.framework.shared import SharedObjects
from scheduler.informers.factory import FactoryInformerAccess, InformerFactory
from scheduler.informers.informer import Informer
from scheduler.kube.boundary import ClusterClient
from scheduler.kube.events import EventSink, Recorder
from scheduler.kube.resources import BY_GROUP_KIND, NODES, PODS
from scheduler.kube.writer import KubeApiWriter
from scheduler.ops.cachedebug import NON_TERMINAL_PODS
from scheduler.ops.diagnostics import AttemptLog
from scheduler.ops.metrics import SchedulerMetrics
from scheduler.queue import QueueProfile, SchedulingQueue
from scheduler.queue.queue import DEFAULT_MAX_IN_UNSCHEDULABLE
from scheduler.runtime.background import BackgroundTasks
from scheduler.runtime.framework import Framework
from scheduler.runtime.waiting import WaitingPods
from scheduler.services.collector import DaemonPluginServices


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


class Engine:
    """Every object that takes part in a scheduling decision; no task, no server."""

    def __init__(
        self,
        config: SchedulerConfiguration,
        profiles: Sequence[ResolvedProfile],
        registry: Registry,
        client: ClusterClient,
        *,
        clock: Clock,
        hostname: str,
        metrics_registry: CollectorRegistry,
        binds: BindConcurrency = DEFAULT_BINDS,
        rng: random.Random | None = None,  # seeds every generator of the loop and plugins
        feature_gates: FeatureGates | None = None,
        max_in_unschedulable: float = DEFAULT_MAX_IN_UNSCHEDULABLE,
    ) -> None:
        self.clock = clock
        self.metrics = SchedulerMetrics(metrics_registry)
        self.informer_factory = InformerFactory(client, clock=clock)
        # Terminal pods hold no resources: leave them out, as upstream does. A
        # pod that turns terminal leaves the watch as a delete.
        self.pods: Informer = self.informer_factory.informer(PODS, field_selector=NON_TERMINAL_PODS)
        self.nodes: Informer = self.informer_factory.informer(NODES)
        informer_access = FactoryInformerAccess(self.informer_factory)
        self.event_sink = EventSink(client, hostname=hostname, clock=clock)
        self.status_writer = StatusWriter(client.patch_pod_status, clock)
        api = KubeApiWriter(client)
        self.cache = Cache(clock)
        self.snapshot = Snapshot()
        self.waiting = WaitingPods()
        self.background = BackgroundTasks()
        # What plugins ask the process for (listeners, debug routes, start
        # steps, workers); the owner decides which of them it serves.
        self.plugin_services = DaemonPluginServices(metrics_registry)
        self.attempt_log = AttemptLog()

        # Split before anything is built, so one seed fixes the loop's draws and
        # every plugin's (see scheduler.cycle.randomness).
        randomness = CycleRandomness.split(rng)
        handles: list[ProfileHandle] = []
        # What plugins share across profiles (DynamicResources' claim
        # tracker, as upstream's shared DRA manager): one for the process.
        shared = SharedObjects()
        self.frameworks: dict[str, Framework] = {}
        self.recorders: dict[str, Recorder] = {}
        for profile in profiles:
            recorder = self.event_sink.recorder(profile.scheduler_name)
            self.recorders[profile.scheduler_name] = recorder
            handle = ProfileHandle(
                profile_name=profile.scheduler_name,
                clock=clock,
                snapshot=self.snapshot,
                informers=informer_access,
                events=recorder,
                api=api,
                waiting_pods=self.waiting,
                services=self.plugin_services,
                background=self.background,
                metrics=self.metrics,
                feature_gates=feature_gates,
                randomness=randomness.plugins,
                shared=shared,
            )
            handles.append(handle)
            framework = build_framework(profile, registry, handle, self.waiting, self.metrics)
            self.frameworks[profile.scheduler_name] = framework

        first = next(iter(self.frameworks.values()))
        self.queue = SchedulingQueue(
            less=first.less,
            clock=clock,
            profiles={
                name: QueueProfile(
                    pre_enqueue=framework.pre_enqueue,
                    events_by_plugin=framework.events_to_register(),
                )
                for name, framework in self.frameworks.items()
            },
            initial_backoff=float(config.pod_initial_backoff_seconds),
            max_backoff=float(config.pod_max_backoff_seconds),
            max_in_unschedulable=max_in_unschedulable,
            metrics=self.metrics,
        )
        for handle in handles:
            handle.bind_queue(self.queue)

        pods_store = self.pods.store

        def pod_lister(key: str) -> Pod | None:
            raw = pods_store.get(key)
            return parse_pod(raw) if raw is not None else None

        self.scheduler = Scheduler(
            queue=self.queue,
            cache=self.cache,
            frameworks=self.frameworks,
            recorders=self.recorders,
            status_writer=self.status_writer,
            pod_lister=pod_lister,
            clock=clock,
            metrics=self.metrics,
            attempts=self.attempt_log,
            snapshot=self.snapshot,
            percentage_of_nodes_to_score=config.percentage_of_nodes_to_score or 0,
            profile_percentages={
                p.scheduler_name: p.percentage_of_nodes_to_score for p in profiles
            },
            binds=binds,
            randomness=randomness,
        )
        handlers = EventHandlers(
            self.cache,
            self.queue,
            self.frameworks.keys(),
            on_pod_deleted=self._reject_waiting,
            timer=self.metrics,
            status=self.status_writer,
        )
        self.pods.add_handler(handlers.pod_added, handlers.pod_updated, handlers.pod_deleted)
        self.nodes.add_handler(handlers.node_added, handlers.node_updated, handlers.node_deleted)
        watch_object_events(
            self.informer_factory, self.queue, self.frameworks.values(), self.metrics
        )

    def _reject_waiting(self, pod: Pod) -> None:
        waiting = self.waiting.get(pod.uid)
        if waiting is not None:
            waiting.reject("", "pod was deleted")
