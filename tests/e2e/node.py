"""One real node for the end-to-end suite: containerd (the distribution's, with
its own config, root, state and socket), the upstream kubelet and kube-proxy
(``knode``), a CNI bridge, the local pause image.

Invariants:
- Nothing here uses a system-wide daemon, socket or fixed port: containerd's
  socket, root and state live under ``run_dir``; the kubelet and kube-proxy
  listen on free ports; the CNI network ``pyscheduler-e2e`` has its own bridge
  (``e2e0``), subnet and IPAM directory.
- ``stop`` undoes everything ``start`` did, in the order found by hand
  (hack/node/README.md): pods first (through the kubelet, so CNI releases
  their addresses), then kubelet, kube-proxy (``--cleanup`` of its rules),
  containerd, and finally ``hack/e2e/teardown.sh`` for what processes leave
  behind (shims, mounts, netns, iptables chains, the bridge, cgroups).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from localcluster.cluster import free_port
from localcluster.process import ComponentProcess

REPO = Path(__file__).resolve().parents[2]
TEARDOWN = REPO / "hack" / "e2e" / "teardown.sh"
NODE_NAME = "e2e-node"
POD_SUBNET = "10.244.0.0/24"
BRIDGE = "e2e0"
CNI_NETWORK = "pyscheduler-e2e"


def wait_for(what: str, check: object, timeout: float, interval: float = 1.0) -> object:
    """Call ``check`` until it returns something truthy; fail after ``timeout``
    seconds with ``what`` and the last value or error."""
    assert callable(check)
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            last = check()
        except Exception as error:  # the condition may not be checkable yet
            last = error
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not true after {timeout:.0f}s (last: {last!r})")
        time.sleep(interval)


def host_address() -> str:
    """The host's address on its default route: pods route to it, so the API
    server advertises it (the ``kubernetes`` Service's endpoint)."""
    route = subprocess.run(
        ["ip", "-4", "-j", "route", "get", "192.0.2.255"],
        capture_output=True,
        text=True,
        check=False,
    )
    if route.returncode == 0 and route.stdout.strip():
        source = json.loads(route.stdout)[0].get("prefsrc")
        if source:
            return str(source)
    default = subprocess.run(
        ["ip", "-4", "-j", "route", "show", "default"], capture_output=True, text=True, check=True
    )
    device = json.loads(default.stdout)[0]["dev"]
    address = subprocess.run(
        ["ip", "-4", "-j", "addr", "show", "dev", device],
        capture_output=True,
        text=True,
        check=True,
    )
    return str(json.loads(address.stdout)[0]["addr_info"][0]["local"])


@dataclass(frozen=True)
class Images:
    pause_ref: str
    pause_archive: Path
    image_ref: str
    image_archive: Path
    # The same Dockerfile with examples/plugin-package's wheel as the
    # `plugins` build context (hack/e2e/build-images.sh).
    plugins_ref: str
    plugins_archive: Path


class Node:
    def __init__(self, run_dir: Path, knode: Path, kubeconfig: Path, address: str) -> None:
        self.run_dir = run_dir
        self.knode = knode
        self.kubeconfig = kubeconfig
        self.address = address
        self.socket = run_dir / "containerd" / "containerd.sock"
        self.components: dict[str, ComponentProcess] = {}
        self.logs = run_dir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------ containerd
    def start_containerd(self, pause_ref: str) -> None:
        base = self.run_dir / "containerd"
        base.mkdir(parents=True, exist_ok=True)
        netd = self.run_dir / "cni" / "net.d"
        netd.mkdir(parents=True, exist_ok=True)
        (netd / "10-pyscheduler-e2e.conflist").write_text(
            json.dumps(
                {
                    "cniVersion": "0.4.0",
                    "name": CNI_NETWORK,
                    "plugins": [
                        {
                            "type": "bridge",
                            "bridge": BRIDGE,
                            "isGateway": True,
                            "ipMasq": False,
                            "hairpinMode": True,
                            "ipam": {
                                "type": "host-local",
                                "ranges": [[{"subnet": POD_SUBNET}]],
                                "routes": [{"dst": "0.0.0.0/0"}],
                                "dataDir": str(self.run_dir / "cni" / "ipam"),
                            },
                        }
                    ],
                },
                indent=1,
            )
        )
        config = base / "config.toml"
        # restrict_oom_score_adj: this machine refuses to lower oom_score_adj
        # (runc failed with "can't get final child's PID from pipe" while the
        # CRI asked for -998 on the sandbox; hack/node/README.md).
        config.write_text(
            f"""version = 2
root = "{base / "root"}"
state = "{base / "state"}"
[grpc]
  address = "{self.socket}"
[ttrpc]
  address = "{self.socket}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{base / "opt"}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause_ref}"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{base / "runc"}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{netd}"
    max_conf_num = 1
"""
        )
        process = self._spawn("containerd", ["containerd", "--config", str(config)])
        wait_for(
            "containerd answers on its socket",
            lambda: process.running() and self.ctr("version").returncode == 0,
            60,
            0.5,
        )
        if not process.running():
            raise RuntimeError(f"containerd exited:\n{process.tail()}")

    def ctr(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ctr", "--address", str(self.socket), "--namespace", "k8s.io", *args],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )

    def import_image(self, archive: Path, ref: str) -> tuple[str, str]:
        """Import a docker-archive; return the image's manifest digest and its
        image ID (the config digest, what the kubelet reports as imageID)."""
        result = self.ctr("images", "import", str(archive))
        if result.returncode != 0:
            raise RuntimeError(f"ctr images import {archive}: {result.stderr}")
        rows = [line.split() for line in self.ctr("images", "ls").stdout.splitlines()[1:]]
        digests = [row[2] for row in rows if row and row[0] == ref]
        if not digests:
            raise RuntimeError(f"{ref} not in containerd after import: {rows}")
        # The CRI plugin also names the image by its ID (the config digest).
        ids = [row[0] for row in rows if row[2] == digests[0] and row[0].startswith("sha256:")]
        return digests[0], ids[0] if ids else ""

    # --------------------------------------------------------------- kubelet
    def start_kubelet(self) -> None:
        root = self.run_dir / "kubelet"
        root.mkdir(parents=True, exist_ok=True)
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            # This kernel mounts cgroup v1, which kubelet 1.36 refuses by default.
            "failCgroupV1": False,
            "cgroupDriver": "cgroupfs",
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "address": self.address,
            "port": free_port(),
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": free_port(),
            # The API server calls the kubelet only for logs; no client cert.
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "podLogsDir": str(root / "pod-logs"),
            "failSwapOn": False,
            "serializeImagePulls": False,
            # Local images cannot be pulled again: never garbage-collect them,
            # and do not evict on a full shared disk.
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
                "nodefs.inodesFree": "1%",
            },
            "resolvConf": "/etc/resolv.conf",
            "maxPods": 110,
        }
        path = root / "config.yaml"
        path.write_text(yaml.safe_dump(config))
        self._spawn(
            "kubelet",
            [
                str(self.knode),
                "kubelet",
                f"--config={path}",
                f"--kubeconfig={self.kubeconfig}",
                f"--root-dir={root / 'root'}",
                f"--cert-dir={root / 'pki'}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={self.address}",
                "--v=1",
            ],
        )

    # ------------------------------------------------------------ kube-proxy
    def kube_proxy_config(self) -> Path:
        path = self.run_dir / "kube-proxy.yaml"
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "mode": "iptables",
            "clientConnection": {"kubeconfig": str(self.kubeconfig)},
            "hostnameOverride": NODE_NAME,
            "bindAddress": self.address,
            "healthzBindAddress": f"127.0.0.1:{free_port()}",
            "metricsBindAddress": f"127.0.0.1:{free_port()}",
            "clusterCIDR": POD_SUBNET,
            # Leave the host's conntrack sysctls and route_localnet alone.
            "conntrack": {
                "maxPerCore": 0,
                "tcpEstablishedTimeout": "0s",
                "tcpCloseWaitTimeout": "0s",
            },
            "iptables": {"localhostNodePorts": False},
        }
        path.write_text(yaml.safe_dump(config))
        return path

    def start_kube_proxy(self) -> None:
        self._spawn(
            "kube-proxy",
            [str(self.knode), "kube-proxy", f"--config={self.kube_proxy_config()}", "--v=1"],
        )

    # ------------------------------------------------------------ DRA driver
    def start_dra_driver(self) -> None:
        """The suite's own DRA driver (``knode dra-driver``): publishes a
        ResourceSlice for this node and prepares what is allocated from it."""
        self._spawn(
            "dra-driver",
            [
                str(self.knode),
                "dra-driver",
                f"--kubeconfig={self.kubeconfig}",
                f"--node-name={NODE_NAME}",
                f"--kubelet-root-dir={self.run_dir / 'kubelet' / 'root'}",
                "--devices=2",
                "--v=2",
            ],
        )

    # -------------------------------------------------------------- teardown
    def stop(self) -> None:
        for name in ("dra-driver", "kubelet", "kube-proxy"):
            if name in self.components:
                self.components[name].stop(grace_seconds=10)
        if "kube-proxy" in self.components:
            subprocess.run(
                [
                    str(self.knode),
                    "kube-proxy",
                    "--cleanup",
                    f"--config={self.kube_proxy_config()}",
                ],
                capture_output=True,
                timeout=120,
                check=False,
            )
        if "containerd" in self.components:
            self.components["containerd"].stop(grace_seconds=10)
        self.teardown_host()

    def teardown_host(self) -> None:
        subprocess.run([str(TEARDOWN), str(self.run_dir)], timeout=300, check=False)

    def log_tails(self, max_lines: int = 30) -> str:
        return "\n".join(
            f"===== {name} ({process.log_path}) =====\n{process.tail(max_lines)}"
            for name, process in self.components.items()
        )

    def _spawn(self, name: str, argv: list[str]) -> ComponentProcess:
        process = ComponentProcess(name, argv, self.logs / f"{name}.log")
        self.components[name] = process
        env_path = os.environ.get("PATH", "")
        if "/usr/sbin" not in env_path.split(":"):
            os.environ["PATH"] = f"{env_path}:/usr/sbin:/sbin"
        process.start()
        return process
