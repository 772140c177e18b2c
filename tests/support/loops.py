"""The event loops the daemon can run on (``--event-loop``), as pytest-asyncio
loop factories: a ``conftest.py`` that returns ``LOOP_FACTORIES`` from the
``pytest_asyncio_loop_factories`` hook runs each coroutine test of its
directory once on each loop (test ids ``[asyncio]`` and ``[uvloop]``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import uvloop

LOOP_FACTORIES: Mapping[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}
