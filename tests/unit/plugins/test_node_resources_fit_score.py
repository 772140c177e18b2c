"""NodeResourcesFit scoring: the three strategies with exact Go integer results.

The expected numbers are worked by hand. The common setup: a node with 4 cpu
and memory 10000, running a pod of 1500m / 2000; the scored pod asks
1000m / 3000. So cpu is at 2500/4000 (62.5%) and memory at 5000/10000 (50%).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from plugins.node_resources_fit import NodeResourcesFit, NodeResourcesFitArgs
from plugins.node_resources_fit.scoring import broken_linear, go_div, go_round_ratio
from scheduler.framework import CycleState
from tests.support.builders import make_node, make_pod
from tests.unit.plugins.support import Obj, node_info, pod

GPU = "example.com/gpu"
NODE = make_node("n").capacity(cpu="4", memory="10000", pods="110").obj()
BIG_NODE = make_node("n").capacity(cpu="4", memory="8Gi", pods="110").obj()
GPU_NODE = make_node("n").capacity(cpu="4", memory="10000", pods="110").resource(GPU, "4").obj()
DISK_NODE = make_node("n").capacity(cpu="4", memory="10000", pods="110").obj()
DISK_NODE["status"]["capacity"]["ephemeral-storage"] = "1000"
SMALL_MEMORY_NODE = make_node("n").capacity(cpu="4", memory="100Mi", pods="110").obj()

EXISTING = make_pod("e").requests(cpu="1500m", memory="2000").obj()
EXISTING_MORE_MEMORY = make_pod("e").requests(cpu="1500m", memory="2100").obj()
EXISTING_GPU = make_pod("e").requests(cpu="1500m", memory="2000").request(GPU, "1").obj()
POD = make_pod("p").requests(cpu="1", memory="3000").obj()
NO_REQUESTS = make_pod("p").obj()

BIN_PACKING = {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}
SPREADING = {
    "shape": [
        {"utilization": 0, "score": 10},
        {"utilization": 30, "score": 5},
        {"utilization": 100, "score": 0},
    ]
}


def strategy(
    type_: str, resources: Sequence[Mapping[str, object]] | None = None, **extra: object
) -> Obj:
    fields: Obj = {"type": type_, **extra}
    if resources is not None:
        fields["resources"] = resources
    return {"scoringStrategy": fields}


def rtcr(shape: Obj, resources: Sequence[Mapping[str, object]] | None = None) -> Obj:
    return strategy("RequestedToCapacityRatio", resources, requestedToCapacityRatio=shape)


CPU_3_MEMORY_1 = [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]
CPU_GPU = [{"name": "cpu", "weight": 1}, {"name": GPU, "weight": 3}]
CPU_DISK = [{"name": "cpu"}, {"name": "ephemeral-storage"}]


@pytest.mark.parametrize(
    ("plugin_args", "raw_node", "existing", "raw_pod", "expected"),
    [
        # LeastAllocated: cpu 1500*100//4000 = 37, memory 50 -> 87//2.
        pytest.param({}, NODE, [EXISTING], POD, 43, id="least allocated (default)"),
        # (37*3 + 50*1) // 4 = 161 // 4.
        pytest.param(
            strategy("LeastAllocated", CPU_3_MEMORY_1),
            NODE,
            [EXISTING],
            POD,
            40,
            id="least allocated, weighted",
        ),
        # Empty 4-cpu/8Gi node, pod without requests counts 100m/200Mi: 97 and 97.
        pytest.param({}, BIG_NODE, [], NO_REQUESTS, 97, id="least allocated, non-zero defaults"),
        # An existing pod without requests also counts 100m/200Mi: 95 and 95.
        pytest.param(
            {},
            BIG_NODE,
            [make_pod("e").obj()],
            NO_REQUESTS,
            95,
            id="least allocated, defaults on the node too",
        ),
        # 500m + 500m overhead: the same 1000m as POD.
        pytest.param(
            {},
            NODE,
            [EXISTING],
            make_pod("p").requests(cpu="500m", memory="3000").overhead(cpu="500m").obj(),
            43,
            id="least allocated counts overhead",
        ),
        # MostAllocated: cpu 2500*100//4000 = 62, memory 50 -> 112//2.
        pytest.param(strategy("MostAllocated"), NODE, [EXISTING], POD, 56, id="most allocated"),
        # memory 200Mi default on a 100Mi node is capped: 100; cpu 25 -> 125//2.
        pytest.param(
            strategy("MostAllocated"),
            SMALL_MEMORY_NODE,
            [],
            make_pod("p").requests(cpu="1").obj(),
            62,
            id="most allocated caps requests at capacity",
        ),
        # Bin packing: utilization 62 -> 62, 50 -> 50; round(112/2).
        pytest.param(rtcr(BIN_PACKING), NODE, [EXISTING], POD, 56, id="ratio, bin packing"),
        # memory utilization 51 -> 51; round(113/2 = 56.5) rounds half up.
        pytest.param(
            rtcr(BIN_PACKING),
            NODE,
            [EXISTING_MORE_MEMORY],
            POD,
            57,
            id="ratio rounds half up",
        ),
        # Scaled shape (0,100) (30,50) (100,0): cpu 50 + trunc(-50*32/70) = 50-22 = 28,
        # memory 50 + trunc(-50*20/70) = 50-14 = 36; round(64/2).
        pytest.param(
            rtcr(SPREADING), NODE, [EXISTING], POD, 32, id="ratio, decreasing shape truncates"
        ),
        # ephemeral-storage at 0% scores 0 and is left out of the mean: only cpu's 62.
        pytest.param(
            rtcr(BIN_PACKING, CPU_DISK),
            DISK_NODE,
            [EXISTING],
            POD,
            62,
            id="ratio leaves zero scores out",
        ),
        # The same resources under LeastAllocated: (37 + 100) // 2.
        pytest.param(
            strategy("LeastAllocated", CPU_DISK),
            DISK_NODE,
            [EXISTING],
            POD,
            68,
            id="least allocated keeps zero usage",
        ),
        # 200Mi default over a 100Mi node: utilization 100 -> 100.
        pytest.param(
            rtcr(BIN_PACKING, [{"name": "memory"}]),
            SMALL_MEMORY_NODE,
            [],
            NO_REQUESTS,
            100,
            id="ratio over capacity is full",
        ),
        # gpu 2/4 -> 50, cpu 37: (37*1 + 50*3) // 4 = 187 // 4.
        pytest.param(
            strategy("LeastAllocated", CPU_GPU),
            GPU_NODE,
            [EXISTING_GPU],
            make_pod("p").requests(cpu="1", memory="3000").request(GPU, "1").obj(),
            46,
            id="extended resource scored",
        ),
        pytest.param(
            strategy("LeastAllocated", CPU_GPU),
            GPU_NODE,
            [EXISTING_GPU],
            POD,
            37,
            id="extended resource not requested is left out",
        ),
        pytest.param(
            strategy("LeastAllocated", CPU_GPU),
            NODE,
            [EXISTING],
            make_pod("p").requests(cpu="1", memory="3000").request(GPU, "1").obj(),
            37,
            id="extended resource the node lacks is left out",
        ),
        # gpu 2/4 -> 50, cpu 62: (62 + 150) // 4.
        pytest.param(
            strategy("MostAllocated", CPU_GPU),
            GPU_NODE,
            [EXISTING_GPU],
            make_pod("p").requests(cpu="1", memory="3000").request(GPU, "1").obj(),
            53,
            id="most allocated with extended resource",
        ),
    ],
)
def test_score(
    plugin_args: Obj, raw_node: Obj, existing: list[Obj], raw_pod: Obj, expected: int
) -> None:
    plugin = NodeResourcesFit(NodeResourcesFitArgs.model_validate(plugin_args))
    state = CycleState()
    the_pod = pod(raw_pod)
    info = node_info(raw_node, *existing)
    assert plugin.pre_score(state, the_pod, [info]) is None
    assert plugin.score(state, the_pod, info) == (expected, None)
    # Without PreScore's state the request is computed on the spot, as upstream.
    assert plugin.score(CycleState(), the_pod, info) == (expected, None)
    assert plugin.score_extensions() is None


@pytest.mark.parametrize(
    ("numerator", "denominator", "expected"),
    [
        pytest.param(7, 2, 3, id="positive truncates"),
        pytest.param(-7, 2, -3, id="negative truncates toward zero"),
        pytest.param(7, -2, -3, id="negative divisor"),
        pytest.param(-1600, 70, -22, id="shape slope"),
        pytest.param(0, 5, 0, id="zero"),
    ],
)
def test_go_div(numerator: int, denominator: int, expected: int) -> None:
    assert go_div(numerator, denominator) == expected


@pytest.mark.parametrize(
    ("numerator", "denominator", "expected"),
    [
        pytest.param(113, 2, 57, id="half rounds up"),
        pytest.param(112, 3, 37, id="below half rounds down"),
        pytest.param(113, 3, 38, id="above half rounds up"),
        pytest.param(0, 4, 0, id="zero"),
    ],
)
def test_go_round_ratio(numerator: int, denominator: int, expected: int) -> None:
    assert go_round_ratio(numerator, denominator) == expected


SHAPE = ((10, 20), (50, 100), (80, 30))


@pytest.mark.parametrize(
    ("utilization", "expected"),
    [
        pytest.param(0, 20, id="below the first point"),
        pytest.param(10, 20, id="at the first point"),
        pytest.param(30, 60, id="rising segment"),
        # 100 + trunc(-70 * 1 / 30) = 100 - 2 (flooring would give 97).
        pytest.param(51, 98, id="falling segment truncates toward zero"),
        pytest.param(80, 30, id="at the last point"),
        pytest.param(100, 30, id="beyond the last point"),
    ],
)
def test_broken_linear(utilization: int, expected: int) -> None:
    assert broken_linear(SHAPE, utilization) == expected
