"""A real node: containerd + runc + CNI, the upstream kubelet registered and
Ready, kube-proxy programming the ``kubernetes`` Service, the upstream
kube-scheduler as the default scheduler."""

from __future__ import annotations

from tests.e2e.cluster import Cluster
from tests.e2e.node import NODE_NAME


def test_the_kubelet_registers_its_node_and_it_becomes_ready_without_taints(
    cluster: Cluster,
) -> None:
    node = cluster.json("get", "node", NODE_NAME)
    assert cluster.node_ready()
    info = node["status"]["nodeInfo"]
    assert info["kubeletVersion"] == "v1.36.3"
    assert info["containerRuntimeVersion"].startswith("containerd://1.6")
    addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
    assert addresses["InternalIP"] == cluster.address
    cluster.summary["node"] = (
        f"{NODE_NAME} Ready, kubelet {info['kubeletVersion']}, "
        f"{info['containerRuntimeVersion']}, cpu {node['status']['allocatable']['cpu']}"
    )


def test_the_kubernetes_service_points_at_the_advertised_address(cluster: Cluster) -> None:
    slices = cluster.json(
        "get", "endpointslices", "-n", "default", "-l", "kubernetes.io/service-name=kubernetes"
    )["items"]
    addresses = [a for s in slices for e in s["endpoints"] for a in e["addresses"]]
    assert addresses == [cluster.address]


def test_kube_proxy_and_the_default_scheduler_run(cluster: Cluster) -> None:
    assert cluster.node is not None
    assert cluster.plane is not None
    assert cluster.node.components["kube-proxy"].running()
    assert cluster.plane.components["kube-scheduler"].running()
