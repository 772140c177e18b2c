"""VolumeBinding counts ``scheduler_volume_scheduling_stage_error_total`` where
upstream's binder does: a Filter (``predicate``), Reserve (``assume``) or
PreBind (``bind``) that fails with an error, never an ordinary rejection."""

from __future__ import annotations

from typing import Any

import pytest

from plugins.volume_binding import VolumeBinding
from plugins.volume_binding.binder import BindingError
from plugins.volume_binding.plugin import STATE_KEY, BindingState
from scheduler.framework import CycleState
from tests.support.builders import make_node, make_pod
from tests.unit.plugins.support import node_info, pod


class _Recorder:
    def __init__(self) -> None:
        self.stages: list[str] = []

    def volume_scheduling_stage_error(self, operation: str) -> None:
        self.stages.append(operation)


class _Failing:
    def find_pod_volumes(self, *_args: Any) -> Any:
        raise BindingError("boom")

    def assume_pod_volumes(self, *_args: Any) -> Any:
        raise BindingError("boom")


class _FailingWriter:
    async def bind_pod_volumes(self, *_args: Any) -> None:
        raise BindingError("boom")


def _plugin(recorder: _Recorder) -> VolumeBinding:
    return VolumeBinding(_Failing(), _FailingWriter(), recorder)  # type: ignore[arg-type]


def _state() -> CycleState:
    state = CycleState()
    current = BindingState()
    current.volumes_by_node["n1"] = object()  # type: ignore[assignment]
    state.write(STATE_KEY, current)
    return state


@pytest.mark.parametrize(
    ("stage", "call"),
    [
        pytest.param(
            "predicate",
            lambda p, s: p.filter(s, pod(make_pod("p").obj()), node_info(make_node("n1").obj())),
            id="filter",
        ),
        pytest.param(
            "assume", lambda p, s: p.reserve(s, pod(make_pod("p").obj()), "n1"), id="reserve"
        ),
    ],
)
def test_a_failing_stage_is_counted(stage: str, call: Any) -> None:
    recorder = _Recorder()

    status = call(_plugin(recorder), _state())

    assert status is not None
    assert recorder.stages == [stage]


async def test_a_failing_bind_is_counted() -> None:
    recorder = _Recorder()

    status = await _plugin(recorder).pre_bind(_state(), pod(make_pod("p").obj()), "n1")

    assert status is not None
    assert recorder.stages == ["bind"]
