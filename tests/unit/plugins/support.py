"""Helpers shared by the plugin tests: parsed objects and NodeInfos from builder dicts."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.framework import Node, NodeInfo, Pod, parse_node, parse_pod
from tests.support.informers import FakeStore

Obj = dict[str, Any]


def pod(raw: Obj) -> Pod:
    """Parse a pod dict, giving it a UID (``namespace/name``) if it has none."""
    raw = copy.deepcopy(raw)
    metadata = raw["metadata"]
    metadata.setdefault("uid", f"{metadata.get('namespace', '')}/{metadata['name']}")
    return parse_pod(raw)


def node_info(node: Obj, *pods: Obj) -> NodeInfo:
    """A NodeInfo for ``node`` running ``pods``."""
    info = NodeInfo(parse_node(node))
    for raw in pods:
        info.add_pod(pod(raw))
    return info


def maybe_node(raw: Obj | None) -> Node | None:
    """A parsed node, or None for an absent one (queueing hints' old/new)."""
    return None if raw is None else parse_node(raw)


class FakeSnapshot:
    """A ``SnapshotLister`` over fixed NodeInfos."""

    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        self.nodes = list(nodes)

    def node_infos(self) -> Sequence[NodeInfo]:
        return self.nodes

    def get(self, node_name: str) -> NodeInfo | None:
        return next((n for n in self.nodes if n.name == node_name), None)

    def have_pods_with_affinity(self) -> Sequence[NodeInfo]:
        return [n for n in self.nodes if n.pods_with_affinity]


class FakeInformers:
    def __init__(self, stores: Mapping[str, FakeStore] | None = None) -> None:
        self.stores = dict(stores or {})

    def store(self, resource: str) -> FakeStore:
        return self.stores.setdefault(resource, FakeStore())

    def on_change(self, resource: str, handler: object) -> None:
        return None


class FakeHandle:
    """Just what plugins reading the snapshot and informer stores need."""

    def __init__(self, snapshot: FakeSnapshot, informers: FakeInformers | None = None) -> None:
        self._snapshot = snapshot
        self.informers = informers or FakeInformers()

    def snapshot(self) -> FakeSnapshot:
        return self._snapshot


def namespace(name: str, **labels: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
