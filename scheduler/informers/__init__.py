"""Informers: list, then watch, one resource type each, into a shared store.

- ``store``: ``Store`` (raw dicts, never mutated) and its ``Diff``. Pure.
- ``backoff``: exponential backoff with jitter. Pure.
- ``source``: ``ListWatchClient``, the protocol the informers need from the
  API client (``scheduler.kube.client.KubeClient`` implements it).
- ``informer``: ``Informer``, the reflector state machine plus handler delivery.
- ``factory``: ``InformerFactory`` (one informer per resource type in the
  process) and ``FactoryInformerAccess`` (the framework's ``InformerAccess``).

This package never imports kubernetes_asyncio or aiohttp; it knows the API
only through ``source.ListWatchClient`` and the pure ``scheduler.kube.errors``
and ``scheduler.kube.resources`` modules.
"""

from scheduler.framework.objects import object_key
from scheduler.informers.factory import FactoryInformerAccess, InformerFactory
from scheduler.informers.informer import (
    Informer,
    InformerStats,
    ReflectorOptions,
    ResourceNotServed,
)
from scheduler.informers.source import ListWatchClient
from scheduler.informers.store import Diff, Store

__all__ = [
    "Diff",
    "FactoryInformerAccess",
    "Informer",
    "InformerFactory",
    "InformerStats",
    "ListWatchClient",
    "ReflectorOptions",
    "ResourceNotServed",
    "Store",
    "object_key",
]
