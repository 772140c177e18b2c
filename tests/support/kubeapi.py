"""Small raw-JSON helpers over kubernetes-asyncio for integration tests.
(The overcommit check lives in ``bench.checks``, shared with the benchmark.)"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import orjson
from kubernetes_asyncio import client


async def read_json(response: Any) -> Any:
    async with response:
        return orjson.loads(await response.read())


async def list_pods(core: client.CoreV1Api, namespace: str) -> list[dict[str, Any]]:
    listed = await read_json(await core.list_namespaced_pod(namespace, _preload_content=False))
    items: list[dict[str, Any]] = listed["items"]
    return items


async def read_pod(core: client.CoreV1Api, namespace: str, name: str) -> dict[str, Any]:
    pod: dict[str, Any] = await read_json(
        await core.read_namespaced_pod(name, namespace, _preload_content=False)
    )
    return pod


async def create_all(create: Any, bodies: Iterable[dict[str, Any]], concurrency: int = 20) -> None:
    """Create objects concurrently (like scheduler_perf's parallel creators)."""
    gate = asyncio.Semaphore(concurrency)

    async def one(body: dict[str, Any]) -> None:
        async with gate:
            await create(body)

    await asyncio.gather(*(one(body) for body in bodies))


def condition(pod: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for item in (pod.get("status") or {}).get("conditions") or ():
        if item.get("type") == kind:
            return dict(item)
    return None
