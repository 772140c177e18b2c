"""The cache comparer: a table of cache states against API lists, each case
naming the differences it must report (and a clean cache none)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from scheduler.cache import Cache
from scheduler.cache.comparer import Difference, DifferenceKind, compare, describe
from scheduler.framework import Node, Pod
from scheduler.framework.resource import Resource
from tests.support.clock import FakeClock
from tests.support.objects import bound, node, pod

OURS = "pysched"
BOUND = 60.0
K = DifferenceKind


@dataclass
class Case:
    """``cached`` runs against a Cache (clock at 1000) whose nodes are
    ``cache_nodes``; the comparison runs at ``1000 + later`` against ``api_*``."""

    cache_nodes: tuple[str, ...] = ("n1", "n2")
    cached: Callable[[Cache], None] = lambda cache: None
    later: float = 1.0
    api_nodes: tuple[str, ...] = ("n1", "n2")
    api_pods: tuple[Pod, ...] = ()
    queued: frozenset[str] = field(default_factory=frozenset)


def _add(*pods: Pod) -> Callable[[Cache], None]:
    def run(cache: Cache) -> None:
        for item in pods:
            cache.add_pod(item)

    return run


def _assume(*pods: Pod) -> Callable[[Cache], None]:
    def run(cache: Cache) -> None:
        for item in pods:
            cache.assume_pod(item)

    return run


def _ours_pending(name: str) -> Pod:
    return pod(name, lambda b: b.scheduler(OURS).requests(cpu="1"))


def _run(case: Case) -> list[Difference]:
    clock = FakeClock(now=1000.0)
    cache = Cache(clock)
    for name in case.cache_nodes:
        cache.add_node(node(name))
    case.cached(cache)
    clock.advance(case.later)
    api_nodes: list[Node] = [node(name) for name in case.api_nodes]
    return compare(
        cache.dump(),
        api_nodes,
        case.api_pods,
        queued=case.queued,
        schedulers={OURS},
        now=clock.now(),
        assumed_bound=BOUND,
    )


P1 = bound("p1", "n1", "500m")
P2 = bound("p2", "n2", "1")


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        pytest.param(Case(), [], id="empty cluster, empty cache: clean"),
        pytest.param(
            Case(cached=_add(P1, P2), api_pods=(P1, P2)), [], id="same pods on the same nodes"
        ),
        pytest.param(
            Case(
                cached=_assume(P1),
                later=5.0,
                api_pods=(pod("p1", lambda b: b.requests(cpu="500m")),),
            ),
            [],
            id="young assumed pod, unbound in the API: bind in flight",
        ),
        pytest.param(
            Case(cached=_assume(P1), later=5.0, api_pods=()),
            [(K.ASSUMED_GONE, "default/p1"), (K.REQUESTED_MISMATCH, "n1")],
            id="assumed pod deleted from the API: leaks until forgotten",
        ),
        pytest.param(
            Case(cached=_assume(P1), later=5.0, api_pods=(P1,)),
            [],
            id="young assumed pod already bound in the API (confirmation pending)",
        ),
        pytest.param(
            Case(cached=_assume(P1), later=BOUND + 1, api_pods=(pod("p1"),)),
            [(K.ASSUMED_TOO_LONG, "default/p1")],
            id="assumed longer than the bound and never bound: a leak",
        ),
        pytest.param(
            Case(cached=_assume(P1), later=BOUND + 1, api_pods=(P1,)),
            [(K.ASSUMED_TOO_LONG, "default/p1")],
            id="assumed longer than the bound though bound: lost confirmation",
        ),
        pytest.param(
            Case(cached=_add(P1)),
            [
                (K.POD_REDUNDANT, "default/p1"),
                (K.REQUESTED_MISMATCH, "n1"),
            ],
            id="pod deleted in the API still counted: capacity leak",
        ),
        pytest.param(
            Case(api_pods=(P1,)),
            [(K.POD_MISSING, "default/p1"), (K.REQUESTED_MISMATCH, "n1")],
            id="pod bound in the API not counted",
        ),
        pytest.param(
            Case(cached=_add(P1), api_pods=(bound("p1", "n2", "500m"),)),
            [
                (K.POD_WRONG_NODE, "default/p1"),
                (K.REQUESTED_MISMATCH, "n1"),
                (K.REQUESTED_MISMATCH, "n2"),
            ],
            id="pod counted on another node than the API says",
        ),
        pytest.param(
            Case(cached=_add(P1), api_pods=(bound("p1", "n1", "2"),)),
            [(K.REQUESTED_MISMATCH, "n1")],
            id="stale copy: requests changed in the API (resize) but not in the cache",
        ),
        pytest.param(
            Case(cached=_add(P1), api_pods=(pod("p1", lambda b: b.node("n1").phase("Failed")),)),
            [(K.POD_REDUNDANT, "default/p1"), (K.REQUESTED_MISMATCH, "n1")],
            id="terminal pod still counted",
        ),
        pytest.param(
            Case(api_nodes=("n1", "n2", "n3")),
            [(K.NODE_MISSING, "n3")],
            id="node added in the API, missing from the cache",
        ),
        pytest.param(
            Case(api_nodes=("n1",)),
            [(K.NODE_REDUNDANT, "n2")],
            id="node deleted in the API, still in the cache",
        ),
        pytest.param(
            Case(
                cached=lambda cache: (cache.add_pod(P2), cache.remove_node("n2")),
                api_nodes=("n1",),
                api_pods=(P2,),
            ),
            [],
            id="ghost node holding a pod the API still binds there: consistent",
        ),
        pytest.param(
            Case(api_pods=(_ours_pending("waiting"),), queued=frozenset({"default/waiting"})),
            [],
            id="our pending pod in the queue",
        ),
        pytest.param(
            Case(api_pods=(_ours_pending("waiting"),)),
            [(K.POD_LOST, "default/waiting")],
            id="our pending pod neither queued nor assumed: lost",
        ),
        pytest.param(
            Case(api_pods=(pod("theirs", lambda b: b.scheduler("other")),)),
            [],
            id="another scheduler's pending pod is none of our business",
        ),
        pytest.param(
            Case(api_pods=(pod("going", lambda b: b.scheduler(OURS).deleting()),)),
            [],
            id="our pending pod being deleted is not lost",
        ),
    ],
)
def test_compare(case: Case, expected: list[tuple[DifferenceKind, str]]) -> None:
    assert [(d.kind, d.subject) for d in _run(case)] == expected


def test_a_difference_says_what_each_side_holds() -> None:
    (wrong, n1, n2) = _run(Case(cached=_add(P1), api_pods=(bound("p1", "n2", "500m"),)))
    assert str(wrong) == "pod-wrong-node default/p1: bound to n2 in the API, counted on n1"
    assert n1.detail == "cache counts cpu=500m, the pods on it request nothing"
    assert n2.as_dict() == {
        "kind": "requested-mismatch",
        "subject": "n2",
        "detail": "cache counts nothing, the pods on it request cpu=500m",
    }


def test_dump_is_a_copy_later_changes_do_not_show() -> None:
    cache = Cache(FakeClock())
    cache.add_node(node("n1"))
    dump = cache.dump()
    cache.add_pod(P1)
    assert dump.nodes["n1"].pods == {}
    assert dump.assumed_since == {}


def test_assumed_since_is_the_assume_time_and_goes_with_confirmation() -> None:
    clock = FakeClock(now=50.0)
    cache = Cache(clock)
    cache.add_node(node("n1"))
    cache.assume_pod(P1)
    assert cache.dump().assumed_since == {P1.uid: 50.0}
    cache.add_pod(P1)  # the informer confirms the bind
    assert cache.dump().assumed_since == {}


def test_describe_lists_non_zero_entries_in_a_stable_order() -> None:
    resource = Resource(milli_cpu=1500, memory=1024, scalar={"example.com/gpu": 2, "x": 0})
    assert describe(resource) == "cpu=1500m memory=1024 example.com/gpu=2"
