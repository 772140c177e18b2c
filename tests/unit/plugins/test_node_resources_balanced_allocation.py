"""NodeResourcesBalancedAllocation: upstream 1.36 score of the change in balance."""

from __future__ import annotations

from typing import cast

import pytest
from pydantic import ValidationError

from plugins.node_resources_balanced_allocation import (
    NAME,
    BalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
    balanced_resource_score,
    balanced_score,
)
from plugins.node_resources_balanced_allocation.plugin import new
from scheduler.framework import Code, CycleState, Handle
from tests.support.builders import make_node, make_pod
from tests.unit.plugins.support import Obj, node_info, pod


def plugin(args: Obj | None = None) -> BalancedAllocation:
    validated = NodeResourcesBalancedAllocationArgs.model_validate(args or {})
    return new(validated, cast(Handle, object()))


@pytest.mark.parametrize(
    ("requested", "allocatable", "expected"),
    [
        pytest.param([2, 2], [4, 4], 100, id="equal fractions"),
        pytest.param([3, 1], [4, 4], 75, id="two: half the difference"),
        pytest.param([8, 0], [4, 4], 50, id="fraction capped at 1"),
        pytest.param([1, 2], [0, 4], 100, id="one resource: no deviation"),
        # fractions 0.2, 0.5, 0.8: std = sqrt(0.06) = 0.2449..., 75.5 truncated
        pytest.param([1, 5, 8], [5, 10, 10], 75, id="three: population std-dev"),
        pytest.param([], [], 100, id="nothing"),
    ],
)
def test_balanced_resource_score(
    requested: list[int], allocatable: list[int], expected: int
) -> None:
    assert balanced_resource_score(requested, allocatable) == expected


@pytest.mark.parametrize(
    ("with_pod", "without_pod", "allocatable", "expected"),
    [
        # with 100, without int(87.5) = 87: 50 + (50 + 13) / 2 = 81 (integer division)
        pytest.param([2, 2], [1, 0], [4, 4], 81, id="pod improves balance"),
        # with 75, without 100: 50 + (50 - 25) / 2 = 62
        pytest.param([3, 1], [1, 1], [4, 4], 62, id="pod worsens balance"),
        pytest.param([2, 2], [1, 1], [4, 4], 75, id="no change"),
    ],
)
def test_balanced_score(
    with_pod: list[int], without_pod: list[int], allocatable: list[int], expected: int
) -> None:
    assert balanced_score(with_pod, without_pod, allocatable) == expected


NODE = make_node("n").capacity(cpu="4", memory="4Gi", pods="110").obj()


@pytest.mark.parametrize(
    ("raw_pod", "running", "expected"),
    [
        # node 1 cpu / 0 memory used (actual requests); pod 1 cpu, 2Gi:
        # with: 0.5/0.5 -> 100; without: 0.25/0 -> 87; 50 + (50 + 13) / 2 = 81
        pytest.param(
            make_pod("p").requests(cpu="1", memory="2Gi").obj(),
            [make_pod("r").node("n").requests(cpu="1").obj()],
            81,
            id="uses actual requests, not the non-zero defaults",
        ),
        # with: 2/4 cpu, 0 memory -> 75; without: 0, 0 -> 100; 50 + 25 / 2 = 62
        pytest.param(make_pod("p").requests(cpu="2").obj(), [], 62, id="cpu only on an empty node"),
        # extended resource configured but not requested: left out
        pytest.param(
            make_pod("p").requests(cpu="2", memory="2Gi").obj(), [], 75, id="balanced pod"
        ),
    ],
)
def test_score(raw_pod: Obj, running: list[Obj], expected: int) -> None:
    balanced = plugin()
    state = CycleState()
    the_pod = pod(raw_pod)
    info = node_info(NODE, *running)
    assert balanced.pre_score(state, the_pod, [info]) is None
    assert balanced.score(state, the_pod, info) == (expected, None)


def test_extended_resource_not_requested_is_left_out() -> None:
    balanced = plugin(
        {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "example.com/gpu"}]}
    )
    node = (
        make_node("n").capacity(cpu="4", memory="4Gi", pods="110").resource("example.com/gpu", "4")
    )
    the_pod = pod(make_pod("p").requests(cpu="2", memory="2Gi").obj())
    state = CycleState()
    assert balanced.pre_score(state, the_pod, []) is None
    # Only cpu and memory count: 0.5/0.5 both with and without (0/0) the pod.
    assert balanced.score(state, the_pod, node_info(node.obj())) == (75, None)
    with_gpu = pod(
        make_pod("g").requests(cpu="2", memory="2Gi").request("example.com/gpu", "4").obj()
    )
    state = CycleState()
    assert balanced.pre_score(state, with_gpu, []) is None
    # fractions 0.5, 0.5, 1.0: std = 0.2357..., 76; without: 0,0,0 -> 100; 50 + 26 / 2 = 63
    assert balanced.score(state, with_gpu, node_info(node.obj())) == (63, None)


def test_best_effort_pod_is_skipped() -> None:
    status = plugin().pre_score(CycleState(), pod(make_pod("p").obj()), [])
    assert status is not None
    assert status.code is Code.SKIP


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param({"resources": [{"name": "cpu", "weight": 2}]}, "must be 1", id="weight 2"),
        pytest.param(
            {"resources": [{"name": "cpu"}, {"name": "cpu"}]}, "Duplicate value", id="duplicate"
        ),
        pytest.param({"resource": []}, "Extra inputs", id="unknown key"),
    ],
)
def test_args_rejected(args: Obj, message: str) -> None:
    with pytest.raises(ValidationError) as raised:
        NodeResourcesBalancedAllocationArgs.model_validate(args)
    assert message in str(raised.value)
    assert "resource" in str(raised.value)


def test_args_defaults() -> None:
    args = NodeResourcesBalancedAllocationArgs.model_validate(
        {"resources": [{"name": "cpu", "weight": 0}]}
    )
    assert [(r.name, r.weight) for r in args.resources] == [("cpu", 1)]
    default = NodeResourcesBalancedAllocationArgs.model_validate({})
    assert [r.name for r in default.resources] == ["cpu", "memory"]


def test_name() -> None:
    assert BalancedAllocation.name == NAME == "NodeResourcesBalancedAllocation"
