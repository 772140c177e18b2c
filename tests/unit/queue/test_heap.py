"""KeyedHeap: order by ``less``, ties in insertion order, updates and removal by key."""

from __future__ import annotations

import pytest

from scheduler.queue.heap import KeyedHeap


def _heap() -> KeyedHeap[tuple[str, int]]:
    return KeyedHeap(key=lambda item: item[0], less=lambda a, b: a[1] < b[1])


def _drain(heap: KeyedHeap[tuple[str, int]]) -> list[str]:
    out = []
    while (item := heap.pop()) is not None:
        out.append(item[0])
    return out


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param([("a", 3), ("b", 1), ("c", 2)], ["b", "c", "a"], id="by less"),
        pytest.param([("a", 1), ("b", 1), ("c", 1)], ["a", "b", "c"], id="ties in insertion order"),
        pytest.param([("a", 5), ("b", 1), ("a", 0)], ["a", "b"], id="push replaces same key"),
        pytest.param([], [], id="empty"),
    ],
)
def test_pop_order(items: list[tuple[str, int]], expected: list[str]) -> None:
    heap = _heap()
    for item in items:
        heap.push(item)
    assert _drain(heap) == expected


@pytest.mark.parametrize(
    ("remove", "expected"),
    [
        pytest.param("a", ["c", "d", "b", "e"], id="head"),
        pytest.param("d", ["a", "c", "b", "e"], id="middle"),
        pytest.param("e", ["a", "c", "d", "b"], id="last"),
        pytest.param("zz", ["a", "c", "d", "b", "e"], id="unknown key"),
    ],
)
def test_remove_keeps_order(remove: str, expected: list[str]) -> None:
    heap = _heap()
    for item in [("a", 1), ("b", 4), ("c", 2), ("d", 3), ("e", 5)]:
        heap.push(item)
    heap.remove(remove)
    assert remove not in heap
    assert _drain(heap) == expected


def test_get_peek_and_len() -> None:
    heap = _heap()
    heap.push(("a", 2))
    heap.push(("b", 1))
    assert len(heap) == 2
    assert heap.get("a") == ("a", 2)
    assert heap.get("x") is None
    assert heap.peek() == ("b", 1)
