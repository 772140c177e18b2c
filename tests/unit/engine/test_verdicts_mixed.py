"""A profile mixing node-local plugins (SignPlugin) with plugins that read
other pods (InterPodAffinity, PodTopologySpread): the non-node-local verdicts
are never reused, so a change on one node that matters to another node's
verdict is seen; pods to which those plugins do not apply (PreFilter Skip)
keep the reuse of the node-local verdicts, and pods to which they do still
reuse the node-local part, with the outcome of running every plugin
(randomized against a profile that never reuses, in three plugin orders)."""

from __future__ import annotations

import random
from typing import cast

import pytest

from plugins import inter_pod_affinity, pod_topology_spread, taint_toleration
from plugins.inter_pod_affinity import REASON_EXISTING_ANTI_AFFINITY_NOT_MATCH
from scheduler.cache import Cache, Snapshot
from scheduler.cycle.algorithm import Algorithm, ScheduleResult
from scheduler.framework import CycleState, Handle, Pod, SignPlugin, parse_node, parse_pod
from scheduler.framework.types import FitError
from scheduler.runtime.framework import Framework
from scheduler.runtime.nodefilter import ReuseAll, ReusePart
from scheduler.runtime.verdicts import NoReuse
from tests.support.builders import make_node, make_pod
from tests.unit.engine.plugins import make_framework
from tests.unit.plugins.support import FakeHandle, FakeInformers

ZONE = "topology.kubernetes.io/zone"
WEB = {"matchLabels": {"app": "web"}}


class Mixed:
    """TaintToleration (node-local) with InterPodAffinity and PodTopologySpread."""

    def __init__(self) -> None:
        self.cache = Cache()
        for name, zone in (("a1", "a"), ("a2", "a"), ("b1", "b")):
            self.cache.add_node(parse_node(make_node(name).zone(zone).obj()))
        self.snapshot = Snapshot()
        handle = cast(Handle, FakeHandle(self.snapshot, FakeInformers()))  # type: ignore[arg-type]
        taints = taint_toleration.SPEC.factory(None, handle)
        affinity = inter_pod_affinity.SPEC.factory(None, handle)
        spread = pod_topology_spread.SPEC.factory(None, handle)
        self.plugins = (taints, affinity, spread)
        self.framework: Framework = make_framework(
            pre_filter=[spread, affinity],
            filter=[taints, spread, affinity],
            pre_score=[taints, spread, affinity],
            score=[taints, spread, affinity],
        )
        self.algorithm = Algorithm(random.Random(1))

    def schedule(self, pod: Pod) -> ScheduleResult:
        self.cache.update_snapshot(self.snapshot)
        return self.algorithm.schedule_pod(self.framework, CycleState(), pod, self.snapshot, 100)


def test_only_the_node_local_plugin_signs() -> None:
    taints, affinity, spread = Mixed().plugins
    assert isinstance(taints, SignPlugin)
    assert not isinstance(affinity, SignPlugin)
    assert not isinstance(spread, SignPlugin)


def test_a_change_on_another_node_reaches_an_unchanged_nodes_verdict() -> None:
    mixed = Mixed()

    def repelled(index: int) -> Pod:
        return parse_pod(
            make_pod(f"p{index}")
            .uid(f"p{index}")
            .label("app", "api")
            .required_pod_anti_affinity(ZONE, app="web")
            .obj()
        )

    first = mixed.schedule(repelled(1))
    assert first.feasible_nodes == 3

    generation_a1 = mixed.snapshot.get("a1").generation  # type: ignore[union-attr]
    mixed.cache.add_pod(parse_pod(make_pod("w").uid("w").label("app", "web").node("a2").obj()))
    second = mixed.schedule(repelled(2))

    assert mixed.snapshot.get("a1").generation == generation_a1, "a1 itself did not change"  # type: ignore[union-attr]
    assert second.suggested_host == "b1"
    statuses = second.diagnosis.node_to_status.statuses
    assert statuses["a1"].reasons == ("node(s) didn't match pod anti-affinity rules",)


def test_existing_pods_anti_affinity_applies_to_pods_without_terms() -> None:
    mixed = Mixed()
    plain = parse_pod(make_pod("p1").uid("p1").label("app", "web").obj())
    assert mixed.schedule(plain).feasible_nodes == 3
    blocker = make_pod("q").uid("q").node("b1").required_pod_anti_affinity(ZONE, app="web").obj()
    mixed.cache.add_pod(parse_pod(blocker))
    again = parse_pod(make_pod("p2").uid("p2").label("app", "web").obj())
    result = mixed.schedule(again)
    assert result.feasible_nodes == 2
    assert result.diagnosis.node_to_status.statuses["b1"].reasons == (
        REASON_EXISTING_ANTI_AFFINITY_NOT_MATCH,
    )


def test_spread_counts_move_with_pods_on_other_nodes() -> None:
    mixed = Mixed()

    def spread(index: int) -> Pod:
        return parse_pod(
            make_pod(f"s{index}")
            .uid(f"s{index}")
            .label("app", "web")
            .spread(1, ZONE, selector=WEB)
            .obj()
        )

    assert mixed.schedule(spread(1)).feasible_nodes == 3
    mixed.cache.add_pod(parse_pod(make_pod("w").uid("w").label("app", "web").node("b1").obj()))
    mixed.cache.add_pod(parse_pod(make_pod("v").uid("v").label("app", "web").node("b1").obj()))
    result = mixed.schedule(spread(2))
    assert result.feasible_nodes == 2, "zone b now has 2, zone a 0"
    assert "b1" in result.diagnosis.node_to_status.statuses


def test_pods_the_other_plugins_skip_keep_node_local_reuse() -> None:
    mixed = Mixed()
    plain = parse_pod(make_pod("p").uid("p").obj())
    state = CycleState()
    mixed.cache.update_snapshot(mixed.snapshot)
    mixed.framework.run_pre_filter(state, plain, mixed.snapshot.node_info_list)
    filters = mixed.framework.active_filters(state)
    assert [plugin.name for plugin in filters] == [taint_toleration.NAME]
    assert isinstance(mixed.framework.node_filter(state, plain, filters, 3), ReuseAll)

    affine = parse_pod(make_pod("q").uid("q").required_pod_anti_affinity(ZONE, app="web").obj())
    state = CycleState()
    mixed.framework.run_pre_filter(state, affine, mixed.snapshot.node_info_list)
    filters = mixed.framework.active_filters(state)
    assert inter_pod_affinity.NAME in [plugin.name for plugin in filters]
    node_filter = mixed.framework.node_filter(state, affine, filters, 3)
    assert not isinstance(node_filter, ReuseAll), "no reuse of every verdict"


# ------------------------------------------------- partial reuse (node-local part)
def test_with_the_other_plugins_active_the_node_local_part_is_still_reused() -> None:
    mixed = Mixed()
    affine = parse_pod(make_pod("q").uid("q").required_pod_anti_affinity(ZONE, app="web").obj())
    state = CycleState()
    mixed.cache.update_snapshot(mixed.snapshot)
    mixed.framework.run_pre_filter(state, affine, mixed.snapshot.node_info_list)
    filters = mixed.framework.active_filters(state)
    partial = mixed.framework.node_filter(state, affine, filters, 3)
    assert isinstance(partial, ReusePart)
    assert not partial.table
    for node_info in mixed.snapshot.node_info_list:
        assert partial.run(node_info) is None
    assert set(partial.table) == {"a1", "a2", "b1"}, "TaintToleration's verdicts kept per node"


FilterOrder = tuple[str, ...]
ORDERS: list[FilterOrder] = [
    ("taints", "spread", "affinity"),
    ("spread", "taints", "affinity"),
    ("spread", "affinity", "taints"),
]


class Profile(Mixed):
    """``Mixed`` with five nodes and the Filter/Score order given; optionally
    never reusing anything (the reference: every plugin runs)."""

    def __init__(self, order: FilterOrder, *, reuse: bool) -> None:
        super().__init__()
        for name, zone in (("b2", "b"), ("c1", "c")):
            self.cache.add_node(parse_node(make_node(name).zone(zone).obj()))
        taints, affinity, spread = self.plugins
        by_name = {"taints": taints, "spread": spread, "affinity": affinity}
        ordered = [by_name[name] for name in order]
        self.framework = make_framework(
            pre_filter=[spread, affinity],
            filter=ordered,
            pre_score=ordered,
            score=ordered,
            verdicts=None if reuse else NoReuse(),
        )


def _random_pod(rng: random.Random, index: int) -> Pod:
    app = rng.choice(["web", "db"])
    builder = make_pod(f"p{index}").uid(f"p{index}").label("app", app)
    if rng.random() < 0.5:
        builder = builder.toleration("dedicated", "x", "NoSchedule")
    roll = rng.random()
    if roll < 0.3:
        builder = builder.required_pod_anti_affinity(
            rng.choice([ZONE, "kubernetes.io/hostname"]), app=app
        )
    elif roll < 0.6:
        builder = builder.spread(1, ZONE, selector={"matchLabels": {"app": app}})
    elif roll < 0.75:
        builder = builder.spread(
            1, "kubernetes.io/hostname", "ScheduleAnyway", selector={"matchLabels": {"app": app}}
        )
    return parse_pod(builder.obj())


def _outcome(result: ScheduleResult) -> tuple[object, ...]:
    statuses = result.diagnosis.node_to_status.statuses
    scores = result.scores
    return (
        result.suggested_host,
        result.evaluated_nodes,
        result.feasible_nodes,
        sorted((name, status.plugin, status.reasons) for name, status in statuses.items()),
        None if scores is None else (scores.names, scores.totals),
    )


@pytest.mark.parametrize("order", ORDERS, ids=["-".join(order) for order in ORDERS])
@pytest.mark.parametrize("seed", range(8))
def test_partial_reuse_gives_the_outcome_of_running_every_plugin(
    order: FilterOrder, seed: int
) -> None:
    rng = random.Random(seed)
    reusing, reference = Profile(order, reuse=True), Profile(order, reuse=False)
    nodes = ["a1", "a2", "b1", "b2", "c1"]
    zones = {"a1": "a", "a2": "a", "b1": "b", "b2": "b", "c1": "c"}
    for step in range(40):
        if rng.random() < 0.2:  # a node-local change: the node's taints
            name = rng.choice(nodes)
            node = make_node(name).zone(zones[name])
            if rng.random() < 0.5:
                node = node.taint("dedicated", "x", rng.choice(["NoSchedule", "PreferNoSchedule"]))
            for profile in (reusing, reference):
                profile.cache.update_node(parse_node(node.obj()))
        pod = _random_pod(rng, step)
        try:
            expected = _outcome(reference.schedule(pod))
        except FitError:
            expected = ("unschedulable",)
        try:
            got = _outcome(reusing.schedule(pod))
        except FitError:
            got = ("unschedulable",)
        assert got == expected, step
        if expected[0] != "unschedulable":
            bound = dict(pod.raw)
            bound["spec"] = {**pod.raw["spec"], "nodeName": expected[0]}
            for profile in (reusing, reference):
                profile.cache.add_pod(parse_pod(bound))
