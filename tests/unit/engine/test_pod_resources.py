"""A pod's effective requests during an in-place resize (upstream
``PodRequests`` with ``UseStatusResources``): per container the largest of
spec, actuated (``status.containerStatuses[].resources``) and allocated,
the status values alone when the resize is Infeasible; sidecars too, plain
init containers never; and the scale-down event follows the same rule."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scheduler.framework import ActionType, parse_pod
from scheduler.queue.hints import pod_update_events
from tests.support.builders import PodBuilder, make_pod

Edit = Callable[[PodBuilder], PodBuilder]
INFEASIBLE: Edit = lambda b: b.condition("PodResizePending", "True", reason="Infeasible")  # noqa: E731
DEFERRED: Edit = lambda b: b.condition("PodResizePending", "True", reason="Deferred")  # noqa: E731


def built(edit: Edit) -> PodBuilder:
    return edit(make_pod("p").uid("u"))


def cpu(edit: Edit) -> int:
    return parse_pod(built(edit).obj()).requests.milli_cpu


@pytest.mark.parametrize(
    ("edit", "milli_cpu"),
    [
        pytest.param(lambda b: b.requests(cpu="1"), 1000, id="no status: the spec"),
        pytest.param(
            lambda b: b.requests(cpu="1").container_status("main", requests={"cpu": "3"}),
            3000,
            id="resizing down 3 -> 1, not actuated: still 3",
        ),
        pytest.param(
            lambda b: b.requests(cpu="3").container_status(
                "main", requests={"cpu": "1"}, allocated={"cpu": "1"}
            ),
            3000,
            id="resizing up 1 -> 3: the spec",
        ),
        pytest.param(
            lambda b: b.requests(cpu="1").container_status(
                "main", requests={"cpu": "1"}, allocated={"cpu": "2"}
            ),
            2000,
            id="allocated above actuated and spec",
        ),
        pytest.param(
            lambda b: INFEASIBLE(
                b.requests(cpu="6").container_status(
                    "main", requests={"cpu": "1"}, allocated={"cpu": "1"}
                )
            ),
            1000,
            id="infeasible upsize 1 -> 6: the status alone",
        ),
        pytest.param(
            lambda b: DEFERRED(
                b.requests(cpu="6").container_status(
                    "main", requests={"cpu": "1"}, allocated={"cpu": "1"}
                )
            ),
            6000,
            id="deferred upsize: the spec",
        ),
        pytest.param(
            lambda b: b.requests(cpu="1").container_status("main", allocated={"cpu": "3"}),
            1000,
            id="no actuated resources reported: the spec",
        ),
        pytest.param(
            lambda b: (
                b.requests(cpu="1")
                .init_container("proxy", sidecar=True, cpu="1")
                .container_status("proxy", requests={"cpu": "2"}, init=True)
            ),
            3000,
            id="sidecar resizing down: its status counts",
        ),
        pytest.param(
            lambda b: (
                b.requests(cpu="1")
                .init_container("setup", cpu="1")
                .container_status("setup", requests={"cpu": "4"}, init=True)
            ),
            1000,
            id="plain init container: status ignored",
        ),
        pytest.param(
            lambda b: (
                b.requests(cpu="1")
                .container("other", cpu="1")
                .container_status("other", requests={"cpu": "2"})
            ),
            3000,
            id="matched by container name",
        ),
        pytest.param(
            lambda b: b.pod_requests(cpu="2").pod_status_resources(requests={"cpu": "4"}),
            4000,
            id="pod-level resources resizing down",
        ),
    ],
)
def test_effective_cpu_request(edit: Edit, milli_cpu: int) -> None:
    assert cpu(edit) == milli_cpu


def test_memory_and_non_zero_follow_the_same_rule() -> None:
    pod = parse_pod(
        built(
            lambda b: b.requests(memory="1Gi").container_status(
                "main", requests={"memory": "2Gi", "cpu": "500m"}
            )
        ).obj()
    )
    assert pod.requests.memory == 2 * 1024**3
    assert pod.requests.milli_cpu == 500
    # The actuated cpu request is a request: no 100m default for scoring.
    assert pod.non_zero_requests.milli_cpu == 500


@pytest.mark.parametrize(
    ("old", "new", "scaled_down"),
    [
        pytest.param(
            lambda b: b.requests(cpu="3").container_status("main", requests={"cpu": "3"}),
            lambda b: b.requests(cpu="1").container_status("main", requests={"cpu": "3"}),
            False,
            id="spec lowered, not actuated: nothing freed yet",
        ),
        pytest.param(
            lambda b: b.requests(cpu="1").container_status("main", requests={"cpu": "3"}),
            lambda b: b.requests(cpu="1").container_status("main", requests={"cpu": "1"}),
            True,
            id="the kubelet actuated the downsize",
        ),
        pytest.param(
            lambda b: b.requests(cpu="6").container_status(
                "main", requests={"cpu": "1"}, allocated={"cpu": "1"}
            ),
            lambda b: INFEASIBLE(
                b.requests(cpu="6").container_status(
                    "main", requests={"cpu": "1"}, allocated={"cpu": "1"}
                )
            ),
            True,
            id="upsize found infeasible: back to the status",
        ),
    ],
)
def test_scale_down_event_uses_the_effective_requests(
    old: Edit, new: Edit, scaled_down: bool
) -> None:
    before = parse_pod(built(lambda b: old(b).node("n1")).obj())
    after = parse_pod(built(lambda b: new(b).node("n1")).obj())
    actions = {event.action for event in pod_update_events(before, after)}
    assert (ActionType.UPDATE_POD_SCALE_DOWN in actions) == scaled_down


HUGE = "hugepages-2Mi"
MI = 1024**2


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        pytest.param(
            lambda b: b.pod_requests(**{HUGE: "4Mi"}),
            {HUGE: 4 * MI},
            id="pod-level hugepages alone count",
        ),
        pytest.param(
            lambda b: b.requests(**{HUGE: "2Mi"}).pod_requests(cpu="1", **{HUGE: "8Mi"}),
            {HUGE: 8 * MI},
            id="pod-level hugepages take precedence over the containers'",
        ),
        pytest.param(
            lambda b: b.requests(**{HUGE: "2Mi", "example.com/gpu": "1"}).pod_requests(cpu="1"),
            {HUGE: 2 * MI, "example.com/gpu": 1},
            id="container hugepages stay when the pod level does not set them",
        ),
        pytest.param(
            lambda b: b.requests(**{"example.com/gpu": "1"}).pod_requests(
                **{HUGE: "2Mi", "example.com/gpu": "3"}
            ),
            {HUGE: 2 * MI, "example.com/gpu": 1},
            id="an extended resource is not a pod-level resource",
        ),
        pytest.param(
            lambda b: b.pod_requests(**{HUGE: "2Mi", "hugepages-1Gi": "1Gi"}).overhead(
                **{HUGE: "2Mi"}
            ),
            {HUGE: 4 * MI, "hugepages-1Gi": 1024**3},
            id="overhead adds to pod-level hugepages",
        ),
    ],
)
def test_pod_level_hugepages_requests_count_as_upstream(
    edit: Edit, expected: dict[str, int]
) -> None:
    assert dict(parse_pod(built(edit).obj()).requests.scalar) == expected
