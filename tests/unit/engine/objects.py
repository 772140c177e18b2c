"""Parsed pods, nodes and NodeInfos for the engine tests, from the builders.

``pod("p", lambda b: b.node("n1"))`` reads like the object it makes; every pod
gets the UID ``namespace/name`` so that tests can name pods by key.
"""

from __future__ import annotations

from collections.abc import Callable

from scheduler.framework import Node, NodeInfo, Pod, parse_node, parse_pod
from tests.support.builders import NodeBuilder, PodBuilder, make_node, make_pod

PodEdit = Callable[[PodBuilder], PodBuilder]
NodeEdit = Callable[[NodeBuilder], NodeBuilder]


def pod(name: str, edit: PodEdit | None = None, *, namespace: str = "default") -> Pod:
    builder = make_pod(name, namespace).uid(f"{namespace}/{name}")
    return parse_pod((edit(builder) if edit else builder).obj())


def bound(name: str, node_name: str, cpu: str = "", *, namespace: str = "default") -> Pod:
    """A pod assigned to ``node_name``, requesting ``cpu`` if given."""

    def edit(builder: PodBuilder) -> PodBuilder:
        builder = builder.node(node_name)
        return builder.requests(cpu=cpu) if cpu else builder

    return pod(name, edit, namespace=namespace)


def node(name: str, edit: NodeEdit | None = None) -> Node:
    builder = make_node(name)
    return parse_node((edit(builder) if edit else builder).obj())


def node_info(name: str, *pods: Pod) -> NodeInfo:
    info = NodeInfo(node(name))
    for item in pods:
        info.add_pod(item)
    return info
