"""The chaos suite's independent request oracle against hand-computed values
of upstream's rules (resourcehelper.PodRequests), and its comparison of a
scheduler's node view with the API's objects."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.support.builders import make_node, make_pod
from tests.support.podrequests import (
    bound_elsewhere,
    imports_scheduler,
    node_view_differences,
    overcommitted,
    pod_requests,
    quantity,
)

MI = 2**20


@pytest.mark.parametrize(
    ("text", "value"),
    [
        pytest.param("300m", "0.3", id="milli"),
        pytest.param("1.5Gi", str(1.5 * 2**30), id="binary-fraction"),
        pytest.param("2e3", "2000", id="exponent"),
        pytest.param("1k", "1000", id="decimal-kilo"),
        pytest.param("5", "5", id="plain"),
        pytest.param("100n", "1e-7", id="nano"),
    ],
)
def test_quantities_parse_to_their_value(text: str, value: str) -> None:
    assert quantity(text) == Decimal(value)


@pytest.mark.parametrize("text", ["", "abc", "1Zi", "inf", "nan"])
def test_malformed_quantities_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a quantity"):
        quantity(text)


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(
            make_pod("p").requests(cpu="300m", memory="64Mi"),
            {"cpu": 300, "memory": 64 * MI},
            id="one-container",
        ),
        pytest.param(
            make_pod("p").requests(cpu="100m").container("b", cpu="250m"),
            {"cpu": 350},
            id="app-containers-sum",
        ),
        pytest.param(
            make_pod("p").requests(cpu="100m").init_container("i", cpu="500m"),
            {"cpu": 500},
            id="init-container-bigger-than-the-app-wins",
        ),
        pytest.param(
            make_pod("p").requests(cpu="600m").init_container("i", cpu="500m"),
            {"cpu": 600},
            id="app-bigger-than-the-init-container-wins",
        ),
        pytest.param(
            # sidecar 200 runs beside the app (100): 300; the init container
            # after it needs 250 + 200 = 450, the larger.
            make_pod("p")
            .requests(cpu="100m")
            .init_container("s", sidecar=True, cpu="200m")
            .init_container("i", cpu="250m"),
            {"cpu": 450},
            id="sidecar-adds-to-later-init-containers",
        ),
        pytest.param(
            # init 250 runs before the sidecar: max(250, 200+100) = 300.
            make_pod("p")
            .requests(cpu="100m")
            .init_container("i", cpu="250m")
            .init_container("s", sidecar=True, cpu="200m"),
            {"cpu": 300},
            id="sidecar-after-an-init-container-only-adds-to-the-app",
        ),
        pytest.param(
            make_pod("p").requests(cpu="100m").overhead(cpu="50m", memory="10Mi"),
            {"cpu": 150, "memory": 10 * MI},
            id="overhead-added",
        ),
        pytest.param(
            make_pod("p")
            .requests(cpu="100m", memory="1Mi")
            .container("b", cpu="100m")
            .pod_requests(cpu="1", **{"hugepages-2Mi": "4Mi"})
            .overhead(cpu="10m"),
            {"cpu": 1010, "memory": MI, "hugepages-2Mi": 4 * MI},
            id="pod-level-overrides-what-it-sets-overhead-still-added",
        ),
        pytest.param(
            make_pod("p").requests(cpu="500m").container_status("main", allocated={"cpu": "800m"}),
            {"cpu": 800},
            id="resize-down-pending-counts-the-allocated-larger",
        ),
        pytest.param(
            make_pod("p").requests(cpu="900m").container_status("main", requests={"cpu": "200m"}),
            {"cpu": 900},
            id="resize-up-pending-counts-the-spec-larger",
        ),
        pytest.param(
            make_pod("p")
            .requests(cpu="900m")
            .container_status("main", allocated={"cpu": "200m"})
            .condition("PodResizePending", "True", reason="Infeasible"),
            {"cpu": 200},
            id="infeasible-resize-counts-the-allocated-only",
        ),
        pytest.param(
            make_pod("p").pod_requests(cpu="1").pod_status_resources(requests={"cpu": "2"}),
            {"cpu": 2000},
            id="pod-level-resize-counts-the-larger",
        ),
    ],
)
def test_pod_requests_follow_upstream_rules(pod: Any, expected: dict[str, int]) -> None:
    assert pod_requests(pod.obj()) == expected


def test_overcommit_is_found_per_resource_and_pod_count() -> None:
    nodes = [make_node("n").allocatable(cpu="1", memory="1Gi", pods="2").obj()]
    fits = [make_pod(f"p{i}").node("n").requests(cpu="400m").obj() for i in range(2)]
    assert overcommitted(nodes, fits) == {}
    crowded = [*fits, make_pod("p3").node("n").obj()]
    assert overcommitted(nodes, crowded) == {"n": "pods 3 > 2"}
    big = [make_pod("b").node("n").requests(cpu="400m").init_container("i", cpu="2").obj()]
    assert overcommitted(nodes, big) == {"n": "cpu 2000 > 1000"}


def test_terminal_pods_do_not_count_and_pods_on_missing_nodes_are_named() -> None:
    nodes = [make_node("n").allocatable(cpu="1", pods="1").obj()]
    pods = [
        make_pod("done").node("n").requests(cpu="1").phase("Succeeded").obj(),
        make_pod("live").node("n").requests(cpu="1").obj(),
        make_pod("orphan").node("gone").obj(),
    ]
    assert overcommitted(nodes, pods) == {}
    assert bound_elsewhere(nodes, pods) == ["orphan"]


# ------------------------------------------------------------ the node view check
NODE = (
    make_node("n1")
    .capacity(cpu="4", memory="16Gi", pods="110")
    .label("zone", "a")
    .taint("spare", "yes")
    .obj()
)
ON_N1 = [
    make_pod("a", "ns").node("n1").requests(cpu="300m", memory="64Mi").obj(),
    make_pod("b", "other").node("n1").requests(cpu="1").obj(),
    make_pod("c", "ns").node("n2").requests(cpu="2").obj(),  # another node: not counted
]
TRUE_VIEW: dict[str, Any] = {
    "labels": {"kubernetes.io/hostname": "n1", "zone": "a"},
    "taints": [{"key": "spare", "value": "yes", "effect": "NoSchedule"}],
    "allocatable": {"cpu": 4000, "memory": 16 * 2**30, "pods": 110},
    "requested": {"cpu": 1300, "memory": 64 * MI, "pods": 2},
    "pods": ["ns/a", "other/b"],
}


def _view(**changes: Any) -> dict[str, Any]:
    return {"n1": {**TRUE_VIEW, **changes}}


@pytest.mark.parametrize(
    ("cache", "expected"),
    [
        pytest.param(_view(), [], id="the true view of every part: no difference"),
        pytest.param(
            _view(labels={"kubernetes.io/hostname": "n1", "zone": "b"}),
            ["n1: labels {'kubernetes.io/hostname': 'n1', 'zone': 'b'} in the cache"],
            id="a stale label",
        ),
        pytest.param(
            _view(taints=[]),
            ["n1: taints [] in the cache, [('spare', 'yes', 'NoSchedule')] in the API"],
            id="a taint the cache missed",
        ),
        pytest.param(
            _view(allocatable={"cpu": 2000, "memory": 16 * 2**30, "pods": 110}),
            ["n1: allocatable"],
            id="allocatable from an old node object",
        ),
        pytest.param(
            _view(requested={"cpu": 300, "memory": 64 * MI, "pods": 1}, pods=["ns/a"]),
            ["n1: requested", "n1: pods"],
            id="a pod of another namespace not counted",
        ),
        pytest.param(
            _view(requested={**TRUE_VIEW["requested"], "ephemeral-storage": 0}),
            [],
            id="zero amounts are absent amounts",
        ),
        pytest.param({}, ["n1: not in the scheduler's cache"], id="node unknown to the cache"),
    ],
)
def test_node_view_differences_name_each_wrong_part(
    cache: dict[str, Any], expected: list[str]
) -> None:
    found = node_view_differences(cache, [NODE], ON_N1)
    assert len(found) == len(expected)
    for line, start in zip(found, expected, strict=True):
        assert line.startswith(start)


def test_the_oracle_imports_nothing_from_the_scheduler(tmp_path: Any) -> None:
    dependent = tmp_path / "dependent.py"
    dependent.write_text("from scheduler.framework import resource\n")
    assert imports_scheduler(dependent)  # the check can fail
    assert not imports_scheduler()
