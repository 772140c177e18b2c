"""PodTopologySpread and InterPodAffinity against upstream kube-scheduler:
randomized workloads of spread constraints and pod (anti-)affinity, scheduled
once by each scheduler on the same nodes, agree pod by pod on scheduled or
not and on the ``PodScheduled`` message, word for word.

Order-independent by construction: the pods to schedule carry only ``team``
and ``app=new`` labels, and every term or spread selector they have selects
``role`` labels (narrowed by ``team`` through matchLabelKeys and
mismatchLabelKeys), which only the pods placed beforehand (bound by hand, in
the same namespace, before the scheduler starts) carry; placed pods' required
anti-affinity selects ``team`` labels. So a pod's fate depends on the nodes and
the placed pods only, never on which pods were scheduled before it.
5 seeds x 30 pods; ``PYSCHEDULER_INTERPOD_DIFF_SEEDS`` asks for more."""

from __future__ import annotations

import contextlib
import os
import random
import secrets
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.integration.conftest import Cluster
from tests.support.builders import make_node, make_pod
from tests.support.differential import (
    OURS_PROFILE,
    UPSTREAM_PROFILE,
    disagreements,
    ours_runner,
    run_workload,
    upstream_runner,
)
from tests.support.kubeapi import create_all
from tests.support.wait import eventually
from tests.support.workloads import Workload

Obj = dict[str, Any]
HTTP_NOT_FOUND = 404
SEEDS = int(os.environ.get("PYSCHEDULER_INTERPOD_DIFF_SEEDS", "5"))
PODS = int(os.environ.get("PYSCHEDULER_INTERPOD_DIFF_PODS", "30"))

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
RACK = "rack"
KEYS = (ZONE, HOST, RACK)
ROLES = ("web", "db", "cache")
NAMESPACE_LABEL = "interpod-diff"
TEAMS = ("x", "y")


def _role(rng: random.Random) -> Obj:
    roll = rng.random()
    if roll < 0.1:
        return {"matchLabels": {"role": "none"}}  # no pod has it
    if roll < 0.3:
        values = rng.sample(ROLES, 2)
        return {"matchExpressions": [{"key": "role", "operator": "In", "values": values}]}
    return {"matchLabels": {"role": rng.choice(ROLES)}}


def _term_extras(rng: random.Random) -> dict[str, object]:
    """matchLabelKeys or mismatchLabelKeys on ``team`` (merged by the API
    server); namespaces by name or by labels (``NAMESPACE_LABEL`` marks the
    run's namespace; no other namespace holds pods with ``role`` labels)."""
    extras: dict[str, object] = {}
    roll = rng.random()
    if roll < 0.2:
        extras["matchLabelKeys"] = ["team"]
    elif roll < 0.4:
        extras["mismatchLabelKeys"] = ["team"]
    roll = rng.random()
    if roll < 0.15:
        extras["namespaceSelector"] = {}
    elif roll < 0.3:
        extras["namespaceSelector"] = {"matchLabels": {NAMESPACE_LABEL: rng.choice(("yes", "no"))}}
    elif roll < 0.4:
        extras["namespaces"] = ["no-such-namespace"]
    return extras


def _nodes(rng: random.Random, seed: int) -> list[Obj]:
    nodes = []
    for index in range(rng.randint(6, 9)):
        node = make_node(f"ip{seed}-n{index}").capacity(cpu="32", memory="64Gi", pods="110")
        if rng.random() < 0.85:
            node.zone(rng.choice("abc"))
        if rng.random() < 0.7:
            node.label(RACK, f"r{rng.randint(1, 4)}")
        if rng.random() < 0.15:
            node.taint("dedicated", "x", "NoSchedule")
        nodes.append(node.obj())
    return nodes


def _placed(rng: random.Random, node_names: list[str]) -> list[Obj]:
    pods = []
    for index in range(rng.randint(4, 12)):
        pod = make_pod(f"placed-{index}").node(rng.choice(node_names)).requests(cpu="100m")
        pod.label("role", rng.choice(ROLES))
        if rng.random() < 0.5:
            pod.label("team", rng.choice(TEAMS))
        if rng.random() < 0.3:
            team = {"matchLabels": {"team": rng.choice(TEAMS)}}
            pod.pod_affinity_term("podAntiAffinity", rng.choice((ZONE, HOST)), team)
        pods.append(pod.obj())
    return pods


def _pod(rng: random.Random, index: int) -> Obj:
    pod = make_pod(f"p{index:03d}").requests(cpu="100m").label("app", "new")
    if rng.random() < 0.6:
        pod.label("team", rng.choice(TEAMS))
    if rng.random() < 0.1:
        pod.toleration("dedicated", "x", "NoSchedule")
    if rng.random() < 0.15:
        pod.node_selector(**{ZONE: rng.choice("abc")})
    if rng.random() < 0.45:
        extra: dict[str, object] = {}
        if rng.random() < 0.3:
            extra["minDomains"] = rng.randint(2, 5)
        if rng.random() < 0.3:
            extra["nodeAffinityPolicy"] = rng.choice(("Honor", "Ignore"))
        if rng.random() < 0.3:
            extra["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
        if rng.random() < 0.3:
            extra["matchLabelKeys"] = ["team"]
        pod.spread(rng.randint(1, 2), rng.choice(KEYS), selector=_role(rng), **extra)
    if rng.random() < 0.3:
        pod.spread(1, rng.choice(KEYS), "ScheduleAnyway", selector=_role(rng))
    if rng.random() < 0.3:
        pod.pod_affinity_term("podAffinity", rng.choice(KEYS), _role(rng), **_term_extras(rng))
    if rng.random() < 0.3:
        pod.pod_affinity_term("podAntiAffinity", rng.choice(KEYS), _role(rng), **_term_extras(rng))
    if rng.random() < 0.3:
        kind = rng.choice(("podAffinity", "podAntiAffinity"))
        pod.pod_affinity_term(kind, rng.choice(KEYS), _role(rng), weight=rng.randint(1, 100))
    return pod.obj()


def generate(seed: int, pod_count: int) -> Workload:
    rng = random.Random(seed)
    nodes = _nodes(rng, seed)
    names = [node["metadata"]["name"] for node in nodes]
    return Workload(seed, nodes, _placed(rng, names), [_pod(rng, i) for i in range(pod_count)])


def _in(pod: Obj, namespace: str) -> Obj:
    return {**pod, "metadata": {**pod["metadata"], "namespace": namespace}}


async def _delete_namespace(core: client.CoreV1Api, namespace: str) -> None:
    """Delete and wait until gone: terms selecting every namespace must not
    see the pods of the previous run."""
    await core.delete_namespace(namespace, propagation_policy="Background")

    async def gone() -> bool:
        try:
            await core.read_namespace(namespace)
        except client.ApiException as error:
            return error.status == HTTP_NOT_FOUND
        return False

    await eventually(gone, timeout=120, what=f"namespace {namespace} deleted")


@pytest.mark.timeout(max(600, 120 * SEEDS))
async def test_spreading_and_affinity_agree_with_upstream_kube_scheduler(
    control_plane: Cluster, kube: client.ApiClient, tmp_path: Path
) -> None:
    plane = control_plane.require_plane()
    core = client.CoreV1Api(kube)
    runners = {
        OURS_PROFILE: ours_runner(plane.kubeconfig),
        UPSTREAM_PROFILE: upstream_runner(plane, tmp_path),
    }
    failures: list[str] = []
    for seed in range(1, 1 + SEEDS):
        workload = generate(seed, PODS)
        await create_all(core.create_node, workload.nodes)
        outcomes = {}
        try:
            for profile, runner in runners.items():
                namespace = f"ip-{secrets.token_hex(3)}"
                await core.create_namespace(
                    {"metadata": {"name": namespace, "labels": {NAMESPACE_LABEL: "yes"}}}
                )
                try:
                    await create_all(
                        lambda body, ns=namespace: core.create_namespaced_pod(ns, body),
                        (_in(pod, namespace) for pod in workload.placed),
                    )
                    outcomes[profile], _ = await run_workload(
                        core, workload, namespace, profile, runner
                    )
                finally:
                    await _delete_namespace(core, namespace)
        finally:
            for node in workload.nodes:
                with contextlib.suppress(client.ApiException):
                    await core.delete_node(node["metadata"]["name"])
        differ = disagreements(outcomes[OURS_PROFILE], outcomes[UPSTREAM_PROFILE])
        failures.extend(f"seed {seed}: {line}" for line in differ)
    assert not failures, "\n".join(failures)
