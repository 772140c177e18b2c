"""AutoscaleEnforcer adapter: start-up (config wait, rebuild), informer-fed
state, Filter/Score/Reserve/Unreserve, config updates, agent API and state dump
through the plugin services, metrics."""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any, cast

import orjson
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from plugins.autoscale_enforcer import CONFIG_MAP_KEY, AutoscaleEnforcer, AutoscaleEnforcerArgs
from plugins.autoscale_enforcer.authority import Dump
from plugins.autoscale_enforcer.metrics import AutoscaleMetrics
from plugins.autoscale_enforcer.migration import MigrationController
from plugins.autoscale_enforcer.plugin import AGENT_LISTENER, MIGRATION_WORKER, STATE_DUMP_PATH
from plugins.autoscale_enforcer.state import ZERO, Amounts
from scheduler.framework import (
    Code,
    CycleState,
    Handle,
    HttpRequest,
    HttpResponse,
    NodeScore,
    Pod,
    object_key,
)
from scheduler.framework.clock import RealClock
from scheduler.services.collector import DaemonPluginServices
from scheduler.services.process import ProcessListener
from tests.support.builders import make_config_map, make_node, make_pod, make_vm
from tests.support.informers import FakeStore
from tests.unit.plugins.autoscale_support import GI, amounts, config_doc
from tests.unit.plugins.support import node_info, pod

Raw = Mapping[str, Any]
Handler = Callable[[Raw | None, Raw | None], None]


class FakeInformers:
    def __init__(self) -> None:
        self.stores: defaultdict[str, FakeStore] = defaultdict(FakeStore)
        self.handlers: defaultdict[str, list[Handler]] = defaultdict(list)

    def store(self, resource: str, *, field_selector: str | None = None) -> FakeStore:
        return self.stores[resource]

    def on_change(
        self, resource: str, handler: Handler, *, field_selector: str | None = None
    ) -> None:
        self.handlers[resource].append(handler)

    def put(self, resource: str, raw: Raw) -> None:
        store = self.stores[resource]
        old = store.objects.get(object_key(raw))
        store.objects[object_key(raw)] = raw
        for handler in self.handlers[resource]:
            handler(old, raw)

    def delete(self, resource: str, raw: Raw) -> None:
        old = self.stores[resource].objects.pop(object_key(raw))
        for handler in self.handlers[resource]:
            handler(old, None)


class FakeEvents:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, regarding: Raw, type_: str, reason: str, action: str, note: str) -> None:
        self.events.append((type_, reason, note))


class FakeApiError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"status {status}")
        self.status = status


class FakeApi:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.failures: list[Exception] = []

    async def request(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> Any:
        self.calls.append((method, path, body))
        if self.failures:
            raise self.failures.pop(0)
        return body


class FakeWaiting:
    """A pod held at Permit (``Handle.waiting_pod``): records the verdict."""

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.verdict: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()

    def allow(self, plugin: str) -> None:
        self.verdict.set_result(None)

    def reject(self, plugin: str, message: str) -> None:
        self.verdict.set_result(message)


class FakeHandle:
    profile_name = "autoscale-scheduler"
    clock = RealClock()

    def __init__(self) -> None:
        self.waiting: dict[str, FakeWaiting] = {}
        self.api = FakeApi()
        self.informers = FakeInformers()
        self.events = FakeEvents()
        self.registry = CollectorRegistry()
        self.services = DaemonPluginServices(self.registry)

        self.generators: dict[str, random.Random] = {}

    def waiting_pod(self, uid: str) -> FakeWaiting | None:
        return self.waiting.get(uid)

    def hold(self, pod: Pod) -> FakeWaiting:
        """As the framework does when Permit answers Wait."""
        waiting = self.waiting[pod.uid] = FakeWaiting(pod)
        return waiting

    def rng_for(self, plugin: str) -> random.Random:
        """As the daemon's handle: one generator per plugin, seeded (here by its name)."""
        return self.generators.setdefault(plugin, random.Random(plugin))


def config_map(**overrides: Any) -> Raw:
    return make_config_map(
        "scheduler-plugin-config",
        "kube-system",
        {CONFIG_MAP_KEY: orjson.dumps(config_doc(**overrides)).decode()},
    )


def vm_pod(name: str, vm_name: str, node: str = "") -> dict[str, Any]:
    builder = make_pod(name).scheduler("autoscale-scheduler").label("vm.neon.tech/name", vm_name)
    if node:
        builder = builder.node(node)
    raw = builder.obj()
    raw["metadata"]["uid"] = f"default/{name}"
    return raw


def plain_pod(name: str, node: str = "", cpu: str = "1", memory: str = "1Gi") -> dict[str, Any]:
    builder = make_pod(name).requests(cpu=cpu, memory=memory)
    if node:
        builder = builder.node(node)
    raw = builder.obj()
    raw["metadata"]["uid"] = f"default/{name}"
    return raw


def serve(listener: ProcessListener, request: HttpRequest) -> HttpResponse:
    """As the authority's process does (here in this process, inline)."""
    return listener.handle_inline(request)


async def started(
    *,
    nodes: tuple[str, ...] = ("n1",),
    before: Callable[[FakeHandle], None] | None = None,
    handle_rng: bool = False,
    config: Raw | None = None,
) -> tuple[AutoscaleEnforcer, FakeHandle]:
    """Started on ``nodes``; ``handle_rng``: drawing from the handle's generator
    (as in the daemon) instead of its own ``Random(1)``."""
    handle = FakeHandle()
    plugin = AutoscaleEnforcer(
        AutoscaleEnforcerArgs(init_config_map_timeout_seconds=0.05),
        cast(Handle, handle),
        None if handle_rng else random.Random(1),
    )
    for name in nodes:
        handle.informers.put(
            "nodes", make_node(name).allocatable(cpu="8", memory="8Gi", pods="110").obj()
        )
    if before is not None:
        before(handle)
    handle.informers.put("configmaps", config_map() if config is None else config)
    await handle.services.start()
    return plugin, handle


# ------------------------------------------------------------------ start-up
async def test_start_fails_clearly_without_a_config_map() -> None:
    handle = FakeHandle()
    AutoscaleEnforcer(
        AutoscaleEnforcerArgs(init_config_map_timeout_seconds=0.01), cast(Handle, handle)
    )
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "no valid config in ConfigMap kube-system/scheduler-plugin-config key "
            "'autoscaler-enforcer-config.json' within 0.01s: no ConfigMap seen"
        ),
    ):
        await handle.services.start()


async def test_start_fails_with_the_validation_error_of_a_bad_config() -> None:
    handle = FakeHandle()
    AutoscaleEnforcer(
        AutoscaleEnforcerArgs(init_config_map_timeout_seconds=0.01), cast(Handle, handle)
    )
    handle.informers.put("configmaps", config_map(watermark=7))
    with pytest.raises(RuntimeError, match=r"at nodeDefaults.cpu.watermark"):
        await handle.services.start()


async def test_start_fails_when_the_config_names_another_profile() -> None:
    handle = FakeHandle()
    AutoscaleEnforcer(AutoscaleEnforcerArgs(), cast(Handle, handle))
    handle.informers.put("configmaps", config_map(schedulerName="other"))
    with pytest.raises(RuntimeError, match="does not match the profile"):
        await handle.services.start()


@pytest.mark.parametrize(
    ("enabled", "reserved", "buffer"),
    [
        pytest.param("true", amounts(4, 4), amounts(2, 3), id="autoscaled: at its max, buffered"),
        pytest.param(None, amounts(2, 1), ZERO, id="no agent (not labelled): at its use"),
        pytest.param("false", amounts(2, 1), ZERO, id="autoscaling off: at its use"),
    ],
)
async def test_start_rebuilds_state_assuming_the_worst_only_for_vms_an_agent_scales(
    enabled: str | None, reserved: Amounts, buffer: Amounts
) -> None:
    def cluster(handle: FakeHandle) -> None:
        builder = make_vm("vm").cpus(1, 4, 2).memory_slots(1, 4, 1)
        if enabled is not None:
            builder = builder.label("autoscaling.neon.tech/enabled", enabled)
        handle.informers.put("virtualmachines", builder.obj())
        handle.informers.put("pods", vm_pod("vm-pod", "vm", node="n1"))
        handle.informers.put("pods", plain_pod("web", node="n1"))
        handle.informers.put("pods", plain_pod("pending"))

    plugin, _ = await started(before=cluster)
    assert plugin.state is not None
    node = plugin.state.nodes["n1"]
    assert node.reserved == reserved + amounts(1, 1)
    assert node.buffer == buffer


# ------------------------------------------------------------------ decisions
@pytest.mark.parametrize(
    ("vm_use", "others", "fits"),
    [
        pytest.param((2, 2), (5, 5), True, id="VM fits at its current use"),
        pytest.param((2, 2), (7, 5), False, id="no room for the VM's cpu"),
        pytest.param((1, 4), (4, 5), False, id="no room for the VM's memory"),
    ],
)
async def test_filter_sizes_vm_pods_by_current_use(
    vm_use: tuple[int, int], others: tuple[int, int], fits: bool
) -> None:
    plugin, handle = await started()
    handle.informers.put(
        "virtualmachines", make_vm("vm").cpus(1, 8, vm_use[0]).memory_slots(1, 8, vm_use[1]).obj()
    )
    busy = plain_pod("busy", "n1", cpu=str(others[0]), memory=f"{others[1]}Gi")
    handle.informers.put("pods", busy)
    candidate = pod(vm_pod("vm-pod", "vm"))
    info = node_info(make_node("n1").allocatable(cpu="8", memory="8Gi").obj(), busy)
    before = repr(plugin.state.nodes) if plugin.state else ""
    status = plugin.filter(CycleState(), candidate, info)
    assert (status is None) is fits
    if status is not None:
        assert (status.code, status.message()) == (
            Code.UNSCHEDULABLE,
            "Not enough resources for pod",
        )
    assert repr(plugin.state.nodes) == before if plugin.state else False


async def test_filter_follows_the_frameworks_view_of_the_node() -> None:
    plugin, handle = await started()
    busy = plain_pod("busy", "n1", cpu="6", memory="1Gi")
    handle.informers.put("pods", busy)
    candidate = pod(plain_pod("new", cpu="4", memory="1Gi"))
    node = make_node("n1").allocatable(cpu="8", memory="8Gi").obj()
    assert plugin.filter(CycleState(), candidate, node_info(node, busy)) is not None
    # the framework left "busy" out (a preemption what-if): it fits
    assert plugin.filter(CycleState(), candidate, node_info(node)) is None
    # the framework knows an assumed pod we have not seen: counted
    assumed = plain_pod("assumed", "n1", cpu="5", memory="1Gi")
    assert plugin.filter(CycleState(), candidate, node_info(node, assumed)) is not None


async def test_a_vm_pod_is_sized_once_per_cycle_and_afresh_in_the_next() -> None:
    plugin, handle = await started(nodes=("n1", "n2"))
    handle.informers.put("virtualmachines", make_vm("vm").cpus(1, 8, 2).memory_slots(1, 8, 2).obj())
    candidate = pod(vm_pod("vm-pod", "vm"))
    busy = plain_pod("busy", "n1", cpu="5", memory="1Gi")
    handle.informers.put("pods", busy)
    n1 = node_info(make_node("n1").allocatable(cpu="8", memory="8Gi").obj(), busy)
    n2 = node_info(make_node("n2").allocatable(cpu="8", memory="8Gi").obj())
    cycle = CycleState()
    assert plugin.filter(cycle, candidate, n1) is None  # 5 + 2 of 8 cpus
    # the VM grows between two calls of one cycle (it cannot, on the event
    # loop): the cycle keeps the size it started with
    handle.informers.put("virtualmachines", make_vm("vm").cpus(1, 8, 4).memory_slots(1, 8, 2).obj())
    assert plugin.filter(cycle, candidate, n1) is None
    assert plugin.filter(cycle, candidate, n2) is None
    # the next cycle sizes the pod afresh: 5 + 4 > 8 on n1
    assert plugin.filter(CycleState(), candidate, n1) is not None
    # another pod in the same cycle state is sized for itself
    other = pod(plain_pod("other", cpu="7", memory="1Gi"))
    assert plugin.filter(cycle, other, n1) is not None
    assert plugin.filter(cycle, other, n2) is None


async def test_extension_calls_are_counted_per_call_by_method() -> None:
    plugin, handle = await started()
    candidate = pod(plain_pod("new", cpu="1", memory="1Gi"))
    info = node_info(make_node("n1").allocatable(cpu="8", memory="8Gi").obj())
    cycle = CycleState()
    for _ in range(3):
        plugin.filter(cycle, candidate, info)
    plugin.score(cycle, candidate, info)
    plugin.reserve(cycle, candidate, "n1")
    plugin.unreserve(cycle, candidate, "n1")
    metrics = generate_latest(handle.registry).decode()
    for method, count in (("Filter", 3), ("Score", 1), ("Reserve", 1), ("Unreserve", 1)):
        line = f'autoscaling_plugin_extension_calls_total{{method="{method}"}} {count}.0'
        assert line in metrics


@pytest.mark.parametrize(
    ("vm", "code", "message"),
    [
        pytest.param(
            None, Code.UNSCHEDULABLE, "VirtualMachine default/vm not found", id="VM not seen yet"
        ),
        pytest.param(
            make_vm("vm").slot_size("512Mi").obj(),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "VM for pod has bad MemSlotSize: expected 1073741824, found 536870912",
            id="wrong slot size",
        ),
        pytest.param(
            make_vm("vm").cpus(4, 1, 2).obj(),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "Error getting pod vmInfo: spec.guest.cpus: min 4 > max 1",
            id="invalid VM",
        ),
    ],
)
async def test_filter_rejects_vm_pods_it_cannot_size(
    vm: Raw | None, code: Code, message: str
) -> None:
    plugin, handle = await started()
    if vm is not None:
        handle.informers.put("virtualmachines", vm)
    node = make_node("n1").allocatable(cpu="8", memory="8Gi").obj()
    status = plugin.filter(CycleState(), pod(vm_pod("vm-pod", "vm")), node_info(node))
    assert status is not None
    assert (status.code, status.message()) == (code, message)


async def test_reserve_unreserve_and_binding_confirmation() -> None:
    plugin, handle = await started()
    assert plugin.state is not None
    handle.informers.put("virtualmachines", make_vm("vm").cpus(1, 4, 2).memory_slots(1, 4, 2).obj())
    candidate = pod(vm_pod("vm-pod", "vm"))
    assert plugin.reserve(CycleState(), candidate, "n1") is None
    assert plugin.reserve(CycleState(), candidate, "n1") is None  # idempotent
    assert plugin.state.nodes["n1"].reserved == amounts(2, 2)
    plugin.unreserve(CycleState(), candidate, "n1")
    plugin.unreserve(CycleState(), candidate, "n1")
    assert plugin.state.nodes["n1"].reserved == amounts(0, 0)
    assert plugin.reserve(CycleState(), candidate, "n1") is None
    handle.informers.put("pods", vm_pod("vm-pod", "vm", node="n1"))  # bound: confirmed
    plugin.unreserve(CycleState(), candidate, "n1")
    assert plugin.state.nodes["n1"].reserved == amounts(2, 2)
    handle.informers.put("virtualmachines", make_vm("vm").cpus(1, 4, 3).memory_slots(1, 4, 2).obj())
    assert plugin.state.nodes["n1"].reserved == amounts(3, 2)  # resized by hand: followed
    handle.informers.delete("pods", vm_pod("vm-pod", "vm", node="n1"))
    assert plugin.state.nodes["n1"].reserved == amounts(0, 0)


async def test_a_pod_in_an_ignored_namespace_is_allowed_at_reserve_and_never_accounted() -> None:
    """Neon's ignoreNamespaces (v0.41.0 Reserve, pod watch)."""
    plugin, handle = await started()
    handle.informers.put("configmaps", config_map(ignoreNamespaces=["overprovisioning"]))
    assert plugin.state is not None
    ignored = make_pod("placeholder", "overprovisioning").scheduler("autoscale-scheduler")
    candidate = pod(ignored.requests(cpu="20", memory="1Gi").obj())
    assert plugin.reserve(CycleState(), candidate, "n1") is None  # 20 CPUs on an 8-CPU node
    assert plugin.permit(CycleState(), candidate, "n1") == (None, 0.0)
    handle.informers.put("pods", ignored.node("n1").obj())
    assert plugin.state.nodes["n1"].reserved == amounts(0, 0)


async def test_reserve_refuses_a_pod_that_does_not_fit_and_counts_it() -> None:
    plugin, handle = await started()
    handle.informers.put("pods", plain_pod("busy", "n1", cpu="8"))
    status = plugin.reserve(CycleState(), pod(plain_pod("new", cpu="1")), "n1")
    assert status is not None
    assert status.code is Code.UNSCHEDULABLE
    assert (
        handle.registry.get_sample_value(
            "autoscaling_plugin_reserve_should_deny_total", {"node": "n1"}
        )
        == 1
    )


async def test_node_metric_labels_label_the_per_node_metrics_from_the_nodes_labels() -> None:
    """Neon's ``nodeMetricLabels`` (v0.42+, metrics/node.go, framework.go):
    the node gauges and reserve_should_deny carry ``node``, then each metric
    label in name order valued from the node's label ("" when absent), then
    ``field``; a relabelled node's series follow its labels."""
    labels = {"zone": "topology.kubernetes.io/zone", "group": "example.com/group"}
    plugin, handle = await started(config=config_map(nodeMetricLabels=labels))
    node = make_node("n1").allocatable(cpu="8", memory="8Gi", pods="110")
    handle.informers.put("nodes", node.label("topology.kubernetes.io/zone", "z1").obj())
    handle.informers.put("pods", plain_pod("busy", "n1", cpu="8"))
    assert plugin.reserve(CycleState(), pod(plain_pod("new", cpu="1")), "n1") is not None
    sample = handle.registry.get_sample_value
    gauge = "autoscaling_plugin_node_cpu_resources_current"
    expected = {"node": "n1", "group": "", "zone": "z1", "field": "Reserved"}
    assert sample(gauge, expected) == 8.0
    assert sample(gauge, {"node": "n1", "field": "Reserved"}) is None  # before: node, field only
    deny = {"node": "n1", "group": "", "zone": "z1"}
    assert sample("autoscaling_plugin_reserve_should_deny_total", deny) == 1
    handle.informers.put("nodes", node.label("topology.kubernetes.io/zone", "z2").obj())
    assert sample(gauge, {**expected, "zone": "z2"}) == 8.0
    assert sample(gauge, expected) is None


async def test_filter_and_reserve_count_a_vm_by_its_overcommitted_size() -> None:
    """Neon HEAD's per-VM overcommit (applyOvercommit): a VM using 12 GiB with
    a memory factor of 2 takes 6 GiB of an 8 GiB node."""
    plugin, handle = await started()
    raw = make_vm("vm").cpus(1, 4, 1).memory_slots(1, 16, 12).pod_name("vm-pod").obj()
    raw["spec"]["overcommit"] = {"memory": "2"}
    handle.informers.put("virtualmachines", raw)
    candidate = pod(vm_pod("vm-pod", "vm"))
    info = node_info(make_node("n1").allocatable(cpu="8", memory="8Gi", pods="110").obj())
    assert plugin.filter(CycleState(), candidate, info) is None  # before: 12 GiB > 8 GiB
    assert plugin.reserve(CycleState(), candidate, "n1") is None
    assert plugin.state is not None
    assert plugin.state.nodes["n1"].reserved == amounts(1, 6)


async def test_forwarded_events_are_counted_in_neons_reconcile_metrics() -> None:
    """Neon's reconcile metrics (metrics/reconcile.go): every event the
    authority applies, by kind and outcome, with its wait since forwarding."""
    _, handle = await started()
    sample = handle.registry.get_sample_value
    duration = "autoscaling_plugin_reconcile_duration_seconds_count"
    success = {"kind": "Pod", "outcome": "success"}
    before = sample(duration, success) or 0
    handle.informers.put("pods", plain_pod("busy", "n1", cpu="1"))
    assert sample(duration, success) == before + 1  # before: no such metric
    assert sample(duration, {"kind": "Node", "outcome": "success"}) == 1
    assert (sample("autoscaling_plugin_reconcile_queue_wait_durations_count", {}) or 0) >= 2


async def test_score_prefers_the_target_fill_level_by_default_and_node_size_on_request() -> None:
    plugin, handle = await started(nodes=("n1", "n2"))
    handle.informers.put("pods", plain_pod("busy", "n1", cpu="5", memory="5Gi"))
    candidate = pod(plain_pod("new", cpu="1", memory="1Gi"))
    n1 = node_info(
        make_node("n1").allocatable(cpu="8", memory="8Gi").obj(),
        plain_pod("busy", "n1", cpu="5", memory="5Gi"),
    )
    n2 = node_info(make_node("n2").allocatable(cpu="8", memory="8Gi").obj())
    fuller, emptier = (
        plugin.score(CycleState(), candidate, n1)[0],
        plugin.score(CycleState(), candidate, n2)[0],
    )
    assert fuller > emptier  # 6/8 is nearer the 0.8 peak than 1/8
    handle.informers.put("configmaps", config_map(scoreCurve="nodeSize"))
    assert (
        plugin.score(CycleState(), candidate, n1)[0]
        == plugin.score(CycleState(), candidate, n2)[0]
        == 100
    )


async def test_normalize_score_randomizes_only_when_configured() -> None:
    plugin, handle = await started()
    scores = [NodeScore("a", 50), NodeScore("b", 0)]
    plugin.normalize_score(CycleState(), pod(plain_pod("p")), scores)
    assert [s.score for s in scores] == [50, 0]
    handle.informers.put("configmaps", config_map(randomize=True))
    values = plugin.normalize_values([50, 0, 100])
    assert values is not None
    assert 1 <= values[0] <= 50
    assert values[1] == 0


async def test_randomized_scores_draw_from_the_handles_generator() -> None:
    plugin, handle = await started(handle_rng=True)
    handle.informers.put("configmaps", config_map(randomize=True))
    replay = random.Random(AutoscaleEnforcer.name)
    expected = [replay.randint(1, value) for value in (50, 30, 100, 70)]
    assert len(set(expected)) > 1, "the draws are not all alike"

    assert plugin.normalize_values([50, 30, 100, 70]) == expected
    assert handle.generators.keys() == {AutoscaleEnforcer.name}


# ------------------------------------------------------------------- config
async def test_valid_config_update_recomputes_every_node_at_once() -> None:
    plugin, handle = await started(nodes=("n1", "n2"))
    assert plugin.state is not None
    handle.informers.put("configmaps", config_map(cpu_system="1", watermark=0.25))
    assert {n.total for n in plugin.state.nodes.values()} == {amounts(7, 8)}
    assert {n.watermark for n in plugin.state.nodes.values()} == {amounts(1.75, 2)}


async def test_invalid_config_update_keeps_the_last_good_one_with_event_and_metric() -> None:
    plugin, handle = await started()
    assert plugin.state is not None
    handle.informers.put("configmaps", config_map(watermark=3))
    handle.informers.put("configmaps", config_map(memBlockSize="2Gi"))
    assert plugin.state.config.slot_bytes == GI
    assert plugin.state.nodes["n1"].watermark == amounts(4, 4)
    assert [(t, r) for t, r, _ in handle.events.events] == [("Warning", "InvalidConfig")] * 2
    assert "memBlockSize: value cannot be changed at runtime" in handle.events.events[1][2]
    assert handle.registry.get_sample_value("autoscaling_plugin_config_rejected_total") == 2


# ------------------------------------------------------------- agents, dump
async def test_agent_api_and_state_dump_through_the_services() -> None:
    _, handle = await started()
    handle.informers.put("virtualmachines", make_vm("vm").cpus(1, 8, 2).memory_slots(1, 8, 2).obj())
    handle.informers.put("pods", vm_pod("vm-pod", "vm", node="n1"))
    (listener,) = handle.services.process_listeners
    assert (listener.name, listener.port, listener.max_body_bytes) == (AGENT_LISTENER, 10299, 1024)
    body = orjson.dumps(
        {
            "protoVersion": 2,
            "pod": {"namespace": "default", "name": "vm-pod"},
            "resources": {"vCPUs": 3, "mem": 3},
            "metrics": None,
        }
    )
    response = serve(listener, HttpRequest("POST", "/", body))
    assert response.status == 200
    assert orjson.loads(response.body)["permit"] == {"vCPUs": 3, "mem": 3}
    dump = await handle.services.debug_routes[STATE_DUMP_PATH](HttpRequest("GET", "/", b""))
    node = orjson.loads(dump.body)["nodes"]["n1"]
    assert node["reserved"] == {"cpu": 3000, "mem": 3 * GI}
    assert node["pods"]["default/vm-pod"]["agentContact"] is True
    metrics = generate_latest(handle.registry).decode()
    assert 'autoscaling_plugin_resource_requests_total{code="200"} 1.0' in metrics
    assert (
        'autoscaling_plugin_node_cpu_resources_current{field="Reserved",node="n1"} 3.0' in metrics
    )


async def test_a_vm_seen_after_its_pending_pod_wakes_the_pod() -> None:
    plugin, handle = await started()
    activated: list[str] = []
    handle.activate = lambda pods: activated.extend(p.key for p in pods)  # type: ignore[attr-defined]
    handle.informers.put("pods", vm_pod("vm-pod", "vm"))
    status = plugin.filter(
        CycleState(), pod(vm_pod("vm-pod", "vm")), node_info(make_node("n1").obj())
    )
    assert status is not None
    assert activated == []
    handle.informers.put("virtualmachines", make_vm("vm").pod_name("vm-pod").obj())
    assert activated == ["default/vm-pod"]


async def test_an_agent_shrinking_a_vm_wakes_pods_rejected_for_room() -> None:
    plugin, handle = await started()
    activated: list[str] = []
    handle.activate = lambda pods: activated.extend(p.key for p in pods)  # type: ignore[attr-defined]
    handle.informers.put("virtualmachines", make_vm("vm").cpus(1, 8, 7).memory_slots(1, 8, 7).obj())
    handle.informers.put("pods", vm_pod("vm-pod", "vm", node="n1"))
    waiting = plain_pod("waiting", cpu="4", memory="1Gi")
    handle.informers.put("pods", waiting)
    node = make_node("n1").allocatable(cpu="8", memory="8Gi").obj()
    info = node_info(node, vm_pod("vm-pod", "vm", node="n1"))
    assert plugin.filter(CycleState(), pod(waiting), info) is not None
    (listener,) = handle.services.process_listeners

    def ask(cpus: int, mem: int) -> int:
        body = {"protoVersion": 2, "pod": {"namespace": "default", "name": "vm-pod"}}
        body |= {"resources": {"vCPUs": cpus, "mem": mem}, "metrics": None}
        return serve(listener, HttpRequest("POST", "/", orjson.dumps(body))).status

    assert ask(8, 8) == 200  # held at its maximum since seen bound: nothing freed
    assert activated == []
    assert ask(2, 2) == 200
    assert activated == ["default/waiting"]


async def test_room_an_agent_frees_wakes_the_pods_filter_turned_away() -> None:
    plugin, handle = await started()
    activated: list[str] = []
    handle.activate = lambda pods: activated.extend(p.key for p in pods)  # type: ignore[attr-defined]
    handle.informers.put("virtualmachines", make_vm("vm").cpus(1, 8, 7).memory_slots(1, 8, 7).obj())
    handle.informers.put("pods", vm_pod("vm-pod", "vm", node="n1"))
    (listener,) = handle.services.process_listeners

    def ask(cpus: int, mem: int) -> None:
        body = {"protoVersion": 2, "pod": {"namespace": "default", "name": "vm-pod"}}
        body |= {"resources": {"vCPUs": cpus, "mem": mem}, "metrics": None}
        response = listener.handle_inline(HttpRequest("POST", "/", orjson.dumps(body)))
        assert response.status == 200

    def shrink(size: int) -> None:
        """The agent shrinks the VM first, then reports it (Neon's order): the
        reservation never goes below the VM's use."""
        vm = make_vm("vm").cpus(1, 8, size).memory_slots(1, 8, size).obj()
        handle.informers.put("virtualmachines", vm)
        ask(size, size)

    shrink(6)
    assert activated == []  # room freed, nobody waiting
    waiting = plain_pod("waiting", cpu="4", memory="1Gi")
    handle.informers.put("pods", waiting)
    node = make_node("n1").allocatable(cpu="8", memory="8Gi").obj()
    info = node_info(node, vm_pod("vm-pod", "vm", node="n1"))
    assert plugin.filter(CycleState(), pod(waiting), info) is not None
    shrink(5)
    assert activated == ["default/waiting"]
    shrink(4)
    assert activated == ["default/waiting"]  # woken once: nobody waits any more
    big = plain_pod("big", cpu="8")
    handle.informers.put("pods", big)
    assert plugin.filter(CycleState(), pod(big), info) is not None
    ask(5, 5)
    assert activated == ["default/waiting"]  # an increase frees nothing
    shrink(2)
    assert activated == ["default/waiting", "default/big"]


# ---------------------------------------------------------------- migration
async def run_worker_until_idle(handle: FakeHandle) -> None:
    (work,) = [work for name, work in handle.services.workers if name == MIGRATION_WORKER]
    task = asyncio.ensure_future(work())
    for _ in range(50):
        await asyncio.sleep(0)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_a_node_over_its_watermark_migrates_the_opted_in_vm_and_cleans_up() -> None:
    _, handle = await started()  # watermark 0.5 of 8 CPU / 8 GiB, doMigration on
    vm = (
        make_vm("vm")
        .cpus(1, 8, 5)
        .memory_slots(1, 8, 5)
        .label("autoscaling.neon.tech/auto-migration-enabled", "true")
    )
    handle.informers.put("virtualmachines", vm.obj())
    handle.informers.put("pods", vm_pod("vm-pod", "vm", node="n1"))
    (listener,) = handle.services.process_listeners

    def ask(cpus: int) -> dict[str, Any]:
        body = {"protoVersion": 3, "pod": {"namespace": "default", "name": "vm-pod"}}
        body |= {"resources": {"vCPUs": cpus, "mem": cpus}, "metrics": {"loadAvg1M": 1}}
        response = serve(listener, HttpRequest("POST", "/", orjson.dumps(body)))
        assert response.status == 200, response.body
        return dict(orjson.loads(response.body))

    # Neon's queue: a pod enters it with its first request, so only its
    # second one (next in the queue) asks for the migration.
    assert "migrate" not in ask(5)
    await run_worker_until_idle(handle)
    assert handle.api.calls == []
    assert "migrate" not in ask(5)  # asked for: no object yet, so not told
    await run_worker_until_idle(handle)
    ((method, path, created),) = handle.api.calls
    assert (method, path) == (
        "POST",
        "/apis/vm.neon.tech/v1/namespaces/default/virtualmachinemigrations",
    )
    assert created["metadata"]["name"] == "schedplugin-vm-pod"
    assert created["metadata"]["labels"] == {"autoscaling.neon.tech/created-by-scheduler": "true"}
    assert created["spec"]["vmName"] == "vm"
    handle.informers.put("virtualmachinemigrations", created)  # the object exists now
    answer = ask(6)
    assert answer["migrate"] == {}
    assert answer["permit"]["vCPUs"] == 5  # the increase became pressure
    handle.informers.put("virtualmachinemigrations", {**created, "status": {"phase": "Succeeded"}})
    await run_worker_until_idle(handle)
    assert handle.api.calls[-1][:2] == (
        "DELETE",
        "/apis/vm.neon.tech/v1/namespaces/default/virtualmachinemigrations/schedplugin-vm-pod",
    )
    assert handle.registry.get_sample_value("autoscaling_plugin_migrations_created_total") == 1
    for op in ("Create", "Delete"):
        labels = {"op": op, "kind": "VirtualMachineMigration", "outcome": "success"}
        assert handle.registry.get_sample_value("autoscaling_plugin_k8s_ops_total", labels) == 1
    assert (
        handle.registry.get_sample_value(
            "autoscaling_plugin_migrations_deleted_total", {"phase": "Succeeded"}
        )
        == 1
    )


def migration_ref(name: str, *, controller: bool) -> dict[str, Any]:
    """An ownerReference to a VirtualMachineMigration, as NeonVM sets it: the
    controller of the target pod, a plain owner of the source."""
    return {
        "apiVersion": "vm.neon.tech/v1",
        "kind": "VirtualMachineMigration",
        "name": name,
        "uid": f"uid-{name}",
        "controller": controller,
    }


@pytest.mark.parametrize(
    "phase",
    [
        pytest.param("Failed", id="failed: the source scales again"),
        pytest.param("Succeeded", id="succeeded: the target takes over"),
    ],
)
async def test_a_live_migration_is_tracked_per_pod_source_and_target(phase: str) -> None:
    _, handle = await started(nodes=("n1", "n2"))
    vm = (
        make_vm("vm")
        .cpus(1, 8, 5)
        .memory_slots(1, 8, 5)
        .label("autoscaling.neon.tech/auto-migration-enabled", "true")
        .label("autoscaling.neon.tech/enabled", "true")
    )
    handle.informers.put("virtualmachines", vm.obj())
    source = vm_pod("vm-pod", "vm", node="n1")
    handle.informers.put("pods", source)
    (listener,) = handle.services.process_listeners

    def ask(name: str, cpus: int) -> tuple[int, dict[str, Any]]:
        body = {"protoVersion": 3, "pod": {"namespace": "default", "name": name}}
        body |= {"resources": {"vCPUs": cpus, "mem": cpus}, "metrics": {"loadAvg1M": 1}}
        response = serve(listener, HttpRequest("POST", "/", orjson.dumps(body)))
        return response.status, dict(orjson.loads(response.body)) if response.status == 200 else {}

    def pods() -> dict[str, Any]:
        dumped = cast(dict[str, Any], listener.call(Dump(), timeout=5))
        return {k: v for node in dumped["nodes"].values() for k, v in node["pods"].items()}

    assert ask("vm-pod", 5)[0] == 200  # enters Neon's migration queue
    assert ask("vm-pod", 5)[0] == 200  # next in it: the migration is asked for
    await run_worker_until_idle(handle)
    created = handle.api.calls[0][2]
    name = created["metadata"]["name"]
    handle.informers.put("virtualmachinemigrations", created)
    assert ask("vm-pod", 6)[1]["migrate"] == {}
    # NeonVM starts the target pod of the same VM, controlled by the migration,
    # and the source becomes owned by it too.
    source = {**source, "metadata": {**source["metadata"]}}
    source["metadata"]["ownerReferences"] = [migration_ref(name, controller=False)]
    handle.informers.put("pods", source)
    target = vm_pod("vm-pod-target", "vm", node="n2")
    target["metadata"]["ownerReferences"] = [migration_ref(name, controller=True)]
    handle.informers.put("pods", target)
    running = pods()
    assert running["default/vm-pod"]["migrating"] is True
    assert running["default/vm-pod-target"]["migrating"] is False
    handle.informers.put(
        "virtualmachinemigrations",
        {**created, "status": {"phase": phase, "sourcePodName": "vm-pod"}},
    )
    if phase == "Failed":
        handle.informers.delete("pods", target)
        after = pods()
        assert after["default/vm-pod"]["migrating"] is False  # before: True (the index's target)
        status, answer = ask("vm-pod", 6)  # before: 400, "already informed ... migrating"
        assert status == 200
        assert "migrate" not in answer
    else:
        handle.informers.delete("pods", source)
        target = {**target, "metadata": {**target["metadata"], "ownerReferences": []}}
        handle.informers.put("pods", target)  # control handed to the VirtualMachine
        assert pods()["default/vm-pod-target"]["migrationTarget"] is False
        status, answer = ask("vm-pod-target", 6)  # its agent takes over
        assert (status, answer["permit"]["vCPUs"]) == (200, 6)
        handle.informers.put("virtualmachines", vm.cpus(1, 8, 7).pod_name("vm-pod-target").obj())
        assert pods()["default/vm-pod-target"]["reserved"]["cpu"] == 7000  # the VM's pod now


async def test_do_migration_false_creates_nothing() -> None:
    _, handle = await started()
    handle.informers.put("configmaps", config_map(doMigration=False))
    vm = (
        make_vm("vm")
        .cpus(1, 8, 5)
        .memory_slots(1, 8, 5)
        .label("autoscaling.neon.tech/auto-migration-enabled", "true")
    )
    handle.informers.put("virtualmachines", vm.obj())
    handle.informers.put("pods", vm_pod("vm-pod", "vm", node="n1"))
    (listener,) = handle.services.process_listeners
    body = {"protoVersion": 3, "pod": {"namespace": "default", "name": "vm-pod"}}
    body |= {"resources": {"vCPUs": 5, "mem": 5}, "metrics": {"loadAvg1M": 1}}
    assert serve(listener, HttpRequest("POST", "/", orjson.dumps(body))).status == 200
    await run_worker_until_idle(handle)
    assert handle.api.calls == []


async def test_migration_jobs_retry_with_backoff_and_accept_already_exists() -> None:
    _, handle = await started()
    registry = CollectorRegistry()
    controller = MigrationController(
        cast(Any, handle.api),
        cast(Any, AutoscaleMetrics(registry, lambda: None, threading.Lock())),
        sleep=lambda _delay: asyncio.sleep(0),
    )
    handle.api.failures = [RuntimeError("connection reset"), FakeApiError(409)]
    controller.want("default", "p", "vm")
    controller.want("default", "p", "vm")  # deduplicated while pending
    controller.finished("default", "gone", "Failed")
    handle.api.failures.append(FakeApiError(404))
    task = asyncio.ensure_future(controller.run())
    for _ in range(50):
        await asyncio.sleep(0)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert [call[0] for call in handle.api.calls] == ["POST", "POST", "DELETE"]
    assert controller.pending == 0

    # RecordK8sOp (Neon's autoscaling_plugin_k8s_ops_total): every call, its
    # outcome "success" or "error: <message>" with the object's name as <name>.
    def ops(op: str, outcome: str) -> float | None:
        labels = {"op": op, "kind": "VirtualMachineMigration", "outcome": outcome}
        return registry.get_sample_value("autoscaling_plugin_k8s_ops_total", labels)

    assert ops("Create", "error: connection reset") == 1
    assert ops("Create", "error: status 409") == 1
    assert ops("Delete", "error: status 404") == 1


def test_a_second_profile_enabling_the_plugin_is_refused_clearly() -> None:
    handle = FakeHandle()
    AutoscaleEnforcer(AutoscaleEnforcerArgs(), cast(Handle, handle))
    second = FakeHandle()
    second.registry = handle.registry
    second.services = DaemonPluginServices(handle.registry)
    with pytest.raises(ValueError, match="can be enabled in one profile only"):
        AutoscaleEnforcer(AutoscaleEnforcerArgs(agent_port=10300), cast(Handle, second))
