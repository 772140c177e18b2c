"""Small raw-JSON helpers over kubernetes-asyncio for integration tests."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import orjson
from kubernetes_asyncio import client

from scheduler.framework import Resource, parse_node, parse_pod


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


def overcommitted_nodes(
    nodes: Iterable[dict[str, Any]], pods: Iterable[dict[str, Any]]
) -> dict[str, str]:
    """Nodes whose bound pods request more than the node can allocate."""
    requested: dict[str, Resource] = {}
    counts: dict[str, int] = {}
    for raw in pods:
        pod = parse_pod(raw)
        if pod.node_name and not pod.terminal:
            requested[pod.node_name] = requested.get(pod.node_name, Resource()) + pod.requests
            counts[pod.node_name] = counts.get(pod.node_name, 0) + 1
    problems = {}
    for raw in nodes:
        node = parse_node(raw)
        used = requested.get(node.name)
        if used is None:
            continue
        allocatable = node.allocatable
        if (
            used.milli_cpu > allocatable.milli_cpu
            or used.memory > allocatable.memory
            or counts[node.name] > allocatable.allowed_pods
        ):
            problems[node.name] = f"requested {used}, allocatable {allocatable}"
    return problems
