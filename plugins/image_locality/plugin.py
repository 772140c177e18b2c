"""ImageLocality: Score by the pod's images already on the node.

Upstream ``pkg/scheduler/framework/plugins/imagelocality``. For each image of
the pod's init containers, containers and image volumes (normalized with
``:latest`` when untagged; repeats count again) that the node lists in
``status.images``, add ``int(size * nodes_having_it / all_nodes)``: an image
already spread over many nodes says little about this one ("node heating").
The sum is clamped to ``[23 MiB, 1000 MiB * containers]`` (containers = init
+ app containers) and scaled linearly to 0..100 (integer division). No
NormalizeScore.

The cluster-wide image counts come from an ``ImageIndex`` fed by the node
informer, as upstream's cache keeps ``imageStates``. Upstream snapshots a
node's counts when it clones that node, so an unchanged node can carry a
stale count; here the count is always current.

The pod's signature includes the counts and sizes of its images and the
number of nodes, so reused scores are what a recomputation would give.
"""

from __future__ import annotations

from collections.abc import Hashable

from plugins.image_locality.index import ImageIndex
from scheduler.framework import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    NodeInfo,
    Pod,
    ScorePlugin,
    SignPlugin,
    Status,
)
from scheduler.framework.types import go_div

NAME = "ImageLocality"
MIB = 1024 * 1024
MIN_THRESHOLD = 23 * MIB
MAX_CONTAINER_THRESHOLD = 1000 * MIB
NODES = "nodes"


class ImageLocality(ScorePlugin, SignPlugin):
    name = NAME

    def __init__(self, handle: Handle, index: ImageIndex) -> None:
        self._handle = handle
        self._index = index

    def sign_pod(self, pod: Pod) -> Hashable:
        """The score depends on the node's images and on these cluster numbers."""
        index = self._index
        return (
            pod.images,
            pod.container_count,
            len(self._handle.snapshot().node_infos()),
            tuple((index.count(image), index.size(image)) for image in pod.images),
        )

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        node = node_info.node
        if node is None:
            return 0, Status.as_error("node not found")
        total_nodes = len(self._handle.snapshot().node_infos())
        on_node = node.images
        index = self._index
        total = 0
        if on_node and total_nodes:
            for image in pod.images:
                if image in on_node:
                    total += int(index.size(image) * (index.count(image) / total_nodes))
        return calculate_priority(total, pod.container_count), None


def calculate_priority(sum_scores: int, containers: int) -> int:
    """Clamp to ``[MIN_THRESHOLD, MAX_CONTAINER_THRESHOLD * containers]``, scale to 0..100."""
    max_threshold = MAX_CONTAINER_THRESHOLD * containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return go_div(MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)


def new(args: object, handle: Handle) -> ImageLocality:
    index = ImageIndex()
    handle.informers.on_change(NODES, index.on_node_change)
    return ImageLocality(handle, index)
