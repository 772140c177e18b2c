"""Shared informers: one watch per resource type in the process, however many ask.

``InformerFactory.informer(resource)`` returns the one ``Informer`` for that
type, creating it on first request; ``run()`` runs every informer in one
TaskGroup (each task named ``informer:<group-resource>``) until cancelled,
and starts informers requested later too. A failing informer (an unexpected
exception; API and connection errors are retried inside it) cancels the
others and surfaces from ``run()``.

``FactoryInformerAccess`` is the framework's ``InformerAccess`` over a factory:
plugins name resources by plural (``"resourceclaims"``).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping

from scheduler.framework.clock import Clock
from scheduler.framework.handle import ObjectStore, RawObject
from scheduler.informers.compact import Transform, compactor_for
from scheduler.informers.informer import Informer, ReflectorOptions
from scheduler.informers.source import ListWatchClient
from scheduler.informers.store import Raw
from scheduler.kube.resources import KNOWN_RESOURCES, ResourceType


class InformerFactory:
    def __init__(
        self,
        client: ListWatchClient,
        *,
        options: ReflectorOptions | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        transforms: Callable[[ResourceType], Transform | None] = compactor_for,
    ) -> None:
        self._client = client
        self._transforms = transforms
        self._options = options
        self._clock = clock
        self._rng = rng or random.Random()
        self._informers: dict[ResourceType, Informer] = {}
        self._group: asyncio.TaskGroup | None = None

    def informer(
        self,
        resource: ResourceType,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Informer:
        """The shared informer for ``resource``. Selectors are fixed by the first
        request that gives them; None means "whatever is shared". Asking for
        different selectors later is an error, as it would need a second watch."""
        existing = self._informers.get(resource)
        if existing is not None:
            for asked, held, what in (
                (label_selector, existing.label_selector, "label"),
                (field_selector, existing.field_selector, "field"),
            ):
                if asked is not None and asked != held:
                    raise ValueError(
                        f"informer for {resource.group_resource} already uses "
                        f"{what} selector {held!r}, not {asked!r}"
                    )
            return existing
        informer = Informer(
            self._client,
            resource,
            label_selector=label_selector,
            field_selector=field_selector,
            options=self._options,
            clock=self._clock,
            rng=random.Random(self._rng.random()),
            transform=self._transforms(resource),
        )
        self._informers[resource] = informer
        if self._group is not None:
            self._start(self._group, informer)
        return informer

    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    async def run(self) -> None:
        if self._group is not None:
            raise RuntimeError("the informer factory is already running")
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                for informer in list(self._informers.values()):
                    self._start(group, informer)
                await asyncio.Event().wait()  # until cancelled
        finally:
            self._group = None

    def has_synced(self) -> bool:
        return all(informer.has_synced for informer in self._informers.values())

    async def wait_synced(self) -> None:
        """Until every informer requested so far (and any requested meanwhile) has synced."""
        while not self.has_synced():
            for informer in list(self._informers.values()):
                await informer.wait_synced()

    @staticmethod
    def _start(group: asyncio.TaskGroup, informer: Informer) -> None:
        group.create_task(informer.run(), name=f"informer:{informer.resource.group_resource}")


class FactoryInformerAccess:
    """``scheduler.framework.handle.InformerAccess`` on top of a factory."""

    def __init__(
        self,
        factory: InformerFactory,
        resources: Mapping[str, ResourceType] = KNOWN_RESOURCES,
    ) -> None:
        self._factory = factory
        self._resources = resources

    def _informer(self, resource: str, field_selector: str | None = None) -> Informer:
        try:
            resource_type = self._resources[resource]
        except KeyError:
            raise KeyError(f"no informer for unknown resource {resource!r}") from None
        return self._factory.informer(resource_type, field_selector=field_selector)

    def store(self, resource: str, *, field_selector: str | None = None) -> ObjectStore:
        return self._informer(resource, field_selector).store

    def on_change(
        self,
        resource: str,
        handler: Callable[[RawObject | None, RawObject | None], None],
        *,
        field_selector: str | None = None,
    ) -> None:
        def on_add(new: Raw) -> None:
            handler(None, new)

        def on_update(old: Raw, new: Raw) -> None:
            handler(old, new)

        def on_delete(old: Raw) -> None:
            handler(old, None)

        self._informer(resource, field_selector).add_handler(on_add, on_update, on_delete)
