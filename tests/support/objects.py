"""Parsed pods, nodes and NodeInfos from the builders, for tests of pure logic.

``pod("p", lambda b: b.node("n1"))`` reads like the object it makes; every pod
gets the UID ``namespace/name`` (``PodBuilder.build``) so tests can name pods
by key. Shared by the engine, queue and cache tests: one way to make a pod.
"""

from __future__ import annotations

from collections.abc import Callable

from scheduler.framework import Node, NodeInfo, Pod
from scheduler.testing.builders import NodeBuilder, PodBuilder, make_node, make_pod

__all__ = ["NodeEdit", "PodEdit", "bound", "node", "node_info", "pod"]

PodEdit = Callable[[PodBuilder], PodBuilder]
NodeEdit = Callable[[NodeBuilder], NodeBuilder]


def pod(name: str, edit: PodEdit | None = None, *, namespace: str = "default") -> Pod:
    builder = make_pod(name, namespace)
    return (edit(builder) if edit else builder).build()


def bound(name: str, node_name: str, cpu: str = "", *, namespace: str = "default") -> Pod:
    """A pod assigned to ``node_name``, requesting ``cpu`` if given."""

    def edit(builder: PodBuilder) -> PodBuilder:
        builder = builder.node(node_name)
        return builder.requests(cpu=cpu) if cpu else builder

    return pod(name, edit, namespace=namespace)


def node(name: str, edit: NodeEdit | None = None) -> Node:
    builder = make_node(name)
    return (edit(builder) if edit else builder).build()


def node_info(name: str, *pods: Pod) -> NodeInfo:
    info = NodeInfo(node(name))
    for item in pods:
        info.add_pod(item)
    return info
