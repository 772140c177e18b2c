"""The shipped manifests, applied with `kubectl apply -k` through an overlay
that sets only the image and the pull policy: both replicas Ready through
their own probes in the restricted profile, one Lease holder, and the
scheduler reaching the API server through the ``kubernetes`` Service."""

from __future__ import annotations

from tests.e2e.cluster import Cluster
from tests.e2e.workloads import (
    NAMESPACE,
    Deployed,
    holder_pod,
    lease_holder,
    ready,
    scheduler_pods,
)


def test_both_replicas_become_ready_through_their_probes(
    cluster: Cluster, deployed: Deployed
) -> None:
    pods = scheduler_pods(cluster)
    assert len(pods) == 2
    assert all(ready(pod) for pod in pods)
    for pod in pods:
        statuses = pod["status"]["containerStatuses"]
        assert [s["restartCount"] for s in statuses] == [0]
        assert statuses[0]["imageID"] == cluster.summary["image ID"]
    cluster.summary["replicas Ready"] = f"{sum(ready(p) for p in pods)}/2"


def test_the_namespace_enforces_restricted_and_the_pods_run_read_only_as_non_root(
    cluster: Cluster, deployed: Deployed
) -> None:
    labels = cluster.json("get", "namespace", NAMESPACE)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    for pod in scheduler_pods(cluster):
        container = pod["spec"]["containers"][0]
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert pod["spec"]["securityContext"]["runAsUser"] == 65532
    # What the kernel sees: the process' uid and gid, and a read-only root.
    name = scheduler_pods(cluster)[0]["metadata"]["name"]
    uid = cluster.kubectl(
        "exec",
        "-n",
        NAMESPACE,
        name,
        "--",
        "python",
        "-c",
        "import os; print(os.getuid(), os.getgid())",
    )
    assert uid.stdout.split() == ["65532", "65532"]
    write = cluster.kubectl(
        "exec", "-n", NAMESPACE, name, "--", "python", "-c", "open('/opt/x', 'w')", check=False
    )
    assert write.returncode != 0
    assert "Read-only file system" in write.stderr


def test_a_privileged_pod_is_refused_in_the_scheduler_namespace(
    cluster: Cluster, deployed: Deployed
) -> None:
    assert cluster.images is not None
    refused = cluster.kubectl(
        "run",
        "privileged",
        "-n",
        NAMESPACE,
        f"--image={cluster.images.pause_ref}",
        "--image-pull-policy=Never",
        "--privileged",
        check=False,
    )
    assert refused.returncode != 0
    assert "violates PodSecurity" in refused.stderr


def test_exactly_one_replica_holds_the_lease(cluster: Cluster, deployed: Deployed) -> None:
    holder = lease_holder(cluster)
    names = [pod["metadata"]["name"] for pod in scheduler_pods(cluster)]
    assert holder_pod(holder) in names
    cluster.summary["leader"] = holder_pod(holder)


def test_the_scheduler_reaches_the_api_through_the_kubernetes_service(
    cluster: Cluster, deployed: Deployed
) -> None:
    for pod in scheduler_pods(cluster):
        env = cluster.kubectl(
            "exec",
            "-n",
            NAMESPACE,
            pod["metadata"]["name"],
            "--",
            "python",
            "-c",
            "import os; print(os.environ['KUBERNETES_SERVICE_HOST'])",
        )
        service_ip = cluster.json("get", "service", "kubernetes", "-n", "default")["spec"][
            "clusterIP"
        ]
        assert env.stdout.strip() == service_ip
        # Its identity is the ServiceAccount's projected token, mounted by
        # the ServiceAccount admission plugin.
        assert pod["spec"]["serviceAccountName"] == "pyscheduler"
        projected = [
            source
            for volume in pod["spec"]["volumes"]
            for source in volume.get("projected", {}).get("sources", ())
        ]
        assert any("serviceAccountToken" in source for source in projected)
    # The informers synced (both Ready) and the leader renews its Lease: the
    # API is reachable that way; the API server saw the ServiceAccount.
    lease = cluster.json("get", "lease", "pyscheduler", "-n", NAMESPACE)
    assert lease["spec"]["renewTime"]
