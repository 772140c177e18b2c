"""Correctness against upstream: the same randomized workloads scheduled by this
scheduler and by upstream kube-scheduler (same control-plane build, default
profiles restricted to the plugins both have) agree pod by pod on scheduled or
not and on the ``PodScheduled`` message, word for word; no bound pod breaks a
hard constraint. 20 seeds x 50 pods by default; ``PYSCHEDULER_DIFF_SEEDS`` and
``PYSCHEDULER_DIFF_PODS`` ask for more (``make differential``)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from tests.support.cluster import Cluster
from tests.support.differential import compare_seed, ours_runner, upstream_runner
from tests.support.workloads import generate

SEEDS = int(os.environ.get("PYSCHEDULER_DIFF_SEEDS", "20"))
PODS = int(os.environ.get("PYSCHEDULER_DIFF_PODS", "50"))
FIRST_SEED = int(os.environ.get("PYSCHEDULER_DIFF_FIRST_SEED", "1"))


@pytest.mark.timeout(max(600, 90 * SEEDS))
async def test_same_outcomes_as_upstream_kube_scheduler(
    control_plane: Cluster, kube: client.ApiClient, tmp_path: Path
) -> None:
    plane = control_plane.require_plane()
    core = client.CoreV1Api(kube)
    runners = (ours_runner(plane.kubeconfig), upstream_runner(plane, tmp_path))
    failures: list[str] = []
    scheduled = messages = 0
    distinct: set[str] = set()
    for seed in range(FIRST_SEED, FIRST_SEED + SEEDS):
        workload = generate(seed, PODS)
        tag = secrets.token_hex(3)
        namespaces = (f"placed-{tag}", f"ours-{tag}", f"upstream-{tag}")
        for namespace in namespaces:
            await core.create_namespace({"metadata": {"name": namespace}})
        try:
            result = await compare_seed(core, workload, namespaces, runners)
        finally:
            for namespace in namespaces:
                await core.delete_namespace(namespace, propagation_policy="Background")
        failures.extend(
            f"seed {seed}: {line}" for line in [*result.disagreements, *result.violations]
        )
        for outcome in result.upstream.values():
            scheduled += outcome.scheduled
            messages += not outcome.scheduled
            distinct.add(outcome.message)
    assert not failures, "\n".join(failures)
    # Not vacuous: both fates occur, with many different messages.
    assert scheduled > SEEDS * PODS // 2
    assert messages > SEEDS
    assert len(distinct) > SEEDS // 2
