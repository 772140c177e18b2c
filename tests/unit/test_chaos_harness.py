"""The chaos suite's own rules: a fault that lands when nothing is pending and
no bind is in flight fails the scenario ("fault too late"), the event check
exempts what the proxy bound itself whenever that happened, and the summary
table lines up its columns."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest

from scheduler.cache import Cache
from scheduler.framework import parse_node, parse_pod
from tests.integration.chaos.harness import (
    Burst,
    Outcome,
    Size,
    bound_after_deletion,
    in_flight,
    table,
    unscheduled_evidence,
    verdict,
)
from tests.support.builders import make_node, make_pod
from tests.support.clock import FakeClock
from tests.support.faultproxy import BindRecord
from tests.unit.fuzz.strategies import EXAMPLES_ENV, examples


def test_a_fault_with_nothing_in_flight_is_too_late() -> None:
    with pytest.raises(AssertionError, match="fault too late"):
        in_flight(pending=0, binds=0)


def test_a_bind_fault_with_only_queued_pods_is_too_late() -> None:
    with pytest.raises(AssertionError, match="no bind in flight"):
        in_flight(pending=5, binds=0, need_binds=True)


@pytest.mark.parametrize(("pending", "binds"), [(3, 0), (0, 2), (5, 7)])
def test_a_fault_with_work_in_flight_is_described(pending: int, binds: int) -> None:
    assert in_flight(pending, binds) == f"{pending} pending, {binds} binds in flight"


def test_summary_table_lines_up() -> None:
    row = Outcome("apiserver_restart", 505, ["apiserver restart"], 0, 0, 0, 0, "3 pending")
    row.observed = ["pods relists +1"]
    row.independent = True
    header, rule, line = table([row])
    assert header.rstrip().endswith("fault observed   oracle independent")
    assert line.rstrip().endswith("yes")
    assert header.index("fault observed") == line.index("pods relists +1")
    assert set(rule.replace(" ", "")) == {"-"}
    assert header.split()[:2] == ["scenario", "pods"]
    assert line.split()[:4] == ["apiserver_restart", "505", "apiserver", "restart"]
    assert header.index("pods") == line.index("505")


@pytest.mark.parametrize(
    ("env", "default", "expected"),
    [
        pytest.param("", 100, 100, id="default-run-keeps-the-default"),
        pytest.param("2000", 100, 2000, id="make-chaos-is-20x-a-100-example-test"),
        pytest.param("2000", 12, 240, id="make-chaos-is-20x-a-12-example-test"),
    ],
)
def test_make_chaos_runs_every_fuzzer_at_20x(
    monkeypatch: pytest.MonkeyPatch, env: str, default: int, expected: int
) -> None:
    monkeypatch.setenv(EXAMPLES_ENV, env)
    assert examples(default) == expected


# ------------------------------------------------------- the Scheduled-event check
NAMESPACE = "chaos"


class _Response:
    def __init__(self, body: object) -> None:
        self._body = orjson.dumps(body)

    async def __aenter__(self) -> _Response:
        return self

    async def __aexit__(self, *_: object) -> None:
        return None

    async def read(self) -> bytes:
        return self._body


class _FakeCore:
    """The three lists the verdict reads; ``on_event_list`` runs before each
    event list is answered (what happens while the check waits)."""

    def __init__(
        self, pods: list[dict[str, Any]], events_for: list[str], on_event_list: Callable[[], None]
    ) -> None:
        self.pods = pods
        self.node = make_node("n1").capacity(cpu="4", memory="16Gi", pods="110").obj()
        self.events = [
            {"reason": "Scheduled", "involvedObject": {"name": name}} for name in events_for
        ]
        self.on_event_list = on_event_list

    async def list_namespaced_pod(self, namespace: str, **_: object) -> _Response:
        return _Response({"items": self.pods})

    async def list_pod_for_all_namespaces(self, **_: object) -> _Response:
        return _Response({"items": self.pods})

    async def list_node(self, **_: object) -> _Response:
        return _Response({"items": [self.node]})

    async def list_namespaced_event(self, namespace: str, **_: object) -> _Response:
        self.on_event_list()
        return _Response({"items": self.events})


class _FakeProxy:
    def __init__(self) -> None:
        self.bound_first: set[str] = set()
        self.binds: list[BindRecord] = []
        self.event_writes: list[tuple[str, int]] = []
        self.binds_in_flight: set[str] = set()

    def double_bound(self) -> dict[str, int]:
        return {}


def _bound(name: str) -> dict[str, Any]:
    pod = make_pod(name, NAMESPACE).uid(name).requests(cpu="300m").node("n1")
    return pod.condition("PodScheduled", "True").obj()


def _clean_comparer(core: _FakeCore) -> Callable[[], Awaitable[dict[str, Any]]]:
    """A clean report whose node view is a real cache's, fed the fake's objects."""

    async def report() -> dict[str, Any]:
        cache = Cache(FakeClock(now=0.0))
        cache.add_node(parse_node(core.node))
        for pod in core.pods:
            cache.add_pod(parse_pod(pod))
        return {"differences": [], "assumed": 0, "cache": cache.dump().node_views()}

    return report


async def test_a_conflict_the_proxy_finishes_after_the_faults_are_cleared_owes_no_event() -> None:
    """The race behind the 5xx scenario's missing events: the proxy decided to
    bind p0001 itself ("someone else") before the scenario cleared conflicts,
    and recorded it only after; the scheduler's bind got 409, so no Scheduled
    event is owed. The verdict must read the proxy's record when it judges."""
    proxy = _FakeProxy()

    def conflict_lands() -> None:
        proxy.bound_first.add(f"{NAMESPACE}/p0001")
        proxy.binds.append(BindRecord(f"{NAMESPACE}/p0001", "n1", 201))

    core = _FakeCore([_bound("p0000"), _bound("p0001")], ["p0000"], conflict_lands)
    burst = Burst(core, NAMESPACE, "chaos-scheduler", Size(pods=2, nodes=1, too_big=0))  # type: ignore[arg-type]
    outcome = Outcome("late conflict", observed=["bind conflict x1"])
    assert not proxy.bound_first  # before the verdict, nothing says p0001 is exempt

    await verdict(
        burst,
        outcome,
        node_names=lambda: ["n1"],
        comparer=_clean_comparer(core),
        proxy=proxy,  # type: ignore[arg-type]
    )

    assert outcome.lost == 0
    assert outcome.independent  # the node views were compared, on a node with pods


async def test_a_bound_pod_without_event_is_reported_with_what_the_proxy_saw() -> None:
    proxy = _FakeProxy()
    proxy.binds.append(BindRecord(f"{NAMESPACE}/p0001", "n1", 500, injected=True))
    proxy.event_writes.append(("p0001.17a", 500))
    core = _FakeCore([_bound("p0000"), _bound("p0001")], ["p0000"], lambda: None)

    found = await unscheduled_evidence(
        core,  # type: ignore[arg-type]
        NAMESPACE,
        core.pods,
        lambda: {"p0002"},
        proxy,  # type: ignore[arg-type]
        timeout=0.2,
    )

    assert found == ["p0001: no Scheduled event (binds: 500 injected; event creates: 500)"]


# ------------------------------------------------------- binds to deleted nodes
@pytest.mark.parametrize(
    ("sent_before", "expected"),
    [
        pytest.param(
            set(),
            ["chaos/late: bound to gone after its deletion"],
            id="a bind the scheduler started after it saw the deletion counts as lost",
        ),
        pytest.param(
            {"chaos/late"},
            [],
            id="a bind under way at the deletion that reached the proxy later is not counted",
        ),
    ],
)
def test_binds_to_a_deleted_node_are_judged_by_when_the_scheduler_sent_them(
    sent_before: set[str], expected: list[str]
) -> None:
    burst = Burst(None, NAMESPACE, "chaos-scheduler", Size(pods=2, nodes=1, too_big=0))  # type: ignore[arg-type]
    proxy = _FakeProxy()
    proxy.binds += [
        BindRecord("chaos/early", "gone", 201, arrived=3),  # reached the proxy before the mark
        BindRecord("chaos/late", "gone", 201, arrived=7),
        BindRecord("chaos/elsewhere", "kept", 201, arrived=8),
    ]
    burst.deleted_nodes["gone"] = 5
    burst.sent_before_deletion |= sent_before

    assert bound_after_deletion(burst, proxy) == expected  # type: ignore[arg-type]
