"""The FitError message users read in events and conditions, exactly as
upstream's ``FitError.Error()`` renders it."""

from __future__ import annotations

import pytest

from scheduler.framework import NodeToStatus, Status, parse_pod
from scheduler.framework.types import Diagnosis, FitError, fit_error_message
from tests.support.builders import make_pod
from tests.support.objects import pod

CPU = Status.unschedulable("Insufficient cpu")
TAINT = Status.unschedulable("node(s) had untolerated taint {dedicated: db}")


def statuses(**by_node: Status) -> NodeToStatus:
    return NodeToStatus(statuses=dict(by_node))


@pytest.mark.parametrize(
    ("num_nodes", "diagnosis", "message"),
    [
        pytest.param(
            3,
            Diagnosis(statuses(n1=CPU, n2=CPU, n3=TAINT)),
            "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: db}, "
            "2 Insufficient cpu.",
            id="histogram of reasons, sorted",
        ),
        pytest.param(
            12,
            Diagnosis(
                statuses(
                    **{f"n{i}": Status.unschedulable("a") for i in range(10)},
                    n10=Status.unschedulable("b"),
                    n11=Status.unschedulable("b"),
                )
            ),
            "0/12 nodes are available: 10 a, 2 b.",
            id="sorted as strings: 10 before 2, as upstream",
        ),
        pytest.param(
            2,
            Diagnosis(statuses(n1=Status.unschedulable("Insufficient cpu", "Insufficient memory"))),
            "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.",
            id="every reason of a node counts; a node without status counts nothing",
        ),
        pytest.param(
            5,
            Diagnosis(
                NodeToStatus(
                    statuses={"n1": CPU},
                    absent=Status.unresolvable("node(s) didn't satisfy plugin(s) [NodeAffinity]"),
                )
            ),
            "0/5 nodes are available: 1 Insufficient cpu, "
            "4 node(s) didn't satisfy plugin(s) [NodeAffinity].",
            id="nodes without status get the absent status",
        ),
        pytest.param(
            3,
            Diagnosis(statuses(n1=CPU), pre_filter_msg="pod has unbound immediate claims"),
            "0/3 nodes are available: pod has unbound immediate claims.",
            id="a PreFilter message replaces the histogram",
        ),
        pytest.param(
            2,
            Diagnosis(
                statuses(n1=CPU, n2=CPU),
                post_filter_msg="preemption: 0/2 nodes are available: 2 No preemption "
                "victims found for incoming pod.",
            ),
            "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are "
            "available: 2 No preemption victims found for incoming pod.",
            id="the PostFilter message follows as it is (1.36: no second period)",
        ),
        pytest.param(
            1,
            Diagnosis(pre_filter_msg="no", post_filter_msg="not helpful"),
            "0/1 nodes are available: no. not helpful",
            id="PreFilter and PostFilter messages",
        ),
        pytest.param(
            2, Diagnosis(), "0/2 nodes are available:", id="no reason at all: just the prefix"
        ),
    ],
)
def test_fit_error_message(num_nodes: int, diagnosis: Diagnosis, message: str) -> None:
    assert fit_error_message(num_nodes, diagnosis) == message
    assert str(FitError(pod("p"), num_nodes, diagnosis)) == message


@pytest.mark.parametrize(
    ("requests", "problem"),
    [
        pytest.param(
            {"cpu": "lots"}, "container 'main' requests cpu: invalid quantity 'lots'", id="cpu"
        ),
        pytest.param(
            {"memory": "1Gx"},
            "container 'main' requests memory: invalid quantity '1Gx'",
            id="memory",
        ),
        pytest.param(
            {"example.com/gpu": "one"},
            "container 'main' requests example.com/gpu: invalid quantity 'one'",
            id="extended",
        ),
    ],
)
def test_malformed_requests_name_the_container_and_resource(
    requests: dict[str, str], problem: str
) -> None:
    parsed = parse_pod(make_pod("p").requests(**requests).obj())
    assert parsed.parse_error == problem
    assert parsed.requests.is_zero()
