"""Lease-based leader election with the semantics of client-go's ``leaderelection``.

Layers, one module:
- ``LeaseRecord`` and ``ElectionState``: the pure core. Given what a GET of the
  coordination.k8s.io/v1 Lease returned and the time, it decides whether to
  create it, take it over, renew it, or wait; it also owns the answer to "are
  we the leader now?". No I/O, no awaits.
- ``LeaderElector``: the thin async runner. Acquire (retry every jittered
  ``retry_period``), then run the caller's work beside a renew loop; release the
  lease when the work ends or ``run`` is cancelled; raise ``LeadershipLost`` when
  renewing fails for ``renew_deadline``, after cancelling the work.
- ``ApiLeaseClient``: the ``LeaseClient`` protocol over a generic
  ``request(method, path, body, content_type)`` coroutine (``KubeClient.request``).

Invariants:
- Every write of an existing Lease carries the resourceVersion of the copy we
  last read or wrote, so a write based on a stale view fails (409) instead of
  overwriting another holder's record.
- Expiry is judged by our own monotonic clock, never by comparing the remote
  ``renewTime`` with ours: a Lease held by someone else is expired once its
  record has not changed for ``leaseDurationSeconds`` since we first saw it so.
- We count as leader only while less than ``renew_deadline`` has passed since we
  *sent* our last successful write. Every other candidate saw that write later
  and waits a full lease duration (> renew_deadline) from then, so two electors
  never lead at once (given clocks that run at the same rate). Upstream counts
  renewDeadline from the start of the failing renew round instead, up to one
  retryPeriod later; this is the conservative end of the same rule.
- ``leaseDurationSeconds`` is the lease duration rounded *up* to whole seconds
  (upstream truncates; rounding up keeps a fractional duration safe).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
import random
import socket
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from scheduler.clock import Clock
from scheduler.kube.errors import HTTP_CONFLICT, HTTP_NOT_FOUND
from scheduler.kube.resources import LEASES
from scheduler.kube.wire import JSON

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


class LeaseClient(Protocol):
    async def get(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    async def create(self, namespace: str, lease: dict[str, Any]) -> dict[str, Any]: ...

    async def replace(self, namespace: str, name: str, lease: dict[str, Any]) -> dict[str, Any]: ...


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


class LeaderElector:
    """Runs the election for one candidate; see the module docstring for the rules."""

    def __init__(
        self,
        config: LeaderElectionConfig,
        client: LeaseClient,
        clock: Clock,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        *,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self._config = config
        self._client = client
        self._clock = clock
        self._sleep = sleep
        self._rand = rand
        self._state = ElectionState(config)

    @property
    def config(self) -> LeaderElectionConfig:
        return self._config

    @property
    def is_leader(self) -> bool:
        return self._state.is_leader(self._clock.now())

    @property
    def leader(self) -> str:
        """The holder identity last observed ("" when none or released)."""
        return self._state.leader

    def healthy(self) -> tuple[bool, str]:
        return self._state.healthy(self._clock.now())

    async def run(self, on_started_leading: Callable[[], Awaitable[None]]) -> None:
        """Block until elected, then run ``on_started_leading`` while renewing.

        Returns when the work returns; raises what the work raises, or
        ``LeadershipLost`` (after cancelling the work). The lease is released
        (best effort) whenever we stop, including when ``run`` is cancelled.
        """
        log.info("attempting to acquire lease %s", self._config.description)
        await self._acquire()
        log.info("acquired lease %s as %s", self._config.description, self._config.identity)

        async def work() -> None:
            await on_started_leading()

        name = self._config.description
        working = asyncio.create_task(work(), name=f"leader work {name}")
        renewing = asyncio.create_task(self._renew_loop(), name=f"leader renew {name}")
        try:
            await asyncio.wait({working, renewing}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            working.cancel()
            renewing.cancel()
            await asyncio.gather(working, renewing, return_exceptions=True)
            await self._release()
        if not renewing.cancelled() and (error := renewing.exception()) is not None:
            raise error
        if not working.cancelled():
            working.result()

    async def _acquire(self) -> None:
        while not await self._attempt():
            await self._sleep(self._config.retry_period * (1 + JITTER_FACTOR * self._rand()))

    async def _renew_loop(self) -> None:
        while True:
            await self._sleep(self._config.retry_period)
            while not await self._renew():
                left = self._state.time_left(self._clock.now())
                await self._sleep(max(0.0, min(self._config.retry_period, left)))

    async def _renew(self) -> bool:
        """One renewal try; raises ``LeadershipLost`` if we no longer lead, checked
        before the try too, so that a late success cannot paper over a gap in
        which we were not the leader but the work went on."""
        self._check_leading()
        renewed = await self._attempt()
        if not renewed:
            self._check_leading()
        return renewed

    def _check_leading(self) -> None:
        reason = self._state.loss(self._clock.now())
        if reason is not None:
            log.warning("leadership lost: %s", reason)
            raise LeadershipLost(reason)

    async def _attempt(self) -> bool:
        """One try to acquire or renew, bounded by what is left of our
        leadership (by the renew deadline when we do not lead)."""
        now = self._clock.now()
        leading = self._state.is_leader(now)
        bound = self._state.time_left(now) if leading else self._config.renew_deadline
        try:
            async with asyncio.timeout(bound):
                return await self._try_acquire_or_renew()
        except TimeoutError:
            log.info("acquiring or renewing lease %s timed out", self._config.description)
            return False

    async def _try_acquire_or_renew(self) -> bool:
        cfg, state, clock = self._config, self._state, self._clock
        renewal = state.renewal(clock.now(), clock.wall())
        if renewal is not None and await self._send(renewal):
            return True
        try:
            lease = await self._client.get(cfg.namespace, cfg.name)
        except Exception as error:
            log.warning("error retrieving lease %s: %s", cfg.description, error)
            return False
        write = state.observe(lease, clock.now(), clock.wall())
        return write is not None and await self._send(write)

    async def _send(self, write: Write) -> bool:
        cfg = self._config
        sent_at = self._clock.now()
        try:
            if write.create:
                answer = await self._client.create(cfg.namespace, write.lease)
            else:
                answer = await self._client.replace(cfg.namespace, cfg.name, write.lease)
        except LeaseConflict as error:
            log.info("lease %s changed under us: %s", cfg.description, error)
            return False
        except Exception as error:
            log.warning("error writing lease %s: %s", cfg.description, error)
            return False
        self._state.written(answer, sent_at, self._clock.now())
        return True

    async def _release(self) -> None:
        """Free the lease so that another candidate takes over at once (ReleaseOnCancel)."""
        write = self._state.release(self._clock.wall())
        if write is None:
            return
        try:
            async with asyncio.timeout(self._config.renew_deadline):
                released = await self._send(write)
        except TimeoutError:
            released = False
        if released:
            log.info("released lease %s", self._config.description)
        else:
            log.info("could not release lease %s", self._config.description)


class RequestFn(Protocol):
    """``KubeClient.request``: raises an error with ``.status`` on a non-2xx answer."""

    def __call__(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> Awaitable[Any]: ...


def _status(error: Exception) -> int | None:
    status = getattr(error, "status", None)
    return status if isinstance(status, int) else None


class ApiLeaseClient:
    """``LeaseClient`` over a request coroutine, so this module needs no HTTP client."""

    def __init__(self, request: RequestFn) -> None:
        self._request = request

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            lease: dict[str, Any] = await self._request("GET", LEASES.object_path(name, namespace))
        except Exception as error:
            if _status(error) == HTTP_NOT_FOUND:
                return None
            raise
        return lease

    async def create(self, namespace: str, lease: dict[str, Any]) -> dict[str, Any]:
        return await self._write("POST", LEASES.collection_path(namespace), lease)

    async def replace(self, namespace: str, name: str, lease: dict[str, Any]) -> dict[str, Any]:
        return await self._write("PUT", LEASES.object_path(name, namespace), lease)

    async def _write(self, method: str, path: str, lease: dict[str, Any]) -> dict[str, Any]:
        try:
            answer: dict[str, Any] = await self._request(method, path, lease, JSON)
        except Exception as error:
            if _status(error) == HTTP_CONFLICT:
                raise LeaseConflict(str(error)) from error
            raise
        return answer
