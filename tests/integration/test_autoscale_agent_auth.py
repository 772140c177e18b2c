"""Agent authentication against the real API server
(``agentAuthentication: ServiceAccountToken``): tokens made by the TokenRequest
API for ServiceAccounts of the test namespace, reviewed by the API server's
TokenReview through the daemon's review client."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio import client

from tests.integration.test_autoscale_enforcer import Env, enforcer, env, post
from tests.support.builders import make_node
from tests.support.cluster import Cluster, NodePool
from tests.support.wait import eventually

__all__ = ["env"]  # the fixture, shared with the enforcer's tests


async def _token(core: client.CoreV1Api, namespace: str, account: str) -> str:
    """A bound token for ``account`` from the TokenRequest API."""
    await core.create_namespaced_service_account(
        namespace, {"metadata": {"name": account, "namespace": namespace}}
    )
    request = {"spec": {"expirationSeconds": 3600}}
    answer = await core.create_namespaced_service_account_token(account, namespace, request)
    return str(answer.status.token)


async def _post_as(
    session: aiohttp.ClientSession, url: str, body: dict[str, Any], authorization: str | None
) -> tuple[int, str, Any]:
    headers = {"Authorization": authorization} if authorization is not None else {}
    async with session.post(url, data=orjson.dumps(body), headers=headers) as response:
        text = await response.read()
        kind = response.headers["Content-Type"]
        return (
            response.status,
            kind,
            orjson.loads(text) if kind.startswith("application/json") else text,
        )


async def test_agents_need_an_allowed_service_account_token_when_authentication_is_on(
    control_plane: Cluster, env: Env, nodes: NodePool
) -> None:
    node = await nodes.create(make_node("auth").capacity(cpu="4", memory="4Gi", pods="20").obj())
    agent = await _token(env.core, env.namespace, "autoscaler-agent")
    intruder = await _token(env.core, env.namespace, "intruder")
    args = f"""      agentAuthentication: ServiceAccountToken
      agentServiceAccounts: ["{env.namespace}:autoscaler-agent"]
"""
    async with enforcer(control_plane, env, args) as (_, session, url):
        await env.create_vm("a", cpus=(1, 4, 1), slots=(1, 4, 1))
        await env.create_vm_pod("a")
        assert await eventually(lambda: env.node_of("a-pod"), what="VM pod placed") == node
        pod = {"namespace": env.namespace, "name": "a-pod"}
        grow = {"protoVersion": 2, "pod": pod, "resources": {"vCPUs": 2, "mem": 2}, "metrics": None}

        cases = [
            ("no token", None, 401, "Unauthorized"),
            ("not a bearer token", "Basic YTpi", 401, "Unauthorized"),
            ("a token the API server rejects", "Bearer not-a-token", 401, "Unauthorized"),
            ("another ServiceAccount", f"Bearer {intruder}", 403, "Forbidden"),
        ]
        for what, header, status, reason in cases:
            got, kind, body = await _post_as(session, url, grow, header)
            assert (got, kind.split(";")[0]) == (status, "application/json"), what
            assert (body["kind"], body["reason"], body["code"]) == ("Status", reason, status), what
        # Refused requests changed nothing: the VM is still at its use.
        got, _, body = await _post_as(session, url, grow, f"Bearer {agent}")
        assert (got, body["permit"]) == (200, {"vCPUs": 2, "mem": 2})
        got, _, body = await _post_as(session, url, grow, f"Bearer {agent}")  # cached
        assert (got, body["permit"]) == (200, {"vCPUs": 2, "mem": 2})
        # With authentication off (the enforcer's other tests) no token is sent.
        assert (await post(session, url, grow))[0] == 401
