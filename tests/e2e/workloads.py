"""What the suite deploys and creates: the shipped manifests through an
overlay, and test pods (the local pause image) with or without
``schedulerName: pyscheduler``; plus the judgments made from the API."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.cluster import Cluster
from tests.e2e.node import NODE_NAME, REPO, wait_for

NAMESPACE = "pyscheduler-system"
WORK_NAMESPACE = "e2e-work"
SELECTOR = "app.kubernetes.io/name=pyscheduler,app.kubernetes.io/component=scheduler"
# The failover phase's burst pods (test_05), removed again by the plugin phase.
BURST_LABEL = "e2e/burst"


@dataclass
class Deployed:
    overlay: Path


def overlay(cluster: Cluster) -> Path:
    """A kustomization over the shipped base that sets only the image
    reference and the pull policy (no registry: the image is imported)."""
    assert cluster.images is not None
    directory = cluster.run_dir / "overlay"
    directory.mkdir(exist_ok=True)
    name, tag = cluster.images.image_ref.rsplit(":", 1)
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        # kustomize refuses absolute resource paths.
        "resources": [os.path.relpath(REPO / "manifests", directory)],
        "images": [{"name": "pyscheduler", "newName": name, "newTag": tag}],
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


def deploy(cluster: Cluster) -> Deployed:
    with cluster.phase("deploy (kubectl apply -k, 2 replicas Ready)"):
        directory = overlay(cluster)
        cluster.kubectl("apply", "-k", str(directory))
        cluster.kubectl(
            "-n",
            NAMESPACE,
            "rollout",
            "status",
            "deployment/pyscheduler",
            "--timeout=600s",
            timeout=660,
        )
        wait_for("a Lease holder", lambda: lease_holder(cluster), 120)
    return Deployed(directory)


def scheduler_pods(cluster: Cluster) -> list[dict[str, Any]]:
    pods = cluster.json("get", "pods", "-n", NAMESPACE, "-l", SELECTOR)["items"]
    return [pod for pod in pods if not pod["metadata"].get("deletionTimestamp")]


def ready(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions", ())
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def lease_holder(cluster: Cluster) -> str:
    lease = cluster.json("get", "lease", "pyscheduler", "-n", NAMESPACE)
    return str(lease["spec"].get("holderIdentity") or "")


def holder_pod(holder: str) -> str:
    """The pod name in a holder identity ``<pod>_<uuid>``."""
    return holder.rsplit("_", 1)[0]


def ensure_namespace(cluster: Cluster, name: str) -> None:
    if not cluster.kubectl_ok("get", "namespace", name):
        cluster.kubectl("create", "namespace", name)
    wait_for(
        f"ServiceAccount default in {name}",
        lambda: cluster.kubectl_ok("get", "serviceaccount", "default", "-n", name),
        120,
    )


def pod_manifest(
    cluster: Cluster,
    name: str,
    *,
    cpu: str,
    memory: str = "16Mi",
    scheduler: str | None = "pyscheduler",
    node_selector: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    assert cluster.images is not None
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 1,
        "containers": [
            {
                "name": "pause",
                "image": cluster.images.pause_ref,
                "imagePullPolicy": "Never",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
    }
    if scheduler:
        spec["schedulerName"] = scheduler
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": WORK_NAMESPACE, "labels": labels or {}},
        "spec": spec,
    }


def apply(cluster: Cluster, objects: list[dict[str, Any]]) -> None:
    document = {"apiVersion": "v1", "kind": "List", "items": objects}
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(document))


def pods(cluster: Cluster, namespace: str = WORK_NAMESPACE, selector: str = "") -> list[Any]:
    args = ["get", "pods", "-n", namespace]
    if selector:
        args += ["-l", selector]
    return list(cluster.json(*args)["items"])


def scheduled_events(cluster: Cluster, namespace: str = WORK_NAMESPACE) -> dict[str, list[Any]]:
    """Scheduled events (events.k8s.io) per pod name."""
    events = cluster.json("get", "events.events.k8s.io", "-n", namespace)["items"]
    per_pod: dict[str, list[Any]] = {}
    for event in events:
        if event.get("reason") == "Scheduled" and event["regarding"]["kind"] == "Pod":
            per_pod.setdefault(event["regarding"]["name"], []).append(event)
    return per_pod


def failed_scheduling_message(cluster: Cluster, name: str) -> str:
    events = cluster.json(
        "get",
        "events",
        "-n",
        WORK_NAMESPACE,
        "--field-selector",
        f"involvedObject.name={name},reason=FailedScheduling",
    )["items"]
    return str(events[-1]["message"]) if events else ""


def kubelet_rejections(cluster: Cluster) -> list[str]:
    """Pods the kubelet's admission refused (OutOfcpu, OutOfmemory,
    NodeAffinity...): phase Failed with a reason, or such an event."""
    rejected = [
        f"{pod['metadata']['name']}: {pod['status'].get('reason')}"
        for pod in cluster.json("get", "pods", "-A")["items"]
        if pod["status"].get("phase") == "Failed" and pod["status"].get("reason")
    ]
    events = cluster.json("get", "events", "-A")["items"]
    rejected += [
        f"{event['involvedObject']['name']}: {event['reason']}"
        for event in events
        if event["reason"] in {"OutOfcpu", "OutOfmemory", "NodeAffinity", "OutOfpods"}
    ]
    return rejected


def quantity_milli(value: str) -> int:
    if value.endswith("m"):
        return int(value[:-1])
    return int(float(value) * 1000)


def memory_bytes(value: str) -> int:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9}
    for suffix, factor in units.items():
        if value.endswith(suffix):
            return int(float(value[: -len(suffix)]) * factor)
    return int(value)


def node_usage(cluster: Cluster) -> dict[str, int]:
    """Allocatable and the summed requests of every non-terminal pod bound to
    the node, straight from the API (not from any scheduler's accounting)."""
    node = cluster.json("get", "node", NODE_NAME)
    allocatable = node["status"]["allocatable"]
    used_cpu = used_memory = count = 0
    for pod in cluster.json("get", "pods", "-A")["items"]:
        if pod["spec"].get("nodeName") != NODE_NAME:
            continue
        if pod["status"].get("phase") in {"Succeeded", "Failed"}:
            continue
        count += 1
        for container in pod["spec"]["containers"]:
            requests = container.get("resources", {}).get("requests", {})
            used_cpu += quantity_milli(requests.get("cpu", "0"))
            used_memory += memory_bytes(requests.get("memory", "0"))
    return {
        "cpu_allocatable": quantity_milli(allocatable["cpu"]),
        "memory_allocatable": memory_bytes(allocatable["memory"]),
        "pods_allocatable": int(allocatable["pods"]),
        "cpu_used": used_cpu,
        "memory_used": memory_bytes(str(used_memory)),
        "pods": count,
    }


def leader_cache_agrees(cluster: Cluster) -> dict[str, Any]:
    """The leader's /debug/cache once it reports no difference between its
    cache and the API, and the pod count it lists equals ours (non-terminal
    pods, counted here from the API)."""
    assert cluster.plane is not None
    token = cluster.plane.token

    def agrees() -> dict[str, Any] | None:
        leader = holder_pod(lease_holder(cluster))
        ip = cluster.json("get", "pod", leader, "-n", NAMESPACE)["status"]["podIP"]
        status, body = cluster.https_get(f"https://{ip}:10259/debug/cache", token)
        assert status == 200, body
        report: dict[str, Any] = json.loads(body)
        every = cluster.json("get", "pods", "-A")["items"]
        live = [p for p in every if p["status"].get("phase") not in {"Succeeded", "Failed"}]
        if report["differences"] or report["pods"] != len(live) or report["nodes"] != 1:
            return None
        return report

    report = wait_for("/debug/cache without differences, counting the API's pods", agrees, 120, 3)
    assert isinstance(report, dict)
    return report
