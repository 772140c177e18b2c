"""DefaultPreemption end to end in one scheduling cycle: the real framework,
handle and NodeResourcesFit; the API and informers are fakes. What users see
(the FitError with its ``preemption: ...`` tail, word for word), the
nomination, the victims' API writes, the PreEnqueue gate and the metrics."""

from __future__ import annotations

import asyncio

import pytest

from plugins.default_preemption import NAME, DefaultPreemptionArgs
from scheduler.config import parse_config
from scheduler.engine.assembly import build_registry, resolve
from scheduler.framework import ClusterEventWithHint, NominatingMode, QueueingHint, Status
from scheduler.framework.events import ASSIGNED_POD_DELETE
from scheduler.queue import QueueName, QueueProfile, SchedulingQueue
from scheduler.runtime.waiting import WaitingPodImpl
from tests.support.builders import PodBuilder, make_pod
from tests.support.clock import FakeClock
from tests.unit.plugins.preemption_cluster import Cluster, incoming, running
from tests.unit.queue.fakes import where


# ----------------------------------------------------------------- messages
def full_cluster(cluster: Cluster) -> None:
    for name in ("a", "b", "c"):
        cluster.node(name, "1")
        cluster.pod(running(f"on-{name}", name, 0))


@pytest.mark.parametrize(
    ("preemptor", "message"),
    [
        pytest.param(
            incoming(0),
            "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are "
            "available: 3 No preemption victims found for incoming pod.",
            id="nobody of lower priority",
        ),
        pytest.param(
            incoming(100).preemption_policy("Never"),
            "0/3 nodes are available: 3 Insufficient cpu. preemption: not eligible due to "
            "preemptionPolicy=Never.",
            id="preemptionPolicy Never",
        ),
    ],
)
async def test_no_preemption_message(preemptor: PodBuilder, message: str) -> None:
    cluster = Cluster()
    full_cluster(cluster)
    text, _, status = cluster.attempt(cluster.pod(preemptor))
    assert text == message
    assert status.is_rejected()
    assert cluster.api.calls == []
    assert cluster.metrics.attempts == 1


async def test_unresolvable_nodes_are_no_candidates() -> None:
    cluster = Cluster()
    cluster.node("tiny", "1")  # the pod can never fit: UnschedulableAndUnresolvable
    for name in ("a", "b"):
        cluster.node(name, "2")
        cluster.pod(running(f"on-{name}", name, 0, cpu="2"))
    text, result, _ = cluster.attempt(cluster.pod(incoming(0, cpu="2")))
    assert text == (
        "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
        "1 Preemption is not helpful for scheduling, 2 No preemption victims found for "
        "incoming pod."
    )
    assert result is not None
    assert result.nominating_info is not None
    assert (result.nominating_info.node_name, result.nominating_info.mode) == (
        "",
        NominatingMode.OVERRIDE,
    ), "the nomination is cleared"


# ----------------------------------------------------------------- success
async def test_preempts_where_no_pdb_is_violated_and_nominates_the_node() -> None:
    cluster = Cluster()
    for name in ("a", "b"):
        cluster.node(name, "1")
    cluster.pod(running("guarded", "a", 10).label("app", "web"))
    plain = cluster.pod(running("plain", "b", 10))
    cluster.pdb("keep-web", "web")
    preemptor = cluster.pod(incoming(100))

    _, result, status = cluster.attempt(preemptor)

    assert status.is_success()
    assert result is not None
    assert result.nominating_info is not None
    assert (result.nominating_info.node_name, result.nominating_info.mode) == (
        "b",
        NominatingMode.OVERRIDE,
    )
    assert cluster.plugin.pre_enqueue(preemptor) == Status.unresolvable(
        "waiting for the preemption for this pod to be finished"
    ), "gated while the deletions are in flight"
    assert cluster.api.calls == [], "no API call inside the scheduling cycle"

    assert await cluster.background.drain(5) == 0

    (patch, delete) = cluster.api.calls
    assert patch[:2] == ("PATCH", "/api/v1/namespaces/default/pods/plain/status")
    (condition,) = patch[2]["status"]["conditions"]
    assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "default-scheduler: preempting to accommodate a higher priority pod",
    }
    assert delete == ("DELETE", "/api/v1/namespaces/default/pods/plain", None)
    assert cluster.recorder.events == [
        (
            "plain",
            "Normal",
            "Preempted",
            "Preempting",
            f"Preempted by pod {preemptor.uid} on node b",
        )
    ]
    assert cluster.plugin.pre_enqueue(preemptor) is None
    assert (cluster.metrics.attempts, cluster.metrics.victims) == (1, [1])
    assert cluster.queue.activated == []
    assert plain.key not in cluster.queue.activated


async def test_lower_priority_nominations_on_the_node_are_cleared() -> None:
    cluster = Cluster()
    cluster.node("a", "1")
    cluster.pod(running("low", "a", 10))
    waiting_low = cluster.pod(make_pod("waiting-low").priority(5).nominated("a"))
    waiting_high = cluster.pod(make_pod("waiting-high").priority(500).nominated("a"))
    cluster.queue.nominated["a"] = [waiting_low, waiting_high]
    preemptor = cluster.pod(incoming(100))

    cluster.attempt(preemptor)
    await cluster.background.drain(5)

    patches = [(path, body) for method, path, body in cluster.api.calls if method == "PATCH"]
    assert (
        "/api/v1/namespaces/default/pods/waiting-low/status",
        {"status": {"nominatedNodeName": None}},
    ) in patches
    assert all("waiting-high" not in path for path, _ in patches)


@pytest.mark.parametrize(
    ("failure", "activated"),
    [
        pytest.param(404, [], id="a victim already gone is fine"),
        pytest.param(500, ["default/preemptor"], id="a failed deletion activates the preemptor"),
    ],
)
async def test_api_failures(failure: int, activated: list[str]) -> None:
    cluster = Cluster()
    cluster.node("a", "1")
    cluster.pod(running("low", "a", 10))
    cluster.api.failures[("DELETE", "/api/v1/namespaces/default/pods/low")] = failure
    preemptor = cluster.pod(incoming(100))

    cluster.attempt(preemptor)
    await cluster.background.drain(5)

    assert cluster.queue.activated == activated
    assert cluster.plugin.pre_enqueue(preemptor) is None


async def test_gate_opens_once_the_informer_shows_the_last_victim_gone() -> None:
    """Upstream ``IsPodRunningPreemption``: the last deletion may be seen by
    the informer before its API call returns; the pod must not stay gated."""
    cluster = Cluster()
    cluster.node("a", "2")
    cluster.pod(running("first", "a", 10))
    cluster.pod(running("last", "a", 10))
    last_delete = ("DELETE", "/api/v1/namespaces/default/pods/last")
    cluster.api.holds[last_delete] = asyncio.Event()
    preemptor = cluster.pod(incoming(100, cpu="2"))

    cluster.attempt(preemptor)
    await asyncio.wait_for(cluster.api.held.wait(), 5)
    assert cluster.plugin.pre_enqueue(preemptor) is not None, "the last deletion is in flight"
    del cluster.informers.store("pods").objects["default/last"]
    assert cluster.plugin.pre_enqueue(preemptor) is None, "the informer already saw it go"

    cluster.api.holds[last_delete].set()
    await cluster.background.drain(5)
    deleted = [path for method, path, _ in cluster.api.calls if method == "DELETE"]
    assert deleted == [
        "/api/v1/namespaces/default/pods/first",
        "/api/v1/namespaces/default/pods/last",
    ]


async def test_a_victim_waiting_at_permit_is_rejected_in_memory() -> None:
    cluster = Cluster()
    cluster.node("a", "1")
    waiting = cluster.pod(running("waiting", "a", 10))
    cluster.waiting.add(WaitingPodImpl(waiting, {"Gate": 60.0}))
    preemptor = cluster.pod(incoming(100))

    cluster.attempt(preemptor)
    await cluster.background.drain(5)

    assert cluster.api.calls == [], "no API call for a pod that is not bound yet"
    result = await cluster.waiting.get(waiting.uid).wait()  # type: ignore[union-attr]
    assert (result.code, result.plugin, result.message()) == (
        Status.unschedulable().code,
        NAME,
        "preempted",
    )
    assert cluster.recorder.events[0][4].endswith("(in kube-scheduler memory).")


# ------------------------------------------------------------- eligibility
async def test_waits_while_its_victims_terminate_on_the_nominated_node() -> None:
    cluster = Cluster()
    cluster.node("a", "1")
    cluster.pod(
        running("leaving", "a", 10)
        .deleting()
        .condition("DisruptionTarget", "True", reason="PreemptionByScheduler")
    )
    text, result, _ = cluster.attempt(cluster.pod(incoming(100).nominated("a")))
    assert text == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to a "
        "terminating pod on the nominated node."
    )
    assert result is None, "the nomination is kept"


def nominations(seed: int) -> list[str]:
    """Where five preemptors are nominated, each attempt evaluating a single
    candidate among ten alike nodes: the one at the random offset."""
    cluster = Cluster(
        DefaultPreemptionArgs(min_candidate_nodes_percentage=1, min_candidate_nodes_absolute=1),
        seed=seed,
    )
    for index in range(10):
        cluster.node(f"n{index}", "1")
        cluster.pod(running(f"on-n{index}", f"n{index}", 0))
    nominated = []
    for index in range(5):
        _, result, _ = cluster.attempt(
            cluster.pod(make_pod(f"preemptor-{index}").priority(100).requests(cpu="1"))
        )
        assert result is not None
        assert result.nominating_info is not None
        nominated.append(result.nominating_info.node_name)
    return nominated


@pytest.mark.parametrize(
    ("seeds", "same"),
    [
        pytest.param((3, 3), True, id="same seed: same candidates, same nominations"),
        pytest.param((3, 4), False, id="another seed: other nominations"),
    ],
)
async def test_the_candidate_offset_draws_from_the_handles_seeded_generator(
    seeds: tuple[int, int], same: bool
) -> None:
    first, second = (nominations(seed) for seed in seeds)
    assert len(set(first)) > 1, "the offset really chooses the node"
    assert (first == second) is same


def test_args_validation() -> None:
    assert DefaultPreemptionArgs.model_validate({}) == DefaultPreemptionArgs(
        min_candidate_nodes_percentage=10, min_candidate_nodes_absolute=100
    )
    with pytest.raises(ValueError, match="cannot both be zero"):
        DefaultPreemptionArgs.model_validate(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}
        )
    with pytest.raises(ValueError, match="less than or equal to 100"):
        DefaultPreemptionArgs.model_validate({"minCandidateNodesPercentage": 101})
    assert NAME == "DefaultPreemption"


# ------------------------------------------------------------- with the queue
async def test_preemptor_gated_while_deleting_then_released_by_the_last_deletion() -> None:
    """The async flow through the real queue: a deletion seen mid-preemption
    gates the preemptor (PreEnqueue); the last victim's deletion releases it,
    because NodeResourcesFit, which rejected it, says the event may help."""
    cluster = Cluster()
    cluster.node("a", "2")
    first = cluster.pod(running("first", "a", 10))
    last = cluster.pod(running("last", "a", 10))
    last_delete = ("DELETE", "/api/v1/namespaces/default/pods/last")
    cluster.api.holds[last_delete] = asyncio.Event()
    queue = SchedulingQueue(
        less=lambda a, b: a.pod.priority > b.pod.priority,
        clock=FakeClock(),
        profiles={
            "default-scheduler": QueueProfile(
                pre_enqueue=[cluster.plugin],
                events_by_plugin={
                    "NodeResourcesFit": [
                        ClusterEventWithHint(ASSIGNED_POD_DELETE, lambda *_: QueueingHint.QUEUE)
                    ],
                    NAME: cluster.plugin.events_to_register(),
                },
            )
        },
    )
    preemptor = cluster.pod(incoming(100, cpu="2"))
    queue.add(preemptor)
    pinfo = queue.pop_nowait()
    assert pinfo is not None
    _, result, _ = cluster.attempt(pinfo.pod)
    assert result is not None
    pinfo.unschedulable_plugins = {"NodeResourcesFit"}
    queue.add_unschedulable_if_not_present(pinfo, queue.scheduling_cycle)
    await asyncio.wait_for(cluster.api.held.wait(), 5)
    assert where(queue, "preemptor") == QueueName.UNSCHEDULABLE

    queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, first, None)
    assert where(queue, "preemptor") == QueueName.GATED

    del cluster.informers.store("pods").objects["default/last"]
    queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, last, None)
    assert where(queue, "preemptor") in (QueueName.ACTIVE, QueueName.BACKOFF)

    cluster.api.holds[last_delete].set()
    await cluster.background.drain(5)


async def test_victims_removed_through_inter_pod_affinity_remove_pod() -> None:
    """The what-if removes victims through every PreFilter plugin's RemovePod:
    InterPodAffinity's precomputed anti-affinity counts must drop, or no node
    would ever look free."""
    cluster = Cluster(inter_pod_affinity=True)
    for name in ("a", "b"):
        cluster.node(name, "4")
    cluster.pod(running("low", "a", 10).label("app", "x"))
    cluster.pod(running("high", "b", 500).label("app", "x"))
    preemptor = cluster.pod(
        incoming(100).required_pod_anti_affinity("kubernetes.io/hostname", app="x")
    )

    text, result, status = cluster.attempt(preemptor)

    assert text == "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
    assert status.is_success()
    assert result is not None
    assert result.nominating_info is not None
    assert result.nominating_info.node_name == "a"
    await cluster.background.drain(5)
    assert [path for method, path, _ in cluster.api.calls if method == "DELETE"] == [
        "/api/v1/namespaces/default/pods/low"
    ]


def test_args_from_the_configuration_file() -> None:
    text = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: x
  pluginConfig:
  - name: DefaultPreemption
    args:
      minCandidateNodesPercentage: {pct}
      minCandidateNodesAbsolute: {abs}
"""
    (profile,) = resolve(parse_config(text.format(pct=20, abs=5)), build_registry())
    assert profile.plugin_args[NAME] == DefaultPreemptionArgs(
        min_candidate_nodes_percentage=20, min_candidate_nodes_absolute=5
    )
    with pytest.raises(ValueError, match=r"pluginConfig\[DefaultPreemption\].args: .*both be zero"):
        resolve(parse_config(text.format(pct=0, abs=0)), build_registry())
