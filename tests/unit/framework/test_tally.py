"""Tally: totals kept across calls equal a fresh sum over the nodes passed,
whatever changed in between (pods added and removed, nodes relabelled, added,
deleted, a subset passed), also when reading the snapshot's journal; and the
plugins' PreFilter/PreScore sums computed with their tallies over a cache's
snapshots equal the sums computed afresh."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import cast

import pytest

from plugins import pod_topology_spread
from plugins.inter_pod_affinity.filtering import existing_anti_affinity_counts, incoming_counts
from plugins.inter_pod_affinity.scoring import IncomingTerms, compute_pre_score_state
from plugins.pod_topology_spread.filtering import compute_pre_filter_state
from scheduler.cache import Cache, Snapshot
from scheduler.cache import snapshot as snapshot_module
from scheduler.framework import Handle, NodeInfo, Pod, parse_node, parse_pod
from scheduler.framework.tally import Contribution, Tallies, Tally, journal_of
from tests.support.builders import make_node, make_pod
from tests.unit.plugins.support import FakeHandle, FakeInformers

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def _pods_by_app(info: NodeInfo) -> Contribution[str]:
    """Per app label: the pods on the node (the zone's label decides the slot)."""
    node = info.node
    if node is None or ZONE not in node.labels:
        return ()
    counts: dict[str, int] = {}
    for pod in info.pods.values():
        app = pod.labels.get("app", "")
        counts[app] = counts.get(app, 0) + 1
    slot = 0 if node.labels[ZONE] == "a" else 1
    # Every node in a zone contributes its zone key, possibly with 0 pods.
    return ((slot, "zone", 0), *((slot, app, count) for app, count in counts.items()))


def _fresh(nodes: Sequence[NodeInfo]) -> list[dict[str, int]]:
    totals: list[dict[str, int]] = [{}, {}]
    for info in nodes:
        for slot, key, count in _pods_by_app(info):
            totals[slot][key] = totals[slot].get(key, 0) + count
    return totals


def _node(name: str, zone: str | None) -> dict[str, object]:
    builder = make_node(name)
    return (builder.zone(zone) if zone else builder).obj()


def _pod(index: int, node: str, app: str) -> Pod:
    return parse_pod(make_pod(f"p{index}").uid(f"u{index}").label("app", app).node(node).obj())


def test_a_key_stays_while_a_node_contributes_it_even_with_count_zero() -> None:
    cache, snapshot = Cache(), Snapshot()
    cache.add_node(parse_node(_node("n1", "a")))
    cache.update_snapshot(snapshot)
    tally: Tally[str] = Tally(2, _pods_by_app)
    assert tally.update(snapshot.node_info_list) == [{"zone": 0}, {}]
    cache.add_pod(_pod(1, "n1", "web"))
    cache.update_snapshot(snapshot)
    assert tally.update(snapshot.node_info_list) == [{"zone": 0, "web": 1}, {}]
    cache.remove_pod(_pod(1, "n1", "web"))
    cache.update_snapshot(snapshot)
    assert tally.update(snapshot.node_info_list) == [{"zone": 0}, {}]
    cache.remove_node("n1")
    cache.update_snapshot(snapshot)
    assert tally.update(snapshot.node_info_list) == [{}, {}]


def test_only_changed_nodes_are_recomputed() -> None:
    cache, snapshot = Cache(), Snapshot()
    for index in range(5):
        cache.add_node(parse_node(_node(f"n{index}", "a")))
    cache.update_snapshot(snapshot)
    computed: list[str] = []

    def counting(info: NodeInfo) -> Contribution[str]:
        computed.append(info.name)
        return _pods_by_app(info)

    tally: Tally[str] = Tally(2, counting)
    tally.update(snapshot.node_info_list)
    assert len(computed) == 5
    computed.clear()
    tally.update(snapshot.node_info_list)
    assert computed == []
    cache.add_pod(_pod(1, "n3", "web"))
    cache.update_snapshot(snapshot)
    tally.update(snapshot.node_info_list)
    assert computed == ["n3"]


def test_with_the_journal_only_its_new_entries_are_recomputed() -> None:
    cache, snapshot = Cache(), Snapshot()
    for index in range(5):
        cache.add_node(parse_node(_node(f"n{index}", "a")))
    cache.update_snapshot(snapshot)
    computed: list[str] = []

    def counting(info: NodeInfo) -> Contribution[str]:
        computed.append(info.name)
        return _pods_by_app(info)

    tally: Tally[str] = Tally(2, counting)
    tally.update(snapshot.node_info_list, journal_of(snapshot))
    assert len(computed) == 5
    computed.clear()
    cache.add_pod(_pod(1, "n3", "web"))
    cache.update_snapshot(snapshot)
    cache.add_pod(_pod(2, "n1", "web"))
    cache.update_snapshot(snapshot)
    epoch = snapshot.epoch
    assert tally.update(snapshot.node_info_list, journal_of(snapshot)) == [
        {"zone": 0, "web": 2},
        {},
    ]
    assert computed == ["n3", "n1"]
    computed.clear()
    cache.add_node(parse_node(_node("n9", "b")))  # a new node starts a new epoch
    cache.update_snapshot(snapshot)
    assert snapshot.epoch == epoch + 1
    assert not snapshot.journal
    assert tally.update(snapshot.node_info_list, journal_of(snapshot)) == [
        {"zone": 0, "web": 2},
        {"zone": 0},
    ]
    assert computed == ["n9"]


def test_a_journal_past_its_bound_starts_a_new_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot_module, "JOURNAL_BOUND", 3)
    cache, snapshot = Cache(), Snapshot()
    for index in range(4):
        cache.add_node(parse_node(_node(f"n{index}", "a")))
    cache.update_snapshot(snapshot)
    tally: Tally[str] = Tally(2, _pods_by_app)
    epochs = set()
    for step in range(10):
        cache.add_pod(_pod(step, f"n{step % 4}", "web"))
        cache.update_snapshot(snapshot)
        assert len(snapshot.journal) <= 3
        epochs.add(snapshot.epoch)
        if step % 3:  # skip some cycles: the epoch may change in between
            whole = snapshot.node_info_list
            assert tally.update(whole, journal_of(snapshot)) == _fresh(whole), step
    assert len(epochs) > 2


@pytest.mark.parametrize("seed", range(12))
def test_random_changes_keep_the_totals_equal_to_a_fresh_sum(seed: int) -> None:
    rng = random.Random(seed)
    cache, snapshot = Cache(), Snapshot()
    zones = ["a", "b", None]
    nodes: dict[str, str | None] = {}
    pods: dict[int, Pod] = {}
    tally: Tally[str] = Tally(2, _pods_by_app)
    journaled: Tally[str] = Tally(2, _pods_by_app)  # always the whole list, with the journal
    for step in range(120):
        action = rng.random()
        if action < 0.15 or not nodes:
            name = f"n{rng.randrange(12)}"
            nodes[name] = rng.choice(zones)
            node = parse_node(_node(name, nodes[name]))
            if cache.node_info(name) is None:
                cache.add_node(node)
            else:
                cache.update_node(node)
        elif action < 0.22:
            name = rng.choice(sorted(nodes))
            del nodes[name]
            for index in [i for i, p in pods.items() if p.node_name == name]:
                cache.remove_pod(pods.pop(index))
            cache.remove_node(name)
        elif action < 0.75:
            pods[step] = _pod(step, rng.choice(sorted(nodes)), rng.choice(["web", "db"]))
            cache.add_pod(pods[step])
        elif pods:
            cache.remove_pod(pods.pop(rng.choice(sorted(pods))))
        cache.update_snapshot(snapshot)
        if rng.random() < 0.7:  # not every cycle: the journal grows meanwhile
            whole = snapshot.node_info_list
            assert journaled.update(whole, journal_of(snapshot)) == _fresh(whole), step
        passed: Sequence[NodeInfo] = snapshot.node_info_list
        if rng.random() < 0.2:  # sometimes a subset (as the nodes with affinity pods)
            passed = [info for info in passed if rng.random() < 0.5]
        assert tally.update(passed) == _fresh(passed), step


def test_tallies_keep_the_most_recent_few() -> None:
    tallies: Tallies[str] = Tallies(max_tallies=2)
    first = tallies.get("a", 1, _pods_by_app)
    tallies.get("b", 1, _pods_by_app)
    assert tallies.get("a", 1, _pods_by_app) is first
    tallies.get("c", 1, _pods_by_app)  # evicts b, the least recently used
    assert tallies.get("a", 1, _pods_by_app) is first
    assert tallies.get("b", 1, _pods_by_app) is not None


# ----------------------------------------------------- the plugins' sums
def _spread_pod(index: int) -> Pod:
    builder = make_pod(f"in{index}", "ns").uid(f"in{index}").label("app", "web")
    builder = builder.spread(1, ZONE, selector={"matchLabels": {"app": "web"}})
    builder = builder.spread(2, HOST, selector={"matchLabels": {"app": "web"}})
    return parse_pod(builder.obj())


def _affinity_pod(index: int) -> Pod:
    builder = make_pod(f"in{index}", "ns").uid(f"in{index}").label("app", "web")
    builder = builder.required_pod_anti_affinity(HOST, app="web")
    builder = builder.required_pod_affinity(ZONE, tier="db")
    builder = builder.pod_affinity_term(
        "podAffinity", ZONE, {"matchLabels": {"app": "db"}}, weight=3
    )
    return parse_pod(builder.obj())


def _existing(index: int, node: str, rng: random.Random) -> Pod:
    builder = make_pod(f"e{index}", rng.choice(["ns", "other"])).uid(f"e{index}").node(node)
    builder = builder.label("app", rng.choice(["web", "db"])).label("tier", rng.choice(["db", "x"]))
    if rng.random() < 0.4:
        builder = builder.required_pod_anti_affinity(HOST, app="web")
    if rng.random() < 0.3:
        builder = builder.pod_affinity_term(
            "podAntiAffinity", ZONE, {"matchLabels": {"app": "web"}}, weight=5
        )
    return parse_pod(builder.obj())


@pytest.mark.parametrize("seed", range(6))
def test_plugin_sums_with_tallies_equal_fresh_sums_across_cycles(seed: int) -> None:
    rng = random.Random(seed)
    cache, snapshot = Cache(), Snapshot()
    for index in range(10):
        node = make_node(f"n{index}")
        if index % 4:
            node = node.zone("z1" if index % 2 else "z2")
        cache.add_node(parse_node(node.obj()))
    handle = cast(Handle, FakeHandle(snapshot, FakeInformers()))  # type: ignore[arg-type]
    spread = cast(
        pod_topology_spread.PodTopologySpread, pod_topology_spread.SPEC.factory(None, handle)
    )
    spread_tallies: Tallies[str] = Tallies()
    filter_tallies: Tallies[tuple[str, str]] = Tallies()
    score_tallies: Tallies[tuple[str, str]] = Tallies()
    existing: dict[int, Pod] = {}
    for step in range(60):
        if existing and rng.random() < 0.3:
            cache.remove_pod(existing.pop(rng.choice(sorted(existing))))
        else:
            existing[step] = _existing(step, f"n{rng.randrange(10)}", rng)
            cache.add_pod(existing[step])
        cache.update_snapshot(snapshot)
        nodes = snapshot.node_info_list
        incoming = _spread_pod(step % 2)
        constraints = spread.constraints(incoming, "DoNotSchedule")
        journal = journal_of(snapshot)
        kept = compute_pre_filter_state(incoming, constraints, nodes, spread_tallies, journal)
        fresh = compute_pre_filter_state(incoming, constraints, nodes)
        assert (kept.counts, kept.critical_paths) == (fresh.counts, fresh.critical_paths)

        incoming = _affinity_pod(step % 2)
        terms = incoming.pod_affinity
        with_affinity = snapshot.with_affinity
        # replaced in place between cycles: still exactly the listed nodes with affinity pods
        assert with_affinity == [info for info in nodes if info.pods_with_affinity]
        assert existing_anti_affinity_counts(
            incoming, {}, with_affinity, filter_tallies, journal
        ) == existing_anti_affinity_counts(incoming, {}, with_affinity)
        args = (terms.required_affinity, terms.required_anti_affinity, nodes)
        assert incoming_counts(*args, filter_tallies, journal) == incoming_counts(*args)
        scoring = IncomingTerms(
            incoming, terms.preferred_affinity, terms.preferred_anti_affinity, {}
        )
        for all_pods in (True, False):
            listed = nodes if all_pods else with_affinity
            kept_score = compute_pre_score_state(
                scoring,
                listed,
                all_pods=all_pods,
                hard_pod_affinity_weight=1,
                tallies=score_tallies,
                journal=journal,
            )
            fresh_score = compute_pre_score_state(
                scoring, listed, all_pods=all_pods, hard_pod_affinity_weight=1
            )
            assert kept_score.topology_score == fresh_score.topology_score
