"""Every coroutine test here runs on both event loops the daemon supports:
the transports (TLS, the write lane, the ops port) differ between them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest

from tests.support.loops import LOOP_FACTORIES


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return LOOP_FACTORIES
