"""A leader that loses its lease with binds in flight sends no bind after the
loss is detected, and the standby binds every pod once (issue 20, item 1)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import secrets
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from scheduler.app.root import AppOptions, SchedulerApp
from scheduler.config import parse_config
from scheduler.kube.client import KubeClient
from scheduler.leaderelection import LeadershipLost
from tests.integration.test_app_lifecycle import spy
from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster, NodePool
from tests.support.faultproxy import FaultProxy, Kind
from tests.support.kubeapi import create_all, list_pods
from tests.support.scheduler import running_scheduler, scheduler_config, unique_scheduler_name
from tests.support.wait import eventually

PODS = 30
LOSS = "leadership lost"


def election(namespace: str, lease: str, qps: int) -> str:
    return f"""leaderElection:
  leaderElect: true
  resourceNamespace: {namespace}
  resourceName: {lease}
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 500ms
clientConnection:
  qps: {qps}
  burst: {qps}
"""


def config_text(name: str, namespace: str, lease: str, qps: int) -> str:
    text = scheduler_config(name)
    text = text.replace("leaderElection:\n  leaderElect: false\n", "")
    text = text.replace("clientConnection:\n  qps: 500\n  burst: 1000\n", "")
    return election(namespace, lease, qps) + text


def is_leadership_lost(error: BaseException | None) -> bool:
    if isinstance(error, LeadershipLost):
        return True
    if isinstance(error, BaseExceptionGroup):
        return any(is_leadership_lost(inner) for inner in error.exceptions)
    return False


async def test_a_leader_whose_renewals_fail_sends_no_bind_after_the_loss_and_the_standby_binds_all(  # noqa: PLR0917 - fixtures
    control_plane: Cluster,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="scheduler.leaderelection")
    core = client.CoreV1Api(kube)
    name, lease = unique_scheduler_name(), f"fence-{secrets.token_hex(3)}"
    await nodes.create(make_node("f0").capacity(cpu="16", memory="16Gi", pods="110").obj())
    pods = [
        make_pod(f"fenced-{i:03d}", namespace).scheduler(name).requests(cpu="10m").obj()
        for i in range(PODS)
    ]
    async with FaultProxy(control_plane.kubeconfig) as proxy, contextlib.AsyncExitStack() as stack:
        # Binds are held longer than the lease lasts, and the leader's client
        # lets out 4 requests a second: at the loss most binds are still
        # inside the leader (rate limiter) or held by the proxy.
        proxy.delay[Kind.BIND] = 5.0
        via_proxy = proxy.write_kubeconfig(tmp_path / "via-proxy.kubeconfig")
        leader_client = await KubeClient.connect(
            kubeconfig=str(via_proxy), qps=4, burst=4, user_agent="fence-leader"
        )
        leader = SchedulerApp(
            parse_config(config_text(name, namespace, lease, 4)),
            leader_client,
            AppOptions(bind_address="127.0.0.1", port=0, bind_grace_seconds=10.0),
        )
        order: list[str] = []
        spy(order, leader.scheduler, "fence", "fence")
        # Binds already past the fence's check when it fires may be on the
        # wire: the proxy (on this loop) can read one after the loss is
        # logged. Only those may arrive late; any other is a bind sent after.
        sending_at_fence: dict[str, str] = {}
        fence = leader.scheduler.fence

        def fence_noting_sends() -> None:
            sending_at_fence.update(leader.scheduler.binds_sending())
            fence()

        leader.scheduler.fence = fence_noting_sends  # type: ignore[method-assign]
        server_stop = leader.server.stop

        async def stop_server() -> None:
            order.append(f"stop server, binds in flight: {leader.scheduler.binding_in_flight()}")
            await server_stop()

        leader.server.stop = stop_server  # type: ignore[method-assign]
        spy(order, leader_client, "close", "close client")
        leading = asyncio.create_task(leader.run(), name="fence-leader")

        async def leads() -> bool:
            return leader.elector is not None and leader.elector.is_leader

        await eventually(leads, what="the first scheduler leads")
        standby = await stack.enter_async_context(
            running_scheduler(
                control_plane.kubeconfig,
                name,
                config_text=config_text(name, namespace, lease, 500),
            )
        )
        await create_all(lambda body: core.create_namespaced_pod(namespace, body), pods)

        async def binds_in_flight() -> bool:
            return bool(proxy.binds_in_flight) and leader.scheduler.binding_in_flight() > 0

        await eventually(binds_in_flight, what="binds in flight at the fault")
        in_flight_at_fault = leader.scheduler.binding_in_flight()
        proxy.fail_lease_writes = True

        async def stopped() -> bool:
            return leading.done()

        await eventually(stopped, timeout=60, what="the leader stops after the loss")
        assert is_leadership_lost(leading.exception())
        lost_at = min(r.created for r in caplog.records if r.getMessage().startswith(LOSS))
        late = [pod for arrived, pod in proxy.bind_arrivals if arrived > lost_at]

        async def all_bound() -> bool:
            listed = await list_pods(core, namespace)
            return len(listed) == PODS and all(pod["spec"].get("nodeName") for pod in listed)

        await eventually(all_bound, timeout=60, what="the standby binds every pod")
        assert standby.elector is not None
        assert standby.elector.is_leader

    assert in_flight_at_fault > 1
    assert proxy.injected["lease write 500"] > 0
    sent_after = [pod for pod in late if pod not in sending_at_fence]
    assert sent_after == [], "binds sent by the leader after it detected the loss"
    # The fence first; serving stops with every binding cycle rolled back.
    shutdown = [step for step, _ in itertools.groupby(order)]
    assert shutdown == ["fence", "stop server, binds in flight: 0", "close client"]
    assert proxy.double_bound() == {}
