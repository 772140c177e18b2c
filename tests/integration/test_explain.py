"""``kubectl pyscheduler explain`` against the live scheduler, and through a
snapshot of the same cluster: the same message, the same nodes named."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

from scheduler.explain.cli import main as explain_main
from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster, NodePool
from tests.support.kubeapi import condition, read_pod
from tests.support.scheduler import running_scheduler, scheduler_config, unique_scheduler_name
from tests.support.snapshot import kubectl_snapshot
from tests.support.wait import eventually


async def explain(*argv: str) -> dict[str, Any]:
    out = io.StringIO()
    code = await asyncio.to_thread(explain_main, ["explain", *argv, "-o", "json"], out)
    assert code == 0
    body: dict[str, Any] = json.loads(out.getvalue())
    return body


async def test_explain_live_and_from_a_snapshot_agree(
    control_plane: Cluster,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
    tmp_path: Path,
) -> None:
    plane = control_plane.require_plane()
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    config = tmp_path / "config.yaml"
    config.write_text(scheduler_config(name))
    small = await nodes.create(make_node("small").capacity(cpu="1", memory="2Gi", pods="10").obj())
    pod = make_pod("big", namespace).scheduler(name).requests(cpu="2").obj()
    async with running_scheduler(plane.kubeconfig, name, config_text=config.read_text()) as app:
        await core.create_namespaced_pod(namespace, pod)

        async def refused() -> str | None:
            found = condition(await read_pod(core, namespace, "big"), "PodScheduled") or {}
            return found.get("message") or None

        message = await eventually(refused, timeout=30, what="big refused")
        url = f"https://127.0.0.1:{app.server.bound_port}"
        live = await explain(
            f"{namespace}/big",
            "--url",
            url,
            "--insecure-skip-tls-verify",
            f"--kubeconfig={plane.kubeconfig}",
        )
    assert live["result"] == "Unschedulable"
    assert live["message"] == message
    assert live["nodes"][small][0]["plugin"] == "NodeResourcesFit"

    snapshot = await asyncio.to_thread(
        kubectl_snapshot, plane.binary, plane.kubeconfig, tmp_path / "snapshot.yaml"
    )
    offline = await explain(
        "--snapshot", str(snapshot), "--config", str(config), f"{namespace}/big"
    )
    assert offline["message"] == message
    assert offline["complete"] is True
    assert [v["plugin"] for v in offline["nodes"][small]] == ["NodeResourcesFit"]
