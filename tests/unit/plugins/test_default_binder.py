"""DefaultBinder: binds through handle.api; any API failure is an Error status."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest

from plugins.default_binder import NAME, DefaultBinder
from plugins.default_binder import SPEC as DEFAULT_BINDER
from scheduler.framework import Code, CycleState, Handle, Pod
from tests.support.builders import make_pod
from tests.unit.plugins.support import pod


class FakeApi:
    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error
        self.bound: list[tuple[str, str]] = []

    async def bind(self, pod: Pod, node_name: str) -> None:
        if self.error is not None:
            raise self.error
        self.bound.append((pod.key, node_name))


class FakeHandle:
    def __init__(self, api: FakeApi) -> None:
        self.api = api


def binder(api: FakeApi) -> DefaultBinder:
    plugin = DEFAULT_BINDER.factory(None, cast(Handle, FakeHandle(api)))
    assert isinstance(plugin, DefaultBinder)
    return plugin


async def test_binds() -> None:
    api = FakeApi()
    status = await binder(api).bind(CycleState(), pod(make_pod("p").obj()), "n1")
    assert status is None
    assert api.bound == [("default/p", "n1")]


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(RuntimeError('pods "p" not found'), id="API error"),
        pytest.param(ConnectionResetError("connection reset"), id="transport error"),
        pytest.param(TimeoutError("timed out"), id="timeout"),
    ],
)
async def test_failure_is_an_error_status(error: Exception) -> None:
    status = await binder(FakeApi(error)).bind(CycleState(), pod(make_pod("p").obj()), "n1")
    assert status is not None
    assert status.code is Code.ERROR
    assert status.message() == f"binding rejected: {error}"


async def test_cancellation_propagates() -> None:
    plugin = binder(FakeApi(asyncio.CancelledError()))
    with pytest.raises(asyncio.CancelledError):
        await plugin.bind(CycleState(), pod(make_pod("p").obj()), "n1")


def test_name() -> None:
    assert DefaultBinder.name == NAME == "DefaultBinder"
