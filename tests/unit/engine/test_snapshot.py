"""Incremental snapshots: only changed NodeInfos are cloned, structural
changes rebuild the list, nodes are listed zone by zone, round-robin."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scheduler.cache import Cache, Snapshot
from scheduler.cache.node_tree import NodeTree
from scheduler.framework import Node, NodeInfo
from tests.support.objects import bound, node, pod


def zoned(name: str, zone: str) -> Node:
    return node(name, lambda b: b.zone(zone))


def cache_and_snapshot(*node_names: str) -> tuple[Cache, Snapshot]:
    cache = Cache()
    for name in node_names:
        cache.add_node(node(name))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    return cache, snapshot


def identities(snapshot: Snapshot) -> dict[str, int]:
    return {info.name: id(info) for info in snapshot.node_infos()}


def names(snapshot: Snapshot) -> list[str]:
    return [info.name for info in snapshot.node_infos()]


def test_first_update_clones_every_node() -> None:
    cache, snapshot = cache_and_snapshot("n1", "n2", "n3")
    assert names(snapshot) == ["n1", "n2", "n3"]
    assert len(snapshot) == 3
    assert snapshot.generation == cache.generation
    for info in snapshot.node_infos():
        assert info is not cache.node_info(info.name)
        assert snapshot.get(info.name) is info


def test_update_without_changes_keeps_everything() -> None:
    cache, snapshot = cache_and_snapshot("n1", "n2")
    listed, before = snapshot.node_info_list, identities(snapshot)
    cache.update_snapshot(snapshot)
    assert snapshot.node_info_list is listed
    assert identities(snapshot) == before


def test_only_the_changed_node_is_cloned() -> None:
    cache, snapshot = cache_and_snapshot("n1", "n2", "n3")
    before = identities(snapshot)

    cache.add_pod(bound("p", "n2", "1"))
    cache.update_snapshot(snapshot)

    after = identities(snapshot)
    assert after["n1"] == before["n1"]
    assert after["n3"] == before["n3"]
    assert after["n2"] != before["n2"]
    assert names(snapshot) == ["n1", "n2", "n3"]
    changed = snapshot.get("n2")
    assert changed is not None
    assert changed.requested.milli_cpu == 1000
    assert snapshot.node_infos()[1] is changed


def test_the_snapshot_does_not_see_later_cache_changes() -> None:
    cache, snapshot = cache_and_snapshot("n1")
    in_snapshot = snapshot.get("n1")
    cache.add_pod(bound("p", "n1", "1"))
    assert in_snapshot is not None
    assert (in_snapshot.requested.milli_cpu, in_snapshot.pods) == (0, {})


def test_several_changes_between_cycles_clone_each_node_once() -> None:
    cache, snapshot = cache_and_snapshot("n1", "n2", "n3")
    before = identities(snapshot)
    cache.assume_pod(bound("a", "n1", "1"))
    cache.add_pod(bound("b", "n3", "1"))
    cache.add_pod(bound("c", "n1", "1"))
    cache.update_snapshot(snapshot)
    after = identities(snapshot)
    assert after["n2"] == before["n2"]
    assert {name for name in after if after[name] != before[name]} == {"n1", "n3"}
    info = snapshot.get("n1")
    assert info is not None
    assert info.requested.milli_cpu == 2000


def test_an_added_node_rebuilds_the_list_but_clones_nothing_else() -> None:
    cache, snapshot = cache_and_snapshot("n1", "n2")
    before = identities(snapshot)
    cache.add_node(node("n3"))
    cache.update_snapshot(snapshot)
    after = identities(snapshot)
    assert names(snapshot) == ["n1", "n2", "n3"]
    assert (after["n1"], after["n2"]) == (before["n1"], before["n2"])


def test_a_removed_node_leaves_list_and_map() -> None:
    cache, snapshot = cache_and_snapshot("n1", "n2", "n3")
    before = identities(snapshot)
    cache.remove_node("n2")
    cache.update_snapshot(snapshot)
    assert names(snapshot) == ["n1", "n3"]
    assert snapshot.get("n2") is None
    assert identities(snapshot) == {"n1": before["n1"], "n3": before["n3"]}


def test_a_node_update_replaces_its_node_object() -> None:
    cache, snapshot = cache_and_snapshot("n1", "n2")
    cache.update_node(node("n2", lambda b: b.label("disk", "ssd")))
    cache.update_snapshot(snapshot)
    info = snapshot.get("n2")
    assert info is not None
    assert info.node is not None
    assert info.node.labels["disk"] == "ssd"
    assert names(snapshot) == ["n1", "n2"]


ZONES = [
    ("a1", "a"),
    ("a2", "a"),
    ("b1", "b"),
    ("a3", "a"),
    ("c1", "c"),
    ("c2", "c"),
]


def zoned_cache(nodes: list[tuple[str, str]]) -> tuple[Cache, Snapshot]:
    cache = Cache()
    for name, zone in nodes:
        cache.add_node(zoned(name, zone))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    return cache, snapshot


def test_nodes_are_listed_zone_by_zone_round_robin() -> None:
    _, snapshot = zoned_cache(ZONES)
    assert names(snapshot) == ["a1", "b1", "c1", "a2", "c2", "a3"]


@pytest.mark.parametrize(
    "move",
    [
        pytest.param(Cache.update_node, id="by an update"),
        pytest.param(Cache.add_node, id="by a repeated add (relist)"),
    ],
)
def test_a_node_moving_zone_moves_in_the_list(move: Callable[[Cache, Node], None]) -> None:
    cache, snapshot = zoned_cache(ZONES)
    before = identities(snapshot)
    move(cache, zoned("a1", "c"))
    cache.update_snapshot(snapshot)
    assert names(snapshot) == ["a2", "b1", "c1", "a3", "c2", "a1"]
    assert identities(snapshot)["b1"] == before["b1"]


def test_pods_with_affinity_are_listed_apart() -> None:
    cache, snapshot = cache_and_snapshot("n1", "n2")
    assert snapshot.have_pods_with_affinity() == []
    with_affinity = pod("aff", lambda b: b.node("n2").required_pod_affinity("zone", app="db"))
    cache.add_pod(with_affinity)
    cache.update_snapshot(snapshot)
    assert [info.name for info in snapshot.have_pods_with_affinity()] == ["n2"]
    assert snapshot.have_pods_with_affinity()[0] is snapshot.get("n2")

    cache.add_pod(bound("plain", "n2"))
    cache.update_snapshot(snapshot)
    assert snapshot.have_pods_with_affinity()[0] is snapshot.get("n2")

    cache.remove_pod(with_affinity)
    cache.update_snapshot(snapshot)
    assert snapshot.have_pods_with_affinity() == []


@pytest.mark.parametrize(
    ("operations", "order"),
    [
        pytest.param([("add", "n1", "")], ["n1"], id="one node without zone"),
        pytest.param(
            [("add", "a1", "a"), ("add", "a2", "a"), ("add", "b1", "b")],
            ["a1", "b1", "a2"],
            id="zones interleave",
        ),
        pytest.param(
            [("add", "a1", "a"), ("add", "b1", "b"), ("remove", "a1", ""), ("add", "a1", "a")],
            ["b1", "a1"],
            id="an emptied zone comes back last",
        ),
        pytest.param(
            [("add", "a1", "a"), ("add", "a2", "a"), ("add", "a1", "a")],
            ["a1", "a2"],
            id="adding again in the same zone keeps the place",
        ),
        pytest.param(
            [("add", "a1", "a"), ("add", "a2", "a"), ("add", "a1", "b")],
            ["a2", "a1"],
            id="a zone change moves the node to its new zone",
        ),
        pytest.param([("remove", "ghost", "")], [], id="removing an unknown node"),
    ],
)
def test_node_tree_order(operations: list[tuple[str, str, str]], order: list[str]) -> None:
    tree = NodeTree()
    for operation, name, zone in operations:
        if operation == "add":
            tree.add(name, {"topology.kubernetes.io/zone": zone} if zone else {})
        else:
            tree.remove(name)
    assert tree.ordered() == order
    assert len(tree) == len(order)


def test_region_and_zone_together_make_the_zone_key() -> None:
    tree = NodeTree()
    tree.add("x1", {"topology.kubernetes.io/region": "r1", "topology.kubernetes.io/zone": "z"})
    tree.add("y1", {"topology.kubernetes.io/region": "r2", "topology.kubernetes.io/zone": "z"})
    tree.add("x2", {"topology.kubernetes.io/region": "r1", "topology.kubernetes.io/zone": "z"})
    assert tree.ordered() == ["x1", "y1", "x2"]


def test_clone_is_independent() -> None:
    info = NodeInfo(node("n1"))
    info.add_pod(bound("a", "n1", "1"))
    copy = info.clone()
    copy.add_pod(bound("b", "n1", "1"))
    assert (info.requested.milli_cpu, len(info.pods)) == (1000, 1)
    assert (copy.requested.milli_cpu, len(copy.pods)) == (2000, 2)
