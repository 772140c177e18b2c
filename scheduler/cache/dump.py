"""A point-in-time copy of the cache, for the cache comparer.

``nodes`` maps every node name the cache knows, ghosts (deleted nodes that
still hold pods, ``node`` None) included, to a clone of its NodeInfo;
``assumed_since`` maps the UID of each assumed pod to the monotonic time it
was assumed. The copy is the caller's: the cache never touches it again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.framework.nodeinfo import NodeInfo


@dataclass(frozen=True)
class CacheDump:
    nodes: Mapping[str, NodeInfo]
    assumed_since: Mapping[str, float]
