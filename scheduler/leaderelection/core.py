"""The pure core of leader election: the Lease record, the election state
machine and its configuration. No I/O, no awaits (see the package docstring)."""

from __future__ import annotations

import copy
import logging
import math
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from scheduler.kube.resources import LEASES

log = logging.getLogger(__name__)

Raw = Mapping[str, Any]

# client-go's wait.Jitter factor for the acquire loop; the config model checks
# renewDeadline > JITTER_FACTOR * retryPeriod.
JITTER_FACTOR = 1.2
# kube-scheduler's healthz adaptor: the watchdog fails this long past the lease duration.
WATCHDOG_TOLERANCE = 20.0
# A released Lease: no holder and the shortest duration, so others take it at once.
RELEASED_LEASE_DURATION_SECONDS = 1


class LeadershipLost(Exception):
    """We were the leader and no longer are; upstream the process exits."""


class LeaseConflict(Exception):
    """The Lease changed since we read it (409 on replace) or already exists (409 on create)."""


@dataclass(frozen=True)
class LeaderElectionConfig:
    namespace: str
    name: str
    identity: str
    lease_duration: float
    renew_deadline: float
    retry_period: float

    def __post_init__(self) -> None:
        if not (self.namespace and self.name and self.identity):
            raise ValueError("namespace, name and identity are required")
        if min(self.lease_duration, self.renew_deadline, self.retry_period) <= 0:
            raise ValueError("lease_duration, renew_deadline and retry_period must be > 0")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(f"renew_deadline must be greater than retry_period * {JITTER_FACTOR}")

    @property
    def lease_duration_seconds(self) -> int:
        return math.ceil(self.lease_duration)

    @property
    def description(self) -> str:
        return f"{self.namespace}/{self.name}"


def new_identity() -> str:
    """``<hostname>_<uuid>``, as kube-scheduler names its candidates."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def micro_time(wall: float) -> str:
    """A ``metav1.MicroTime`` in its wire form (RFC 3339, microseconds, UTC)."""
    return datetime.fromtimestamp(wall, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The election fields of a Lease spec; equality means "unchanged"."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int = 0

    @classmethod
    def from_lease(cls, lease: Raw) -> LeaseRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder_identity=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            lease_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.lease_transitions,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time is not None:
            spec["renewTime"] = self.renew_time
        return spec


@dataclass(frozen=True, slots=True)
class Write:
    """What to send: a new Lease (``create``) or a replacement of the one we read."""

    lease: dict[str, Any]
    create: bool


class ElectionState:
    """The pure core: the last Lease seen, when its record last changed, and our standing.

    The runner calls ``renewal`` (fast path, no GET), or ``observe`` after a GET,
    sends the resulting write, and reports a success with ``written``.
    """

    def __init__(self, config: LeaderElectionConfig) -> None:
        self._config = config
        self._lease: Raw | None = None  # the last copy read or written: its resourceVersion
        self._record: LeaseRecord | None = None
        self._observed_at = 0.0  # monotonic time the record last changed, as we saw it
        self._renewed_at: float | None = None  # send time of our last successful write

    @property
    def leader(self) -> str:
        """The holder identity last observed ("" when none)."""
        return self._record.holder_identity if self._record else ""

    @property
    def holds_lease(self) -> bool:
        """The last record seen names us (client-go ``IsLeader``)."""
        return self.leader == self._config.identity

    def is_leader(self, now: float) -> bool:
        return self.holds_lease and self.time_left(now) > 0

    def time_left(self, now: float) -> float:
        """How long our leadership lasts without another successful renewal."""
        if self._renewed_at is None:
            return 0.0
        return self._renewed_at + self._config.renew_deadline - now

    def leading_until(self) -> float | None:
        """When our leadership ends without another successful renewal (the
        clock's time), None if we do not hold the lease. Every other
        candidate waits a full lease duration (> renew_deadline) from when it
        saw our last write, so whoever stops acting by then never overlaps
        with the next leader."""
        if self._renewed_at is None or not self.holds_lease:
            return None
        return self._renewed_at + self._config.renew_deadline

    def loss(self, now: float) -> str | None:
        """Why we no longer lead, or None while we still do."""
        if not self.holds_lease:
            return f"lease {self._config.description} is no longer ours (holder {self.leader!r})"
        if self.time_left(now) <= 0:
            return (
                f"failed to renew lease {self._config.description} "
                f"within the renew deadline of {self._config.renew_deadline}s"
            )
        return None

    def healthy(self, now: float) -> tuple[bool, str]:
        """The upstream watchdog: fails when we hold the lease but it went unrenewed."""
        limit = self._config.lease_duration + WATCHDOG_TOLERANCE
        if self.holds_lease and now - self._observed_at > limit:
            return False, f"failed election to renew leadership on lease {self._config.description}"
        return True, ""

    def renewal(self, now: float, wall: float) -> Write | None:
        """The fast path while we lead: replace our own copy, skipping the GET."""
        if self._lease is None or self._record is None or not self.is_leader(now):
            return None
        return self._replacement(self._lease, self._record, wall)

    def observe(self, lease: Raw | None, now: float, wall: float) -> Write | None:
        """Take in a GET's answer; return the write that acquires or renews, or
        None when someone else holds a valid lease."""
        if lease is None:
            self._lease, self._record = None, None
            record = self._ours(None, wall)
            metadata = {"name": self._config.name, "namespace": self._config.namespace}
            body = {"apiVersion": LEASES.api_version, "kind": LEASES.kind, "metadata": metadata}
            return Write({**body, "spec": record.spec()}, create=True)
        record = LeaseRecord.from_lease(lease)
        if record != self._record:
            self._record, self._observed_at = record, now
        self._lease = lease
        valid = now < self._observed_at + record.lease_duration_seconds
        if record.holder_identity and valid and not self.holds_lease:
            return None
        return self._replacement(lease, record, wall)

    def written(self, lease: Raw, sent_at: float, now: float) -> None:
        """A write succeeded; ``lease`` is the server's answer, sent at ``sent_at``."""
        self._lease, self._record, self._observed_at = lease, LeaseRecord.from_lease(lease), now
        self._renewed_at = sent_at if self.holds_lease else None

    def release(self, wall: float) -> Write | None:
        """Resign now and return the write that frees the lease (None if not ours)."""
        self._renewed_at = None
        if self._lease is None or self._record is None or not self.holds_lease:
            return None
        record = LeaseRecord(
            holder_identity="",
            lease_duration_seconds=RELEASED_LEASE_DURATION_SECONDS,
            acquire_time=micro_time(wall),
            renew_time=micro_time(wall),
            lease_transitions=self._record.lease_transitions,
        )
        return Write(self._with_spec(self._lease, record), create=False)

    def _ours(self, current: LeaseRecord | None, wall: float) -> LeaseRecord:
        ours = current is not None and current.holder_identity == self._config.identity
        return LeaseRecord(
            holder_identity=self._config.identity,
            lease_duration_seconds=self._config.lease_duration_seconds,
            acquire_time=current.acquire_time if ours and current else micro_time(wall),
            renew_time=micro_time(wall),
            lease_transitions=(
                0 if current is None else current.lease_transitions + (0 if ours else 1)
            ),
        )

    def _replacement(self, lease: Raw, current: LeaseRecord, wall: float) -> Write:
        return Write(self._with_spec(lease, self._ours(current, wall)), create=False)

    @staticmethod
    def _with_spec(lease: Raw, record: LeaseRecord) -> dict[str, Any]:
        """A copy of ``lease`` (resourceVersion and all) with the election fields replaced;
        other spec fields (strategy, preferredHolder) are kept."""
        body = copy.deepcopy(dict(lease))
        body.setdefault("apiVersion", LEASES.api_version)
        body.setdefault("kind", LEASES.kind)
        body["spec"] = {**(body.get("spec") or {}), **record.spec()}
        return body
