"""The plugins through pyscheduler's public test helpers (scheduler.testing):
arguments validated as a KubeSchedulerConfiguration would, Filter and Score
run as the framework runs them, the SignPlugin promise checked, the queueing
hint of PoolFilter's registered event."""

from __future__ import annotations

import pytest
from pool_plugins import POOL_FILTER, PREFER_POOL, PoolFilter, PoolFilterArgs

from scheduler.framework import ActionType, EventResource, QueueingHint
from scheduler.testing import (
    ConfigError,
    build_plugin,
    check_signature_promise,
    make_node,
    make_pod,
    run_filter,
    run_score,
)

BLUE = make_node("blue-1", labels={"example.com/pool": "blue"})
GREEN = make_node("green-1", labels={"example.com/pool": "green"})
RED = make_node("red-1", labels={"example.com/pool": "red"})
NONE = make_node("plain-1")


@pytest.mark.parametrize(
    ("node", "fits"),
    [(BLUE, True), (GREEN, True), (RED, False), (NONE, False)],
    ids=["blue", "green", "red", "no pool"],
)
def test_filter_keeps_pods_in_the_allowed_pools(node: object, fits: bool) -> None:
    plugin = build_plugin(POOL_FILTER, {"allowed": ["blue", "green"]})

    status = run_filter(plugin, make_pod("p"), node)  # type: ignore[arg-type]

    assert (status is None) == fits
    if not fits:
        assert status is not None
        assert status.reasons == ("node(s) not in pool blue or green",)


def test_filter_receives_its_typed_args_with_defaults() -> None:
    plugin = build_plugin(POOL_FILTER, {"allowed": ["blue"]})

    assert plugin.args == PoolFilterArgs(label="example.com/pool", allowed=("blue",))  # type: ignore[attr-defined]


def test_score_prefers_one_pool() -> None:
    plugin = build_plugin(PREFER_POOL, {"preferred": "green"})

    assert run_score(plugin, make_pod("p"), [BLUE, GREEN, RED]) == {
        "blue-1": 0,
        "green-1": 100,
        "red-1": 0,
    }


@pytest.mark.parametrize(
    ("spec", "args", "problem"),
    [
        (POOL_FILTER, {}, "pluginConfig.PoolFilter.args.allowed: required field"),
        (POOL_FILTER, {"allowed": []}, "pluginConfig.PoolFilter.args.allowed"),
        (PREFER_POOL, {"preferred": "x", "weight": 3}, "args.weight: unknown field"),
    ],
    ids=["allowed missing", "allowed empty", "unknown field"],
)
def test_bad_args_are_refused_with_the_field(spec: object, args: dict, problem: str) -> None:
    with pytest.raises(ConfigError) as error:
        build_plugin(spec, args)  # type: ignore[arg-type]

    assert problem in str(error.value)


PODS = [
    make_pod("a"),
    make_pod("b", labels={"app": "web"}),
    make_pod("c", requests={"cpu": "1"}, node_selector={"disk": "ssd"}),
]


@pytest.mark.parametrize(
    ("spec", "args"),
    [(POOL_FILTER, {"allowed": ["blue", "green"]}), (PREFER_POOL, {"preferred": "green"})],
    ids=["PoolFilter", "PreferPool"],
)
def test_pods_of_one_signature_get_the_same_results(spec: object, args: dict) -> None:
    plugin = build_plugin(spec, args)  # type: ignore[arg-type]

    assert check_signature_promise(plugin, PODS, [BLUE, GREEN, RED, NONE]) > 0


@pytest.mark.parametrize(
    ("node", "hint"),
    [(BLUE, QueueingHint.QUEUE), (RED, QueueingHint.QUEUE_SKIP), (NONE, QueueingHint.QUEUE_SKIP)],
    ids=["now blue", "now red", "no pool"],
)
def test_only_a_node_in_an_allowed_pool_requeues_a_rejected_pod(
    node: object, hint: QueueingHint
) -> None:
    plugin = build_plugin(POOL_FILTER, {"allowed": ["blue"]})
    assert isinstance(plugin, PoolFilter)
    (registered,) = plugin.events_to_register()
    assert registered.event.resource is EventResource.NODE
    assert registered.event.action & ActionType.UPDATE_NODE_LABEL
    assert registered.hint is not None

    assert registered.hint(make_pod("p"), None, node.node) is hint  # type: ignore[attr-defined]
