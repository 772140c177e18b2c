"""A real local Kubernetes control plane on loopback: etcd, kube-apiserver and,
optionally, kube-controller-manager and kube-scheduler, each its own process.

Used by the pytest fixtures, the demo and the benchmark. Synchronous on
purpose: it is driven from fixtures and scripts, outside any event loop.

Invariants:
- Every port is a free port chosen at start; nothing listens beyond
  127.0.0.1 unless ``advertise_address`` names another local address (the
  end-to-end suite's real node: pods reach the API server through the
  ``kubernetes`` Service, so it must listen on an address pods can route to).
- etcd keeps its data on /dev/shm where available, without fsync: the data is
  disposable and a test run must not wait on the disk.
- The admin identity is a static bearer token in group ``system:masters``;
  authorization is RBAC, as in a real cluster, so a restricted scheduler
  identity can be tested too.
- ``stop`` always tears down every component, in reverse start order, and
  removes the temporary directories unless ``keep_dirs`` is set. It is also
  registered with ``atexit``; children additionally die with this process.
- The apiserver can be restarted in place (same port, same etcd, same serving
  certificate) to test watch resumption.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import shutil
import socket
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import yaml

from localcluster.binary import control_plane_binary
from localcluster.keys import write_service_account_key
from localcluster.process import ComponentProcess

ADMIN_USER = "admin"
ADMIN_GROUP = "system:masters"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
CONTROLLERS = ("resourceclaim-controller", "garbage-collector-controller", "namespace-controller")
# ServiceAccount: no serviceaccount controller runs, so pods would wait for a
# default ServiceAccount forever. TaintNodesByCondition: it taints every new
# Node not-ready, and no node-lifecycle controller runs to clear the taint.
DISABLED_ADMISSION = ("ServiceAccount", "TaintNodesByCondition")


class ControlPlaneError(RuntimeError):
    """A component failed to start or become ready; the message holds its log."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _scratch_root() -> Path:
    shm = Path("/dev/shm")
    if shm.is_dir() and shm.stat().st_mode & 0o002:
        return shm
    return Path(tempfile.gettempdir())


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_DIR_KINDS = {"cp": lambda: Path(tempfile.gettempdir()), "etcd": _scratch_root}


def remove_stale_dirs() -> list[Path]:
    """Remove directories left by runs that died without cleaning up (SIGKILL
    skips atexit): each is named after its owner's pid. Returns what it removed."""
    removed = []
    for kind, root in _DIR_KINDS.items():
        prefix = f"pyscheduler-{kind}-"
        for stale in root().glob(f"{prefix}*"):
            owner = stale.name[len(prefix) :].split("-", 1)[0]
            if owner.isdigit() and not _pid_alive(int(owner)):
                shutil.rmtree(stale, ignore_errors=True)
                removed.append(stale)
    return removed


def _make_owned_dir(kind: str) -> Path:
    """A fresh directory named after this process."""
    root = _DIR_KINDS[kind]()
    return Path(tempfile.mkdtemp(prefix=f"pyscheduler-{kind}-{os.getpid()}-", dir=root))


@dataclass(frozen=True)
class ControlPlaneOptions:
    """What to start and how.

    ``unlimited_inflight`` turns off the apiserver's request throttling
    (priority and fairness, max in-flight), as benchmarks of schedulers do.
    """

    controller_manager: bool = True
    feature_gates: str = ""
    unlimited_inflight: bool = False
    extra_apiserver_args: Sequence[str] = ()
    # The end-to-end suite runs a real node: it listens on the host's address,
    # keeps the ``kubernetes`` Service's endpoints, admits ServiceAccounts and
    # runs the controllers a kubelet-backed cluster needs.
    advertise_address: str = "127.0.0.1"
    endpoint_reconciler: str = "none"
    disabled_admission: Sequence[str] = DISABLED_ADMISSION
    controllers: Sequence[str] = CONTROLLERS
    extra_controller_manager_args: Sequence[str] = ()
    start_timeout_seconds: float = 90.0
    keep_dirs: bool = False
    base_dir: Path | None = None


@dataclass
class _Layout:
    base: Path
    etcd_data: Path
    pki: Path = field(init=False)
    logs: Path = field(init=False)
    kubeconfig: Path = field(init=False)

    def __post_init__(self) -> None:
        self.pki = self.base / "pki"
        self.logs = self.base / "logs"
        self.kubeconfig = self.base / "admin.kubeconfig"
        for path in (self.pki, self.logs, self.etcd_data):
            path.mkdir(parents=True, exist_ok=True)


class ControlPlane:
    """Start with ``start()`` or as a context manager; read ``kubeconfig``."""

    def __init__(self, options: ControlPlaneOptions | None = None, binary: Path | None = None):
        self.options = options or ControlPlaneOptions()
        self._binary = binary
        self._layout: _Layout | None = None
        self._owns_base = False
        self.token = secrets.token_hex(24)
        self.etcd_port = 0
        self.apiserver_port = 0
        self.components: dict[str, ComponentProcess] = {}
        self.startup_seconds: dict[str, float] = {}

    # ----------------------------------------------------------------- paths
    @property
    def layout(self) -> _Layout:
        if self._layout is None:
            raise RuntimeError("the control plane has not been started")
        return self._layout

    @property
    def kubeconfig(self) -> Path:
        return self.layout.kubeconfig

    @property
    def server(self) -> str:
        return f"https://{self.options.advertise_address}:{self.apiserver_port}"

    @property
    def ca_file(self) -> Path:
        return self.layout.pki / "apiserver.crt"

    @property
    def binary(self) -> Path:
        if self._binary is None:
            self._binary = control_plane_binary()
        return self._binary

    # ------------------------------------------------------------- lifecycle
    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        binary = self.binary
        base = self.options.base_dir
        remove_stale_dirs()
        if base is None:
            base = _make_owned_dir("cp")
            self._owns_base = True
        etcd_data = _make_owned_dir("etcd")
        self._layout = _Layout(base=base, etcd_data=etcd_data)
        atexit.register(self.stop)
        try:
            self.etcd_port = free_port()
            self._start_etcd(binary)
            self.apiserver_port = free_port()
            write_service_account_key(self.layout.pki / "sa.key")
            (self.layout.pki / "tokens.csv").write_text(
                f'{self.token},{ADMIN_USER},{ADMIN_USER},"{ADMIN_GROUP}"\n'
            )
            self._start_apiserver(binary)
            self._write_kubeconfig()
            if self.options.controller_manager:
                self._start_controller_manager(binary)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for name in reversed(list(self.components)):
            self.components[name].stop()
        layout, self._layout = self._layout, None
        atexit.unregister(self.stop)
        if layout is not None and not self.options.keep_dirs:
            shutil.rmtree(layout.etcd_data, ignore_errors=True)
            if self._owns_base:
                shutil.rmtree(layout.base, ignore_errors=True)
        # Keep component records (for log tails) only while their files exist.
        if layout is None or not self.options.keep_dirs:
            self.components = {}

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver and start it again on the same port and etcd."""
        apiserver = self.components["kube-apiserver"]
        apiserver.stop()
        started = time.monotonic()
        apiserver.start()
        self._wait_apiserver_ready(apiserver, started)

    def stop_apiserver(self) -> None:
        self.components["kube-apiserver"].stop()

    def start_apiserver_again(self) -> None:
        apiserver = self.components["kube-apiserver"]
        started = time.monotonic()
        apiserver.start()
        self._wait_apiserver_ready(apiserver, started)

    def start_scheduler(
        self, config_path: Path, extra_args: Sequence[str] = ()
    ) -> ComponentProcess:
        """Start the upstream kube-scheduler with a KubeSchedulerConfiguration file."""
        argv = [
            str(self.binary),
            "kube-scheduler",
            f"--config={config_path}",
            "--secure-port=0",
            *self._feature_gate_args(),
            *extra_args,
        ]
        return self._spawn("kube-scheduler", argv)

    def log_tails(self, max_lines: int = 40) -> str:
        """The end of every component's log, for a failing test's report."""
        parts = []
        for name, process in self.components.items():
            parts.append(f"===== {name} ({process.log_path}) =====\n{process.tail(max_lines)}")
        return "\n".join(parts)

    # ------------------------------------------------------------ components
    def _spawn(self, name: str, argv: Sequence[str]) -> ComponentProcess:
        process = ComponentProcess(name, argv, self.layout.logs / f"{name}.log")
        self.components[name] = process
        process.start()
        return process

    def _feature_gate_args(self) -> list[str]:
        gates = self.options.feature_gates
        return [f"--feature-gates={gates}"] if gates else []

    def _start_etcd(self, binary: Path) -> None:
        client = f"http://127.0.0.1:{self.etcd_port}"
        peer = f"http://127.0.0.1:{free_port()}"
        argv = [
            str(binary),
            "etcd",
            "--name=local",
            f"--data-dir={self.layout.etcd_data}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=local={peer}",
            "--unsafe-no-fsync=true",
            "--quota-backend-bytes=8589934592",
            "--log-level=warn",
        ]
        started = time.monotonic()
        process = self._spawn("etcd", argv)
        self._wait(
            process,
            started,
            lambda: _http_ok(f"{client}/health", context=None, token=None),
        )

    def _start_apiserver(self, binary: Path) -> None:
        pki = self.layout.pki
        argv = [
            str(binary),
            "kube-apiserver",
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            f"--bind-address={self.options.advertise_address}",
            f"--advertise-address={self.options.advertise_address}",
            f"--secure-port={self.apiserver_port}",
            f"--cert-dir={pki}",
            "--service-cluster-ip-range=10.0.0.0/24",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-account-key-file={pki / 'sa.key'}",
            "--authorization-mode=RBAC",
            f"--token-auth-file={pki / 'tokens.csv'}",
            f"--disable-admission-plugins={','.join(self.options.disabled_admission)}",
            "--allow-privileged=true",
            f"--endpoint-reconciler-type={self.options.endpoint_reconciler}",
            "--runtime-config=resource.k8s.io/v1=true",
            "--profiling=false",
            *self._feature_gate_args(),
        ]
        if self.options.unlimited_inflight:
            argv += [
                "--enable-priority-and-fairness=false",
                "--max-requests-inflight=0",
                "--max-mutating-requests-inflight=0",
            ]
        argv += list(self.options.extra_apiserver_args)
        started = time.monotonic()
        process = self._spawn("kube-apiserver", argv)
        self._wait_apiserver_ready(process, started)

    def _wait_apiserver_ready(self, process: ComponentProcess, started: float) -> None:
        def ready() -> bool:
            if not self.ca_file.exists():
                return False
            try:
                context = ssl.create_default_context(cafile=str(self.ca_file))
            except ssl.SSLError:
                return False  # the apiserver is still writing its certificate
            # Ready once the apiserver's own bootstrap writes are done (the
            # "kubernetes" Service and its ClusterIP's IPAddress), so none of
            # them lands in a measurement that starts right after.
            return _http_ok(f"{self.server}/readyz", context, self.token) and _http_ok(
                f"{self.server}/api/v1/namespaces/default/services/kubernetes", context, self.token
            )

        self._wait(process, started, ready)

    def _start_controller_manager(self, binary: Path) -> None:
        argv = [
            str(binary),
            "kube-controller-manager",
            f"--kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            "--secure-port=0",
            f"--controllers={','.join(self.options.controllers)}",
            "--kube-api-qps=1000",
            "--kube-api-burst=1000",
            *self._feature_gate_args(),
            *self.options.extra_controller_manager_args,
        ]
        process = self._spawn("kube-controller-manager", argv)
        if not process.running():
            raise ControlPlaneError(f"kube-controller-manager exited:\n{process.tail()}")

    def _wait(self, process: ComponentProcess, started: float, ready: Callable[[], bool]) -> None:
        deadline = started + self.options.start_timeout_seconds
        delay = 0.05
        while True:
            if not process.running():
                raise ControlPlaneError(
                    f"{process.name} exited with code {process.exit_code()}:\n{process.tail()}"
                )
            if ready():
                self.startup_seconds[process.name] = time.monotonic() - started
                return
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"{process.name} not ready after {self.options.start_timeout_seconds}s:\n"
                    f"{process.tail()}"
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    def _write_kubeconfig(self) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "local",
                    "cluster": {"server": self.server, "certificate-authority": str(self.ca_file)},
                }
            ],
            "users": [{"name": ADMIN_USER, "user": {"token": self.token}}],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": ADMIN_USER}}],
            "current-context": "local",
        }
        self.layout.kubeconfig.write_text(yaml.safe_dump(config))

    # ------------------------------------------------------------ raw access
    def get_json(self, path: str) -> object:
        """GET an API path as the admin, for tooling that has no client."""
        context = ssl.create_default_context(cafile=str(self.ca_file))
        request = urllib.request.Request(
            f"{self.server}{path}", headers={"Authorization": f"Bearer {self.token}"}
        )
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return json.loads(response.read())


def _http_ok(url: str, context: ssl.SSLContext | None, token: str | None) -> bool:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, context=context, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False


@contextlib.contextmanager
def running_control_plane(options: ControlPlaneOptions | None = None) -> Iterator[ControlPlane]:
    with ControlPlane(options) as plane:
        yield plane
