"""What a node lacks for a pod: requests against what is free."""

from __future__ import annotations

import pytest

from scheduler.framework import NodeInfo, parse_node, parse_pod
from scheduler.simulate.verdicts import shortfall
from tests.support.builders import make_node, make_pod


def node_with(*used_cpu: str, cpu: str = "4", pods: str = "110") -> NodeInfo:
    info = NodeInfo(parse_node(make_node("n").capacity(cpu=cpu, memory="8Gi", pods=pods).obj()))
    for index, amount in enumerate(used_cpu):
        info.add_pod(parse_pod(make_pod(f"u{index}").requests(cpu=amount).node("n").obj()))
    return info


@pytest.mark.parametrize(
    ("node", "requests", "expected"),
    [
        pytest.param(node_with("3"), {"cpu": "2"}, {"cpu": "1"}, id="one CPU short"),
        pytest.param(node_with("3500m"), {"cpu": "1"}, {"cpu": "500m"}, id="millicores"),
        pytest.param(
            node_with(), {"cpu": "1", "memory": "10Gi"}, {"memory": "2048Mi"}, id="memory"
        ),
        pytest.param(node_with("1", pods="1"), {"cpu": "1"}, {"pods": "1"}, id="no pod slot left"),
        pytest.param(node_with("1"), {"cpu": "1"}, {}, id="it fits: nothing lacking"),
    ],
)
def test_shortfall(node: NodeInfo, requests: dict[str, str], expected: dict[str, str]) -> None:
    pod = parse_pod(make_pod("p").requests(**requests).obj())
    assert shortfall(pod, node) == expected
