"""Malformed pods and nodes: parsing never raises, and the error names the
field (what a user reads in the pod's condition or the node's log line)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework import parse_node, parse_pod
from scheduler.framework.quantity import QuantityError, to_milli
from tests.support.builders import make_node, make_pod


def _pod(**spec: Any) -> dict[str, Any]:
    raw = make_pod("p").uid("u").requests(cpu="1").obj()
    raw["spec"].update(spec)
    return raw


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        pytest.param(
            _pod(containers=[None]),
            "spec.containers[0]: expected an element, got null",
            id="null container",
        ),
        pytest.param(
            _pod(tolerations="all"),
            "spec.tolerations: expected a list, got str",
            id="tolerations not a list",
        ),
        pytest.param(
            _pod(containers=[{"name": "c", "resources": {"requests": {"cpu": "-2"}}}]),
            "container 'c' requests cpu: '-2' is negative",
            id="negative request",
        ),
        pytest.param(
            _pod(containers=[{"name": "c", "ports": [{"hostPort": "80"}]}]),
            "spec.containers[0].ports[0].hostPort: expected an integer, got str",
            id="host port as text",
        ),
        pytest.param(  # found by test_scheduler_fuzz: a list in a hashed signature
            _pod(containers=[{"name": "c", "ports": [{"hostPort": 80, "hostIP": [0]}]}]),
            "spec.containers[0].ports[0].hostIP: expected a string, got list",
            id="host IP as a list",
        ),
        pytest.param(
            _pod(containers=[{"name": "c", "ports": [{"hostPort": True}]}]),
            "spec.containers[0].ports[0].hostPort: expected an integer, got bool",
            id="host port as a boolean",
        ),
        pytest.param(
            _pod(priority="high"), "spec.priority: expected an integer, got str", id="priority"
        ),
        pytest.param(
            _pod(overhead={"cpu": "x"}), "overhead cpu: invalid quantity 'x'", id="bad overhead"
        ),
    ],
)
def test_malformed_pod_is_kept_with_an_error_naming_the_field(
    raw: dict[str, Any], problem: str
) -> None:
    pod = parse_pod(raw)
    assert (pod.key, pod.uid, pod.parse_error) == ("default/p", "u", problem)
    assert pod.requests.is_zero()


def test_malformed_node_has_nothing_allocatable_and_says_why() -> None:
    raw = make_node("n").allocatable(cpu="4").obj()
    raw["spec"] = {"taints": "none"}
    node = parse_node(raw)
    assert (node.name, node.parse_error) == ("n", "spec.taints: expected a list, got str")
    assert node.allocatable.is_zero()


@pytest.mark.parametrize("text", ["1e999999", "1e30", "99999999999999999999999999999999"])
def test_absurdly_large_quantities_are_refused_quickly(text: str) -> None:
    with pytest.raises(QuantityError, match="out of range"):
        to_milli(text)


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "text",
    [
        pytest.param("1" * 200_000 + "x", id="long digits, bad suffix (was quadratic)"),
        pytest.param("1" * 200_000 + ".5Z", id="long digits and a fraction, bad suffix"),
        pytest.param("1" + "0" * 200_000 + "e", id="long digits, exponent without digits"),
        pytest.param("\u0661", id="a non-ASCII decimal digit"),
        pytest.param("1.2.3", id="two points"),
    ],
)
def test_malformed_quantities_are_refused_in_linear_time(text: str) -> None:
    with pytest.raises(QuantityError, match="invalid quantity"):
        to_milli(text)
