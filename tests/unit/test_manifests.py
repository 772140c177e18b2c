"""The deployment manifests agree with each other and with the code: the shipped
configuration loads, the Deployment's arguments, ports and probes match what the
CLI and the HTTP server serve, the pod is locked down, selectors and RBAC
subjects point at the right objects, and every metric the alerts and the
dashboard query is one the scheduler exposes. (The API server's verdict on the
same files is in tests/integration/test_manifests.py.)"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from plugins.autoscale_enforcer import CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE
from plugins.autoscale_enforcer.args import AGENT_PORT
from scheduler.app.flags import parse_args
from scheduler.app.root import AppOptions
from scheduler.config import DEFAULT_SCHEDULER_NAME, SchedulerConfiguration, parse_config
from scheduler.engine.assembly import build_registry, resolve
from scheduler.ops.health import Endpoint
from scheduler.ops.metrics import SchedulerMetrics
from tests.support.manifests import (
    CONFIG_KEY,
    KUSTOMIZATION,
    MANIFESTS,
    MONITORING,
    REPO_ROOT,
    Obj,
    documents,
    find,
    generator_sources,
    kustomization,
    resources,
    scheduler_container,
    shipped_config_text,
    yaml_files,
)

PLUGIN_CONFIG_ROLE = "pyscheduler-plugin-config"
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
METRIC_NAME = re.compile(r"\b(?:scheduler|rest_client|leader_election|process)_[a-z0-9_]+")
JOB_SELECTOR = 'job="pyscheduler"'
DASHBOARD = MONITORING / "dashboard.json"

BASE = resources(MANIFESTS)
MONITORING_OBJECTS = resources(MONITORING)
DEPLOYMENT = find(BASE, "Deployment")
CONTAINER = scheduler_container(DEPLOYMENT)
POD_SPEC: Obj = DEPLOYMENT["spec"]["template"]["spec"]
POD_LABELS: dict[str, str] = DEPLOYMENT["spec"]["template"]["metadata"]["labels"]
NAMESPACE = find(BASE, "Namespace")["metadata"]["name"]
SERVICE_ACCOUNT = find(BASE, "ServiceAccount")


def _config() -> SchedulerConfiguration:
    return parse_config(shipped_config_text(BASE), source="manifests/scheduler-config.yaml")


def _args() -> Any:
    return parse_args(CONTAINER["args"])


def _port(name: str) -> int:
    (port,) = [p for p in CONTAINER["ports"] if p["name"] == name]
    number: int = port["containerPort"]
    return number


def _alert_rules() -> list[Obj]:
    rule = find(MONITORING_OBJECTS, "PrometheusRule")
    return [r for group in rule["spec"]["groups"] for r in group["rules"]]


def _dashboard_exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", ())]


def _exposed_metric_names() -> set[str]:
    registry = CollectorRegistry()
    SchedulerMetrics(registry)
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}
    return {
        family.name + suffix
        for family in registry.collect()
        for suffix in suffixes.get(family.type, ("",))
    }


# ------------------------------------------------------------------ the files
@pytest.mark.parametrize(
    "path", [pytest.param(p, id=str(p.relative_to(MANIFESTS))) for p in yaml_files()]
)
def test_every_manifest_is_yaml_naming_its_kind_and_object(path: Path) -> None:
    if path.name in generator_sources(path.parent):
        pytest.skip("data of a configMapGenerator, not an object")
    docs = documents(path)
    assert docs, "empty file"
    for doc in docs:
        assert doc.get("apiVersion")
        assert doc.get("kind")
        if path.name != KUSTOMIZATION:
            assert doc["metadata"].get("name")


@pytest.mark.parametrize(
    "folder", [pytest.param(MANIFESTS, id="base"), pytest.param(MONITORING, id="monitoring")]
)
def test_kustomization_lists_exactly_the_manifests_beside_it(folder: Path) -> None:
    listed = set(kustomization(folder)["resources"])
    present = {p.name for p in folder.glob("*.yaml")} - {KUSTOMIZATION} - generator_sources(folder)
    assert listed == present


def test_monitoring_dashboard_is_json_and_generated_into_a_configmap() -> None:
    generators = kustomization(MONITORING)["configMapGenerator"]
    sources = [entry.split("=", 1)[-1] for g in generators for entry in g["files"]]
    assert sources == [DASHBOARD.name]
    assert json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]
    assert all(g["namespace"] == NAMESPACE for g in generators)


def test_every_namespaced_object_lives_in_the_scheduler_namespace() -> None:
    for obj in BASE + MONITORING_OBJECTS:
        if obj["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in obj["metadata"], obj["kind"]
        elif obj["metadata"]["name"] == PLUGIN_CONFIG_ROLE:
            # the AutoscaleEnforcer's ConfigMap is read where the plugin reads it
            assert obj["metadata"]["namespace"] == CONFIG_MAP_NAMESPACE, obj["kind"]
        else:
            assert obj["metadata"]["namespace"] == NAMESPACE, obj["kind"]


# ------------------------------------------------------ config against code
def test_shipped_config_loads_and_resolves_with_the_in_tree_plugins() -> None:
    config = _config()
    profiles = resolve(config, build_registry())
    assert [p.scheduler_name for p in profiles] == [DEFAULT_SCHEDULER_NAME]


def test_shipped_config_elects_a_leader_on_a_lease_of_its_own_namespace() -> None:
    election = _config().leader_election
    role = find(BASE, "Role", "pyscheduler-leader-election")
    (named,) = [rule for rule in role["rules"] if rule.get("resourceNames")]
    assert election.leader_elect
    assert DEPLOYMENT["spec"]["replicas"] == 2
    assert election.resource_namespace == NAMESPACE == role["metadata"]["namespace"]
    assert named["resourceNames"] == [election.resource_name]
    assert set(named["verbs"]) == {"get", "update"}


def test_deployment_mounts_the_configmap_where_the_config_flag_points() -> None:
    configmap = find(BASE, "ConfigMap")
    config_path = Path(_args().config)
    (mount,) = [m for m in CONTAINER["volumeMounts"] if config_path.parent == Path(m["mountPath"])]
    (volume,) = [v for v in POD_SPEC["volumes"] if v["name"] == mount["name"]]
    assert mount["readOnly"] is True
    assert volume["configMap"]["name"] == configmap["metadata"]["name"]
    assert volume["configMap"]["items"] == [{"key": CONFIG_KEY, "path": config_path.name}]


def test_image_entrypoint_and_default_config_path_match_the_deployment() -> None:
    dockerfile = (REPO_ROOT / "Dockerfile").read_text(encoding="utf-8")
    (entrypoint,) = re.findall(r"^ENTRYPOINT\s+(\[.*\])$", dockerfile, re.M)
    (cmd,) = re.findall(r"^CMD\s+(\[.*\])$", dockerfile, re.M)
    assert "command" not in CONTAINER, "args must go to the image's entrypoint"
    assert json.loads(entrypoint) == ["pyscheduler"]
    assert parse_args(json.loads(cmd)).config == _args().config


def test_the_served_port_is_the_container_port_the_probes_and_the_service_use() -> None:
    args = _args()
    service = find(BASE, "Service")
    (service_port,) = service["spec"]["ports"]
    (endpoint,) = find(MONITORING_OBJECTS, "PodMonitor")["spec"]["podMetricsEndpoints"]
    assert args.secure_port == _port("metrics")
    assert args.bind_address not in ("127.0.0.1", "localhost", "::1"), "kubelet probes need it"
    assert service_port["targetPort"] == endpoint["port"] == "metrics"
    assert endpoint["path"] == "/metrics"
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert CONTAINER[probe]["httpGet"]["port"] == "metrics", probe


@pytest.mark.parametrize(
    ("probe", "path"),
    [
        pytest.param("startupProbe", f"/{Endpoint.LIVEZ}", id="startup waits for the server"),
        pytest.param("livenessProbe", f"/{Endpoint.LIVEZ}", id="liveness"),
        pytest.param("readinessProbe", f"/{Endpoint.READYZ}", id="readiness"),
    ],
)
def test_probes_ask_the_endpoints_the_server_serves(probe: str, path: str) -> None:
    assert CONTAINER[probe]["httpGet"]["path"] == path


def test_termination_grace_covers_draining_binds_and_flushing_writes() -> None:
    drain = _args().bind_grace_seconds + AppOptions().flush_grace_seconds
    assert POD_SPEC["terminationGracePeriodSeconds"] > drain


def test_image_tag_follows_the_package_version() -> None:
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (image,) = kustomization(MANIFESTS)["images"]
    name, tag = CONTAINER["image"].split(":")
    assert image["name"] == name
    assert image["newTag"] == tag == pyproject["project"]["version"]


# ----------------------------------------------------------- the pod itself
def _dockerfile_user() -> tuple[int, int]:
    dockerfile = (REPO_ROOT / "Dockerfile").read_text(encoding="utf-8")
    (user,) = re.findall(r"^USER\s+(\d+):(\d+)$", dockerfile, re.M)
    return int(user[0]), int(user[1])


def _volume_of(mount_path: str) -> Obj:
    (mount,) = [m for m in CONTAINER["volumeMounts"] if m["mountPath"] == mount_path]
    volumes: list[Obj] = [v for v in POD_SPEC["volumes"] if v["name"] == mount["name"]]
    (volume,) = volumes
    return volume


def _anti_affinity_term() -> Obj:
    (term,) = POD_SPEC["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    affinity_term: Obj = term["podAffinityTerm"]
    return affinity_term


@pytest.mark.parametrize(
    ("read", "expected"),
    [
        pytest.param(
            lambda: (
                POD_SPEC["securityContext"]["runAsUser"],
                POD_SPEC["securityContext"]["runAsGroup"],
            ),
            _dockerfile_user(),
            id="runs as the image's non-root user",
        ),
        pytest.param(lambda: POD_SPEC["securityContext"]["runAsNonRoot"], True, id="runAsNonRoot"),
        pytest.param(
            lambda: POD_SPEC["securityContext"]["seccompProfile"],
            {"type": "RuntimeDefault"},
            id="seccomp RuntimeDefault",
        ),
        pytest.param(
            lambda: CONTAINER["securityContext"]["readOnlyRootFilesystem"],
            True,
            id="read-only root filesystem",
        ),
        pytest.param(
            lambda: CONTAINER["securityContext"]["allowPrivilegeEscalation"],
            False,
            id="no privilege escalation",
        ),
        pytest.param(
            lambda: CONTAINER["securityContext"]["capabilities"],
            {"drop": ["ALL"]},
            id="drops every capability",
        ),
        pytest.param(lambda: "emptyDir" in _volume_of("/tmp"), True, id="/tmp is an emptyDir"),
        pytest.param(
            lambda: sorted(CONTAINER["resources"]),
            ["limits", "requests"],
            id="resources have requests and limits",
        ),
        pytest.param(
            lambda: POD_SPEC["priorityClassName"],
            "system-cluster-critical",
            id="critical priority",
        ),
        pytest.param(
            lambda: POD_SPEC.get("schedulerName", "default-scheduler"),
            "default-scheduler",
            id="placed by the default scheduler, not by itself",
        ),
        pytest.param(
            lambda: POD_SPEC["serviceAccountName"],
            SERVICE_ACCOUNT["metadata"]["name"],
            id="runs as its ServiceAccount",
        ),
        pytest.param(
            lambda: _anti_affinity_term()["topologyKey"],
            "kubernetes.io/hostname",
            id="replicas spread across nodes",
        ),
    ],
)
def test_scheduler_pod(read: Callable[[], Any], expected: Any) -> None:
    assert read() == expected


@pytest.mark.parametrize(
    ("kind", "selector"),
    [
        pytest.param("Deployment", lambda o: o["spec"]["selector"]["matchLabels"], id="Deployment"),
        pytest.param("Service", lambda o: o["spec"]["selector"], id="Service"),
        pytest.param(
            "PodDisruptionBudget", lambda o: o["spec"]["selector"]["matchLabels"], id="PDB"
        ),
        pytest.param("PodMonitor", lambda o: o["spec"]["selector"]["matchLabels"], id="PodMonitor"),
        pytest.param(
            "Deployment",
            lambda _: _anti_affinity_term()["labelSelector"]["matchLabels"],
            id="anti-affinity",
        ),
    ],
)
def test_selector_matches_the_scheduler_pods(
    kind: str, selector: Callable[[Obj], dict[str, str]]
) -> None:
    labels = selector(find(BASE + MONITORING_OBJECTS, kind))
    assert labels
    assert labels.items() <= POD_LABELS.items()


# --------------------------------------------------------------------- RBAC
@pytest.mark.parametrize(
    ("binding_kind", "role_kind", "name"),
    [
        pytest.param("ClusterRoleBinding", "ClusterRole", "pyscheduler", id="cluster-wide"),
        pytest.param(
            "RoleBinding", "Role", "pyscheduler-leader-election", id="leases in its namespace"
        ),
        pytest.param(
            "RoleBinding", "Role", "pyscheduler-plugin-config", id="plugin ConfigMap in kube-system"
        ),
    ],
)
def test_bindings_grant_their_role_to_the_scheduler_service_account(
    binding_kind: str, role_kind: str, name: str
) -> None:
    binding = find(BASE, binding_kind, name)
    role = find(BASE, role_kind, name)
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": role_kind,
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": SERVICE_ACCOUNT["metadata"]["name"],
            "namespace": SERVICE_ACCOUNT["metadata"]["namespace"],
        }
    ]


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        pytest.param("ClusterRole", "pyscheduler"),
        pytest.param("Role", "pyscheduler-leader-election"),
        pytest.param("Role", PLUGIN_CONFIG_ROLE),
    ],
)
def test_rules_name_groups_resources_and_verbs_without_wildcards(kind: str, name: str) -> None:
    for rule in find(BASE, kind, name)["rules"]:
        for field in ("apiGroups", "resources", "verbs"):
            assert rule[field], rule
            assert "*" not in rule[field], rule
        assert "secrets" not in rule["resources"]
        assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"]), rule
        if "delete" in rule["verbs"]:
            # preemption deletes pods; DynamicResources the claims it made
            # for extended resources (as system:kube-scheduler); nothing else
            assert (rule["apiGroups"], rule["resources"]) in (
                ([""], ["pods"]),
                (["resource.k8s.io"], ["resourceclaims"]),
            ), rule


# Each write the ClusterRole grants, and where the code makes it: (group,
# resource, verb) -> (file, text of the request in that file).
WRITE_USES: dict[tuple[str, str, str], tuple[str, str]] = {
    ("", "pods/binding", "create"): ("scheduler/kube/client.py", '"binding")'),
    ("", "pods/status", "patch"): (
        "scheduler/kube/client.py",
        'PODS.object_path(name, namespace, "status")',
    ),
    ("", "pods", "delete"): (
        "plugins/default_preemption/executor.py",
        '"DELETE", _pod_path(victim)',
    ),
    ("events.k8s.io", "events", "create"): ("scheduler/kube/client.py", "EVENTS.collection_path"),
    ("events.k8s.io", "events", "patch"): ("scheduler/kube/client.py", "EVENTS.object_path(name"),
    ("", "events", "create"): (
        "scheduler/kube/client.py",
        '"POST", f"/api/v1/namespaces/{namespace}/events"',
    ),
    ("", "events", "patch"): ("scheduler/kube/client.py", "def patch_core_event"),
    ("resource.k8s.io", "resourceclaims/status", "patch"): (
        "plugins/dynamicresources/writes.py",
        '"PATCH", claim_path(namespace, name, "status")',
    ),
    ("resource.k8s.io", "resourceclaims/status", "update"): (
        "plugins/dynamicresources/writes.py",
        '"PUT", claim_path(namespace, name, "status")',
    ),
    ("resource.k8s.io", "resourceclaims/binding", "patch"): (
        "plugins/dynamicresources/writes.py",
        '"PATCH", claim_path(namespace, name, "status")',
    ),
    ("resource.k8s.io", "resourceclaims/binding", "update"): (
        "plugins/dynamicresources/writes.py",
        '"PUT", claim_path(namespace, name, "status")',
    ),
    ("resource.k8s.io", "resourceclaims", "update"): (
        "plugins/dynamicresources/writes.py",
        '"PUT", claim_path(namespace, name), updated',
    ),
    ("resource.k8s.io", "resourceclaims", "create"): (
        "plugins/dynamicresources/prebind.py",
        "claims_collection(pod.namespace)",
    ),
    ("resource.k8s.io", "resourceclaims", "delete"): (
        "plugins/dynamicresources/writes.py",
        '"DELETE", claim_path(namespace, name)',
    ),
    ("", "persistentvolumeclaims", "update"): (
        "plugins/volume_binding/prebind.py",
        '"PUT", claim_path(provision.pvc)',
    ),
    ("", "persistentvolumes", "update"): (
        "plugins/volume_binding/prebind.py",
        '"PUT", volume_path(',
    ),
}
READ_VERBS = {"get", "list", "watch"}


def _granted_writes() -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in find(BASE, "ClusterRole", "pyscheduler")["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
        if verb not in READ_VERBS
    }


def test_every_write_the_cluster_role_grants_is_one_the_code_makes() -> None:
    assert _granted_writes() == set(WRITE_USES)


@pytest.mark.parametrize(
    ("grant", "use"),
    [pytest.param(grant, use, id="/".join(grant)) for grant, use in WRITE_USES.items()],
)
def test_the_code_makes_the_granted_write(
    grant: tuple[str, str, str], use: tuple[str, str]
) -> None:
    path, text = use
    assert text in (REPO_ROOT / path).read_text(encoding="utf-8"), grant


def test_the_plugin_config_map_is_readable_in_its_namespace_only() -> None:
    cluster_resources = {
        resource
        for rule in find(BASE, "ClusterRole", "pyscheduler")["rules"]
        for resource in rule["resources"]
    }
    role = find(BASE, "Role", PLUGIN_CONFIG_ROLE)

    assert "configmaps" not in cluster_resources
    assert role["metadata"]["namespace"] == CONFIG_MAP_NAMESPACE
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": [CONFIG_MAP_NAME],
            "verbs": ["get", "list", "watch"],
        }
    ]


# --------------------------------------------------------------- monitoring
@pytest.mark.parametrize(
    "exprs",
    [
        pytest.param(lambda: [r["expr"] for r in _alert_rules()], id="alerts"),
        pytest.param(_dashboard_exprs, id="dashboard"),
    ],
)
def test_queries_use_metrics_the_scheduler_exposes_under_its_job(
    exprs: Callable[[], list[str]],
) -> None:
    exposed = _exposed_metric_names()
    for expr in exprs():
        used = set(METRIC_NAME.findall(expr))
        assert used <= exposed, f"unknown metrics {used - exposed} in {expr}"
        if used:
            assert JOB_SELECTOR in expr, expr


def test_alerts_cover_pending_pods_errors_and_leadership_with_severity_and_summary() -> None:
    rules = _alert_rules()
    names = {r["alert"] for r in rules}
    assert {
        "PySchedulerDown",
        "PySchedulerNoLeader",
        "PySchedulerNotScheduling",
        "PySchedulerPendingPodsHigh",
        "PySchedulerScheduleErrors",
    } <= names
    for rule in rules:
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
        assert rule["for"], rule["alert"]


def test_no_leader_alert_watches_the_configured_lease() -> None:
    election = _config().leader_election
    (rule,) = [r for r in _alert_rules() if r["alert"] == "PySchedulerNoLeader"]
    assert f'name="{election.resource_name}"' in rule["expr"]


def test_the_ops_port_can_delegate_and_scrapers_have_a_role() -> None:
    delegator = find(BASE, "ClusterRoleBinding", "pyscheduler-auth-delegator")
    assert delegator["roleRef"]["name"] == "system:auth-delegator"
    assert delegator["subjects"] == find(BASE, "ClusterRoleBinding", "pyscheduler")["subjects"]
    reader = find(BASE, "ClusterRole", "pyscheduler-metrics-reader")
    assert reader["rules"] == [
        {"nonResourceURLs": ["/metrics", "/metrics/resources"], "verbs": ["get"]}
    ]


def test_probes_and_the_pod_monitor_speak_https_and_the_monitor_sends_a_token() -> None:
    container = find(BASE, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["scheme"] == "HTTPS", probe
        assert container[probe]["httpGet"]["path"] in {"/livez", "/readyz", "/healthz"}
    (endpoint,) = find(MONITORING_OBJECTS, "PodMonitor")["spec"]["podMetricsEndpoints"]
    assert endpoint["scheme"] == "https"
    secret = endpoint["authorization"]["credentials"]["name"]
    token = find(MONITORING_OBJECTS, "Secret", secret)
    account = token["metadata"]["annotations"]["kubernetes.io/service-account.name"]
    binding = find(MONITORING_OBJECTS, "ClusterRoleBinding", "pyscheduler-metrics-scraper")
    assert binding["roleRef"]["name"] == "pyscheduler-metrics-reader"
    assert binding["subjects"][0]["name"] == account


def test_dashboard_shows_cpu_memory_leader_and_client_errors_from_our_own_metrics() -> None:
    exprs = " ".join(_dashboard_exprs())
    for metric in (
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "leader_election_master_status",
        "rest_client_requests_total",
    ):
        assert metric in exprs, metric
    (no_leader,) = [r for r in _alert_rules() if r["alert"] == "PySchedulerNoLeader"]
    assert "leader_election_master_status" in no_leader["expr"]
    assert "kube_lease" not in no_leader["expr"]


# ------------------------------------------------- the agent port's NetworkPolicy
AUTOSCALE_ENFORCER = MANIFESTS / "autoscale-enforcer"


def test_the_agent_port_admits_only_autoscaler_agents_and_the_ops_port_stays_open() -> None:
    policy = find(resources(AUTOSCALE_ENFORCER), "NetworkPolicy")
    assert policy["metadata"]["namespace"] == NAMESPACE
    template_labels = DEPLOYMENT["spec"]["template"]["metadata"]["labels"]
    selected = policy["spec"]["podSelector"]["matchLabels"]
    assert selected.items() <= template_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    by_port = {
        port["port"]: rule.get("from")
        for rule in policy["spec"]["ingress"]
        for port in rule["ports"]
    }
    ops_port = CONTAINER["ports"][0]["containerPort"]
    assert by_port[ops_port] is None  # open to all, as before
    (agents,) = by_port[AGENT_PORT]
    assert agents["podSelector"]["matchLabels"] == {"name": "autoscaler-agent"}
    assert agents["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "neonvm-system"
    }


def test_the_autoscale_enforcer_kustomization_lists_exactly_the_manifests_beside_it() -> None:
    listed = set(kustomization(AUTOSCALE_ENFORCER)["resources"])
    present = {p.name for p in AUTOSCALE_ENFORCER.glob("*.yaml")} - {KUSTOMIZATION}
    assert listed == present


def test_a_configuration_edit_rolls_the_deployment() -> None:
    """The configuration is a generated ConfigMap (its name carries a hash of
    the content once kustomize builds it), mounted by the Deployment under the
    generator's name, which kustomize rewrites: a new config, a new pod template."""
    (generator,) = [
        g for g in kustomization()["configMapGenerator"] if g["name"] == "pyscheduler-config"
    ]
    deployment = find(BASE, "Deployment")
    volumes = deployment["spec"]["template"]["spec"]["volumes"]

    assert generator["files"] == [f"{CONFIG_KEY}=scheduler-config.yaml"]
    assert {"name": "pyscheduler-config"}.items() <= next(
        v["configMap"] for v in volumes if "configMap" in v
    ).items()
    assert "configmap.yaml" not in kustomization()["resources"]
