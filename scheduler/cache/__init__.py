"""Cluster state for scheduling: nodes, assigned and assumed pods, snapshots."""

from scheduler.cache.cache import Cache, CacheError
from scheduler.cache.snapshot import Snapshot

__all__ = ["Cache", "CacheError", "Snapshot"]
