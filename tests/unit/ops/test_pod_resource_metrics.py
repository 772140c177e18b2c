"""``/metrics/resources`` as kube-scheduler serves it: each non-terminal pod's
effective requests and limits (upstream's ``PodRequests``/``PodLimits``), by
namespace, pod, node, scheduler, priority, resource and unit."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from scheduler.framework.resource import pod_limits
from scheduler.ops.podresources import PodResourceCollector, samples
from tests.support.builders import make_pod


def _limits(pod: dict[str, Any]) -> dict[str, int]:
    limits = pod_limits(pod["spec"])
    return {name: limits.get(name) for name in limits.names()}


def _with_init(pod: dict[str, Any], cpu: str, *, sidecar: bool) -> dict[str, Any]:
    container: dict[str, Any] = {"name": f"init-{cpu}", "resources": {"limits": {"cpu": cpu}}}
    if sidecar:
        container["restartPolicy"] = "Always"
    pod["spec"].setdefault("initContainers", []).append(container)
    return pod


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(make_pod("p").obj(), {}, id="no limits"),
        pytest.param(
            make_pod("p").limits(cpu="1", memory="1Gi").obj(),
            {"cpu": 1000, "memory": 2**30},
            id="one container",
        ),
        pytest.param(
            _with_init(make_pod("p").limits(cpu="1").obj(), "3", sidecar=False),
            {"cpu": 3000},
            id="an init container above the app containers",
        ),
        pytest.param(
            _with_init(make_pod("p").limits(cpu="1").obj(), "500m", sidecar=True),
            {"cpu": 1500},
            id="a sidecar adds to the app containers",
        ),
        pytest.param(
            make_pod("p").limits(cpu="1").overhead(cpu="100m", memory="64Mi").obj(),
            {"cpu": 1100},
            id="overhead only on resources with a limit",
        ),
        pytest.param(
            make_pod("p").limits(cpu="1", memory="1Gi").pod_limits(cpu="4").obj(),
            {"cpu": 4000, "memory": 2**30},
            id="pod-level cpu wins",
        ),
    ],
)
def test_pod_limits_follow_upstream(pod: dict[str, Any], expected: dict[str, int]) -> None:
    assert _limits(pod) == expected


def test_samples_carry_upstreams_labels_and_units() -> None:
    pod = (
        make_pod("web", "shop")
        .scheduler("pyscheduler")
        .node("n1")
        .priority(10)
        .requests(cpu="250m", memory="64Mi")
        .limits(memory="128Mi")
        .obj()
    )

    found = sorted(samples([pod]))

    assert found == [
        ("limit", ("shop", "web", "n1", "pyscheduler", "10", "memory", "bytes"), 128 * 2**20),
        ("request", ("shop", "web", "n1", "pyscheduler", "10", "cpu", "cores"), 0.25),
        ("request", ("shop", "web", "n1", "pyscheduler", "10", "memory", "bytes"), 64 * 2**20),
    ]


def test_an_unreadable_pod_is_left_out_and_the_others_reported() -> None:
    bad = make_pod("bad").requests(cpu="lots").obj()
    good = make_pod("good").requests(cpu="1").obj()

    found = [labels[1] for _, labels, _ in samples([bad, good])]

    assert found == ["good"]


def test_the_collector_exposes_both_families() -> None:
    registry = CollectorRegistry(auto_describe=False)
    pod = make_pod("p").requests(cpu="2").limits(cpu="3").obj()
    registry.register(PodResourceCollector(lambda: [pod]))

    text = generate_latest(registry).decode()

    assert (
        'kube_pod_resource_request{namespace="default",node="",pod="p",priority="",'
        'resource="cpu",scheduler="default-scheduler",unit="cores"} 2.0'
    ) in text
    assert 'kube_pod_resource_limit{namespace="default"' in text
