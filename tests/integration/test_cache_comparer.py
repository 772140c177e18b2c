"""The cache comparer on a real API server: after a burst the cache matches a
fresh list (``/debug/cache`` reports no difference); a pod the cache counts
but the API does not know is reported, over HTTP and in the SIGUSR2 log."""

from __future__ import annotations

import logging
from typing import Any

import orjson
import pytest
from kubernetes_asyncio import client

from scheduler.framework import parse_pod
from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster, NodePool
from tests.support.kubeapi import create_all, list_pods
from tests.support.ops import kubeconfig_token, ops_get
from tests.support.scheduler import running_scheduler, unique_scheduler_name
from tests.support.wait import eventually


async def _debug_cache(port: int, token: str) -> dict[str, Any]:
    status, text = await ops_get(f"https://127.0.0.1:{port}", "/debug/cache", token)
    assert status == 200, text
    report: dict[str, Any] = orjson.loads(text)
    return report


async def test_cache_matches_the_api_after_a_burst_and_a_phantom_pod_is_reported(
    control_plane: Cluster,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    for index in range(3):
        await nodes.create(make_node(f"c{index}").capacity(cpu="4", memory="8Gi", pods="110").obj())
    async with running_scheduler(control_plane.kubeconfig, name) as app:
        pods = [
            make_pod(f"p{i:02d}", namespace).scheduler(name).requests(cpu="300m").obj()
            for i in range(30)
        ]
        await create_all(lambda body: core.create_namespaced_pod(namespace, body), pods)

        async def all_bound() -> bool:
            return all(p["spec"].get("nodeName") for p in await list_pods(core, namespace))

        await eventually(all_bound, timeout=60, what="30 pods bound")

        async def clean() -> dict[str, Any] | None:
            report = await _debug_cache(
                app.server.bound_port, kubeconfig_token(control_plane.kubeconfig)
            )
            return report if not report["differences"] else None

        report = await eventually(clean, what="cache comparer clean after the burst")
        assert report["pods"] >= 30
        assert report["nodes"] >= 3

        phantom = parse_pod(
            make_pod("phantom", namespace).uid("phantom-uid").node(nodes.names[0]).obj()
        )
        app.cache.add_pod(phantom)
        report = await _debug_cache(
            app.server.bound_port, kubeconfig_token(control_plane.kubeconfig)
        )
        assert {(d["kind"], d["subject"]) for d in report["differences"]} == {
            ("pod-redundant", f"{namespace}/phantom")
        }

        with caplog.at_level(logging.INFO, logger="scheduler.ops.cachedebug"):
            app.request_cache_report()

            async def logged() -> list[str]:
                return [r.getMessage() for r in caplog.records if "cache comparer" in r.msg]

            lines = await eventually(logged, what="report logged")
        assert lines[0].startswith("cache comparer: 1 differences")
        app.cache.remove_pod(phantom)
