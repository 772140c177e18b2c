"""The ops port on the real control plane, as kube-scheduler's secure serving:
HTTPS; anonymous /metrics, /configz and /debug/... refused; a ServiceAccount
bound to the manifests' scraper role reads /metrics (TokenReview +
SubjectAccessReview through the API server), one without the role is refused;
the probes stay open; hostile anonymous traffic does not slow the scheduling
client (issue 20 #5)."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import statistics
import time
from collections.abc import AsyncIterator

import aiohttp
import orjson
from kubernetes_asyncio import client

from scheduler.app.root import SchedulerApp
from scheduler.kube.ratelimit import Priority
from tests.support.cluster import Cluster
from tests.support.manifests import find, resources
from tests.support.ops import kubeconfig_token, ops_get, ops_session
from tests.support.scheduler import running_scheduler, unique_scheduler_name

READER = find(resources(), "ClusterRole", "pyscheduler-metrics-reader")


async def _service_account_token(core: client.CoreV1Api, namespace: str, name: str) -> str:
    await core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 600},
    }
    answer = await core.create_namespaced_service_account_token(name, namespace, request)
    return str(answer.status.token)


@contextlib.asynccontextmanager
async def _scraper_role(
    kube: client.ApiClient, namespace: str, account: str
) -> AsyncIterator[None]:
    rbac = client.RbacAuthorizationV1Api(kube)
    role_name = f"{READER['metadata']['name']}-{secrets.token_hex(3)}"
    role = {**READER, "metadata": {**READER["metadata"], "name": role_name}}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": role_name},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role_name,
        },
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }
    await rbac.create_cluster_role(role)
    await rbac.create_cluster_role_binding(binding)
    try:
        yield
    finally:
        await rbac.delete_cluster_role_binding(role_name)
        await rbac.delete_cluster_role(role_name)


async def test_ops_port_authenticates_and_authorizes_through_the_cluster(
    control_plane: Cluster, kube: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(kube)
    scraper = await _service_account_token(core, namespace, "scraper")
    nobody = await _service_account_token(core, namespace, "nobody")
    admin = kubeconfig_token(control_plane.kubeconfig)
    name = unique_scheduler_name()
    async with (
        _scraper_role(kube, namespace, "scraper"),
        running_scheduler(control_plane.kubeconfig, name) as app,
    ):
        assert app.server.scheme == "https"
        base = f"https://127.0.0.1:{app.server.bound_port}"
        cases = [
            ("/livez", None, 200),
            ("/readyz", None, 200),
            ("/healthz", None, 200),
            ("/metrics", None, 403),
            ("/configz", None, 403),
            (f"/debug/pods/{namespace}/absent", None, 403),
            ("/metrics", "not-a-token", 401),
            ("/metrics", nobody, 403),
            ("/metrics", scraper, 200),
            ("/metrics/resources", None, 403),
            ("/metrics/resources", nobody, 403),
            ("/metrics/resources", scraper, 200),
            ("/configz", scraper, 403),
            ("/debug/pods/x/y", scraper, 403),
            ("/configz", admin, 200),
        ]
        got = [(path, (await ops_get(base, path, token))[0]) for path, token, _ in cases]
        assert got == [(path, status) for path, _, status in cases]

        _, text = await ops_get(base, "/metrics", scraper)
        assert "scheduler_pending_pods" in text
        assert "rest_client_requests_total{" in text
        assert "process_resident_memory_bytes" in text
        assert "kubernetes_build_info{" in text
        assert 'kubernetes_feature_enabled{name="NodeDeclaredFeatures",stage="BETA"} 1.0' in text
        assert "pyscheduler_event_loop_lag_seconds_bucket{" in text
        assert "pyscheduler_event_loop_longest_stall_seconds " in text
        _, text = await ops_get(base, "/metrics/resources", scraper)
        assert "# TYPE kube_pod_resource_request gauge" in text

        _, text = await ops_get(base, "/configz", admin)
        shown = orjson.loads(text)["componentconfig"]
        assert shown["profiles"][0]["schedulerName"] == name
        assert shown["leaderElection"]["leaseDuration"] == "15s"
        assert shown["clientConnection"]["contentType"] == "application/vnd.kubernetes.protobuf"
        assert shown["parallelism"] == 16


HOSTILE_CLIENTS = 300
PROBES = 15
# Before the reviews had their own client, 300 anonymous requests queued 300
# SubjectAccessReviews in the scheduling client's limiter (qps 50): a request
# at the status updates' priority waited seconds, against milliseconds
# without load (ratio > 100). Serving the load on the same two cores costs
# CPU, never the limiter: the bound leaves a wide margin for that.
MAX_SLOWDOWN = 25.0


async def _probe_latency(app: SchedulerApp, namespace: str) -> float:
    """Median seconds of a GET through the scheduling client at NORMAL priority
    (the priority of pod status updates, and of the reviews before the fix)."""
    took = []
    for _ in range(PROBES):
        start = time.perf_counter()
        await app.client.request("GET", f"/api/v1/namespaces/{namespace}", priority=Priority.NORMAL)
        took.append(time.perf_counter() - start)
    return statistics.median(took)


async def _hostile(base: str, stop: asyncio.Event, index: int) -> None:
    """One anonymous client asking for a new path each time (no cache hit)."""
    async with ops_session() as session:
        round_ = 0
        while not stop.is_set():
            round_ += 1
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(f"{base}/hostile/{index}/{round_}") as response:
                    await response.read()


async def test_anonymous_ops_load_does_not_slow_the_scheduling_client(
    control_plane: Cluster, namespace: str
) -> None:
    async with running_scheduler(control_plane.kubeconfig, unique_scheduler_name()) as app:
        base = f"https://127.0.0.1:{app.server.bound_port}"
        quiet = await _probe_latency(app, namespace)
        stop = asyncio.Event()
        load = [asyncio.create_task(_hostile(base, stop, i)) for i in range(HOSTILE_CLIENTS)]
        try:
            status, _ = await ops_get(base, "/hostile/first")  # the load is being reviewed
            assert status == 403
            loaded = await _probe_latency(app, namespace)
            queued = app.client.limiter.queued()
        finally:
            stop.set()
            await asyncio.gather(*load, return_exceptions=True)
    assert queued == 0
    assert loaded / max(quiet, 0.001) < MAX_SLOWDOWN, (quiet, loaded)
