"""A one-profile cluster for the DefaultPreemption tests: the real framework,
handle and NodeResourcesFit over a cache; the API, informers, recorder,
metrics and queue are fakes that record what they are given."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from plugins.default_preemption import DefaultPreemption, DefaultPreemptionArgs
from plugins.inter_pod_affinity import InterPodAffinity, InterPodAffinityArgs
from plugins.node_resources_fit import NodeResourcesFit, NodeResourcesFitArgs
from scheduler.cache import Cache, Snapshot
from scheduler.cycle.algorithm import Algorithm
from scheduler.cycle.randomness import PluginRandomness
from scheduler.engine.profilehandle import ProfileHandle
from scheduler.framework import (
    CycleState,
    ExtensionPoint,
    Plugin,
    Pod,
    PostFilterResult,
    Status,
    parse_node,
    parse_pod,
)
from scheduler.framework.types import FitError
from scheduler.runtime.background import BackgroundTasks
from scheduler.runtime.framework import Framework
from scheduler.runtime.waiting import WaitingPods
from tests.support.builders import PodBuilder, make_node, make_pod
from tests.support.clock import FakeClock

Raw = Mapping[str, Any]


class Store:
    def __init__(self) -> None:
        self.objects: dict[str, Raw] = {}

    def get(self, key: str) -> Raw | None:
        return self.objects.get(key)

    def list(self) -> Iterable[Raw]:
        return list(self.objects.values())


class Informers:
    def __init__(self) -> None:
        self.stores: dict[str, Store] = {}

    def store(self, resource: str) -> Store:
        return self.stores.setdefault(resource, Store())

    def on_change(self, resource: str, handler: Callable[[Raw | None, Raw | None], None]) -> None:
        return None


class ApiFailure(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


@dataclass
class Api:
    calls: list[tuple[str, str, Any]] = field(default_factory=list)
    failures: dict[tuple[str, str], int] = field(default_factory=dict)
    holds: dict[tuple[str, str], asyncio.Event] = field(default_factory=dict)
    held: asyncio.Event = field(default_factory=asyncio.Event)  # a held call arrived

    async def bind(self, pod: Pod, node_name: str) -> None:
        raise AssertionError("preemption never binds")

    async def request(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> Any:
        self.calls.append((method, path, body))
        hold = self.holds.get((method, path))
        if hold is not None:
            self.held.set()
            await hold.wait()
        status = self.failures.get((method, path))
        if status is not None:
            raise ApiFailure(status)
        return {}


@dataclass
class Recorder:
    events: list[tuple[str, str, str, str, str]] = field(default_factory=list)

    def event(self, regarding: Raw, type_: str, reason: str, action: str, note: str) -> None:
        self.events.append((regarding["metadata"]["name"], type_, reason, action, note))


@dataclass
class Metrics:
    attempts: int = 0
    victims: list[int] = field(default_factory=list)

    def preemption_attempt(self) -> None:
        self.attempts += 1

    def preemption_victims(self, count: int) -> None:
        self.victims.append(count)


@dataclass
class Queue:
    nominated: dict[str, list[Pod]] = field(default_factory=dict)
    activated: list[str] = field(default_factory=list)

    def activate(self, pods: Iterable[Pod]) -> None:
        self.activated.extend(pod.key for pod in pods)

    def nominated_pods_for_node(self, node_name: str) -> Sequence[Pod]:
        return self.nominated.get(node_name, [])


class Cluster:
    """Nodes and pods in a cache; one profile: NodeResourcesFit + DefaultPreemption."""

    def __init__(
        self,
        args: DefaultPreemptionArgs | None = None,
        *,
        inter_pod_affinity: bool = False,
        seed: int | None = None,
    ) -> None:
        """``seed``: the plugin draws from the handle's generator for that seed
        (as in the daemon); without one, from its own ``Random(0)``."""
        self.cache = Cache()
        self.snapshot = Snapshot()
        self.informers = Informers()
        self.api = Api()
        self.recorder = Recorder()
        self.metrics = Metrics()
        self.queue = Queue()
        self.background = BackgroundTasks()
        self.waiting = WaitingPods()
        self.handle = ProfileHandle(
            profile_name="default-scheduler",
            clock=FakeClock(),
            snapshot=self.snapshot,
            informers=self.informers,
            events=self.recorder,
            api=self.api,
            waiting_pods=self.waiting,
            background=self.background,
            metrics=self.metrics,
            randomness=PluginRandomness(seed),
        )
        fit = NodeResourcesFit(NodeResourcesFitArgs())
        self.plugin = DefaultPreemption(
            args or DefaultPreemptionArgs(),
            self.handle,
            None if seed is not None else random.Random(0),
        )
        filters: list[Plugin] = [fit]
        if inter_pod_affinity:  # a PreFilter plugin with state that RemovePod must update
            filters.append(
                InterPodAffinity(
                    InterPodAffinityArgs(), self.snapshot, self.informers.store("namespaces")
                )
            )
        by_point: dict[ExtensionPoint, Sequence[Plugin]] = {
            ExtensionPoint.PRE_FILTER: filters,
            ExtensionPoint.FILTER: filters,
            ExtensionPoint.POST_FILTER: [self.plugin],
            ExtensionPoint.PRE_ENQUEUE: [self.plugin],
        }
        self.framework = Framework("default-scheduler", by_point, {}, WaitingPods())
        self.handle.bind_framework(self.framework)
        self.handle.bind_queue(self.queue)

    def node(self, name: str, cpu: str) -> None:
        self.cache.add_node(
            parse_node(make_node(name).capacity(cpu=cpu, memory="8Gi", pods="110").obj())
        )

    def pod(self, builder: PodBuilder) -> Pod:
        raw = builder.obj()
        raw["metadata"]["uid"] = f"uid-{raw['metadata']['name']}"
        pod = parse_pod(raw)
        self.informers.store("pods").objects[pod.key] = raw
        if pod.node_name:
            self.cache.add_pod(pod)
        return pod

    def pdb(self, name: str, app: str, allowed: int = 0) -> None:
        self.informers.store("poddisruptionbudgets").objects[f"default/{name}"] = {
            "metadata": {"namespace": "default", "name": name},
            "spec": {"selector": {"matchLabels": {"app": app}}},
            "status": {"disruptionsAllowed": allowed},
        }

    def attempt(self, pod: Pod) -> tuple[str, PostFilterResult | None, Status]:
        """One failed scheduling cycle: the FitError message and PostFilter's verdict."""
        self.cache.update_snapshot(self.snapshot)
        state = CycleState()
        with pytest.raises(FitError) as raised:
            Algorithm(random.Random(0)).schedule_pod(
                self.framework, state, pod, self.snapshot, None
            )
        fit_error = raised.value
        result, status = self.framework.run_post_filter(
            state, pod, fit_error.diagnosis.node_to_status
        )
        fit_error.diagnosis.post_filter_msg = status.message()
        return str(fit_error), result, status


def running(name: str, node: str, priority: int, cpu: str = "1") -> PodBuilder:
    return make_pod(name).node(node).priority(priority).requests(cpu=cpu)


def incoming(priority: int, cpu: str = "1") -> PodBuilder:
    return make_pod("preemptor").priority(priority).requests(cpu=cpu)
