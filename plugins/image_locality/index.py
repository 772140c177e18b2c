"""Which nodes hold which image: upstream's cache ``imageStates``.

Fed with every node change (``on_node_change(old, new)``, raw node dicts);
for each image name it keeps the number of nodes listing it and its size as
reported by the first node that listed it while no other did (upstream keeps
the size of the entry it created). A name no node lists any more is dropped.

Invariant: ``count(name)`` is the number of known nodes whose
``status.images`` list ``name``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.framework.objects import node_images

Raw = Mapping[str, Any]


class ImageIndex:
    __slots__ = ("_counts", "_nodes", "_sizes")

    def __init__(self) -> None:
        self._nodes: dict[str, Mapping[str, int]] = {}
        self._counts: dict[str, int] = {}
        self._sizes: dict[str, int] = {}

    def on_node_change(self, old: Raw | None, new: Raw | None) -> None:
        if old is not None:
            self._remove(_name(old))
        if new is not None:
            self._add(_name(new), node_images(new.get("status") or {}))

    def _add(self, node: str, images: Mapping[str, int]) -> None:
        self._remove(node)  # an add for a node already known replaces it
        self._nodes[node] = images
        for image, size in images.items():
            count = self._counts.get(image, 0)
            if count == 0:
                self._sizes[image] = size
            self._counts[image] = count + 1

    def _remove(self, node: str) -> None:
        images = self._nodes.pop(node, None)
        if images is None:
            return
        for image in images:
            left = self._counts[image] - 1
            if left:
                self._counts[image] = left
            else:
                del self._counts[image]
                del self._sizes[image]

    def count(self, image: str) -> int:
        return self._counts.get(image, 0)

    def size(self, image: str) -> int:
        return self._sizes.get(image, 0)

    def __len__(self) -> int:
        """The number of distinct image names on all nodes."""
        return len(self._counts)


def _name(node: Raw) -> str:
    return str((node.get("metadata") or {}).get("name") or "")
