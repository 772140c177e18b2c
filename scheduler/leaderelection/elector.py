"""The thin async runner: acquire, renew beside the caller's work, release;
raise ``LeadershipLost`` when renewing fails for ``renew_deadline``."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable

from scheduler.framework.clock import Clock
from scheduler.leaderelection.client import LeaseClient
from scheduler.leaderelection.core import (
    JITTER_FACTOR,
    ElectionState,
    LeaderElectionConfig,
    LeadershipLost,
    LeaseConflict,
    Write,
)

log = logging.getLogger(__name__)


class LeaderElector:
    """Runs the election for one candidate; see the module docstring for the rules."""

    def __init__(
        self,
        config: LeaderElectionConfig,
        client: LeaseClient,
        clock: Clock,
        *,
        rand: Callable[[], float] = random.random,
        on_slow_path: Callable[[], None] | None = None,
    ) -> None:
        self._config = config
        # client-go's leader_election_slowpath_total: renewing while we lead
        # through a GET and a write (the fast path failed or had no copy).
        self._on_slow_path = on_slow_path
        self._client = client
        self._clock = clock
        self._rand = rand
        self._state = ElectionState(config)
        self._on_stopped: Callable[[], None] | None = None

    @property
    def config(self) -> LeaderElectionConfig:
        return self._config

    @property
    def is_leader(self) -> bool:
        return self._state.is_leader(self._clock.now())

    @property
    def leading_until(self) -> float | None:
        """``ElectionState.leading_until`` (this clock's time)."""
        return self._state.leading_until()

    @property
    def leader(self) -> str:
        """The holder identity last observed ("" when none or released)."""
        return self._state.leader

    def healthy(self) -> tuple[bool, str]:
        return self._state.healthy(self._clock.now())

    async def run(
        self,
        on_started_leading: Callable[[], Awaitable[None]],
        on_stopped_leading: Callable[[], None] | None = None,
    ) -> None:
        """Block until elected, then run ``on_started_leading`` while renewing.

        Returns when the work returns; raises what the work raises, or
        ``LeadershipLost`` (after cancelling the work). The lease is released
        (best effort) whenever we stop, including when ``run`` is cancelled,
        and only after the work has finished its cancellation.
        ``on_stopped_leading`` (synchronous, idempotent) is called the moment
        the loss is detected, before any other task runs, and again when we
        stop for any other reason: the fence for writes only a leader may send.
        """
        self._on_stopped = on_stopped_leading
        log.info("attempting to acquire lease %s", self._config.description)
        await self._acquire()
        log.info("acquired lease %s as %s", self._config.description, self._config.identity)

        async def work() -> None:
            await on_started_leading()

        name = self._config.description
        working = asyncio.create_task(work(), name=f"leader work {name}")
        renewing = asyncio.create_task(self._renew_loop(), name=f"leader renew {name}")
        try:
            await asyncio.wait({working, renewing}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._stopped_leading()
            working.cancel()
            renewing.cancel()
            await asyncio.gather(working, renewing, return_exceptions=True)
            await self._release()
        if not renewing.cancelled() and (error := renewing.exception()) is not None:
            raise error
        if not working.cancelled():
            working.result()

    async def _acquire(self) -> None:
        while not await self._attempt():
            await self._clock.sleep(self._config.retry_period * (1 + JITTER_FACTOR * self._rand()))

    async def _renew_loop(self) -> None:
        while True:
            await self._clock.sleep(self._config.retry_period)
            while not await self._renew():
                left = self._state.time_left(self._clock.now())
                await self._clock.sleep(max(0.0, min(self._config.retry_period, left)))

    async def _renew(self) -> bool:
        """One renewal try; raises ``LeadershipLost`` if we no longer lead, checked
        before the try too, so that a late success cannot paper over a gap in
        which we were not the leader but the work went on."""
        self._check_leading()
        renewed = await self._attempt()
        if not renewed:
            self._check_leading()
        return renewed

    def _check_leading(self) -> None:
        reason = self._state.loss(self._clock.now())
        if reason is not None:
            log.warning("leadership lost: %s", reason)
            self._stopped_leading()
            raise LeadershipLost(reason)

    def _stopped_leading(self) -> None:
        if self._on_stopped is not None:
            self._on_stopped()

    async def _attempt(self) -> bool:
        """One try to acquire or renew, bounded by what is left of our
        leadership (by the renew deadline when we do not lead)."""
        now = self._clock.now()
        leading = self._state.is_leader(now)
        bound = self._state.time_left(now) if leading else self._config.renew_deadline
        try:
            async with asyncio.timeout(bound):
                return await self._try_acquire_or_renew()
        except TimeoutError:
            log.info("acquiring or renewing lease %s timed out", self._config.description)
            return False

    async def _try_acquire_or_renew(self) -> bool:
        cfg, state, clock = self._config, self._state, self._clock
        renewal = state.renewal(clock.now(), clock.wall())
        if renewal is not None and await self._send(renewal):
            return True
        try:
            lease = await self._client.get(cfg.namespace, cfg.name)
        except Exception as error:
            log.warning("error retrieving lease %s: %s", cfg.description, error)
            return False
        leading = state.is_leader(clock.now())
        write = state.observe(lease, clock.now(), clock.wall())
        if write is not None and leading and self._on_slow_path is not None:
            self._on_slow_path()
        return write is not None and await self._send(write)

    async def _send(self, write: Write) -> bool:
        cfg = self._config
        sent_at = self._clock.now()
        try:
            if write.create:
                answer = await self._client.create(cfg.namespace, write.lease)
            else:
                answer = await self._client.replace(cfg.namespace, cfg.name, write.lease)
        except LeaseConflict as error:
            log.info("lease %s changed under us: %s", cfg.description, error)
            return False
        except Exception as error:
            log.warning("error writing lease %s: %s", cfg.description, error)
            return False
        self._state.written(answer, sent_at, self._clock.now())
        return True

    async def _release(self) -> None:
        """Free the lease so that another candidate takes over at once (ReleaseOnCancel)."""
        write = self._state.release(self._clock.wall())
        if write is None:
            return
        try:
            async with asyncio.timeout(self._config.renew_deadline):
                released = await self._send(write)
        except TimeoutError:
            released = False
        if released:
            log.info("released lease %s", self._config.description)
        else:
            log.info("could not release lease %s", self._config.description)
