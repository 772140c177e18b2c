"""The churn mode's kubelet: runs every measured pod it sees bound, on paper.

For each pod the pod watch first sees bound in the measured namespace, it
writes the three status updates a kubelet writes as it starts the pod (each
a strategic merge patch of ``pods/<name>/status``, as the kubelet's status
manager sends), waits the pod's lifetime, and deletes it with
``gracePeriodSeconds=0`` (no kubelet is there to confirm a graceful one):

1. admitted, sandbox being created: ``Pending``, hostIP and startTime,
   ``PodReadyToStartContainers`` False, ``Initialized`` True, ``Ready`` and
   ``ContainersReady`` False (ContainersNotReady), ``PodScheduled`` True,
   the container waiting (``ContainerCreating``);
2. sandbox ready: ``PodReadyToStartContainers`` True, podIP set, the
   container still ``ContainerCreating``;
3. container started: ``Running``, the container running and ready,
   ``Ready`` and ``ContainersReady`` True.

``statuses`` is pure (times and addresses passed in) and builds all three;
``Kubelet`` is the thin async part. Every pod's work is one task of the
kubelet's own TaskGroup, with at most ``writers`` requests in flight, so the
kubelet never holds the watch up; ``wait_done`` tells when every pod it was
asked to run is deleted. A failed write fails the run (the TaskGroup).
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import ipaddress
import time
from dataclasses import dataclass
from typing import Protocol

from bench.podwatch import until
from bench.workload import PAUSE_IMAGE, Obj

UPDATES_PER_POD = 3
# Addresses a CNI and the nodes would have: pods from 10.128.0.1, hosts from 10.0.0.1.
POD_NETWORK = ipaddress.IPv4Address("10.128.0.0")
HOST_NETWORK = ipaddress.IPv4Address("10.0.0.0")
PAUSE_IMAGE_ID = (
    "registry.k8s.io/pause@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a"
)
CONTAINER = "pause"  # bench.workload.pod_body's one container
NOT_READY = "ContainersNotReady"


def address(network: ipaddress.IPv4Address, serial: int) -> str:
    """The ``serial``-th address (from 0) after ``network``'s own."""
    return str(network + serial + 1)


def timestamp(seconds: float) -> str:
    """RFC 3339 in UTC, to the second, as the API serialises metav1.Time."""
    moment = datetime.datetime.fromtimestamp(int(seconds), datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class PodRun:
    """What a kubelet knows of one pod as it starts it."""

    name: str
    host_ip: str
    pod_ip: str
    admitted: str  # the three steps' times, RFC 3339
    sandbox_ready: str
    started: str

    @property
    def container_id(self) -> str:
        return "containerd://" + hashlib.sha256(self.name.encode()).hexdigest()


def _condition(kind: str, status: bool, since: str, reason: str = "") -> Obj:
    condition: Obj = {
        "type": kind,
        "status": "True" if status else "False",
        "lastProbeTime": None,
        "lastTransitionTime": since,
    }
    if reason:
        condition["reason"] = reason
    if reason == NOT_READY:
        condition["message"] = f"containers with unready status: [{CONTAINER}]"
    return condition


def _waiting() -> Obj:
    return {
        "name": CONTAINER,
        "state": {"waiting": {"reason": "ContainerCreating"}},
        "lastState": {},
        "ready": False,
        "restartCount": 0,
        "image": PAUSE_IMAGE,
        "imageID": "",
        "started": False,
    }


def statuses(run: PodRun) -> tuple[Obj, Obj, Obj]:
    """The three ``{"status": ...}`` patches, in the order they are written."""
    admitted, sandbox, started = run.admitted, run.sandbox_ready, run.started
    host = {"hostIP": run.host_ip, "hostIPs": [{"ip": run.host_ip}], "startTime": admitted}
    pending = {
        "phase": "Pending",
        "conditions": [
            _condition("PodReadyToStartContainers", False, admitted),
            _condition("Initialized", True, admitted),
            _condition("Ready", False, admitted, NOT_READY),
            _condition("ContainersReady", False, admitted, NOT_READY),
            _condition("PodScheduled", True, admitted),
        ],
        **host,
        "containerStatuses": [_waiting()],
    }
    pod_ip = {"podIP": run.pod_ip, "podIPs": [{"ip": run.pod_ip}]}
    creating = {
        **pending,
        "conditions": [
            _condition("PodReadyToStartContainers", True, sandbox),
            *pending["conditions"][1:],
        ],
        **pod_ip,
    }
    running = {
        "phase": "Running",
        "conditions": [
            _condition("PodReadyToStartContainers", True, sandbox),
            _condition("Initialized", True, admitted),
            _condition("Ready", True, started),
            _condition("ContainersReady", True, started),
            _condition("PodScheduled", True, admitted),
        ],
        **host,
        **pod_ip,
        "containerStatuses": [
            {
                "name": CONTAINER,
                "state": {"running": {"startedAt": started}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": PAUSE_IMAGE,
                "imageID": PAUSE_IMAGE_ID,
                "containerID": run.container_id,
                "started": True,
            }
        ],
    }
    return {"status": pending}, {"status": creating}, {"status": running}


class PodWriter(Protocol):
    """The two writes a kubelet makes (``bench.apiclient.Api`` has them)."""

    async def patch(self, path: str, body: Obj) -> None: ...

    async def delete(self, path: str, grace_period_seconds: int | None = None) -> None: ...


class Kubelet:
    """Every node's kubelet at once, for the pods of one namespace.

    A ``bench.podwatch.BindListener``: ``bound`` queues a pod to run (it must
    not block the watch); ``run`` is the task that runs them.
    """

    def __init__(
        self, api: PodWriter, namespace: str, lifetime_seconds: float, writers: int
    ) -> None:
        self._api = api
        self._namespace = namespace
        self._lifetime = lifetime_seconds
        self._writers = asyncio.Semaphore(writers)
        self._queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._hosts: dict[str, str] = {}
        self._pods = 0
        self.status_updates = 0
        self.deleted_pods = 0
        self._changed = asyncio.Event()

    def bound(self, pod: Obj) -> None:
        metadata = pod["metadata"]
        if metadata["namespace"] == self._namespace:
            self._queue.put_nowait((metadata["name"], pod["spec"]["nodeName"]))

    def deleted(self, pod: Obj) -> None:
        pass

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            while True:
                name, node = await self._queue.get()
                host = self._hosts.setdefault(node, address(HOST_NETWORK, len(self._hosts)))
                pod_ip = address(POD_NETWORK, self._pods)
                self._pods += 1
                group.create_task(self._run_pod(name, host, pod_ip), name=f"kubelet-{name}")

    async def wait_done(self, count: int, timeout: float) -> bool:  # noqa: ASYNC109 - a deadline on a condition, not a sleep
        """True once ``count`` pods were run and deleted; False at the deadline."""
        return await until(self._changed, lambda: self.deleted_pods >= count, timeout)

    async def _run_pod(self, name: str, host_ip: str, pod_ip: str) -> None:
        path = f"/api/v1/namespaces/{self._namespace}/pods/{name}"
        now = timestamp(time.time())
        # The steps' times are the second the kubelet saw the pod: writing
        # them back to back, the three fall in the same second or the next.
        run = PodRun(name, host_ip, pod_ip, now, now, now)
        for patch in statuses(run):
            async with self._writers:
                await self._api.patch(f"{path}/status", patch)
            self.status_updates += 1
        await asyncio.sleep(self._lifetime)
        async with self._writers:
            await self._api.delete(path, grace_period_seconds=0)
        self.deleted_pods += 1
        self._changed.set()
