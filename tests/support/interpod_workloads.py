"""Randomized workloads of spread constraints and pod (anti-)affinity for the
differential tests against upstream kube-scheduler
(``tests/integration/test_interpod_differential.py``).

``generate(seed, pod_count)`` builds, deterministically from the seed, nodes
(zones, racks, some tainted), pods placed beforehand (bound by hand: they
carry the ``role`` labels that the new pods' terms and spread selectors
select, and sometimes required anti-affinity against ``team`` labels) and the
pods to schedule. With ``self_selecting=False`` the pods to schedule carry no
``role`` label, so no pod's fate depends on the others (order-independent);
with ``True`` they do, for runs that schedule one pod at a time.

``NAMESPACE_LABEL`` marks the namespaces of a run: terms may select them by
label.
"""

from __future__ import annotations

import contextlib
import random
import secrets
from collections.abc import AsyncIterator
from typing import Any

from kubernetes_asyncio import client

from tests.support.builders import make_node, make_pod
from tests.support.kubeapi import create_all
from tests.support.wait import eventually
from tests.support.workloads import Workload

Obj = dict[str, Any]
HTTP_NOT_FOUND = 404

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


def _pod(rng: random.Random, index: int, *, self_selecting: bool) -> Obj:
    pod = make_pod(f"p{index:03d}").requests(cpu="100m").label("app", "new")
    if self_selecting and rng.random() < 0.8:
        pod.label("role", rng.choice(ROLES))
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


def generate(seed: int, pod_count: int, *, self_selecting: bool = False) -> Workload:
    rng = random.Random(seed)
    nodes = _nodes(rng, seed)
    names = [node["metadata"]["name"] for node in nodes]
    pods = [_pod(rng, i, self_selecting=self_selecting) for i in range(pod_count)]
    return Workload(seed, nodes, _placed(rng, names), pods)


@contextlib.asynccontextmanager
async def run_namespace(core: client.CoreV1Api, placed: list[Obj]) -> AsyncIterator[str]:
    """A fresh namespace labelled ``NAMESPACE_LABEL=yes`` holding the placed
    pods; deleted afterwards and waited for, so that terms selecting every
    namespace never see the pods of an earlier run."""
    namespace = f"ip-{secrets.token_hex(3)}"
    await core.create_namespace(
        {"metadata": {"name": namespace, "labels": {NAMESPACE_LABEL: "yes"}}}
    )
    try:
        await create_all(
            lambda body: core.create_namespaced_pod(namespace, body),
            ({**pod, "metadata": {**pod["metadata"], "namespace": namespace}} for pod in placed),
        )
        yield namespace
    finally:
        # No kubelet confirms graceful deletions here: delete the pods at once.
        await core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
        await core.delete_namespace(namespace, propagation_policy="Background")

        async def gone() -> bool:
            try:
                await core.read_namespace(namespace)
            except client.ApiException as error:
                return error.status == HTTP_NOT_FOUND
            return False

        await eventually(gone, timeout=120, what=f"namespace {namespace} deleted")


@contextlib.asynccontextmanager
async def created_nodes(core: client.CoreV1Api, nodes: list[Obj]) -> AsyncIterator[None]:
    """The workload's nodes, deleted afterwards."""
    await create_all(core.create_node, nodes)
    try:
        yield
    finally:
        for node in nodes:
            with contextlib.suppress(client.ApiException):
                await core.delete_node(node["metadata"]["name"])
