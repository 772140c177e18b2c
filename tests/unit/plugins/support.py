"""Helpers shared by the plugin tests: parsed objects and NodeInfos from builder dicts."""

from __future__ import annotations

import copy
from typing import Any

from scheduler.framework import Node, NodeInfo, Pod, parse_node, parse_pod

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
