"""The daemon's side of ``scheduler.framework.services``: it collects what
plugins ask for while they are built, and the composition root serves it.

Plugins register while the app is constructed (listeners, process
listeners (``scheduler.services.process``), debug routes,
start steps); nothing is served or awaited until ``SchedulerApp.run``.
``review_token`` goes to the reviewer the composition root sets
(``set_token_reviewer``: the ops port's TokenReview client, never the
scheduling path's); without one every review fails (``TokenReviewError``). One
port serves one listener: a second ``listen`` on the same port is an error
at construction, not a bind failure later.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from scheduler.framework.services import (
    DebugHandler,
    HttpHandler,
    ListenerLimits,
    PluginHttp,
    ProcessChannel,
    StartStep,
    TokenReviewError,
    TokenUser,
    Worker,
)
from scheduler.services.process import ProcessListener


@dataclass(frozen=True, slots=True)
class Listener:
    name: str
    port: int
    handler: HttpHandler
    max_body_bytes: int
    leader_only: bool


class DaemonPluginServices:
    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry
        self.listeners: list[Listener] = []
        self.process_listeners: list[ProcessListener] = []
        self.debug_routes: dict[str, DebugHandler] = {}
        self.start_steps: list[tuple[str, StartStep]] = []
        self.workers: list[tuple[str, Worker]] = []
        self._token_reviewer: Callable[[str], Awaitable[TokenUser | None]] | None = None

    def set_token_reviewer(self, reviewer: Callable[[str], Awaitable[TokenUser | None]]) -> None:
        self._token_reviewer = reviewer

    async def review_token(self, token: str) -> TokenUser | None:
        reviewer = self._token_reviewer
        if reviewer is None:
            raise TokenReviewError("no token reviewer in this process")
        return await reviewer(token)

    @property
    def http(self) -> PluginHttp:
        return self

    @property
    def metrics_registry(self) -> CollectorRegistry:
        return self._registry

    def listen(
        self,
        name: str,
        port: int,
        handler: HttpHandler,
        *,
        max_body_bytes: int,
        leader_only: bool = True,
    ) -> None:
        self._check_port(name, port)
        self.listeners.append(Listener(name, port, handler, max_body_bytes, leader_only))

    def listen_process(
        self,
        name: str,
        port: int,
        factory: str,
        on_message: Callable[[object], None],
        *,
        max_body_bytes: int,
        leader_only: bool = True,
        nice: int = 0,
        limits: ListenerLimits | None = None,
    ) -> ProcessChannel:
        self._check_port(name, port)
        listener = ProcessListener(
            name,
            port,
            factory,
            on_message,
            max_body_bytes=max_body_bytes,
            leader_only=leader_only,
            nice=nice,
            limits=limits,
        )
        self.process_listeners.append(listener)
        return listener

    def _check_port(self, name: str, port: int) -> None:
        taken = [(entry.name, entry.port) for entry in self.listeners]
        taken += [(proc.name, proc.port) for proc in self.process_listeners]
        for existing, used in taken:
            if port and used == port:
                raise ValueError(
                    f"plugin endpoint {name!r} wants port {port}, already used by {existing!r}"
                )

    def debug(self, path: str, handler: DebugHandler) -> None:
        path = path.strip("/")
        if path in self.debug_routes:
            raise ValueError(f"debug route /debug/plugins/{path} registered twice")
        self.debug_routes[path] = handler

    def on_start(self, name: str, step: StartStep) -> None:
        self.start_steps.append((name, step))

    def run(self, name: str, worker: Worker) -> None:
        if any(existing == name for existing, _ in self.workers):
            raise ValueError(f"plugin worker {name!r} registered twice")
        self.workers.append((name, worker))

    async def start(self) -> None:
        """Run every start step in registration order; the first failure
        raises ``RuntimeError`` naming the step."""
        for name, step in self.start_steps:
            try:
                await step()
            except Exception as error:
                raise RuntimeError(f"{name}: {error}") from error
