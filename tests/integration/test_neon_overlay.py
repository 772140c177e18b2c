"""examples/neon-autoscaling: the AutoscaleEnforcer where Neon's
autoscaler-agents find it (issue 25 #5).

Neon's agent (pkg/agent/schedwatch, ``StartSchedulerWatcher``) lists pods in
``kube-system`` with label ``name=<schedulerName>``, keeps those with a pod
IP that are Ready (``isActivePod``) and talks to the newest (``reconcile``).
The rendered overlay must put exactly one such pod there, never a second
one (a follower would be Ready and answer 503), serving the profile and the
plugin config of that scheduler name. Rendered with ``kubectl kustomize``
(the pinned kubectl of the control-plane binary; no cluster needed).
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import yaml

from localcluster.binary import control_plane_binary
from plugins.autoscale_enforcer import CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE
from plugins.autoscale_enforcer.config import CONFIG_MAP_KEY
from plugins.autoscale_enforcer.config import parse_config as parse_plugin_config
from scheduler.config import parse_config
from scheduler.engine.assembly import build_registry, resolve
from tests.support.manifests import CONFIG_KEY, REPO_ROOT, find

OVERLAY = REPO_ROOT / "examples" / "neon-autoscaling"
AGENT_NAMESPACE = "kube-system"  # schedwatch.schedulerNamespace
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding"}


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    out = subprocess.run(
        [str(control_plane_binary()), "kubectl", "kustomize", str(OVERLAY)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc is not None]


def _profile_with_the_enforcer(objects: list[dict[str, Any]]) -> str:
    (configmap,) = [
        o
        for o in objects
        if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("pyscheduler-config-")
    ]
    text = configmap["data"][CONFIG_KEY]
    config = parse_config(text)
    assert config.leader_election.leader_elect is False  # one replica, as Neon's
    profiles = resolve(config, build_registry())
    return "".join(p.scheduler_name for p in profiles)


def test_agents_find_one_ready_pod_in_kube_system_labelled_with_the_scheduler_name(
    rendered: list[dict[str, Any]],
) -> None:
    deployment = find(rendered, "Deployment")
    assert deployment["metadata"]["namespace"] == AGENT_NAMESPACE
    name = _profile_with_the_enforcer(rendered)
    assert name == "autoscale-scheduler"
    template = deployment["spec"]["template"]["metadata"]["labels"]
    assert template["name"] == name  # schedulerLabelSelector: name=<schedulerName>
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= template.items()
    # Never two Ready pods (no follower to pick, no rollout overlap).
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}


def test_the_plugin_config_is_where_the_plugin_reads_it_and_names_the_profile(
    rendered: list[dict[str, Any]],
) -> None:
    config_map = find(rendered, "ConfigMap", CONFIG_MAP_NAME)
    assert config_map["metadata"]["namespace"] == CONFIG_MAP_NAMESPACE
    plugin_config = parse_plugin_config(config_map["data"][CONFIG_MAP_KEY])
    assert plugin_config.scheduler_name == _profile_with_the_enforcer(rendered)


def test_everything_lives_in_kube_system_and_the_bindings_follow(
    rendered: list[dict[str, Any]],
) -> None:
    kinds = {obj["kind"] for obj in rendered}
    assert "Namespace" not in kinds
    assert "PodDisruptionBudget" not in kinds
    for obj in rendered:
        if obj["kind"] not in CLUSTER_SCOPED:
            assert obj["metadata"]["namespace"] == AGENT_NAMESPACE, obj["kind"]
        for subject in obj.get("subjects", []):
            if subject["kind"] == "ServiceAccount":
                assert subject["namespace"] == AGENT_NAMESPACE, obj["metadata"]["name"]
    policy = find(rendered, "NetworkPolicy")
    labels = find(rendered, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
