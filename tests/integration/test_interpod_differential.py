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

import os
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from tests.support.cluster import Cluster
from tests.support.differential import (
    OURS_PROFILE,
    UPSTREAM_PROFILE,
    disagreements,
    ours_runner,
    run_workload,
    upstream_runner,
)
from tests.support.interpod_workloads import created_nodes, generate, run_namespace

SEEDS = int(os.environ.get("PYSCHEDULER_INTERPOD_DIFF_SEEDS", "5"))
PODS = int(os.environ.get("PYSCHEDULER_INTERPOD_DIFF_PODS", "30"))


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
        outcomes = {}
        async with created_nodes(core, workload.nodes):
            for profile, runner in runners.items():
                async with run_namespace(core, workload.placed) as namespace:
                    outcomes[profile], _ = await run_workload(
                        core, workload, namespace, profile, runner
                    )
        differ = disagreements(outcomes[OURS_PROFILE], outcomes[UPSTREAM_PROFILE])
        failures.extend(f"seed {seed}: {line}" for line in differ)
    assert not failures, "\n".join(failures)
