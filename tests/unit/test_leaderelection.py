"""Leader election: the pure core's decisions as tables; the runner against an
in-memory Lease store on a timeline that moves only when the elector sleeps;
the HTTP adapter against a recorded request function."""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest

from scheduler.kube.errors import ApiError
from scheduler.leaderelection import (
    ApiLeaseClient,
    ElectionState,
    LeaderElectionConfig,
    LeaderElector,
    LeadershipLost,
    LeaseConflict,
    micro_time,
)
from tests.support.builders import Obj, make_lease
from tests.support.clock import FakeClock

NS, NAME = "kube-system", "pyscheduler"
ME, OTHER = "host-a_0001", "host-b_0002"
T0, W0 = 1000.0, 1_700_000_000.0  # FakeClock's defaults: monotonic and wall
EARLIER, LATER = "2023-11-14T22:00:00.000000Z", "2023-11-14T22:00:05.000000Z"
LEASE_PATH = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"


def config(**overrides: Any) -> LeaderElectionConfig:
    values: dict[str, Any] = {
        "namespace": NS,
        "name": NAME,
        "identity": ME,
        "lease_duration": 15.0,
        "renew_deadline": 10.0,
        "retry_period": 2.0,
    }
    return LeaderElectionConfig(**{**values, **overrides})


def held(holder: str = OTHER, *, duration: int = 15, renewed: str = EARLIER, rv: str = "1") -> Obj:
    return (
        make_lease(NAME, NS)
        .holder(holder, duration=duration)
        .acquired(EARLIER)
        .renewed(renewed)
        .transitions(3)
        .resource_version(rv)
        .obj()
    )


# ------------------------------------------------------------------ the pure core


@dataclass(frozen=True)
class Takes:
    """The write ``observe`` should return: ours, with these transitions."""

    create: bool
    transitions: int
    keeps_acquire_time: bool = False


@pytest.mark.parametrize(
    ("observations", "expected"),
    [
        pytest.param([(0, None)], Takes(create=True, transitions=0), id="absent: create it"),
        pytest.param([(0, held())], None, id="held by another, fresh: wait"),
        pytest.param(
            [(0, held()), (14.9, held())], None, id="unchanged for less than its duration: wait"
        ),
        pytest.param(
            [(0, held()), (15, held())],
            Takes(create=False, transitions=4),
            id="unchanged for its duration by our clock: take over",
        ),
        pytest.param(
            [(0, held(renewed="2000-01-01T00:00:00.000000Z"))],
            None,
            id="ancient remote renewTime, first seen now: wait (remote clocks not trusted)",
        ),
        pytest.param(
            [(0, held()), (10, held(renewed=LATER, rv="2")), (20, held(renewed=LATER, rv="2"))],
            None,
            id="renewed meanwhile: the wait restarts at the renewal",
        ),
        pytest.param(
            [(0, held()), (10, held(renewed=LATER, rv="2")), (25, held(renewed=LATER, rv="2"))],
            Takes(create=False, transitions=4),
            id="renewed meanwhile, then unchanged for its duration: take over",
        ),
        pytest.param(
            [(0, held()), (15, held(rv="7"))],
            Takes(create=False, transitions=4),
            id="only the resourceVersion changed: the record did not, take over",
        ),
        pytest.param(
            [(0, held(duration=5)), (5, held(duration=5))],
            Takes(create=False, transitions=4),
            id="the duration written by the holder counts",
        ),
        pytest.param(
            [(0, held("", duration=1))],
            Takes(create=False, transitions=4),
            id="released (no holder): take over at once",
        ),
        pytest.param(
            [(0, make_lease(NAME, NS).resource_version("1").obj())],
            Takes(create=False, transitions=1),
            id="empty spec: take over at once",
        ),
        pytest.param(
            [(0, held(duration=0))],
            Takes(create=False, transitions=4),
            id="zero duration: expired at once",
        ),
        pytest.param(
            [(0, held(ME))],
            Takes(create=False, transitions=3, keeps_acquire_time=True),
            id="held by us: renew, same acquireTime and transitions",
        ),
    ],
)
def test_observe_decides_whether_to_acquire(
    observations: list[tuple[float, Obj | None]], expected: Takes | None
) -> None:
    state = ElectionState(config())
    write = None
    for offset, lease in observations:
        write = state.observe(lease, T0 + offset, W0 + offset)
    if expected is None:
        assert write is None
        return
    assert write is not None
    last_offset, last_lease = observations[-1]
    spec = write.lease["spec"]
    assert write.create == expected.create
    assert spec["holderIdentity"] == ME
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == expected.transitions
    assert spec["renewTime"] == micro_time(W0 + last_offset)
    acquired = EARLIER if expected.keeps_acquire_time else micro_time(W0 + last_offset)
    assert spec["acquireTime"] == acquired
    if last_lease is not None:
        assert write.lease["metadata"] == last_lease["metadata"], "resourceVersion is sent back"


def test_replacement_keeps_what_it_does_not_own() -> None:
    lease = (
        make_lease(NAME, NS)
        .holder("", duration=1)
        .spec_field("strategy", "OldestEmulationVersion")
        .label("team", "sched")
        .resource_version("42")
        .obj()
    )
    write = ElectionState(config(lease_duration=2.5, renew_deadline=2.0, retry_period=1.0)).observe(
        lease, T0, W0
    )
    assert write is not None
    assert write.lease["metadata"] == {
        "name": NAME,
        "namespace": NS,
        "labels": {"team": "sched"},
        "resourceVersion": "42",
    }
    assert write.lease["spec"]["strategy"] == "OldestEmulationVersion"
    assert write.lease["spec"]["leaseDurationSeconds"] == 3, "rounded up, never down"
    assert lease["spec"]["holderIdentity"] == "", "the observed lease is not mutated"


def leading_state(sent_at: float = T0) -> ElectionState:
    """A state that has just written the lease as its holder."""
    state = ElectionState(config())
    state.written(held(ME, rv="5"), sent_at=sent_at, now=sent_at + 0.1)
    return state


@pytest.mark.parametrize(
    ("change", "offset", "leading", "loss"),
    [
        pytest.param(None, 0.0, True, None, id="just renewed"),
        pytest.param(None, 9.9, True, None, id="inside the renew deadline"),
        pytest.param(None, 10.0, False, "within the renew deadline", id="deadline passed"),
        pytest.param(
            lambda s: s.written(held(ME, rv="6", renewed=LATER), sent_at=T0 + 8, now=T0 + 8.1),
            17.9,
            True,
            None,
            id="a renewal moves the deadline",
        ),
        pytest.param(
            lambda s: s.observe(held(OTHER, rv="6"), T0 + 1, W0 + 1),
            1.0,
            False,
            "no longer ours (holder 'host-b_0002')",
            id="another holder seen: lost at once",
        ),
        pytest.param(lambda s: s.release(W0), 0.0, False, NAME, id="resigned: not leader at once"),
    ],
)
def test_leadership_lasts_the_renew_deadline_from_the_last_write_sent(
    change: Callable[[ElectionState], object] | None,
    offset: float,
    leading: bool,
    loss: str | None,
) -> None:
    state = leading_state()
    if change is not None:
        change(state)
    assert state.is_leader(T0 + offset) is leading
    reason = state.loss(T0 + offset)
    if loss is None:
        assert reason is None
    else:
        assert reason is not None
        assert loss in reason


def test_release_frees_the_lease_with_our_resource_version() -> None:
    state = leading_state()
    write = state.release(W0 + 3)
    assert write is not None
    assert not write.create
    assert write.lease["metadata"]["resourceVersion"] == "5"
    assert write.lease["spec"] == {
        "holderIdentity": "",
        "leaseDurationSeconds": 1,
        "leaseTransitions": 3,
        "acquireTime": micro_time(W0 + 3),
        "renewTime": micro_time(W0 + 3),
    }
    assert not state.is_leader(T0)


def test_release_writes_nothing_when_the_lease_is_not_ours() -> None:
    state = ElectionState(config())
    state.observe(held(OTHER), T0, W0)
    assert state.release(W0) is None


def other_holds() -> ElectionState:
    state = ElectionState(config())
    state.observe(held(OTHER), T0, W0)
    return state


@pytest.mark.parametrize(
    ("make_state", "offset", "ok"),
    [
        pytest.param(lambda: ElectionState(config()), 1000.0, True, id="never held"),
        pytest.param(leading_state, 34.9, True, id="held, within lease duration + 20s"),
        pytest.param(leading_state, 35.5, False, id="held, past lease duration + 20s"),
        pytest.param(other_holds, 1000.0, True, id="held by another: not our business"),
    ],
)
def test_watchdog_fails_only_for_an_unrenewed_lease_we_hold(
    make_state: Callable[[], ElectionState], offset: float, ok: bool
) -> None:
    healthy, reason = make_state().healthy(T0 + offset)
    assert healthy is ok
    expected = "" if ok else f"failed election to renew leadership on lease {NS}/{NAME}"
    assert reason == expected


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param({"identity": ""}, "identity are required", id="no identity"),
        pytest.param({"namespace": ""}, "required", id="no namespace"),
        pytest.param({"retry_period": 0.0}, "must be > 0", id="zero retry period"),
        pytest.param({"lease_duration": 10.0}, "greater than renew_deadline", id="lease <= renew"),
        pytest.param({"retry_period": 9.0}, r"retry_period \* 1.2", id="renew <= 1.2 * retry"),
    ],
)
def test_config_is_validated(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        config(**overrides)


def test_micro_time_is_rfc3339_with_microseconds_in_utc() -> None:
    assert micro_time(1_700_000_000.25) == "2023-11-14T22:13:20.250000Z"


# ------------------------------------------------------------------ the runner


class Unavailable(ConnectionError):
    """The injected outage."""


class FakeLeaseStore:
    """An in-memory Lease API with optimistic concurrency; the test can take it
    down, make it hang, or write as another party."""

    def __init__(self) -> None:
        self._lease: Obj | None = None
        self._versions = itertools.count(1)
        self.down = False
        self.hang = False
        self.before_create: Callable[[], None] | None = None
        self.writes: list[tuple[str, str, int]] = []  # (verb, holder, transitions)

    @property
    def lease(self) -> Obj | None:
        return copy.deepcopy(self._lease)

    def put(self, lease: Obj) -> None:
        """Another party writes, whatever the current version."""
        self._store(lease)

    def _store(self, lease: Obj) -> Obj:
        stored = copy.deepcopy(lease)
        stored["metadata"]["resourceVersion"] = str(next(self._versions))
        self._lease = stored
        return copy.deepcopy(stored)

    async def _gate(self) -> None:
        if self.hang:
            await asyncio.Event().wait()
        if self.down:
            raise Unavailable("injected outage")

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        await self._gate()
        return self.lease

    async def create(self, namespace: str, lease: dict[str, Any]) -> dict[str, Any]:
        await self._gate()
        if self.before_create is not None:
            self.before_create()
        if self._lease is not None:
            raise LeaseConflict("already exists")
        self.writes.append(("create", lease["spec"]["holderIdentity"], 0))
        return self._store(lease)

    async def replace(self, namespace: str, name: str, lease: dict[str, Any]) -> dict[str, Any]:
        await self._gate()
        if self._lease is None:
            raise LookupError("not found")
        version = lease["metadata"].get("resourceVersion")
        if version != self._lease["metadata"]["resourceVersion"]:
            raise LeaseConflict(f"stale resourceVersion {version}")
        spec = lease["spec"]
        self.writes.append(("replace", spec["holderIdentity"], spec["leaseTransitions"]))
        return self._store(lease)


def make_timeline(max_sleeps: int = 10_000) -> FakeClock:
    """The fake clock, moved only by the elector's sleeps; actions scheduled
    with ``at`` fire when their time comes."""
    clock = FakeClock(now=T0, wall=W0)

    def guard(_seconds: float) -> None:
        assert len(clock.sleeps) <= max_sleeps, "runaway loop"

    clock.on_sleep(guard)
    return clock


class Work:
    """``on_started_leading``: notes when it started, runs until ``finish``."""

    def __init__(self, timeline: FakeClock, fail: Exception | None = None) -> None:
        self._timeline = timeline
        self._fail = fail
        self._finished = asyncio.Event()
        self.started_at: float | None = None
        self.cancelled = False

    def finish(self) -> None:
        self._finished.set()

    async def __call__(self) -> None:
        self.started_at = self._timeline.elapsed
        if self._fail is not None:
            raise self._fail
        try:
            await self._finished.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


def elector_for(
    store: FakeLeaseStore, timeline: FakeClock, rand: float = 0.0, **overrides: Any
) -> LeaderElector:
    return LeaderElector(config(**overrides), store, timeline, rand=lambda: rand)


def holder_of(store: FakeLeaseStore) -> str | None:
    lease = store.lease
    return None if lease is None else str(lease["spec"]["holderIdentity"])


async def test_acquires_an_absent_lease_renews_it_and_releases_it_when_the_work_returns() -> None:
    store, timeline = FakeLeaseStore(), make_timeline()
    elector, work = elector_for(store, timeline), Work(timeline)
    seen: list[tuple[bool, tuple[bool, str], str | None]] = []
    timeline.at(15, lambda: seen.append((elector.is_leader, elector.healthy(), holder_of(store))))
    timeline.at(30, work.finish)

    await elector.run(work)

    assert work.started_at == 0
    assert seen == [(True, (True, ""), ME)]
    assert store.writes[0] == ("create", ME, 0)
    assert sum(write == ("replace", ME, 0) for write in store.writes) >= 14, "renewed every 2s"
    assert store.writes[-1] == ("replace", "", 0), "released"
    assert store.lease is not None
    assert store.lease["spec"]["leaseDurationSeconds"] == 1
    assert not elector.is_leader


async def test_waits_while_another_renews_and_takes_over_a_lease_duration_after_it_stops() -> None:
    store, timeline = FakeLeaseStore(), make_timeline()
    store.put(held(OTHER))
    for second in (1, 3, 5):  # the other holder renews, then dies
        timeline.at(second, partial(store.put, held(OTHER, renewed=micro_time(W0 + second))))
    elector, work = elector_for(store, timeline), Work(timeline)
    seen: list[tuple[bool, str]] = []
    timeline.at(10, lambda: seen.append((elector.is_leader, elector.leader)))
    timeline.at(10, work.finish)

    await elector.run(work)

    assert seen == [(False, OTHER)]
    assert work.started_at is not None
    # The renewal at 5 is first seen at our next try (6): the lease expires at 21.
    assert 21 <= work.started_at <= 21 + 2
    assert store.writes[0] == ("replace", ME, 4), "a new holder counts a transition"


async def test_acquisition_retries_are_jittered_and_renewals_are_not() -> None:
    store, timeline = FakeLeaseStore(), make_timeline()
    store.put(held(OTHER))
    elector, work = elector_for(store, timeline, rand=0.5), Work(timeline)
    timeline.at(30, work.finish)

    await elector.run(work)

    assert work.started_at is not None
    before = timeline.sleeps[: round(work.started_at / 3.2)]
    after = timeline.sleeps[len(before) :]
    assert {round(sleep, 9) for sleep in before} == {round(2.0 * (1 + 1.2 * 0.5), 9)}
    assert set(after) == {2.0}


@pytest.mark.parametrize(
    ("outage_from", "outage_for", "lost_at"),
    [
        pytest.param(10, 5, None, id="an outage shorter than the renew deadline is ridden out"),
        pytest.param(10, 100, 18, id="an outage past the renew deadline loses leadership"),
    ],
)
async def test_renewal_failures_lose_leadership_only_after_the_renew_deadline(
    outage_from: float, outage_for: float, lost_at: float | None
) -> None:
    store, timeline = FakeLeaseStore(), make_timeline()
    elector, work = elector_for(store, timeline), Work(timeline)
    timeline.at(outage_from, lambda: setattr(store, "down", True))
    timeline.at(outage_from + outage_for, lambda: setattr(store, "down", False))
    during: list[bool] = []
    timeline.at(outage_from + 5, lambda: during.append(elector.is_leader))
    timeline.at(40, work.finish)

    if lost_at is None:
        await elector.run(work)
        assert during == [True]
        assert not work.cancelled
        return
    with pytest.raises(LeadershipLost, match="renew deadline"):
        await elector.run(work)
    # The last renewal that got through was sent at 8: the deadline is 8 + 10.
    assert timeline.elapsed == pytest.approx(lost_at)
    assert work.cancelled
    assert not elector.is_leader


async def test_leadership_is_lost_at_once_when_another_candidate_holds_the_lease() -> None:
    store, timeline = FakeLeaseStore(), make_timeline()
    elector, work = elector_for(store, timeline), Work(timeline)
    timeline.at(5, lambda: store.put(held(OTHER, renewed=LATER)))

    with pytest.raises(LeadershipLost, match="no longer ours"):
        await elector.run(work)

    assert timeline.elapsed == 6, "the first renewal after the takeover notices it"
    assert work.cancelled
    assert holder_of(store) == OTHER, "the release does not clobber the new holder"


async def test_cancelling_run_cancels_the_work_and_releases_the_lease() -> None:
    store, timeline = FakeLeaseStore(), make_timeline()
    elector, work = elector_for(store, timeline), Work(timeline)
    running = asyncio.create_task(elector.run(work))
    timeline.at(7, running.cancel)

    with pytest.raises(asyncio.CancelledError):
        await running

    assert work.cancelled
    assert holder_of(store) == ""
    assert not elector.is_leader


async def test_a_failing_work_releases_the_lease_and_its_error_propagates() -> None:
    store, timeline = FakeLeaseStore(), make_timeline()
    elector = elector_for(store, timeline)

    with pytest.raises(RuntimeError, match="boom"):
        await elector.run(Work(timeline, fail=RuntimeError("boom")))

    assert holder_of(store) == ""


async def test_losing_the_create_race_leaves_us_waiting_for_the_winner() -> None:
    store, timeline = FakeLeaseStore(), make_timeline()
    store.before_create = lambda: store.put(held(OTHER))
    elector, work = elector_for(store, timeline), Work(timeline)
    seen: list[tuple[bool, str]] = []
    timeline.at(4, lambda: seen.append((elector.is_leader, elector.leader)))
    timeline.at(30, work.finish)

    await elector.run(work)

    assert seen == [(False, OTHER)]
    assert work.started_at is not None
    assert work.started_at >= 15, "the winner's lease ran its full duration"


async def test_a_hung_renewal_is_abandoned_at_the_renew_deadline() -> None:
    store, timeline = FakeLeaseStore(), make_timeline()
    # Real seconds here: a hung request is bounded by the event loop's timer.
    elector = elector_for(
        store, timeline, lease_duration=1.0, renew_deadline=0.05, retry_period=0.02
    )
    work = Work(timeline)
    timeline.at(0.01, lambda: setattr(store, "hang", True))

    async with asyncio.timeout(10):  # bounds a failure only
        with pytest.raises(LeadershipLost):
            await elector.run(work)

    assert work.cancelled


# ------------------------------------------------------------------ the HTTP adapter


class HttpError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


class RecordedRequest:
    """A request coroutine that records its calls and answers or fails as told."""

    def __init__(self, answer: Any, error: Exception | None) -> None:
        self._answer = answer
        self._error = error
        self.calls: list[tuple[str, str, Any, str | None]] = []

    async def __call__(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> Any:
        self.calls.append((method, path, body, content_type))
        if self._error is not None:
            raise self._error
        return self._answer


LEASE = held(ME)
Operation = Callable[[ApiLeaseClient], Awaitable[Any]]


@pytest.mark.parametrize(
    ("operation", "error", "call", "outcome"),
    [
        pytest.param(
            lambda c: c.get(NS, NAME),
            None,
            ("GET", f"{LEASE_PATH}/{NAME}", None, None),
            LEASE,
            id="get",
        ),
        pytest.param(
            lambda c: c.get(NS, NAME),
            HttpError(404),
            ("GET", f"{LEASE_PATH}/{NAME}", None, None),
            None,
            id="get: 404 is None",
        ),
        pytest.param(
            lambda c: c.get(NS, NAME),
            HttpError(500),
            ("GET", f"{LEASE_PATH}/{NAME}", None, None),
            HttpError,
            id="get: other errors propagate",
        ),
        pytest.param(
            lambda c: c.create(NS, LEASE),
            None,
            ("POST", LEASE_PATH, LEASE, "application/json"),
            LEASE,
            id="create",
        ),
        pytest.param(
            lambda c: c.create(NS, LEASE),
            ApiError(409, "AlreadyExists", "leases exists"),
            ("POST", LEASE_PATH, LEASE, "application/json"),
            LeaseConflict,
            id="create: 409 (KubeClient's ApiError) is a conflict",
        ),
        pytest.param(
            lambda c: c.replace(NS, NAME, LEASE),
            None,
            ("PUT", f"{LEASE_PATH}/{NAME}", LEASE, "application/json"),
            LEASE,
            id="replace",
        ),
        pytest.param(
            lambda c: c.replace(NS, NAME, LEASE),
            HttpError(409),
            ("PUT", f"{LEASE_PATH}/{NAME}", LEASE, "application/json"),
            LeaseConflict,
            id="replace: 409 is a conflict",
        ),
        pytest.param(
            lambda c: c.replace(NS, NAME, LEASE),
            HttpError(404),
            ("PUT", f"{LEASE_PATH}/{NAME}", LEASE, "application/json"),
            HttpError,
            id="replace: 404 propagates",
        ),
        pytest.param(
            lambda c: c.replace(NS, NAME, LEASE),
            ConnectionResetError("reset"),
            ("PUT", f"{LEASE_PATH}/{NAME}", LEASE, "application/json"),
            ConnectionResetError,
            id="replace: transport errors propagate",
        ),
    ],
)
async def test_api_lease_client_maps_requests_and_statuses(
    operation: Operation,
    error: Exception | None,
    call: tuple[str, str, Any, str | None],
    outcome: Any,
) -> None:
    request = RecordedRequest(answer=LEASE, error=error)
    client = ApiLeaseClient(request)
    if isinstance(outcome, type) and issubclass(outcome, Exception):
        with pytest.raises(outcome):
            await operation(client)
    else:
        assert await operation(client) == outcome
    assert request.calls == [call]


async def test_a_renewal_that_must_read_the_lease_counts_one_slow_path() -> None:
    store, timeline = FakeLeaseStore(), make_timeline()
    slow: list[float] = []
    elector = LeaderElector(
        config(), store, timeline, rand=lambda: 0.0, on_slow_path=lambda: slow.append(1.0)
    )
    work = Work(timeline)

    def touch() -> None:  # another writer bumps the version: the fast path conflicts
        lease = store.lease
        assert lease is not None
        store.put(lease)

    timeline.at(5, touch)
    timeline.at(10, work.finish)

    await elector.run(work)

    assert slow == [1.0], "only the renewal after the conflict went through a GET"
    assert store.writes[-1] == ("replace", "", 0), "still ours until released"
