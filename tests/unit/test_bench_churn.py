"""The churn workload's pure parts: the kubelet's three status updates, the
steady-rate schedule, the preset, the watch's count of deleted pods, node
occupancy over time, and the figures read for it (informer events, watch
decoding's share of the profile)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import ipaddress
from typing import Any

import pytest

from bench.apirequests import scheduler_writes
from bench.checks import Occupancy
from bench.cpuprofile import parse_collapsed
from bench.histogram import EVENT_HANDLING_DURATION, EVENT_LABEL, count_deltas, counts_by_label
from bench.kubelet import (
    HOST_NETWORK,
    POD_NETWORK,
    UPDATES_PER_POD,
    Kubelet,
    PodRun,
    address,
    statuses,
    timestamp,
)
from bench.podwatch import BoundPods
from bench.run import modes
from bench.steady import create_steadily, next_due, pods_due
from bench.workload import (
    DEFAULT_TEMPLATE,
    MEASURED_NAMESPACE,
    PRESETS,
    Churn,
    Mode,
    Obj,
    node_body,
    pod_body,
)

# core/v1 PodStatus's fields (the API's own spelling).
POD_STATUS_FIELDS = {
    "phase",
    "conditions",
    "message",
    "reason",
    "nominatedNodeName",
    "hostIP",
    "hostIPs",
    "podIP",
    "podIPs",
    "startTime",
    "initContainerStatuses",
    "containerStatuses",
    "qosClass",
    "ephemeralContainerStatuses",
    "resize",
    "resourceClaimStatuses",
    "observedGeneration",
}
CONDITION_TYPES = [
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
]
RUN = PodRun(
    "pod-00001",
    host_ip="10.0.0.1",
    pod_ip="10.128.0.1",
    admitted="2026-12-04T18:00:00Z",
    sandbox_ready="2026-12-04T18:00:01Z",
    started="2026-12-04T18:00:02Z",
)


def _bound(name: str, node: str, namespace: str = MEASURED_NAMESPACE) -> Obj:
    return pod_body(name, namespace, "sched", node=node)


def _conditions(status: Obj) -> dict[str, str]:
    return {c["type"]: c["status"] for c in status["conditions"]}


# ------------------------------------------------------------ kubelet
@pytest.mark.parametrize(
    ("step", "phase", "sandbox_and_ready", "container_state", "has_pod_ip"),
    [
        pytest.param(0, "Pending", ("False", "False"), "waiting", False, id="1 admitted: pending"),
        pytest.param(1, "Pending", ("True", "False"), "waiting", True, id="2 sandbox: creating"),
        pytest.param(2, "Running", ("True", "True"), "running", True, id="3 started: running"),
    ],
)
def test_the_kubelet_reports_pending_then_container_creating_then_running(
    step: int,
    phase: str,
    sandbox_and_ready: tuple[str, str],
    container_state: str,
    has_pod_ip: bool,
) -> None:
    sandbox, ready = sandbox_and_ready
    status = statuses(RUN)[step]["status"]
    conditions = _conditions(status)
    assert status["phase"] == phase
    assert conditions["PodReadyToStartContainers"] == sandbox
    assert conditions["Ready"] == conditions["ContainersReady"] == ready
    assert conditions["Initialized"] == conditions["PodScheduled"] == "True"
    (container,) = status["containerStatuses"]
    assert list(container["state"]) == [container_state]
    assert container["ready"] is (ready == "True")
    assert ("podIP" in status) is has_pod_ip


def test_a_pod_gets_exactly_three_updates() -> None:
    assert len(statuses(RUN)) == UPDATES_PER_POD == 3
    waiting = [s["status"]["containerStatuses"][0]["state"] for s in statuses(RUN)[:2]]
    assert waiting == [{"waiting": {"reason": "ContainerCreating"}}] * 2


@pytest.mark.parametrize("step", [0, 1, 2], ids=["admitted", "sandbox ready", "running"])
def test_every_update_is_a_valid_pod_status_for_the_pod(step: int) -> None:
    patch = statuses(RUN)[step]
    assert list(patch) == ["status"]
    status = patch["status"]
    assert set(status) <= POD_STATUS_FIELDS
    assert [c["type"] for c in status["conditions"]] == CONDITION_TYPES
    for condition in status["conditions"]:
        assert condition["status"] in {"True", "False"}
        datetime.datetime.fromisoformat(condition["lastTransitionTime"])
    assert status["hostIPs"] == [{"ip": status["hostIP"]}]
    if "podIP" in status:
        assert status["podIPs"] == [{"ip": status["podIP"]}]
    spec = pod_body(RUN.name, MEASURED_NAMESPACE, "sched", node="node-00000")["spec"]
    containers = {(c["name"], c["image"]) for c in spec["containers"]}
    assert {(c["name"], c["image"]) for c in status["containerStatuses"]} == containers
    assert all(c["restartCount"] == 0 for c in status["containerStatuses"])


def test_conditions_only_move_forward_in_time() -> None:
    seen: dict[str, str] = {}
    for patch in statuses(RUN):
        for condition in patch["status"]["conditions"]:
            since = condition["lastTransitionTime"]
            assert since >= seen.get(condition["type"], "")
            seen[condition["type"]] = since
    running = statuses(RUN)[2]["status"]["containerStatuses"][0]
    assert running["state"]["running"]["startedAt"] == RUN.started
    assert running["containerID"].startswith("containerd://")


@pytest.mark.parametrize(
    ("network", "serial", "expected"),
    [
        pytest.param(POD_NETWORK, 0, "10.128.0.1", id="first pod"),
        pytest.param(POD_NETWORK, 255, "10.128.1.0", id="pods past one octet"),
        pytest.param(HOST_NETWORK, 4999, "10.0.19.136", id="the 5000th node"),
    ],
)
def test_addresses_count_up_from_the_network(
    network: ipaddress.IPv4Address, serial: int, expected: str
) -> None:
    assert address(network, serial) == expected


def test_timestamps_are_rfc3339_seconds_in_utc() -> None:
    assert timestamp(1.9) == "1970-01-01T00:00:01Z"


class _RecordingApi:
    """The writes the kubelet and the creators make, in order, and how many
    were in flight at most (each write yields to the loop once)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self._in_flight = 0
        self.most_in_flight = 0

    async def _write(self, verb: str, path: str, body: Any) -> None:
        self._in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self._in_flight)
        await asyncio.sleep(0)
        self.calls.append((verb, path, body))
        self._in_flight -= 1

    async def patch(self, path: str, body: Obj) -> None:
        await self._write("PATCH", path, body)

    async def delete(self, path: str, grace_period_seconds: int | None = None) -> None:
        await self._write("DELETE", path, grace_period_seconds)

    async def create(self, path: str, body: Obj) -> None:
        await self._write("POST", path, body["metadata"]["name"])


async def test_the_kubelet_patches_each_bound_pod_three_times_then_deletes_it() -> None:
    api = _RecordingApi()
    kubelet = Kubelet(api, MEASURED_NAMESPACE, lifetime_seconds=0.0, writers=2)
    running = asyncio.create_task(kubelet.run())
    kubelet.bound(_bound("a", "node-00000"))
    kubelet.bound(_bound("init", "node-00000", namespace="bench-init"))  # not its namespace
    kubelet.bound(_bound("b", "node-00001"))
    assert await kubelet.wait_done(2, timeout=60)
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running
    path = f"/api/v1/namespaces/{MEASURED_NAMESPACE}/pods"
    for name in ("a", "b"):
        writes = [(verb, body) for verb, at, body in api.calls if at.startswith(f"{path}/{name}")]
        assert [verb for verb, _ in writes] == ["PATCH"] * 3 + ["DELETE"]
        assert writes[-1] == ("DELETE", 0)  # gracePeriodSeconds=0
        phases = [body["status"]["phase"] for _, body in writes[:3]]
        assert phases == ["Pending", "Pending", "Running"]
    assert {at for verb, at, _ in api.calls if verb == "PATCH"} == {
        f"{path}/a/status",
        f"{path}/b/status",
    }
    assert (kubelet.status_updates, kubelet.deleted_pods) == (6, 2)
    assert api.most_in_flight <= 2
    hosts = {body["status"]["hostIP"] for verb, _, body in api.calls if verb == "PATCH"}
    assert len(hosts) == 2  # one address per node


async def test_steady_creation_creates_every_pod_once_in_order_within_its_creators() -> None:
    api = _RecordingApi()
    bodies = (pod_body(f"pod-{i:05d}", MEASURED_NAMESPACE, "sched") for i in range(50))
    await create_steadily(api, "/pods", bodies, 50, rate=1e6, creators=3)
    assert [name for _, _, name in api.calls] == [f"pod-{i:05d}" for i in range(50)]
    assert api.most_in_flight <= 3


# ------------------------------------------------------------ steady rate
@pytest.mark.parametrize(
    ("elapsed", "rate", "total", "due"),
    [
        pytest.param(-0.5, 100.0, 10, 0, id="before the start: none"),
        pytest.param(0.0, 100.0, 10, 1, id="the first at once"),
        pytest.param(0.0099, 100.0, 10, 1, id="the second not before 1/rate"),
        pytest.param(0.01, 100.0, 10, 2, id="the second at 1/rate"),
        pytest.param(0.29, 100.0, 1000, 30, id="no float rounding loses a pod"),
        pytest.param(2.0, 0.5, 10, 2, id="slow rates"),
        pytest.param(100.0, 100.0, 10, 10, id="never more than the total"),
    ],
)
def test_pods_are_due_at_a_steady_rate(elapsed: float, rate: float, total: int, due: int) -> None:
    assert pods_due(elapsed, rate, total) == due


@pytest.mark.parametrize("elapsed", [0.0, 0.013, 0.5, 1.234, 59.99])
def test_the_next_pod_is_due_after_the_ones_due_now(elapsed: float) -> None:
    due = pods_due(elapsed, 100.0, 10_000)
    assert next_due(due - 1, 100.0) <= elapsed + 1e-9 < next_due(due, 100.0)


# ------------------------------------------------------------ preset
def test_churn_preset_is_scheduler_perf_basic_at_5000_nodes_in_churn_mode() -> None:
    churn = PRESETS["churn"]
    assert (churn.nodes, churn.modes, churn.template) == (5000, (Mode.CHURN,), DEFAULT_TEMPLATE)
    assert churn.churn == Churn(rate=100.0, lifetime_seconds=5.0)
    assert churn.profile  # watch decoding's share is one of its figures
    assert churn.to_json()["churn"] == {"rate": 100.0, "lifetime_seconds": 5.0}
    assert "churn" not in PRESETS["basic"].to_json()


@pytest.mark.parametrize(
    ("overrides", "name", "rate"),
    [
        pytest.param({}, "SchedulingChurn", 100.0, id="unchanged keeps its name"),
        pytest.param({"rate": 100.0}, "SchedulingChurn", 100.0, id="the same rate"),
        pytest.param({"rate": 20.0}, "custom", 20.0, id="another rate is custom"),
        pytest.param({"pods": 300}, "custom", 100.0, id="other sizes are custom"),
    ],
)
def test_resizing_the_churn_preset(overrides: dict[str, Any], name: str, rate: float) -> None:
    sized = PRESETS["churn"].resized(**overrides)
    assert (sized.name, sized.churn.rate) == (name, rate)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        pytest.param(None, [Mode.CHURN], id="the preset's"),
        pytest.param("both", [Mode.STREAMING, Mode.BACKLOG], id="both is not churn"),
        pytest.param("churn", [Mode.CHURN], id="asked for"),
    ],
)
def test_modes_run(mode: str | None, expected: list[Mode]) -> None:
    assert modes(argparse.Namespace(mode=mode), PRESETS["churn"].modes) == expected


# ------------------------------------------------------------ watch
def test_deleted_pods_stay_seen_and_are_reported_once() -> None:
    pods = BoundPods()
    first = [pods.apply("MODIFIED", _bound(n, "node-00000"), t) for t, n in [(1, "a"), (2, "b")]]
    assert (pods.count(MEASURED_NAMESPACE), pods.seen(MEASURED_NAMESPACE)) == (2, 2)
    again = pods.apply("MODIFIED", _bound("a", "node-00000"), 3)  # a status update
    pods.apply("DELETED", _bound("a", "node-00000"), 4)
    assert (first, again) == ([True, True], False)
    assert (pods.count(MEASURED_NAMESPACE), pods.seen(MEASURED_NAMESPACE)) == (1, 2)
    assert pods.bind_times(MEASURED_NAMESPACE) == [1, 2]


def test_a_relist_reports_new_pods_and_those_gone() -> None:
    pods = BoundPods()
    pods.replace([_bound("a", "n"), _bound("b", "n")])
    new, gone = pods.replace([_bound("b", "n"), _bound("c", "n")], 5.0)
    assert [p["metadata"]["name"] for p in new] == ["c"]
    assert gone == [{"metadata": {"namespace": MEASURED_NAMESPACE, "name": "a"}}]
    assert (pods.count(MEASURED_NAMESPACE), pods.seen(MEASURED_NAMESPACE)) == (2, 3)


# ------------------------------------------------------------ occupancy
# node_body's node: cpu 4, so 40 of bench's 100m pods fit (memory 32Gi: 65 of 500Mi).
@pytest.mark.parametrize(
    ("events", "overcommitted"),
    [
        pytest.param([("bound", i) for i in range(40)], False, id="40 pods fit"),
        pytest.param([("bound", i) for i in range(41)], True, id="the 41st overcommits"),
        pytest.param(
            [*(("bound", i) for i in range(40)), ("deleted", 0), ("bound", 40)],
            False,
            id="a deletion makes room",
        ),
        pytest.param(
            [*(("bound", i) for i in range(40)), ("deleted", 99), ("bound", 40)],
            True,
            id="deleting a pod never seen frees nothing",
        ),
    ],
)
def test_occupancy_records_nodes_ever_overcommitted(
    events: list[tuple[str, int]], overcommitted: bool
) -> None:
    occupancy = Occupancy([node_body("node-00000"), node_body("node-00001")])
    assert occupancy.overcommitted == {}
    for what, index in events:
        pod = _bound(f"pod-{index:05d}", "node-00000")
        occupancy.bound(pod) if what == "bound" else occupancy.deleted(pod)
    assert list(occupancy.overcommitted) == (["node-00000"] if overcommitted else [])


# ------------------------------------------------------------ figures
METRICS_BEFORE = f"""# TYPE {EVENT_HANDLING_DURATION} histogram
{EVENT_HANDLING_DURATION}_bucket{{event="AssignedPodUpdate",le="+Inf"}} 10
{EVENT_HANDLING_DURATION}_count{{event="AssignedPodUpdate"}} 10
{EVENT_HANDLING_DURATION}_sum{{event="AssignedPodUpdate"}} 0.1
{EVENT_HANDLING_DURATION}_count{{event="NodeAdd"}} 5
{EVENT_HANDLING_DURATION}_sum{{event="NodeAdd"}} 0.1
"""
METRICS_AFTER = (
    METRICS_BEFORE.replace('AssignedPodUpdate"} 10', 'AssignedPodUpdate"} 40')
    + f'{EVENT_HANDLING_DURATION}_count{{event="AssignedPodDelete"}} 10\n'
)


def test_informer_events_are_counted_by_event_while_measuring() -> None:
    before = counts_by_label(METRICS_BEFORE, EVENT_HANDLING_DURATION, EVENT_LABEL)
    after = counts_by_label(METRICS_AFTER, EVENT_HANDLING_DURATION, EVENT_LABEL)
    assert before == {"AssignedPodUpdate": 10, "NodeAdd": 5}
    assert count_deltas(before, after) == {"AssignedPodUpdate": 30, "AssignedPodDelete": 10}


def test_watch_decoding_is_its_own_share_of_the_profile() -> None:
    lines = [
        "run (app.py:1);_watch (scheduler/informers/informer.py:250);"
        "watch (scheduler/kube/client.py:399);parse_watch_line (scheduler/kube/wire.py:72) 20",
        "run (app.py:1);_watch (scheduler/informers/informer.py:250);"
        "_apply (scheduler/informers/informer.py:280);share (scheduler/informers/compact.py:90) 10",
        "run (app.py:1);_watch (scheduler/informers/informer.py:250);"
        "_apply (scheduler/informers/informer.py:283);on_update (scheduler/engine/h.py:3) 30",
        "run (app.py:1);cycle (scheduler/cycle/c.py:1) 40",
    ]
    profile = parse_collapsed(lines, rate=100)
    assert profile.total_seconds == pytest.approx(1.0)
    assert profile.decode_share == pytest.approx(0.3)
    assert profile.informer_share == pytest.approx(0.6)


def test_the_kubelets_writes_are_not_the_schedulers() -> None:
    requests = {"POST pods": 100, "POST pods/binding": 100, "PATCH pods/status": 300}
    assert scheduler_writes(requests) == 400
    assert scheduler_writes(requests, harness_writes=300) == 100
