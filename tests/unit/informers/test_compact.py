"""Compacting decoded objects: equal subtrees held once, managedFields trimmed, no other change."""

from __future__ import annotations

import copy
import gc
from typing import Any

import orjson
import pytest

from scheduler.informers.compact import SubtreePool, compactor, compactor_for, trim_managed_fields
from scheduler.kube.resources import NODES, PODS, RESOURCE_CLAIMS
from tests.support.builders import make_node, make_pod

MANAGED = [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}]


def decoded(obj: dict[str, Any]) -> dict[str, Any]:
    """A fresh decode, as from the wire: no part shared with ``obj``."""
    fresh: dict[str, Any] = orjson.loads(orjson.dumps(obj))
    return fresh


def served_pod(name: str, node: str = "", app: str = "") -> dict[str, Any]:
    builder = make_pod(name, "ns").uid(f"uid-{name}").requests(cpu="100m", memory="500Mi")
    if node:
        builder = builder.node(node)
    if app:
        builder = builder.label("app", app)
    pod = builder.obj()
    pod["metadata"]["managedFields"] = copy.deepcopy(MANAGED)
    pod["spec"]["tolerations"] = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}]
    return pod


def test_equal_subtrees_of_two_objects_are_one_object() -> None:
    pool = SubtreePool()
    first = pool.share(decoded(served_pod("a", app="web")))
    second = pool.share(decoded(served_pod("b", app="web")))
    assert first["spec"] is second["spec"], "pending pods of one template share their spec"
    assert first["metadata"] is not second["metadata"]
    assert first["metadata"]["labels"] is second["metadata"]["labels"]


def test_objects_that_differ_share_what_is_equal_below_the_difference() -> None:
    pool = SubtreePool()
    first = pool.share(decoded(served_pod("a", node="n1")))
    second = pool.share(decoded(served_pod("b", node="n2")))
    assert first["spec"] is not second["spec"]
    assert first["spec"]["containers"] is second["spec"]["containers"]
    assert first["spec"]["tolerations"] is second["spec"]["tolerations"]


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(served_pod("a", node="n1", app="web"), id="bound pod"),
        pytest.param(served_pod("a"), id="pending pod"),
        pytest.param(make_node("n1").capacity(cpu="4").label("zone", "z").obj(), id="node"),
    ],
)
def test_a_shared_object_reads_exactly_as_decoded(obj: dict[str, Any]) -> None:
    pool = SubtreePool()
    pool.share(decoded(obj))  # something to share with
    shared = pool.share(decoded(obj))
    assert orjson.dumps(shared) == orjson.dumps(obj), "same values, types and key order"


def test_values_of_other_types_that_print_the_same_are_not_shared() -> None:
    pool = SubtreePool()
    first = pool.share({"metadata": {"name": "a", "ports": [80, 81]}})
    second = pool.share({"metadata": {"name": "b", "ports": (80, 81)}})
    assert type(first["metadata"]["ports"]) is list
    assert type(second["metadata"]["ports"]) is tuple


def test_values_that_are_not_json_are_kept_as_they_are() -> None:
    marker = object()
    pool = SubtreePool()
    obj = pool.share({"metadata": {"name": "a", "odd": [marker]}, "spec": {"x": {1, 2}}})
    assert obj["metadata"]["odd"][0] is marker
    assert obj["spec"] == {"x": {1, 2}}


def test_the_pool_forgets_what_no_object_holds_any_more() -> None:
    pool = SubtreePool()
    kept = pool.share(decoded(served_pod("kept", node="n1")))
    dropped = pool.share(decoded(served_pod("dropped", node="n2")))
    spec_of_dropped = orjson.dumps(dropped["spec"])
    before = len(pool)
    del dropped
    gc.collect()
    pool.sweep()
    assert len(pool) < before
    again = pool.share(decoded(served_pod("kept2", node="n1")))
    assert again["spec"] is kept["spec"], "what is still held stays shareable"
    back = pool.share(decoded(served_pod("dropped2", node="n2")))
    assert orjson.dumps(back["spec"]) == spec_of_dropped


def test_the_pool_sweeps_itself_as_it_grows() -> None:
    pool = SubtreePool()
    for index in range(5000):  # unique specs, each dropped at once
        pool.share(decoded(served_pod(f"p{index}", node=f"n{index}")))
    assert len(pool) < 5000


def test_trim_drops_managed_fields_only() -> None:
    pod = served_pod("a")
    expected = copy.deepcopy(pod)
    del expected["metadata"]["managedFields"]
    assert trim_managed_fields(pod) == expected
    assert trim_managed_fields({"metadata": {"name": "x"}}) == {"metadata": {"name": "x"}}


@pytest.mark.parametrize(
    ("resource", "trims", "shares"),
    [
        pytest.param(PODS, True, True, id="pods: trimmed as upstream's pod informer does"),
        pytest.param(NODES, False, True, id="nodes: shared, managedFields kept"),
        pytest.param(RESOURCE_CLAIMS, False, False, id="other types: stored as decoded"),
    ],
)
def test_which_types_are_compacted(resource: Any, trims: bool, shares: bool) -> None:
    transform = compactor_for(resource)
    assert (transform is not None) == shares
    if transform is None:
        return
    first, second = transform(decoded(served_pod("a"))), transform(decoded(served_pod("b")))
    assert ("managedFields" not in first["metadata"]) == trims
    assert first["spec"] is second["spec"]


def test_each_compactor_has_its_own_pool() -> None:
    first = compactor(trim=False)(decoded(served_pod("a")))
    second = compactor(trim=False)(decoded(served_pod("b")))
    assert first["spec"] == second["spec"]
    assert first["spec"] is not second["spec"]
