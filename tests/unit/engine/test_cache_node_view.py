"""The cache's node view (``CacheDump.node_views``, served in /debug/cache)
agrees with the chaos suite's independent oracle computed from the same API
objects, for pods whose requests exercise each of upstream's rules."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.cache import Cache
from scheduler.framework import parse_node, parse_pod
from tests.support.builders import make_node, make_pod
from tests.support.clock import FakeClock
from tests.support.podrequests import node_view_differences


def _node() -> dict[str, Any]:
    builder = make_node("n1").capacity(cpu="8", memory="32Gi", pods="110")
    return builder.label("zone", "a").taint("dedicated", "db", "NoExecute").obj()


@pytest.mark.parametrize(
    "pods",
    [
        pytest.param([], id="an empty node"),
        pytest.param(
            [
                make_pod("plain", "ns")
                .uid("u1")
                .node("n1")
                .requests(cpu="300m", memory="64Mi")
                .obj()
            ],
            id="one plain pod",
        ),
        pytest.param(
            [
                make_pod("init", "ns")
                .uid("u2")
                .node("n1")
                .container("app", cpu="100m")
                .init_container("setup", cpu="1")
                .init_container("proxy", sidecar=True, cpu="200m")
                .overhead(cpu="50m", memory="10Mi")
                .obj(),
                make_pod("level", "other")
                .uid("u3")
                .node("n1")
                .pod_requests(cpu="2", memory="1Gi")
                .obj(),
            ],
            id="init containers, a sidecar, overhead and pod-level requests",
        ),
    ],
)
def test_the_cache_view_of_a_node_matches_the_independent_oracle(
    pods: list[dict[str, Any]],
) -> None:
    cache = Cache(FakeClock(now=0.0))
    node = _node()
    cache.add_node(parse_node(node))
    for raw in pods:
        cache.add_pod(parse_pod(raw))

    views = cache.dump().node_views()

    assert views["n1"]["labels"] == {"kubernetes.io/hostname": "n1", "zone": "a"}
    assert views["n1"]["taints"] == [{"key": "dedicated", "value": "db", "effect": "NoExecute"}]
    assert len(views["n1"]["pods"]) == len(pods)
    assert node_view_differences(views, [node], pods) == []


def test_ghost_nodes_are_left_out_of_the_view() -> None:
    cache = Cache(FakeClock(now=0.0))
    cache.add_node(parse_node(_node()))
    cache.add_pod(parse_pod(make_pod("p", "ns").node("n1").obj()))
    cache.remove_node("n1")
    assert "n1" in cache.dump().nodes  # still held: its pod is there
    assert cache.dump().node_views() == {}
