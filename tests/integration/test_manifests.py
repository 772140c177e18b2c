"""The deployment manifests against a real API server: the base kustomization is
accepted as is (and again by a server-side dry run, without warnings), the
scheduler pod passes the namespace's "restricted" Pod Security profile, the
ServiceAccount may do what the scheduler does and little else, and the real
scheduler, running with nothing but that ServiceAccount's token, binds a pod,
tells an unschedulable pod why and holds its Lease.

The base is applied once for this module into a control plane the tests
started (it creates cluster-wide objects with fixed names, so never into a
cluster given by PYSCHEDULER_TEST_KUBECONFIG) and deleted afterwards. The
Deployment never runs: there is no kubelet and no deployment controller.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import re
import subprocess
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client

from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster, NodePool
from tests.support.dradriver import allocated_devices, simulated_driver
from tests.support.kubeapi import condition, read_json, read_pod
from tests.support.manifests import (
    MANIFESTS,
    MONITORING,
    Obj,
    find,
    resources,
    shipped_config_text,
    unhashed,
)
from tests.support.ops import kubeconfig_token, ops_get
from tests.support.scheduler import running_scheduler, unique_scheduler_name
from tests.support.wait import eventually

BASE = resources(MANIFESTS)
NAMESPACE = find(BASE, "Namespace")["metadata"]["name"]
SERVICE_ACCOUNT = find(BASE, "ServiceAccount")["metadata"]["name"]
SUBJECT = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
SUBJECT_GROUPS = [
    "system:serviceaccounts",
    f"system:serviceaccounts:{NAMESPACE}",
    "system:authenticated",
]
# An ApiError reads "403 Forbidden: ... is forbidden: User ... cannot ...".
FORBIDDEN = re.compile("forbidden", re.IGNORECASE)
KUBECTL_TIMEOUT = 120
HTTP_OK, HTTP_CREATED = 200, 201


def _body(obj: Obj) -> Any:
    """The generated client's signatures name its models; it takes plain dicts too."""
    return obj


async def _answer(call: Awaitable[Any]) -> tuple[int, Obj]:
    """Status and JSON body of a ``_preload_content=False`` call, which returns
    the raw response whatever its status (it raises for none)."""
    response = await call
    async with response:
        body: Obj = json.loads(await response.read())
        return int(response.status), body


@dataclass(frozen=True)
class Kubectl:
    """The control plane's own kubectl, as the admin (or another kubeconfig)."""

    binary: Path
    kubeconfig: Path

    def argv(self, *args: str, kubeconfig: Path | None = None) -> list[str]:
        return [str(self.binary), "kubectl", f"--kubeconfig={kubeconfig or self.kubeconfig}", *args]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args), capture_output=True, text=True, timeout=KUBECTL_TIMEOUT, check=False
        )

    async def run_async(self, *args: str, kubeconfig: Path | None = None) -> tuple[int, str, str]:
        process = await asyncio.create_subprocess_exec(
            *self.argv(*args, kubeconfig=kubeconfig),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        async with asyncio.timeout(KUBECTL_TIMEOUT):
            out, err = await process.communicate()
        return process.returncode or 0, out.decode(), err.decode()


@dataclass(frozen=True)
class Installed:
    kubectl: Kubectl
    cluster: Cluster
    apply: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def installed(control_plane: Cluster) -> Iterator[Installed]:
    """``kubectl apply -k manifests/`` as the README says; deleted afterwards,
    cluster-scoped objects included."""
    plane = control_plane.require_plane()
    kubectl = Kubectl(plane.binary, control_plane.kubeconfig)
    applied = kubectl.run("apply", "-k", str(MANIFESTS))
    assert applied.returncode == 0, applied.stderr
    yield Installed(kubectl, control_plane, applied)
    deleted = kubectl.run(
        "delete", "-k", str(MANIFESTS), "--ignore-not-found", "--wait=true", "--timeout=90s"
    )
    assert deleted.returncode == 0, deleted.stderr


def _resource_name(obj: Obj) -> str:
    """``kind.group/name`` as ``kubectl get -o name`` prints it."""
    api_version: str = obj["apiVersion"]
    group = api_version.split("/", maxsplit=1)[0] if "/" in api_version else ""
    kind = obj["kind"].lower()
    prefix = f"{kind}.{group}" if group else kind
    return f"{prefix}/{obj['metadata']['name']}"


# --------------------------------------------------------------- the objects
def test_base_is_accepted_by_the_api_server_without_warnings(installed: Installed) -> None:
    kubectl = installed.kubectl
    assert installed.apply.stderr == ""
    # A full PUT of every object: validated and admitted again, persisted never.
    dry_run = kubectl.run("replace", "-k", str(MANIFESTS), "--dry-run=server")
    assert dry_run.returncode == 0, dry_run.stderr
    assert dry_run.stderr == ""
    built = kubectl.run("kustomize", str(MANIFESTS))
    assert built.returncode == 0, built.stderr
    listed = kubectl.run("get", "-k", str(MANIFESTS), "-o", "name")
    assert listed.returncode == 0, listed.stderr
    objects = [o for o in yaml.safe_load_all(built.stdout) if o]
    assert sorted(listed.stdout.split()) == sorted(_resource_name(o) for o in objects)
    assert sorted(unhashed(o) for o in objects) == sorted(
        (o["kind"], o["metadata"]["name"]) for o in BASE
    )


@pytest.mark.parametrize(
    "folder", [pytest.param(MANIFESTS, id="base"), pytest.param(MONITORING, id="monitoring")]
)
def test_kustomize_builds_every_listed_and_generated_object(
    installed: Installed, folder: Path
) -> None:
    built = installed.kubectl.run("kustomize", str(folder))
    assert built.returncode == 0, built.stderr
    objects = [o for o in yaml.safe_load_all(built.stdout) if o]
    expected = [(o["kind"], o["metadata"]["name"]) for o in resources(folder)]
    assert sorted(unhashed(o, folder) for o in objects) == sorted(expected)


def test_the_configuration_configmap_is_named_by_its_content_and_mounted_so(
    installed: Installed,
) -> None:
    """A config edit rolls the Deployment: kustomize names the ConfigMap by a
    hash of the content and rewrites the Deployment's reference to it."""
    built = installed.kubectl.run("kustomize", str(MANIFESTS))
    objects = [o for o in yaml.safe_load_all(built.stdout) if o]
    (configmap,) = [o for o in objects if unhashed(o) == ("ConfigMap", "pyscheduler-config")]
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    volumes = deployment["spec"]["template"]["spec"]["volumes"]

    assert configmap["metadata"]["name"] != "pyscheduler-config"
    assert configmap["metadata"]["name"] in [
        v["configMap"]["name"] for v in volumes if "configMap" in v
    ]


def _scheduler_pod() -> Obj:
    deployment = find(BASE, "Deployment")
    template = copy.deepcopy(deployment["spec"]["template"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "pyscheduler-admission-", **template["metadata"]},
        "spec": template["spec"],
    }


def _escalating(pod: Obj) -> Obj:
    (container,) = pod["spec"]["containers"]
    container["securityContext"]["allowPrivilegeEscalation"] = True
    return pod


@pytest.mark.parametrize(
    ("pod", "admitted"),
    [
        pytest.param(_scheduler_pod(), True, id="the scheduler pod as shipped"),
        pytest.param(_escalating(_scheduler_pod()), False, id="one allowing privilege escalation"),
    ],
)
async def test_scheduler_pod_passes_the_restricted_pod_security_profile(
    installed: Installed, kube: client.ApiClient, pod: Obj, admitted: bool
) -> None:
    core = client.CoreV1Api(kube)
    status, answer = await _answer(
        core.create_namespaced_pod(NAMESPACE, _body(pod), dry_run="All", _preload_content=False)
    )
    assert (status == HTTP_CREATED) == admitted, answer
    if not admitted:
        assert 'violates PodSecurity "restricted:latest"' in answer["message"]


# ---------------------------------------------------------------------- RBAC
def _access(
    verb: str,
    resource: str,
    *,
    group: str = "",
    subresource: str = "",
    namespace: str = "",
    name: str = "",
) -> dict[str, str]:
    attributes = {"verb": verb, "group": group, "resource": resource}
    for key, value in (("subresource", subresource), ("namespace", namespace), ("name", name)):
        if value:
            attributes[key] = value
    return attributes


LEASES = {"group": "coordination.k8s.io", "resource": "leases"}
DRA = "resource.k8s.io"


@pytest.mark.parametrize(
    ("attributes", "allowed"),
    [
        pytest.param(_access("list", "pods"), True, id="list pods in all namespaces"),
        pytest.param(_access("watch", "pods"), True, id="watch pods in all namespaces"),
        pytest.param(_access("watch", "nodes"), True, id="watch nodes"),
        pytest.param(
            _access("watch", "namespaces"), True, id="watch namespaces (affinity namespaceSelector)"
        ),
        pytest.param(
            _access("list", "replicasets", group="apps"),
            True,
            id="list replicasets (default spread constraints)",
        ),
        pytest.param(
            _access("update", "services", namespace="team-a"), False, id="update services"
        ),
        pytest.param(
            _access("create", "pods", subresource="binding", namespace="team-a"),
            True,
            id="bind a pod",
        ),
        pytest.param(
            _access("patch", "pods", subresource="status", namespace="team-a"),
            True,
            id="patch pod status",
        ),
        pytest.param(
            _access("create", "events", group="events.k8s.io", namespace="team-a"),
            True,
            id="create events.k8s.io events",
        ),
        pytest.param(
            _access("patch", "events", group="events.k8s.io", namespace="team-a"),
            True,
            id="patch an event series",
        ),
        pytest.param(_access("create", "events", namespace="team-a"), True, id="core events"),
        pytest.param(
            _access("delete", "pods", namespace="team-a"), True, id="delete a preemption victim"
        ),
        pytest.param(
            _access("watch", "poddisruptionbudgets", group="policy"), True, id="watch PDBs"
        ),
        pytest.param(
            _access("create", "leases", group=LEASES["group"], namespace=NAMESPACE),
            True,
            id="create its lease",
        ),
        pytest.param(
            _access(
                "update", "leases", group=LEASES["group"], namespace=NAMESPACE, name="pyscheduler"
            ),
            True,
            id="renew its lease",
        ),
        pytest.param(_access("list", "resourceslices", group=DRA), True, id="list resourceslices"),
        pytest.param(
            _access("watch", "devicetaintrules", group=DRA),
            True,
            id="watch devicetaintrules (DRADeviceTaintRules)",
        ),
        pytest.param(
            _access("watch", "resourceclaimtemplates", group=DRA), True, id="watch claim templates"
        ),
        pytest.param(
            _access(
                "update", "resourceclaims", group=DRA, subresource="status", namespace="team-a"
            ),
            True,
            id="allocate a resourceclaim",
        ),
        pytest.param(
            _access(
                "patch", "resourceclaims", group=DRA, subresource="binding", namespace="team-a"
            ),
            True,
            id="resourceclaims/binding (granular status authorization)",
        ),
        pytest.param(
            _access("watch", "persistentvolumeclaims"), True, id="watch persistentvolumeclaims"
        ),
        pytest.param(
            _access("update", "persistentvolumeclaims", namespace="team-a"),
            True,
            id="annotate a claim with its selected node",
        ),
        pytest.param(_access("update", "persistentvolumes"), True, id="bind a volume to a claim"),
        pytest.param(_access("list", "csinodes", group="storage.k8s.io"), True, id="list csinodes"),
        pytest.param(
            _access("watch", "volumeattachments", group="storage.k8s.io"),
            True,
            id="watch volumeattachments",
        ),
        # --- denied
        pytest.param(
            _access("delete", "persistentvolumeclaims", namespace="team-a"),
            False,
            id="delete claims",
        ),
        pytest.param(
            _access(
                "update",
                "leases",
                group=LEASES["group"],
                namespace="kube-system",
                name="kube-scheduler",
            ),
            False,
            id="never the default scheduler's lease",
        ),
        pytest.param(
            _access("create", "leases", group=LEASES["group"], namespace="kube-system"),
            False,
            id="no leases in kube-system",
        ),
        pytest.param(
            _access("update", "leases", group=LEASES["group"], namespace=NAMESPACE, name="other"),
            False,
            id="no other lease in its namespace",
        ),
        pytest.param(_access("create", "pods", namespace="team-a"), False, id="create pods"),
        pytest.param(_access("update", "pods", namespace="team-a"), False, id="update pod spec"),
        pytest.param(_access("delete", "nodes"), False, id="delete nodes"),
        pytest.param(_access("patch", "nodes"), False, id="patch nodes"),
        pytest.param(_access("get", "secrets", namespace=NAMESPACE), False, id="read secrets"),
        pytest.param(_access("list", "configmaps"), False, id="list configmaps"),
        pytest.param(
            _access("watch", "configmaps", namespace="kube-system", name="scheduler-plugin-config"),
            True,
            id="watch the AutoscaleEnforcer's ConfigMap in kube-system",
        ),
        pytest.param(
            _access("get", "configmaps", namespace="team-a", name="scheduler-plugin-config"),
            False,
            id="no ConfigMap of that name in another namespace",
        ),
        pytest.param(
            _access("patch", "persistentvolumeclaims", namespace="team-a"),
            False,
            id="no patch of claims (VolumeBinding updates them)",
        ),
        pytest.param(_access("patch", "persistentvolumes"), False, id="no patch of volumes"),
        pytest.param(
            _access("update", "pods", subresource="status", namespace="team-a"),
            False,
            id="no update of pod status (only patches are sent)",
        ),
        pytest.param(
            _access("update", "resourceclaims", group=DRA, namespace="team-a"),
            True,
            id="resourceclaims update (PreBind's finalizer, as system:kube-scheduler)",
        ),
        pytest.param(
            _access("create", "clusterrolebindings", group="rbac.authorization.k8s.io"),
            False,
            id="grant itself more",
        ),
        pytest.param(
            _access("create", "tokenreviews", group="authentication.k8s.io"),
            True,
            id="review a scraper's token (ops port)",
        ),
        pytest.param(
            _access("create", "subjectaccessreviews", group="authorization.k8s.io"),
            True,
            id="review a scraper's access (ops port)",
        ),
    ],
)
async def test_service_account_may_do_what_the_scheduler_does_and_little_else(
    installed: Installed, kube: client.ApiClient, attributes: dict[str, str], allowed: bool
) -> None:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": SUBJECT, "groups": SUBJECT_GROUPS, "resourceAttributes": attributes},
    }
    authorization = client.AuthorizationV1Api(kube)
    status, answer = await _answer(
        authorization.create_subject_access_review(_body(review), _preload_content=False)
    )
    assert status == HTTP_CREATED, answer
    assert bool(answer["status"].get("allowed")) == allowed, answer["status"]


# ------------------------------------------- the scheduler as its ServiceAccount
@pytest.fixture
async def service_account_kubeconfig(
    installed: Installed, kube: client.ApiClient, tmp_path: Path
) -> Path:
    """A kubeconfig holding a fresh token of the scheduler's ServiceAccount
    (TokenRequest API), with the admin kubeconfig's server and CA."""
    core = client.CoreV1Api(kube)
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    status, answer = await _answer(
        core.create_namespaced_service_account_token(
            SERVICE_ACCOUNT, NAMESPACE, _body(request), _preload_content=False
        )
    )
    assert status == HTTP_CREATED, answer
    admin = yaml.safe_load(installed.cluster.kubeconfig.read_text(encoding="utf-8"))
    (cluster,) = admin["clusters"]
    user = {"name": SERVICE_ACCOUNT, "user": {"token": answer["status"]["token"]}}
    context = {"cluster": cluster["name"], "user": SERVICE_ACCOUNT, "namespace": NAMESPACE}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [user],
        "contexts": [{"name": SERVICE_ACCOUNT, "context": context}],
        "current-context": SERVICE_ACCOUNT,
    }
    path = tmp_path / "pyscheduler.kubeconfig"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    code, out, err = await installed.kubectl.run_async(
        "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}", kubeconfig=path
    )
    assert (code, out) == (0, SUBJECT), err
    return path


def _shipped_config_for(scheduler_name: str, *, leader_elect: bool) -> str:
    """The ConfigMap's configuration, with this test's profile name (so other
    tests' pods are never touched) and leader election as asked."""
    config: dict[str, Any] = yaml.safe_load(shipped_config_text(BASE))
    (profile,) = config["profiles"]
    config["profiles"] = [{**profile, "schedulerName": scheduler_name}]
    config["leaderElection"] = {**config["leaderElection"], "leaderElect": leader_elect}
    return yaml.safe_dump(config)


async def _events(kube: client.ApiClient, namespace: str, pod: str) -> list[Obj]:
    events = client.EventsV1Api(kube)
    listed = await read_json(await events.list_namespaced_event(namespace, _preload_content=False))
    return [e for e in listed["items"] if e["regarding"]["name"] == pod]


async def _lease(kube: client.ApiClient, name: str) -> Obj:
    coordination = client.CoordinationV1Api(kube)
    status, lease = await _answer(
        coordination.read_namespaced_lease(name, NAMESPACE, _preload_content=False)
    )
    assert status == HTTP_OK, lease
    return lease


@pytest.mark.parametrize(
    "leader_elect",
    [
        pytest.param(False, id="leader election off"),
        pytest.param(True, id="leader election on, as shipped"),
    ],
)
async def test_scheduler_binds_and_reports_with_only_its_service_account(
    leader_elect: bool,
    *,
    control_plane: Cluster,
    service_account_kubeconfig: Path,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    config_text = _shipped_config_for(name, leader_elect=leader_elect)
    lease_name = yaml.safe_load(config_text)["leaderElection"]["resourceName"]
    node = await nodes.create(make_node("w").capacity(cpu="2", memory="4Gi", pods="10").obj())

    async with running_scheduler(service_account_kubeconfig, name, config_text=config_text) as app:
        for pod, cpu in (("fits", "100m"), ("too-big", "64")):
            body = make_pod(pod, namespace).scheduler(name).requests(cpu=cpu).obj()
            await core.create_namespaced_pod(namespace, _body(body))

        async def bound() -> str:
            return str((await read_pod(core, namespace, "fits"))["spec"].get("nodeName", ""))

        assert await eventually(bound, what="pod bound") == node

        async def told() -> Obj | None:
            found = condition(await read_pod(core, namespace, "too-big"), "PodScheduled")
            return found if found and found.get("reason") else None

        scheduled = await eventually(told, what="PodScheduled condition written")
        assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")

        async def reported(pod: str, reason: str) -> bool:
            events = await _events(kube, namespace, pod)
            return any((e["reason"], e["reportingController"]) == (reason, name) for e in events)

        await eventually(lambda: reported("too-big", "FailedScheduling"), what="FailedScheduling")
        await eventually(lambda: reported("fits", "Scheduled"), what="Scheduled event")

        if leader_elect:
            assert app.elector is not None
            assert app.elector.is_leader
            lease = await _lease(kube, lease_name)
            assert lease["spec"]["holderIdentity"] == app.elector.config.identity
        else:
            assert app.elector is None
        assert (app.event_sink.failed, app.event_sink.dropped) == (0, 0)
        # The ops port's delegated reviews work with only the ServiceAccount's rights.
        base = f"https://127.0.0.1:{app.server.bound_port}"
        admin = kubeconfig_token(control_plane.kubeconfig)
        assert (await ops_get(base, "/metrics"))[0] == 403
        assert (await ops_get(base, "/metrics", admin))[0] == 200

    if leader_elect:
        released = await _lease(kube, lease_name)
        assert not released["spec"].get("holderIdentity"), "lease released on stop"
    refused = [r.getMessage() for r in caplog.records if FORBIDDEN.search(r.getMessage())]
    assert refused == []


async def test_scheduler_allocates_a_dra_claim_with_only_its_service_account(
    *,
    service_account_kubeconfig: Path,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """DynamicResources under the ClusterRole: claims, slices and classes are
    read; the finalizer, allocation and reservedFor are written."""
    caplog.set_level(logging.INFO)
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    config_text = _shipped_config_for(name, leader_elect=False)
    node = await nodes.create(make_node("gpu").obj())
    async with (
        simulated_driver(kube) as driver,
        running_scheduler(service_account_kubeconfig, name, config_text=config_text),
    ):
        await driver.publish([node], devices=1)
        await driver.template(namespace)
        body = make_pod("trainer", namespace).scheduler(name).claim_template("gpu", "gpu").obj()
        await core.create_namespaced_pod(namespace, _body(body))

        async def bound() -> str:
            return str((await read_pod(core, namespace, "trainer"))["spec"].get("nodeName", ""))

        assert await eventually(bound, timeout=60, what="DRA pod bound") == node
        (claim,) = await driver.claims(namespace)
        assert allocated_devices([claim]) == [(driver.name, node, "gpu-0")]
        assert [ref["name"] for ref in claim["status"]["reservedFor"]] == ["trainer"]
    refused = [r.getMessage() for r in caplog.records if FORBIDDEN.search(r.getMessage())]
    assert refused == []
