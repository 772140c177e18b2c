"""The framework's ApiWriter delegates to the client with the pod's identity."""

from __future__ import annotations

from typing import Any

from scheduler.framework.handle import ApiWriter
from scheduler.framework.objects import parse_pod
from scheduler.kube.writer import KubeApiWriter
from tests.support.builders import make_pod


class FakeClient:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    async def bind(self, pod_namespace: str, pod_name: str, pod_uid: str, node_name: str) -> None:
        self.calls.append(("bind", pod_namespace, pod_name, pod_uid, node_name))

    async def request(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> Any:
        self.calls.append(("request", method, path, body, content_type))
        return {"ok": True}


async def test_bind_and_request_are_delegated() -> None:
    client = FakeClient()
    writer: ApiWriter = KubeApiWriter(client)
    pod = parse_pod(make_pod("p", "ns").uid("u-1").obj())
    await writer.bind(pod, "n1")
    assert await writer.request("PATCH", "/x", {"a": 1}) == {"ok": True}
    assert client.calls == [
        ("bind", "ns", "p", "u-1", "n1"),
        ("request", "PATCH", "/x", {"a": 1}, None),
    ]
