"""The end-to-end cluster: host set-up, images, a control plane on the host's
address, one real node, and kubectl against it.

Each phase records its wall time in ``timings`` and its results in
``summary`` (printed at the end of the run by conftest.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from localcluster.cluster import ControlPlane, ControlPlaneOptions
from tests.e2e.node import NODE_NAME, REPO, Images, Node, host_address, wait_for

HACK = REPO / "hack"
# The controllers a kubelet-backed cluster needs for this suite (issue 26):
# node lifecycle (clears the not-ready taint), ServiceAccounts and their
# tokens, the root CA ConfigMap the projected token volume mounts,
# endpoints/endpointslices (Services), replicasets/deployments, the garbage
# collector, namespaces, pod GC, ResourceClaims and the PDB status.
CONTROLLERS = (
    "node-lifecycle-controller",
    "taint-eviction-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "endpoints-controller",
    "endpointslice-controller",
    "replicaset-controller",
    "deployment-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "pod-garbage-collector-controller",
    "resourceclaim-controller",
    "disruption-controller",
)
DEFAULT_SCHEDULER_CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: {kubeconfig}
leaderElection:
  leaderElect: false
"""


class Phase:
    """Times one phase: ``with cluster.phase("name"):``."""

    def __init__(self, timings: dict[str, float], name: str) -> None:
        self.timings = timings
        self.name = name

    def __enter__(self) -> Phase:
        self.started = time.monotonic()
        return self

    def __exit__(self, *_: object) -> None:
        self.timings[self.name] = time.monotonic() - self.started


def run_script(script: Path, *args: str, timeout: float = 3600) -> str:
    result = subprocess.run(
        [str(script), *args], stdout=subprocess.PIPE, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"{script.name} failed with exit code {result.returncode}")
    return result.stdout


def key_values(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


class Cluster:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self.summary: dict[str, Any] = {}
        self.run_dir = Path(tempfile.mkdtemp(prefix=f"pyscheduler-e2e-{os.getpid()}-"))
        self.address = ""
        self.plane: ControlPlane | None = None
        self.node: Node | None = None
        self.images: Images | None = None
        self.kcp: Path | None = None
        self.prometheus: Path | None = None

    def phase(self, name: str) -> Phase:
        return Phase(self.timings, name)

    # ----------------------------------------------------------------- start
    def start(self) -> None:
        with self.phase("host set-up"):
            run_script(HACK / "e2e" / "setup-host.sh")
            run_script(HACK / "e2e" / "teardown.sh", "snapshot", str(self.run_dir))
        with self.phase("binaries (kcp, knode, prometheus)"):
            self.kcp = Path(run_script(HACK / "build-controlplane.sh").strip().splitlines()[-1])
            knode = Path(run_script(HACK / "build-node.sh").strip().splitlines()[-1])
            self.prometheus = Path(
                run_script(HACK / "e2e" / "build-prometheus.sh").strip().splitlines()[-1]
            )
        with self.phase("images (pause, base, Dockerfile, with plugins)"):
            built = key_values(run_script(HACK / "e2e" / "build-images.sh"))
            self.images = Images(
                built["pause_ref"],
                Path(built["pause_archive"]),
                built["image_ref"],
                Path(built["image_archive"]),
                built["plugins_ref"],
                Path(built["plugins_archive"]),
            )
        self.address = host_address()
        with self.phase("control plane"):
            # The layout ControlPlane makes under base_dir: the token
            # controller signs with the API server's service-account key, and
            # the root CA publisher hands pods the serving certificate's CA.
            pki = self.run_dir / "cp" / "pki"
            self.plane = ControlPlane(
                ControlPlaneOptions(
                    advertise_address=self.address,
                    endpoint_reconciler="lease",
                    disabled_admission=(),
                    controllers=CONTROLLERS,
                    extra_controller_manager_args=(
                        f"--service-account-private-key-file={pki / 'sa.key'}",
                        f"--root-ca-file={pki / 'apiserver.crt'}",
                        "--use-service-account-credentials=false",
                    ),
                    # The kubelet's node name does not resolve: exec and logs
                    # go to its InternalIP.
                    extra_apiserver_args=("--kubelet-preferred-address-types=InternalIP",),
                    start_timeout_seconds=240,
                    base_dir=self.run_dir / "cp",
                ),
                binary=self.kcp,
            )
            self.plane.start()
            scheduler_config = self.run_dir / "kube-scheduler.yaml"
            scheduler_config.write_text(
                DEFAULT_SCHEDULER_CONFIG.format(kubeconfig=self.plane.kubeconfig)
            )
            self.plane.start_scheduler(scheduler_config)
        with self.phase("node (containerd, kubelet, kube-proxy)"):
            self.node = Node(self.run_dir, knode, self.plane.kubeconfig, self.address)
            self.node.start_containerd(self.images.pause_ref)
            self.node.import_image(self.images.pause_archive, self.images.pause_ref)
            self.summary["image"] = self.images.image_ref
            digest, image_id = self.node.import_image(
                self.images.image_archive, self.images.image_ref
            )
            self.summary["image digest"] = digest
            self.summary["image ID"] = image_id
            plugins_digest, _ = self.node.import_image(
                self.images.plugins_archive, self.images.plugins_ref
            )
            self.summary["plugin image"] = f"{self.images.plugins_ref} ({plugins_digest})"
            self.node.start_kubelet()
            self.node.start_kube_proxy()
            wait_for("node Ready", self.node_ready, 300, 2)
            self.node.start_dra_driver()
            wait_for(
                "default ServiceAccount in default",
                lambda: self.kubectl_ok("get", "serviceaccount", "default", "-n", "default"),
                120,
            )

    def stop(self) -> None:
        with self.phase("teardown"):
            self._stop()

    def _stop(self) -> None:
        if self.plane is not None:
            with contextlib.suppress(Exception):
                self.drain_pods()
        if self.node is not None:
            self.node.stop()
        if self.plane is not None:
            self.plane.stop()
        if self.node is None:
            run_script(HACK / "e2e" / "teardown.sh", str(self.run_dir))

    def drain_pods(self) -> None:
        """Delete every pod (and what recreates them) so the kubelet tears down
        the sandboxes and CNI releases their addresses before we stop."""
        for namespace in self.json("get", "namespaces")["items"]:
            name = namespace["metadata"]["name"]
            self.kubectl(
                "delete",
                "deployments,replicasets,pods",
                "--all",
                "-n",
                name,
                "--grace-period=1",
                "--wait=false",
                check=False,
            )

        def gone() -> bool:
            pods = self.json("get", "pods", "-A")["items"]
            return not pods

        with contextlib.suppress(TimeoutError):
            wait_for("every pod gone", gone, 120, 2)

        def sandboxes_gone() -> bool:
            assert self.node is not None
            return not [
                line
                for line in self.node.ctr("containers", "ls", "-q").stdout.splitlines()
                if line.strip()
            ]

        with contextlib.suppress(TimeoutError):
            wait_for("every container removed by the kubelet", sandboxes_gone, 120, 2)

    # ------------------------------------------------------------- kubectl
    def kubectl(
        self, *args: str, check: bool = True, stdin: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        assert self.plane is not None
        assert self.kcp is not None
        result = subprocess.run(
            [str(self.kcp), "kubectl", f"--kubeconfig={self.plane.kubeconfig}", *args],
            input=stdin,
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
        return result

    def kubectl_ok(self, *args: str) -> bool:
        return self.kubectl(*args, check=False).returncode == 0

    def json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def node_ready(self) -> bool:
        node = self.json("get", "node", NODE_NAME)
        ready = [c for c in node["status"].get("conditions", ()) if c["type"] == "Ready"]
        taints = [t["key"] for t in node["spec"].get("taints", ())]
        return bool(ready and ready[0]["status"] == "True" and not taints)

    # ------------------------------------------------------------ raw HTTPS
    def https_get(self, url: str, token: str | None) -> tuple[int, str]:
        """GET a URL (a scheduler pod's port: self-signed, not verified)."""
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        request = urllib.request.Request(url, headers=headers)
        try:
            with urllib.request.urlopen(request, context=context, timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    def log_tails(self) -> str:
        parts = []
        if self.plane is not None:
            parts.append(self.plane.log_tails(20))
        if self.node is not None:
            parts.append(self.node.log_tails(30))
        return "\n".join(parts)


@contextlib.contextmanager
def running_cluster() -> Iterator[Cluster]:
    cluster = Cluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
