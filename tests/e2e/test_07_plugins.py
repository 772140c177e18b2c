"""Out-of-tree plugins in the image, as an operator adds them: the image
built from the unchanged Dockerfile with examples/plugin-package's wheel as
the ``plugins`` build context (hack/e2e/build-images.sh) replaces the
shipped one through an overlay whose configuration adds two profiles using
the package's PoolFilter and PreferPool; the Deployment rolls, and pods of
those profiles are decided by the plugins on the real node: one lands (its
pool is allowed), one waits with PoolFilter's own reason."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.cluster import Cluster
from tests.e2e.node import NODE_NAME, REPO, wait_for
from tests.e2e.workloads import (
    BURST_LABEL,
    NAMESPACE,
    WORK_NAMESPACE,
    Deployed,
    apply,
    ensure_namespace,
    failed_scheduling_message,
    holder_pod,
    lease_holder,
    pod_manifest,
    ready,
    scheduled_events,
    scheduler_pods,
)

POOL_LABEL = "example.com/pool"  # pool_plugins.POOL_LABEL
NODE_POOL = "green"
ALLOWED_PROFILE = "pyscheduler-pools"  # PoolFilter allows green: the node's pool
REFUSED_PROFILE = "pyscheduler-blue"  # PoolFilter allows blue only
PLACED, WAITING = "pool-green", "pool-blue"


def plugin_config() -> str:
    """The shipped configuration plus two profiles of the package's plugins."""
    config = yaml.safe_load((REPO / "manifests" / "scheduler-config.yaml").read_text())
    config["profiles"] += [
        {
            "schedulerName": ALLOWED_PROFILE,
            "plugins": {
                "filter": {"enabled": [{"name": "PoolFilter"}]},
                "score": {"enabled": [{"name": "PreferPool", "weight": 10}]},
            },
            "pluginConfig": [
                {"name": "PoolFilter", "args": {"allowed": [NODE_POOL, "blue"]}},
                {"name": "PreferPool", "args": {"preferred": NODE_POOL}},
            ],
        },
        {
            "schedulerName": REFUSED_PROFILE,
            "plugins": {"filter": {"enabled": [{"name": "PoolFilter"}]}},
            "pluginConfig": [{"name": "PoolFilter", "args": {"allowed": ["blue"]}}],
        },
    ]
    return yaml.safe_dump(config, sort_keys=False)


def plugin_overlay(cluster: Cluster) -> Path:
    """What an operator writes: the shipped base, their image, their config."""
    assert cluster.images is not None
    directory = cluster.run_dir / "overlay-plugins"
    directory.mkdir(exist_ok=True)
    (directory / "scheduler-config.yaml").write_text(plugin_config())
    name, tag = cluster.images.plugins_ref.rsplit(":", 1)
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(REPO / "manifests", directory)],
        "images": [{"name": "pyscheduler", "newName": name, "newTag": tag}],
        "configMapGenerator": [
            {
                "name": "pyscheduler-config",
                "namespace": NAMESPACE,
                "behavior": "replace",
                "files": ["config.yaml=scheduler-config.yaml"],
            }
        ],
        "patches": [
            {
                "target": {"kind": "Deployment", "name": "pyscheduler"},
                "patch": yaml.safe_dump(
                    [
                        {
                            "op": "replace",
                            "path": "/spec/template/spec/containers/0/imagePullPolicy",
                            "value": "Never",
                        }
                    ]
                ),
            }
        ],
    }
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return directory


def _image_of(pod: dict[str, Any]) -> str:
    return str(pod["spec"]["containers"][0]["image"])


@pytest.fixture(scope="module")
def with_plugins(cluster: Cluster, deployed: Deployed) -> dict[str, Any]:
    assert cluster.images is not None
    plugins_ref = cluster.images.plugins_ref
    with cluster.phase("out-of-tree plugins (image with wheels, roll, pool profiles)"):
        before = {_image_of(pod) for pod in scheduler_pods(cluster)}
        # The failover bursts filled the node's CPU: make room for the rolling
        # update's extra replica and the pool pods (nothing reads them after).
        cluster.kubectl(
            "delete",
            "pods",
            "-n",
            WORK_NAMESPACE,
            "-l",
            BURST_LABEL,
            "--wait=true",
            "--timeout=300s",
            timeout=330,
        )
        cluster.kubectl("label", "node", NODE_NAME, f"{POOL_LABEL}={NODE_POOL}", "--overwrite")
        cluster.kubectl("apply", "-k", str(plugin_overlay(cluster)))
        cluster.kubectl(
            "-n",
            NAMESPACE,
            "rollout",
            "status",
            "deployment/pyscheduler",
            "--timeout=600s",
            timeout=660,
        )

        def led_by_a_plugin_pod() -> str:
            current = {
                pod["metadata"]["name"]
                for pod in scheduler_pods(cluster)
                if ready(pod) and _image_of(pod) == plugins_ref
            }
            holder = holder_pod(lease_holder(cluster))
            return holder if holder in current else ""

        leader = wait_for("a leader running the plugin image", led_by_a_plugin_pod, 180, 2)
        ensure_namespace(cluster, WORK_NAMESPACE)
        apply(
            cluster,
            [
                pod_manifest(cluster, PLACED, cpu="10m", scheduler=ALLOWED_PROFILE),
                pod_manifest(cluster, WAITING, cpu="10m", scheduler=REFUSED_PROFILE),
            ],
        )

        def placed_running() -> bool:
            pod = cluster.json("get", "pod", PLACED, "-n", WORK_NAMESPACE)
            return bool(pod["status"].get("phase") == "Running")

        wait_for(f"{PLACED} Running", placed_running, 300, 2)
        message = wait_for(
            f"{WAITING}'s FailedScheduling event",
            lambda: failed_scheduling_message(cluster, WAITING),
            120,
            2,
        )
    return {"before": before, "leader": leader, "message": message}


def test_the_deployment_rolls_to_the_image_built_with_the_plugin_wheels(
    cluster: Cluster, with_plugins: dict[str, Any]
) -> None:
    assert cluster.images is not None
    assert with_plugins["before"] == {cluster.images.image_ref}, "the shipped image ran before"
    pods = scheduler_pods(cluster)
    assert {_image_of(pod) for pod in pods} == {cluster.images.plugins_ref}
    assert all(ready(pod) for pod in pods)


def test_a_pod_of_a_profile_using_the_plugins_is_placed_by_them_and_runs(
    cluster: Cluster, with_plugins: dict[str, Any]
) -> None:
    pod = cluster.json("get", "pod", PLACED, "-n", WORK_NAMESPACE)
    assert pod["spec"]["schedulerName"] == ALLOWED_PROFILE
    assert pod["spec"]["nodeName"] == NODE_NAME
    assert pod["status"]["phase"] == "Running"
    wait_for(f"{PLACED}'s Scheduled event", lambda: scheduled_events(cluster).get(PLACED), 60, 2)
    reporters = [event.get("reportingController") for event in scheduled_events(cluster)[PLACED]]
    assert reporters == [ALLOWED_PROFILE], "bound by the plugin profile, no other scheduler"


def test_a_pod_whose_pool_the_plugin_refuses_waits_with_the_plugins_reason(
    cluster: Cluster, with_plugins: dict[str, Any]
) -> None:
    pod = cluster.json("get", "pod", WAITING, "-n", WORK_NAMESPACE)
    assert not pod["spec"].get("nodeName")
    message = with_plugins["message"]
    # PoolFilter's own Status message: only the plugin loaded from the wheel says it.
    assert "0/1 nodes are available: 1 node(s) not in pool blue." in message, message
    cluster.summary["out-of-tree plugins"] = (
        f"leader {with_plugins['leader']}; {PLACED} Running on {NODE_NAME}; {WAITING}: {message}"
    )
