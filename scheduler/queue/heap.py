"""A binary heap keyed by pod key, ordered by an arbitrary ``less`` function.

The queue needs what ``heapq`` lacks: look-up, update and removal by key
(``namespace/name``) in O(log n). Upstream's heap has the same shape.

Invariants:
- every key appears at most once; ``_index[key]`` is the item's slot in ``_items``;
- the head is the item that is ``less`` than every other item; items that
  ``less`` cannot tell apart come out in insertion order (a sequence number
  breaks the tie, so tests and runs are deterministic).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class KeyedHeap(Generic[T]):
    def __init__(self, key: Callable[[T], str], less: Callable[[T, T], bool]) -> None:
        self._key = key
        self._less = less
        self._items: list[tuple[int, T]] = []
        self._index: dict[str, int] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[T]:
        """Items in heap (not sorted) order."""
        return (item for _, item in self._items)

    def get(self, key: str) -> T | None:
        slot = self._index.get(key)
        return None if slot is None else self._items[slot][1]

    def peek(self) -> T | None:
        return self._items[0][1] if self._items else None

    def push(self, item: T) -> None:
        """Add ``item``, or replace the item with the same key and re-sort it."""
        key = self._key(item)
        slot = self._index.get(key)
        if slot is not None:
            self._items[slot] = (self._items[slot][0], item)
            self._fix(slot)
            return
        self._seq += 1
        self._items.append((self._seq, item))
        self._index[key] = len(self._items) - 1
        self._up(len(self._items) - 1)

    def fix(self, key: str) -> None:
        """Restore order after the item under ``key`` changed in place."""
        slot = self._index.get(key)
        if slot is not None:
            self._fix(slot)

    def pop(self) -> T | None:
        if not self._items:
            return None
        return self._remove_at(0)

    def remove(self, key: str) -> T | None:
        slot = self._index.get(key)
        return None if slot is None else self._remove_at(slot)

    # ----------------------------------------------------------------- internals
    def _before(self, a: tuple[int, T], b: tuple[int, T]) -> bool:
        if self._less(a[1], b[1]):
            return True
        if self._less(b[1], a[1]):
            return False
        return a[0] < b[0]

    def _remove_at(self, slot: int) -> T:
        last = len(self._items) - 1
        if slot != last:
            self._swap(slot, last)
        _, item = self._items.pop()
        del self._index[self._key(item)]
        if slot < len(self._items):
            self._fix(slot)
        return item

    def _fix(self, slot: int) -> None:
        if not self._down(slot):
            self._up(slot)

    def _swap(self, i: int, j: int) -> None:
        items = self._items
        items[i], items[j] = items[j], items[i]
        self._index[self._key(items[i][1])] = i
        self._index[self._key(items[j][1])] = j

    def _up(self, slot: int) -> None:
        while slot > 0:
            parent = (slot - 1) // 2
            if not self._before(self._items[slot], self._items[parent]):
                break
            self._swap(slot, parent)
            slot = parent

    def _down(self, slot: int) -> bool:
        """Sift down; returns whether the item moved."""
        start = slot
        size = len(self._items)
        while True:
            child = 2 * slot + 1
            if child >= size:
                break
            right = child + 1
            if right < size and self._before(self._items[right], self._items[child]):
                child = right
            if not self._before(self._items[child], self._items[slot]):
                break
            self._swap(slot, child)
            slot = child
        return slot != start
