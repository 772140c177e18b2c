"""The store: keys, and the diff a relist produces."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework import object_key
from scheduler.informers.store import Store
from tests.support.builders import make_node, make_pod


def pod(name: str, rv: str, uid: str = "") -> dict[str, Any]:
    return make_pod(name, "ns").uid(uid or f"uid-{name}").resource_version(rv).obj()


def names(objs: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        pytest.param(make_pod("p", "ns").obj(), "ns/p", id="namespaced"),
        pytest.param(make_node("n1").obj(), "n1", id="cluster-scoped"),
    ],
)
def test_object_key(obj: dict[str, Any], key: str) -> None:
    assert object_key(obj) == key


@pytest.mark.parametrize(
    ("before", "after", "added", "updated", "deleted"),
    [
        pytest.param([], [pod("a", "1")], ["a"], [], [], id="initial list adds all"),
        pytest.param([pod("a", "1")], [pod("a", "1")], [], [], [], id="unchanged is silent"),
        pytest.param([pod("a", "1")], [pod("a", "2")], [], ["a"], [], id="new rv is an update"),
        pytest.param([pod("a", "1"), pod("b", "1")], [pod("b", "1")], [], [], ["a"], id="vanished"),
        pytest.param(
            [pod("a", "1", uid="u1")],
            [pod("a", "5", uid="u2")],
            ["a"],
            [],
            ["a"],
            id="recreated under the same name: delete then add",
        ),
        pytest.param(
            [pod("a", "1"), pod("b", "1"), pod("c", "1")],
            [pod("a", "1"), pod("b", "2"), pod("d", "1")],
            ["d"],
            ["b"],
            ["c"],
            id="mixed",
        ),
    ],
)
def test_replace_reports_the_diff(
    before: list[dict[str, Any]],
    after: list[dict[str, Any]],
    added: list[str],
    updated: list[str],
    deleted: list[str],
) -> None:
    store = Store()
    store.replace(before, "1")
    diff = store.replace(after, "9")
    assert names(diff.added) == added
    assert [new["metadata"]["name"] for _, new in diff.updated] == updated
    assert names(diff.deleted) == deleted
    assert sorted(store.keys()) == sorted(object_key(o) for o in after)
    assert store.resource_version == "9"


def test_replace_keeps_the_very_dicts_it_was_given() -> None:
    store = Store()
    item = pod("a", "1")
    store.replace([item], "1")
    assert store.get("ns/a") is item
    assert store.list() == [item]


def test_upsert_delete_and_bookmark_track_the_resource_version() -> None:
    store = Store()
    assert store.upsert(pod("a", "3")) is None
    old = store.upsert(pod("a", "4"))
    assert old is not None
    assert old["metadata"]["resourceVersion"] == "3"
    assert store.resource_version == "4"
    assert store.delete(pod("a", "5")) is not None
    assert store.delete(pod("zz", "6")) is None
    assert store.resource_version == "6"
    store.bookmark("10")
    store.bookmark("")
    assert store.resource_version == "10"
    assert len(store) == 0
    assert "ns/a" not in store
