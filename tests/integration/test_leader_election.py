"""Leader election against a real API server: one candidate acquires the Lease
and renews it; a second one waits, then takes over at once after a release and
within a lease duration after the leader goes silent; and while candidates run,
a sampler checks that two of them never report leadership at the same time.

Durations are short (lease 2s, renew deadline 1.5s, retry 0.3s) so that the
takeovers happen within a few seconds of real time."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from kubernetes_asyncio import client

from scheduler.framework.clock import RealClock
from scheduler.leaderelection import (
    ApiLeaseClient,
    LeaderElectionConfig,
    LeaderElector,
    LeadershipLost,
    new_identity,
)
from tests.support.wait import eventually

LEASE_NAME = "pyscheduler-election"
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 2.0, 1.5, 0.3
JSON = "application/json"


class HttpError(Exception):
    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}: {body[:200]!r}")
        self.status = status


class Requester:
    """``request(method, path, body, content_type)`` over the test's ApiClient.
    Setting ``cut`` partitions this candidate from the API server."""

    def __init__(self, kube: client.ApiClient) -> None:
        self._kube = kube
        self.cut = False

    async def __call__(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> Any:
        if self.cut:
            raise ConnectionRefusedError("partitioned by the test")
        response = await self._kube.call_api(
            path,
            method,
            header_params={"Accept": JSON, "Content-Type": content_type or JSON},
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
        )
        async with response:
            data = await response.read()
            if not 200 <= response.status < 300:
                raise HttpError(response.status, data)
        return orjson.loads(data) if data else None


class Candidate:
    """One elector on the real API, with work that runs until ``stop_working``."""

    def __init__(self, kube: client.ApiClient, namespace: str) -> None:
        self.requester = Requester(kube)
        self.identity = new_identity()
        config = LeaderElectionConfig(
            namespace=namespace,
            name=LEASE_NAME,
            identity=self.identity,
            lease_duration=LEASE_DURATION,
            renew_deadline=RENEW_DEADLINE,
            retry_period=RETRY_PERIOD,
        )
        self.elector = LeaderElector(config, ApiLeaseClient(self.requester), RealClock())
        self.working = asyncio.Event()
        self._stop = asyncio.Event()
        self.task = asyncio.create_task(self.elector.run(self._work), name=self.identity)

    async def _work(self) -> None:
        self.working.set()
        await self._stop.wait()

    def stop_working(self) -> None:
        self._stop.set()


class Field:
    """Runs candidates and samples them; on exit stops them and fails on any overlap."""

    def __init__(self, kube: client.ApiClient, namespace: str) -> None:
        self._kube, self._namespace = kube, namespace
        self.candidates: list[Candidate] = []
        self.overlaps: list[list[str]] = []
        self.samples = 0

    def candidate(self) -> Candidate:
        joined = Candidate(self._kube, self._namespace)
        self.candidates.append(joined)
        return joined

    async def sample(self) -> None:
        while True:
            leaders = [c.identity for c in self.candidates if c.elector.is_leader]
            if len(leaders) > 1:
                self.overlaps.append(leaders)
            self.samples += 1
            await asyncio.sleep(0.005)  # the sampling rate, not a wait for a result

    async def lease(self) -> dict[str, Any]:
        lease = await ApiLeaseClient(Requester(self._kube)).get(self._namespace, LEASE_NAME)
        return lease or {"spec": {}}


@contextlib.asynccontextmanager
async def field(kube: client.ApiClient, namespace: str) -> AsyncIterator[Field]:
    running = Field(kube, namespace)
    sampler = asyncio.create_task(running.sample(), name="leadership sampler")
    try:
        yield running
    finally:
        for candidate in running.candidates:
            candidate.task.cancel()
        await asyncio.gather(*(c.task for c in running.candidates), return_exceptions=True)
        sampler.cancel()
        await asyncio.gather(sampler, return_exceptions=True)
    assert running.samples > 0
    assert running.overlaps == [], "two candidates reported leadership at once"


async def holder(arena: Field, identity: str) -> dict[str, Any] | None:
    lease = await arena.lease()
    return lease if lease["spec"].get("holderIdentity") == identity else None


async def renewals_seen(arena: Field, count: int) -> None:
    """Wait until the Lease has shown ``count`` distinct renewTimes."""
    seen: set[str] = set()

    async def probe() -> bool:
        renewed = (await arena.lease())["spec"].get("renewTime")
        if renewed:
            seen.add(renewed)
        return len(seen) >= count

    await eventually(probe, timeout=10, what=f"{count} renewals")


async def test_a_single_candidate_acquires_renews_and_releases_the_lease(
    kube: client.ApiClient, namespace: str
) -> None:
    async with field(kube, namespace) as arena:
        one = arena.candidate()
        lease = await eventually(lambda: holder(arena, one.identity), what="lease acquired")
        assert one.working.is_set()
        assert one.elector.is_leader
        assert lease["spec"]["leaseDurationSeconds"] == 2
        assert lease["spec"].get("leaseTransitions", 0) == 0
        await renewals_seen(arena, 3)
        assert one.elector.healthy() == (True, "")

        one.stop_working()
        await one.task

        released = await arena.lease()
        assert released["spec"].get("holderIdentity", "") == ""
        assert not one.elector.is_leader


async def test_a_second_candidate_waits_and_takes_over_at_once_after_a_release(
    kube: client.ApiClient, namespace: str
) -> None:
    async with field(kube, namespace) as arena:
        first = arena.candidate()
        await eventually(lambda: holder(arena, first.identity), what="first acquires")
        second = arena.candidate()
        await renewals_seen(arena, 4)
        assert not second.elector.is_leader
        assert second.elector.leader == first.identity
        assert not second.working.is_set()

        first.stop_working()
        await first.task
        released_at = time.monotonic()
        lease = await eventually(lambda: holder(arena, second.identity), what="second acquires")
        assert time.monotonic() - released_at < LEASE_DURATION, "no wait for expiry"
        assert second.elector.is_leader
        assert lease["spec"]["leaseTransitions"] == 1


async def test_a_second_candidate_takes_over_when_the_leader_stops_renewing(
    kube: client.ApiClient, namespace: str
) -> None:
    async with field(kube, namespace) as arena:
        first = arena.candidate()
        await eventually(lambda: holder(arena, first.identity), what="first acquires")
        second = arena.candidate()
        await renewals_seen(arena, 3)

        first.requester.cut = True
        with pytest.raises(LeadershipLost):
            await first.task
        assert not first.elector.is_leader
        lease = await eventually(
            lambda: holder(arena, second.identity),
            timeout=LEASE_DURATION + 10,
            what="second acquires after the lease expired",
        )
        assert second.working.is_set()
        assert lease["spec"]["leaseTransitions"] == 1


async def test_candidates_racing_for_an_absent_lease_elect_exactly_one(
    kube: client.ApiClient, namespace: str
) -> None:
    async with field(kube, namespace) as arena:
        candidates = [arena.candidate() for _ in range(3)]

        async def one_leader() -> Candidate | None:
            leaders = [c for c in candidates if c.elector.is_leader]
            return leaders[0] if leaders else None

        leader = await eventually(one_leader, what="a leader")
        await renewals_seen(arena, 4)
        assert [c.elector.is_leader for c in candidates].count(True) == 1
        assert leader.elector.is_leader
        assert {c.elector.leader for c in candidates} == {leader.identity}
        assert [c.working.is_set() for c in candidates].count(True) == 1
