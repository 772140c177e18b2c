"""VirtualMachineMigrations the plugin creates and cleans up.

``MigrationController`` is the only async part of the plugin. The adapter
calls ``want``/``finished`` synchronously (from agent requests and informer
events); the daemon runs ``run`` as a plugin worker, which performs each job
through the Handle's API writer and retries failures with capped exponential
backoff. Jobs are deduplicated while pending, so a flood of agent requests
queues one creation per pod.

- A migration for pod ``p`` is named ``schedplugin-<p>``, labelled
  ``autoscaling.neon.tech/created-by-scheduler=true`` and asks NeonVM for a
  live migration to another host (the reference's later spec). An object that
  already exists counts as created.
- A finished one (phase Succeeded or Failed) that carries the label is
  deleted; one already gone counts as deleted.

Whether a pod is migrating is not decided here: the adapter marks it when it
sees the object in the informer, so agents are told ``migrate`` only once the
object exists.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from plugins.autoscale_enforcer.metrics import AutoscaleMetrics
from scheduler.framework import ApiWriter

log = logging.getLogger(__name__)

LABEL_CREATED_BY_SCHEDULER = "autoscaling.neon.tech/created-by-scheduler"
NAME_PREFIX = "schedplugin-"
FINISHED_PHASES = frozenset({"Succeeded", "Failed"})
_PATH = "/apis/vm.neon.tech/v1/namespaces/{namespace}/virtualmachinemigrations"
MIGRATION_KIND = "VirtualMachineMigration"

Sleep = Callable[[float], Awaitable[None]]


def migration_name(pod_name: str) -> str:
    return f"{NAME_PREFIX}{pod_name}"


def migration_body(namespace: str, pod_name: str, vm_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "vm.neon.tech/v1",
        "kind": MIGRATION_KIND,
        "metadata": {
            "name": migration_name(pod_name),
            "namespace": namespace,
            "labels": {LABEL_CREATED_BY_SCHEDULER: "true"},
        },
        "spec": {
            "vmName": vm_name,
            "preventMigrationToSameHost": True,
            "completionTimeout": 3600,
            "incremental": True,
            "autoConverge": True,
            "maxBandwidth": "1Gi",
            "allowPostCopy": False,
        },
    }


def created_by_us(raw: Any) -> bool:
    labels = (raw.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(LABEL_CREATED_BY_SCHEDULER) == "true")


def phase_of(raw: Any) -> str:
    return str((raw.get("status") or {}).get("phase") or "")


@dataclass(frozen=True, slots=True)
class _Job:
    create: bool
    namespace: str
    name: str  # the migration's name
    vm_name: str = ""
    pod_name: str = ""
    phase: str = ""


def _status_of(error: BaseException) -> int | None:
    status = getattr(error, "status", None)
    return status if isinstance(status, int) else None


class MigrationController:
    def __init__(
        self,
        api: ApiWriter,
        metrics: AutoscaleMetrics,
        *,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._api = api
        self._metrics = metrics
        self._backoff_initial = backoff_initial
        self._backoff_max = backoff_max
        self._sleep = sleep
        self._queue: asyncio.Queue[_Job] = asyncio.Queue()
        self._pending: set[_Job] = set()

    def want(self, namespace: str, pod_name: str, vm_name: str) -> None:
        """Create the migration of ``pod_name`` (idempotent while pending)."""
        self._put(_Job(True, namespace, migration_name(pod_name), vm_name, pod_name))

    def finished(self, namespace: str, name: str, phase: str) -> None:
        """Delete the finished migration ``name`` (idempotent while pending)."""
        self._put(_Job(False, namespace, name, phase=phase))

    def _put(self, job: _Job) -> None:
        if job not in self._pending:
            self._pending.add(job)
            self._queue.put_nowait(job)

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def run(self) -> None:
        """Perform jobs until cancelled; a failing job is retried with backoff."""
        while True:
            job = await self._queue.get()
            delay = self._backoff_initial
            while not await self._perform(job):
                await self._sleep(delay)
                delay = min(delay * 2, self._backoff_max)
            self._pending.discard(job)

    async def _perform(self, job: _Job) -> bool:
        path = _PATH.format(namespace=job.namespace)
        op = "Create" if job.create else "Delete"
        try:
            if job.create:
                await self._api.request(
                    "POST", path, migration_body(job.namespace, job.pod_name, job.vm_name)
                )
            else:
                await self._api.request("DELETE", f"{path}/{job.name}")
        except Exception as error:
            self._metrics.record_k8s_op(op, MIGRATION_KIND, job.name, error)
            status = _status_of(error)
            if job.create and status == 409:
                return True  # already exists: created
            if not job.create and status == 404:
                return True  # already gone: deleted
            if job.create:
                self._metrics.migration_create_fails.inc()
            else:
                self._metrics.migration_delete_fails.labels(job.phase).inc()
            log.warning("migration %s/%s: %s; retrying", job.namespace, job.name, error)
            return False
        self._metrics.record_k8s_op(op, MIGRATION_KIND, job.name, None)
        if job.create:
            self._metrics.migrations_created.inc()
            log.info("created migration %s/%s", job.namespace, job.name)
        else:
            self._metrics.migrations_deleted.labels(job.phase).inc()
            log.info("deleted finished migration %s/%s (%s)", job.namespace, job.name, job.phase)
        return True
