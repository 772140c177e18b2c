"""One informer: a reflector (list, then watch) feeding a store and its handlers.

State machine of ``run()``:

    LIST (all pages, a consistent read: no resourceVersion) -> deliver the diff
      (deletes, then updates, then adds) -> WATCH from the list's resourceVersion
      - stream ends cleanly (server timeout): WATCH again from the last RV
      - 410 Gone (HTTP answer or ERROR event): LIST again at once and deliver
        only the diff (adds, updates where resourceVersion changed, deletes of
        vanished objects)
      - other API errors, connection errors, silent-watch timeouts: wait with
        exponential backoff (0.8 s doubling, capped at 30 s, jittered), then
        WATCH again from the last RV (or LIST again if the list itself failed)
      - the backoff resets after any success: a completed list, or a watch
        that delivered at least one line
      - 404 on the initial LIST (the API server does not serve the type, e.g.
        a CustomResourceDefinition not installed): ``run()`` raises
        ``ResourceNotServed`` naming it, since the informer would never sync;
        after the first sync a 404 is retried like other errors

Invariants:
- Handlers run synchronously on the event loop, in watch order, never
  concurrently with each other or with a store change; the store already
  holds the new state when a handler runs.
- Objects are never mutated after they enter the store, except that list
  items get the ``kind``/``apiVersion`` a List omits (before anyone sees them).
- The ``transform`` (``scheduler.informers.compact``) sees every decoded
  object once, before the store and the handlers do; what it returns is
  what they get.
- A handler that raises is logged and skipped; the informer goes on.
- ``run()`` creates no tasks; cancelling it cancels the in-flight request
  and closes the watch stream (``CancelledError`` propagates).
- A handler added late is first told about every stored object as an add,
  as in client-go, so it never misses what happened before it came.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler.framework.clock import Clock, RealClock
from scheduler.informers.backoff import Backoff
from scheduler.informers.compact import Transform
from scheduler.informers.source import ListWatchClient
from scheduler.informers.store import Diff, Raw, Store, resource_version_of, uid_of
from scheduler.kube.errors import HTTP_NOT_FOUND, ApiError, TransportError
from scheduler.kube.resources import ResourceType
from scheduler.kube.wire import WatchEventType

log = logging.getLogger(__name__)

OnAdd = Callable[[Raw], None]
OnUpdate = Callable[[Raw, Raw], None]
OnDelete = Callable[[Raw], None]


class ResourceNotServed(Exception):
    """The API server does not serve a resource type an informer was asked for."""

    def __init__(self, resource: ResourceType) -> None:
        super().__init__(
            f"the API server does not serve {resource.group_resource} "
            f"({resource.api_version}, kind {resource.kind}): the initial list answered "
            "404 Not Found; install its CustomResourceDefinition, or disable what needs it"
        )
        self.resource = resource


class _Step(enum.StrEnum):
    LIST = "list"
    WATCH = "watch"


# A watch that ends cleanly this fast without a single line is treated as a
# failure (backoff), so a server that closes watches at once cannot make the
# informer spin.
_SHORT_WATCH_SECONDS = 1.0


@dataclass(frozen=True)
class ReflectorOptions:
    page_size: int = 500
    # Each watch asks the server for a random timeout in [min, 2*min) seconds,
    # so that informers do not all reconnect together (client-go does the same).
    min_watch_timeout_seconds: int = 300
    backoff_initial: float = 0.8
    backoff_cap: float = 30.0
    backoff_factor: float = 2.0
    backoff_jitter: float = 1.0


@dataclass
class InformerStats:
    """Counters for metrics and tests."""

    lists: int = 0
    watches: int = 0
    gone: int = 0
    errors: int = 0
    events: int = 0


@dataclass(frozen=True, slots=True)
class _Handlers:
    on_add: OnAdd
    on_update: OnUpdate
    on_delete: OnDelete


class _WatchFailed(Exception):
    """A watch ended too early to count as healthy."""


class Informer:
    def __init__(
        self,
        client: ListWatchClient,
        resource: ResourceType,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        options: ReflectorOptions | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        transform: Transform | None = None,
    ) -> None:
        self._client = client
        self._transform = transform
        self.resource = resource
        self.label_selector = label_selector
        self.field_selector = field_selector
        self._options = options or ReflectorOptions()
        self._clock = clock or RealClock()
        self._rng = rng or random.Random()
        self._backoff = Backoff(
            initial=self._options.backoff_initial,
            cap=self._options.backoff_cap,
            factor=self._options.backoff_factor,
            jitter=self._options.backoff_jitter,
            rng=self._rng,
        )
        self._store = Store()
        self._handlers: list[_Handlers] = []
        self._synced = asyncio.Event()
        self._running = False
        self.stats = InformerStats()

    # ------------------------------------------------------------ consumers
    @property
    def store(self) -> Store:
        return self._store

    @property
    def has_synced(self) -> bool:
        """The initial list has been stored and delivered to the handlers."""
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    def add_handler(self, on_add: OnAdd, on_update: OnUpdate, on_delete: OnDelete) -> None:
        handlers = _Handlers(on_add, on_update, on_delete)
        self._handlers.append(handlers)
        for obj in self._store.list():
            self._call(handlers.on_add, obj)

    # ------------------------------------------------------------- the loop
    async def run(self) -> None:
        if self._running:
            raise RuntimeError(f"informer for {self.resource.group_resource} is already running")
        self._running = True
        try:
            await self._loop()
        finally:
            self._running = False

    async def _loop(self) -> None:
        name = self.resource.group_resource
        need_list = True
        while True:
            step = _Step.LIST if need_list else _Step.WATCH
            try:
                if need_list:
                    await self._list_and_deliver()
                    need_list = False
                    self._backoff.reset()
                    step = _Step.WATCH
                await self._watch()
                continue
            except ApiError as err:
                if step == _Step.LIST and err.status == HTTP_NOT_FOUND and not self.has_synced:
                    raise ResourceNotServed(self.resource) from err
                if err.gone and step == _Step.WATCH:
                    self.stats.gone += 1
                    log.info("informer %s: %s; relisting", name, err)
                    need_list = True
                    continue
                self.stats.errors += 1
                log.warning("informer %s: %s failed: %s", name, step, err)
            except (TransportError, _WatchFailed) as err:
                self.stats.errors += 1
                log.warning("informer %s: %s failed: %s", name, step, err)
            await self._clock.sleep(self._backoff.next())

    async def _list_and_deliver(self) -> None:
        self.stats.lists += 1
        items: list[Raw] = []
        continue_: str | None = None
        while True:
            page = await self._client.list(
                self.resource,
                limit=self._options.page_size,
                continue_=continue_,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
            )
            page_items = page.get("items") or []
            for obj in page_items:
                # List items come without kind/apiVersion; watch events carry them.
                obj.setdefault("kind", self.resource.kind)
                obj.setdefault("apiVersion", self.resource.api_version)
            # Compacted page by page: a relist never holds every object uncompacted.
            transform = self._transform
            items.extend(page_items if transform is None else map(transform, page_items))
            metadata = page.get("metadata") or {}
            continue_ = metadata.get("continue") or None
            if continue_ is None:
                version = str(metadata.get("resourceVersion") or "")
                break
        self._deliver(self._store.replace(items, version))
        self._synced.set()

    async def _watch(self) -> None:
        self.stats.watches += 1
        minimum = self._options.min_watch_timeout_seconds
        timeout = minimum + self._rng.randrange(max(minimum, 1))
        started = self._clock.now()
        healthy = False
        stream = self._client.watch(
            self.resource,
            resource_version=self._store.resource_version,
            timeout_seconds=timeout,
            allow_bookmarks=True,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
        )
        try:
            async for event in stream:
                if not healthy:
                    healthy = True
                    self._backoff.reset()
                self._apply(event)
        finally:
            # Release the HTTP response now, not whenever the generator is collected.
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        if not healthy and self._clock.now() - started < _SHORT_WATCH_SECONDS:
            raise _WatchFailed("the watch ended at once without any event")
        self._backoff.reset()

    # ------------------------------------------------------------- delivery
    def _apply(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        obj: Raw = event.get("object") or {}
        if kind == WatchEventType.BOOKMARK:
            self._store.bookmark(resource_version_of(obj))
            return
        if kind == WatchEventType.ERROR:
            raise ApiError.from_status(obj)
        self.stats.events += 1
        if self._transform is not None:
            obj = self._transform(obj)
        if kind in (WatchEventType.ADDED, WatchEventType.MODIFIED):
            old = self._store.upsert(obj)
            if old is None:
                self._added(obj)
            elif uid_of(old) != uid_of(obj):
                self._deleted(old)
                self._added(obj)
            else:
                self._updated(old, obj)
        elif kind == WatchEventType.DELETED:
            self._store.delete(obj)
            # The event's object is the final state; deliver it even for an
            # object we never saw, as client-go does.
            self._deleted(obj)
        else:
            log.warning("informer %s: unknown watch event type %r", self.resource.plural, kind)

    def _deliver(self, diff: Diff) -> None:
        for obj in diff.deleted:
            self._deleted(obj)
        for old, new in diff.updated:
            self._updated(old, new)
        for obj in diff.added:
            self._added(obj)

    def _added(self, obj: Raw) -> None:
        for handlers in self._handlers:
            self._call(handlers.on_add, obj)

    def _updated(self, old: Raw, new: Raw) -> None:
        for handlers in self._handlers:
            self._call(handlers.on_update, old, new)

    def _deleted(self, obj: Raw) -> None:
        for handlers in self._handlers:
            self._call(handlers.on_delete, obj)

    def _call(self, fn: Callable[..., None], *args: Raw) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("informer %s: handler %r failed", self.resource.plural, fn)
