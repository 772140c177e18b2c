"""The scheduler daemon on a real API server: what it binds, what it leaves
alone, what users see when a pod waits, and that nothing is lost or
overcommitted under load and faults."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest
from kubernetes_asyncio import client

from bench.checks import overcommitted_nodes
from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster, NodePool
from tests.support.faultproxy import FaultProxy, Kind
from tests.support.kubeapi import condition, create_all, list_pods, read_json, read_pod
from tests.support.ops import kubeconfig_token, ops_get
from tests.support.scheduler import running_scheduler, unique_scheduler_name
from tests.support.wait import eventually


async def _bound(core: client.CoreV1Api, namespace: str) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["spec"].get("nodeName", "")
        for p in await list_pods(core, namespace)
    }


async def _all_bound(core: client.CoreV1Api, namespace: str, count: int) -> dict[str, str] | None:
    bound = await _bound(core, namespace)
    placed = {name: node for name, node in bound.items() if node}
    return placed if len(placed) >= count else None


async def _nodes_json(core: client.CoreV1Api, names: list[str]) -> list[dict[str, Any]]:
    listed = await read_json(await core.list_node(_preload_content=False))
    return [n for n in listed["items"] if n["metadata"]["name"] in names]


async def _events(kube: client.ApiClient, namespace: str, pod: str) -> list[dict[str, Any]]:
    events = client.EventsV1Api(kube)
    listed = await read_json(await events.list_namespaced_event(namespace, _preload_content=False))
    return [e for e in listed["items"] if e["regarding"]["name"] == pod]


async def test_binds_pods_of_its_scheduler_name_and_leaves_others_alone(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    for index in range(2):
        await nodes.create(make_node(f"w{index}").obj())
    async with running_scheduler(control_plane.kubeconfig, name) as app:
        for index in range(3):
            pod = make_pod(f"ours-{index}", namespace).scheduler(name).requests(cpu="100m")
            await core.create_namespaced_pod(namespace, pod.obj())
        for index in range(2):
            pod = make_pod(f"theirs-{index}", namespace).scheduler("someone-else")
            await core.create_namespaced_pod(namespace, pod.obj())

        placed = await eventually(
            lambda: _all_bound(core, namespace, 3), what="our three pods bound"
        )
        assert set(placed) == {"ours-0", "ours-1", "ours-2"}
        assert set(placed.values()) <= set(nodes.names)
        bound = await _bound(core, namespace)
        assert bound["theirs-0"] == bound["theirs-1"] == ""
        for other in ("theirs-0", "theirs-1"):
            assert app.queue.get(f"{namespace}/{other}") is None
            assert app.attempt_log.attempts(namespace, other) is None
        scheduled = await _events(kube, namespace, "ours-0")
        assert [(e["reason"], e["reportingController"]) for e in scheduled] == [("Scheduled", name)]


async def test_unschedulable_pod_is_told_why_then_binds_soon_after_a_node_is_added(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    await nodes.create(make_node("small-a").capacity(cpu="1", memory="4Gi", pods="10").obj())
    await nodes.create(make_node("small-b").capacity(cpu="1", memory="4Gi", pods="10").obj())
    await nodes.create(
        make_node("tainted")
        .capacity(cpu="8", memory="8Gi", pods="10")
        .taint("dedicated", "x")
        .obj()
    )
    # The tail: DynamicResources' and DefaultPreemption's PostFilter reasons,
    # as upstream's default profile has them.
    expected = (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        "no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    async with running_scheduler(control_plane.kubeconfig, name) as app:
        pod = make_pod("waiting", namespace).scheduler(name).requests(cpu="2")
        await core.create_namespaced_pod(namespace, pod.obj())

        async def told() -> dict[str, Any] | None:
            found = condition(await read_pod(core, namespace, "waiting"), "PodScheduled")
            return found if found and found.get("message") else None

        scheduled = await eventually(told, what="PodScheduled condition written")
        assert (scheduled["status"], scheduled["reason"], scheduled["message"]) == (
            "False",
            "Unschedulable",
            expected,
        )

        async def warned() -> list[dict[str, Any]]:
            return [
                e
                for e in await _events(kube, namespace, "waiting")
                if e["reason"] == "FailedScheduling"
            ]

        (event,) = await eventually(warned, what="FailedScheduling event")
        assert (event["type"], event["note"], event["reportingController"]) == (
            "Warning",
            expected,
            name,
        )
        assert event["action"] == "Scheduling"

        big = await nodes.create(make_node("big").capacity(cpu="4", memory="8Gi", pods="10").obj())
        placed = await eventually(
            lambda: _all_bound(core, namespace, 1),
            timeout=20,
            what="pod bound after a fitting node is added (no 5-minute flush)",
        )
        assert placed == {"waiting": big}
        moved = app.metrics_registry.get_sample_value(
            "scheduler_queue_incoming_pods_total",
            {"queue": "backoff", "event": "NodeAdd"},
        ) or app.metrics_registry.get_sample_value(
            "scheduler_queue_incoming_pods_total",
            {"queue": "active", "event": "NodeAdd"},
        )
        assert moved == 1.0, "the NodeAdd queueing hint moved the pod"


async def test_pods_bound_by_others_use_up_node_capacity(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    node = await nodes.create(make_node("only").capacity(cpu="2", memory="4Gi", pods="10").obj())
    hog = make_pod("placed-by-hand", namespace).node(node).requests(cpu="1500m")
    await core.create_namespaced_pod(namespace, hog.obj())
    async with running_scheduler(control_plane.kubeconfig, name):
        pod = make_pod("ours", namespace).scheduler(name).requests(cpu="1")
        await core.create_namespaced_pod(namespace, pod.obj())

        async def rejected() -> str | None:
            found = condition(await read_pod(core, namespace, "ours"), "PodScheduled")
            return found.get("message") if found else None

        message = await eventually(rejected, what="pod rejected for lack of cpu")
        assert message == (
            "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
        )

        await core.delete_namespaced_pod("placed-by-hand", namespace, grace_period_seconds=0)
        placed = await eventually(
            lambda: _all_bound(core, namespace, 1), timeout=20, what="bound once capacity freed"
        )
        assert placed == {"ours": node}


async def test_deleted_pending_pod_leaves_the_queue(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    await nodes.create(make_node("tiny").capacity(cpu="1", memory="1Gi", pods="10").obj())
    async with running_scheduler(control_plane.kubeconfig, name) as app:
        pod = make_pod("doomed", namespace).scheduler(name).requests(cpu="4")
        await core.create_namespaced_pod(namespace, pod.obj())
        key = f"{namespace}/doomed"

        async def parked() -> bool:
            found = app.queue.get(key)
            return found is not None and found[0] == "unschedulable"

        await eventually(parked, what="pod parked as unschedulable")
        await core.delete_namespaced_pod("doomed", namespace, grace_period_seconds=0)

        async def gone() -> bool:
            return app.queue.get(key) is None and len(app.queue) == 0

        await eventually(gone, what="deleted pod removed from the queue")


async def test_200_pods_on_20_nodes_are_all_bound_without_overcommit(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    for index in range(20):
        await nodes.create(make_node(f"m{index}").capacity(cpu="4", memory="8Gi", pods="110").obj())
    async with running_scheduler(control_plane.kubeconfig, name):
        # 200 x 400m = 80 cpu = exactly the 20 nodes' capacity: a tight pack.
        pods = [
            make_pod(f"p{index:03d}", namespace)
            .scheduler(name)
            .requests(cpu="400m", memory="256Mi")
            .obj()
            for index in range(200)
        ]
        await create_all(lambda body: core.create_namespaced_pod(namespace, body), pods)
        await eventually(
            lambda: _all_bound(core, namespace, 200), timeout=120, what="all 200 pods bound"
        )
    all_pods = await list_pods(core, namespace)
    assert overcommitted_nodes(await _nodes_json(core, nodes.names), all_pods) == {}


async def test_apiserver_restart_with_binds_in_flight_loses_no_pod(
    control_plane: Cluster,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
    tmp_path: Path,
) -> None:
    plane = control_plane.require_plane()
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    for index in range(5):
        await nodes.create(make_node(f"r{index}").capacity(cpu="4", memory="8Gi", pods="110").obj())
    async with FaultProxy(control_plane.kubeconfig) as proxy:
        # Binds are held 3 s by the proxy, so some are surely in flight (and
        # their pods pending) when the API server goes away.
        proxy.delay[Kind.BIND] = 3.0
        via_proxy = proxy.write_kubeconfig(tmp_path / "via-proxy.kubeconfig")
        async with running_scheduler(via_proxy, name) as app:
            first = [
                make_pod(f"before-{i:02d}", namespace).scheduler(name).requests(cpu="100m").obj()
                for i in range(40)
            ]
            await create_all(lambda body: core.create_namespaced_pod(namespace, body), first)

            async def held() -> int | None:
                binds = len(proxy.binds_in_flight)
                return binds if binds >= 5 else None

            await eventually(held, what="binds held in flight")
            in_flight = app.scheduler.binding_in_flight()
            pending = 40 - len(await _all_bound(core, namespace, 0) or {})
            assert in_flight > 0, f"fault too late: no bind in flight ({pending} pending)"
            assert pending > 0, "fault too late: every pod already bound"
            await asyncio.to_thread(plane.restart_apiserver)
            proxy.delay.clear()
            await _after_restart(core, namespace, name)
            report = await app.cache_debugger.report()
            assert report.differences == []
        assert proxy.double_bound() == {}
    all_pods = await list_pods(core, namespace)
    assert overcommitted_nodes(await _nodes_json(core, nodes.names), all_pods) == {}


async def _after_restart(core: client.CoreV1Api, namespace: str, name: str) -> None:
    """Pods created after the restart are bound too, and so is every earlier one."""
    second = [
        make_pod(f"after-{i:02d}", namespace).scheduler(name).requests(cpu="100m").obj()
        for i in range(30)
    ]
    await create_all(lambda body: core.create_namespaced_pod(namespace, body), second)
    await eventually(lambda: _all_bound(core, namespace, 70), timeout=90, what="every pod bound")


async def test_stop_with_binds_in_flight_rolls_them_back_and_loses_no_pod(  # noqa: PLR0917 - fixtures
    control_plane: Cluster,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    for index in range(4):
        await nodes.create(make_node(f"s{index}").capacity(cpu="8", memory="8Gi", pods="110").obj())
    pods = [
        make_pod(f"burst-{i:03d}", namespace).scheduler(name).requests(cpu="100m").obj()
        for i in range(150)
    ]
    proxy = FaultProxy(control_plane.kubeconfig)
    await proxy.start()
    # Binds are held 4 s by the proxy, longer than the 1 s bind grace: the
    # binds in flight at stop are cancelled and must roll back.
    proxy.delay[Kind.BIND] = 4.0
    via_proxy = proxy.write_kubeconfig(tmp_path / "via-proxy.kubeconfig")
    try:
        async with running_scheduler(via_proxy, name, bind_grace=1) as app:
            await create_all(lambda body: core.create_namespaced_pod(namespace, body), pods)

            async def held() -> int:
                return app.scheduler.binding_in_flight()

            in_flight = await eventually(held, what="binds in flight")
            assert in_flight > 0
            assert app.cache.assumed_count() > 0
    finally:
        await proxy.stop()
    # The app has shut down (the same path SIGTERM takes) with binds in
    # flight: they were cancelled and rolled back. Every pod it still counts
    # as assumed must really be bound to that node in the API (a bind that
    # completed, its confirmation not yet seen).
    assert app.scheduler.binding_in_flight() == 0
    assert any("were rolled back" in r.getMessage() for r in caplog.records)
    bound = await _bound(core, namespace)
    for pod in app.cache.assumed_pods():
        assert bound[pod.name] == pod.node_name, f"{pod.key} assumed but not bound"
    # A fresh scheduler picks up whatever was left, and nothing is overcommitted.
    async with running_scheduler(control_plane.kubeconfig, name):
        await eventually(
            lambda: _all_bound(core, namespace, 150), timeout=90, what="the rest bound"
        )
    all_pods = await list_pods(core, namespace)
    assert overcommitted_nodes(await _nodes_json(core, nodes.names), all_pods) == {}


async def test_ops_endpoints_report_readiness_metrics_and_pod_diagnosis(
    control_plane: Cluster, kube: client.ApiClient, namespace: str, nodes: NodePool
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    await nodes.create(make_node("one").capacity(cpu="1", memory="1Gi", pods="10").obj())
    async with running_scheduler(control_plane.kubeconfig, name) as app:
        pod = make_pod("too-big", namespace).scheduler(name).requests(cpu="3")
        await core.create_namespaced_pod(namespace, pod.obj())

        async def diagnosed() -> list[dict[str, Any]] | None:
            return app.attempt_log.attempts(namespace, "too-big")

        await eventually(diagnosed, what="attempt recorded")
        base = f"https://127.0.0.1:{app.server.bound_port}"
        admin = kubeconfig_token(control_plane.kubeconfig)
        assert await ops_get(base, "/readyz") == (200, "ok")
        status, text = await ops_get(base, "/metrics", admin)
        assert status == 200
        assert (
            f'scheduler_schedule_attempts_total{{profile="{name}",result="unschedulable"}}' in text
        )
        status, text = await ops_get(base, f"/debug/pods/{namespace}/too-big", admin)
        body = orjson.loads(text)
        attempt = body["attempts"][-1]
        assert attempt["result"] == "Unschedulable"
        verdict = next(iter(attempt["nodes"].values()))
        assert (verdict["plugin"], verdict["reasons"]) == ("NodeResourcesFit", ["Insufficient cpu"])
