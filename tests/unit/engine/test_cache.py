"""The cache: assume/forget symmetry, confirmation by the informer, terminal
pods, ghost nodes and requested sums."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from scheduler.cache import Cache, CacheError, Snapshot
from scheduler.framework import Pod
from tests.support.builders import PodBuilder
from tests.support.objects import bound, node, pod


def cache_with(*node_names: str) -> Cache:
    cache = Cache()
    for name in node_names:
        cache.add_node(node(name))
    return cache


def cpu_on(cache: Cache, node_name: str) -> int | None:
    info = cache.node_info(node_name)
    return None if info is None else info.requested.milli_cpu


def assume(cache: Cache, name: str, node_name: str, cpu: str = "500m") -> Pod:
    assumed = bound(name, node_name, cpu)
    cache.assume_pod(assumed)
    return assumed


def test_assume_then_forget_leaves_the_node_as_before() -> None:
    cache = cache_with("n1")
    before = cache.generation
    assumed = assume(cache, "p", "n1")

    assert cache.is_assumed(assumed.uid)
    assert (cache.pod_count(), cache.assumed_count(), cpu_on(cache, "n1")) == (1, 1, 500)
    assert cache.generation > before

    cache.forget_pod(assumed)

    assert not cache.is_assumed(assumed.uid)
    assert (cache.pod_count(), cache.assumed_count(), cpu_on(cache, "n1")) == (0, 0, 0)
    info = cache.node_info("n1")
    assert info is not None
    assert info.pods == {}


def test_assume_twice_is_refused() -> None:
    cache = cache_with("n1")
    assume(cache, "p", "n1")
    with pytest.raises(CacheError, match="already in the cache"):
        assume(cache, "p", "n1")


@pytest.mark.parametrize(
    "forget",
    [
        pytest.param(lambda c: c.forget_pod(bound("p", "n1")), id="a pod never assumed"),
        pytest.param(
            lambda c: (c.add_pod(bound("p", "n1")), c.forget_pod(bound("p", "n1"))),
            id="a pod the informer confirmed",
        ),
        pytest.param(
            lambda c: (assume(c, "p", "n1"), c.forget_pod(bound("p", "n2"))),
            id="a pod assumed on another node",
        ),
    ],
)
def test_forget_is_refused(forget: Callable[[Cache], object]) -> None:
    cache = cache_with("n1", "n2")
    with pytest.raises(CacheError):
        forget(cache)


@pytest.mark.parametrize(
    ("bound_to", "cpu"),
    [
        pytest.param("n1", {"n1": 500, "n2": 0}, id="on the assumed node"),
        pytest.param("n2", {"n1": 0, "n2": 500}, id="on another node: moved"),
    ],
)
def test_informer_add_confirms_an_assumed_pod(bound_to: str, cpu: dict[str, int]) -> None:
    cache = cache_with("n1", "n2")
    assumed = assume(cache, "p", "n1")

    cache.add_pod(bound("p", bound_to, "500m"))

    assert not cache.is_assumed(assumed.uid)
    assert (cache.pod_count(), cache.assumed_count()) == (1, 0)
    assert {name: cpu_on(cache, name) for name in cpu} == cpu
    stored = cache.get_pod(assumed.uid)
    assert stored is not None
    assert stored.node_name == bound_to


def test_update_replaces_the_requests_of_a_pod() -> None:
    cache = cache_with("n1")
    cache.add_pod(bound("p", "n1", "1"))
    cache.update_pod(bound("p", "n1", "250m"))
    assert cpu_on(cache, "n1") == 250


@pytest.mark.parametrize(
    "phase", [pytest.param("Succeeded", id="succeeded"), pytest.param("Failed", id="failed")]
)
def test_terminal_pods_hold_no_resources(phase: str) -> None:
    cache = cache_with("n1")
    cache.add_pod(bound("p", "n1", "1"))
    terminal = pod("p", lambda b: b.node("n1").requests(cpu="1").phase(phase))

    cache.update_pod(terminal)

    assert (cache.pod_count(), cpu_on(cache, "n1")) == (0, 0)
    cache.add_pod(terminal)  # a late add of a terminal pod adds nothing
    assert (cache.pod_count(), cpu_on(cache, "n1")) == (0, 0)


def test_terminal_confirmation_of_an_assumed_pod_frees_it() -> None:
    cache = cache_with("n1")
    assumed = assume(cache, "p", "n1")
    cache.add_pod(pod("p", lambda b: b.node("n1").requests(cpu="500m").phase("Succeeded")))
    assert not cache.is_assumed(assumed.uid)
    assert (cache.pod_count(), cpu_on(cache, "n1")) == (0, 0)


def names(snapshot: Snapshot) -> list[str]:
    return [info.name for info in snapshot.node_infos()]


def test_pods_of_an_unknown_node_wait_in_a_ghost_until_the_node_arrives() -> None:
    cache = cache_with("n1")
    snapshot = Snapshot()
    cache.add_pod(bound("early", "n2", "300m"))

    ghost = cache.node_info("n2")
    assert ghost is not None
    assert (ghost.node, ghost.requested.milli_cpu) == (None, 300)
    cache.update_snapshot(snapshot)
    assert names(snapshot) == ["n1"]
    assert snapshot.get("n2") is None
    assert cache.node_count() == 1

    cache.add_node(node("n2"))
    cache.update_snapshot(snapshot)

    assert names(snapshot) == ["n1", "n2"]
    arrived = snapshot.get("n2")
    assert arrived is not None
    assert arrived.requested.milli_cpu == 300


def test_deleted_node_with_pods_stays_a_ghost_until_its_pods_are_gone() -> None:
    cache = cache_with("n1", "n2")
    snapshot = Snapshot()
    cache.add_pod(bound("a", "n2", "100m"))
    cache.add_pod(bound("b", "n2", "200m"))
    cache.update_snapshot(snapshot)
    assert names(snapshot) == ["n1", "n2"]

    cache.remove_node("n2")
    cache.update_snapshot(snapshot)

    assert names(snapshot) == ["n1"]
    assert snapshot.get("n2") is None
    assert cache.node_count() == 1
    ghost = cache.node_info("n2")
    assert ghost is not None
    assert (ghost.node, ghost.requested.milli_cpu) == (None, 300)

    cache.remove_pod(bound("a", "n2"))
    cache.update_snapshot(snapshot)
    assert names(snapshot) == ["n1"]
    assert cache.node_info("n2") is not None

    cache.remove_pod(bound("b", "n2"))
    cache.update_snapshot(snapshot)
    assert cache.node_info("n2") is None
    assert names(snapshot) == ["n1"]


def test_a_node_deleted_without_pods_is_gone_at_once() -> None:
    cache = cache_with("n1", "n2")
    cache.remove_node("n2")
    assert cache.node_info("n2") is None
    cache.remove_node("never-there")  # ignored
    assert cache.node_count() == 1


def test_a_node_that_comes_back_keeps_the_pods_of_its_ghost() -> None:
    cache = cache_with("n1")
    cache.add_pod(bound("a", "n1", "100m"))
    cache.remove_node("n1")
    cache.add_node(node("n1"))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    info = snapshot.get("n1")
    assert info is not None
    assert (info.requested.milli_cpu, list(info.pods)) == (100, ["default/a"])


def on_n1(name: str, requests: dict[str, str]) -> Pod:
    def edit(builder: PodBuilder) -> PodBuilder:
        builder = builder.node("n1")
        return builder.requests(**requests) if requests else builder

    return pod(name, edit)


@pytest.mark.parametrize(
    ("operations", "cpu", "memory", "non_zero_cpu"),
    [
        pytest.param([], 0, 0, 0, id="empty node"),
        pytest.param(
            [("add", "a", {"cpu": "250m", "memory": "1Gi"})],
            250,
            1 << 30,
            250,
            id="one pod",
        ),
        pytest.param(
            [("add", "a", {"cpu": "250m"}), ("add", "b", {"cpu": "1", "memory": "512Mi"})],
            1250,
            512 << 20,
            1250,
            id="two pods add up",
        ),
        pytest.param(
            [("add", "a", {}), ("add", "b", {"memory": "1Mi"})],
            0,
            1 << 20,
            200,
            id="no cpu request: zero for fit, 100m each for scoring",
        ),
        pytest.param(
            [("add", "a", {"cpu": "1"}), ("add", "b", {"cpu": "2"}), ("remove", "a", {})],
            2000,
            0,
            2000,
            id="a removed pod is subtracted",
        ),
        pytest.param(
            [("assume", "a", {"cpu": "1"}), ("add", "b", {"cpu": "2"}), ("forget", "a", {})],
            2000,
            0,
            2000,
            id="a forgotten pod is subtracted",
        ),
    ],
)
def test_requested_is_the_sum_over_the_pods(
    operations: list[tuple[str, str, dict[str, str]]], cpu: int, memory: int, non_zero_cpu: int
) -> None:
    cache = cache_with("n1")
    for operation, name, requests in operations:
        item = on_n1(name, requests)
        if operation == "add":
            cache.add_pod(item)
        elif operation == "remove":
            cache.remove_pod(item)
        elif operation == "assume":
            cache.assume_pod(item)
        else:
            cache.forget_pod(item)
    info = cache.node_info("n1")
    assert info is not None
    assert (info.requested.milli_cpu, info.requested.memory) == (cpu, memory)
    assert info.non_zero_requested.milli_cpu == non_zero_cpu


def test_assumed_pods_lists_only_unconfirmed_ones() -> None:
    cache = cache_with("n1")
    assume(cache, "a", "n1")
    assume(cache, "b", "n1")
    cache.add_pod(bound("b", "n1", "500m"))
    assert [p.key for p in cache.assumed_pods()] == ["default/a"]


def test_assumed_pod_keeps_its_own_copy() -> None:
    cache = cache_with("n1")
    original = pod("p")
    assumed = dataclasses.replace(original, node_name="n1")
    cache.assume_pod(assumed)
    assert original.node_name == ""
    stored = cache.get_pod(original.uid)
    assert stored is not None
    assert stored.node_name == "n1"
