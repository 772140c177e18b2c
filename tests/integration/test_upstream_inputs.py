"""What a kube-scheduler operator already has starts pyscheduler: every flag
the pinned kube-scheduler's ``--help`` lists is known here, and kube-scheduler's
own ``--write-config-to`` dump (profile renamed, so as not to take other tests'
pods) with a hardened argument list makes the daemon ready and binding on the
real control plane."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml
from kubernetes_asyncio import client

from localcluster.binary import control_plane_binary
from scheduler.app.flags import build_parser
from tests.support.builders import make_node, make_pod
from tests.support.cluster import Cluster, NodePool
from tests.support.daemon import pyscheduler
from tests.support.kubeapi import create_all, list_pods
from tests.support.scheduler import unique_scheduler_name

UPSTREAM_DUMP = (
    Path(__file__).parents[1]
    / "unit"
    / "config"
    / "data"
    / "kube-scheduler-v1.36.3-write-config-to.yaml"
)
_FLAG = re.compile(r"^\s+(?:-\w, )?(--[a-z0-9-]+)", re.MULTILINE)

HARDENED = (
    "--profiling=false",
    "--contention-profiling=false",
    "--kube-api-qps=100",
    "--kube-api-burst=200",
    "--tls-min-version=VersionTLS12",
    "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "--feature-gates=DynamicResourceAllocation=true,SidecarContainers=true,kube:NodeDeclaredFeatures=true",
    "--v=2",
    "--permit-port-sharing=false",
    "--disable-http2-serving",
)


def test_every_flag_of_the_pinned_kube_scheduler_is_known() -> None:
    done = subprocess.run(
        [str(control_plane_binary()), "kube-scheduler", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    upstream = set(_FLAG.findall(done.stdout))
    ours = {option for action in build_parser()._actions for option in action.option_strings}

    assert len(upstream) > 60, done.stdout[-1000:]
    assert sorted(upstream - ours) == []


async def test_kube_schedulers_dump_with_a_hardened_argument_list_starts_and_binds(
    control_plane: Cluster,
    kube: client.ApiClient,
    namespace: str,
    nodes: NodePool,
    tmp_path: Path,
) -> None:
    core = client.CoreV1Api(kube)
    name = unique_scheduler_name()
    document = yaml.safe_load(UPSTREAM_DUMP.read_text())
    document["profiles"][0]["schedulerName"] = name
    document["leaderElection"]["resourceName"] = name
    await nodes.create(make_node("u0").capacity(cpu="4", memory="8Gi", pods="110").obj())

    async with pyscheduler(
        control_plane.kubeconfig, name, tmp_path, *HARDENED, config_text=yaml.safe_dump(document)
    ) as daemon:
        assert await daemon.ready() == (200, "ok")
        pods = [make_pod(f"u-{i}", namespace).scheduler(name).obj() for i in range(3)]
        await create_all(lambda body: core.create_namespaced_pod(namespace, body), pods)

        async def bound() -> bool | None:
            listed = await list_pods(core, namespace)
            return all(pod["spec"].get("nodeName") for pod in listed) or None

        await daemon.until(bound, "the three pods bound")
        log = daemon.process.tail(400)
        assert (
            "--profiling, --contention-profiling, --kube-api-qps, --kube-api-burst ignored:"
            " --config is given (as upstream)" in log
        )
        assert "--disable-http2-serving has no effect here" in log
