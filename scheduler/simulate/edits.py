"""What-if edits applied to a snapshot before a run.

- ``add_nodes(template, count)``: ``count`` copies of the node named
  ``template`` in the snapshot (or of the single Node in the YAML file
  ``template``), named ``<template>-sim-<i>`` with the ``kubernetes.io/hostname``
  label to match and no uid, so each is a new node.
- ``remove_node(name)``: the node goes; the pods bound to it become pending
  again (``spec.nodeName``, ``nominatedNodeName`` and the ``PodScheduled``
  condition cleared), as if their controllers recreated them after a drain.
- ``cordon(name)``: ``spec.unschedulable: true``.

Edits never mutate the input objects; an unknown node raises ``EditError``
naming the flag.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scheduler.kube.resources import NODES, PODS
from scheduler.simulate.memory import resource_type_of
from scheduler.simulate.snapshot import Snapshot, SnapshotError, load_files

Raw = dict[str, Any]
HOSTNAME_LABEL = "kubernetes.io/hostname"


class EditError(ValueError):
    """A what-if edit that cannot apply."""


def _node_index(snapshot: Snapshot, name: str) -> int | None:
    for index, obj in enumerate(snapshot.objects):
        if resource_type_of(obj) == NODES and (obj.get("metadata") or {}).get("name") == name:
            return index
    return None


def parse_count(flag: str, value: str) -> tuple[str, int]:
    template, sep, count = value.rpartition("=")
    if not sep or not template or not count.isdigit() or int(count) < 1:
        raise EditError(f"{flag} {value}: expected TEMPLATE=COUNT with COUNT >= 1")
    return template, int(count)


def _template(snapshot: Snapshot, template: str) -> Raw:
    index = _node_index(snapshot, template)
    if index is not None:
        return snapshot.objects[index]
    if Path(template).is_file():
        try:
            loaded = load_files([template])
        except SnapshotError as error:
            raise EditError(f"--add-nodes: {error}") from None
        nodes = [o for o in loaded.objects if resource_type_of(o) == NODES]
        if len(nodes) == 1:
            return nodes[0]
        raise EditError(f"--add-nodes {template}: the file must hold exactly one Node")
    raise EditError(f"--add-nodes {template}: no node of that name in the snapshot, nor a file")


def add_nodes(snapshot: Snapshot, template: str, count: int) -> list[str]:
    base = _template(snapshot, template)
    base_name = str(base["metadata"]["name"])
    names = []
    for number in range(1, count + 1):
        node = copy.deepcopy(base)
        name = f"{base_name}-sim-{number}"
        while _node_index(snapshot, name) is not None:
            name += "x"
        metadata = node["metadata"]
        metadata["name"] = name
        for field in ("uid", "resourceVersion", "creationTimestamp"):
            metadata.pop(field, None)
        labels = metadata.get("labels")
        if isinstance(labels, dict) and HOSTNAME_LABEL in labels:
            labels[HOSTNAME_LABEL] = name
        snapshot.objects.append(node)
        names.append(name)
    return names


def remove_node(snapshot: Snapshot, name: str) -> list[str]:
    """Remove the node; return the keys of the pods made pending again."""
    index = _node_index(snapshot, name)
    if index is None:
        raise EditError(f"--remove-node {name}: no node of that name in the snapshot")
    del snapshot.objects[index]
    released = []
    for position, obj in enumerate(snapshot.objects):
        if resource_type_of(obj) != PODS or (obj.get("spec") or {}).get("nodeName") != name:
            continue
        snapshot.objects[position] = _pending_again(obj)
        metadata = obj.get("metadata") or {}
        released.append(f"{metadata.get('namespace')}/{metadata.get('name')}")
    return released


def _pending_again(pod: Mapping[str, Any]) -> Raw:
    spec = {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}
    status = {"phase": "Pending"}
    return {**pod, "spec": spec, "status": status}


def cordon(snapshot: Snapshot, name: str) -> None:
    index = _node_index(snapshot, name)
    if index is None:
        raise EditError(f"--cordon {name}: no node of that name in the snapshot")
    node = snapshot.objects[index]
    snapshot.objects[index] = {**node, "spec": {**(node.get("spec") or {}), "unschedulable": True}}
