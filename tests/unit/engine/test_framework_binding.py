"""Framework: PreBindPreFlight, PreBind, Bind (Skip hands over to the next
binder; all skip = Skip) and PostBind."""

from __future__ import annotations

import pytest

from scheduler.framework import Code, CycleState, Status
from tests.support.objects import pod
from tests.unit.engine.plugins import BindStub, PostBindStub, PreBindStub, make_framework

POD = pod("p")


@pytest.mark.parametrize(
    ("pre_flights", "code", "message", "skipped"),
    [
        pytest.param([], Code.SKIP, "", set(), id="no PreBind plugin: skip"),
        pytest.param(
            [Status.skip(), Status.skip()], Code.SKIP, "", {"A", "B"}, id="all skip: skip"
        ),
        pytest.param([Status.skip(), None], Code.SUCCESS, "", {"A"}, id="one will work: success"),
        pytest.param(
            [None, Status.as_error("boom")],
            Code.ERROR,
            'running PreBindPreFlight "B": boom',
            set(),
            id="an error",
        ),
        pytest.param(
            [Status.unschedulable("no")],
            Code.ERROR,
            'PreBindPreFlight A returned "Unschedulable", which is unsupported. It is '
            "supposed to return Success, Skip, or Error status",
            set(),
            id="an unsupported code is an error",
        ),
    ],
)
def test_pre_bind_pre_flights(
    pre_flights: list[Status | None], code: Code, message: str, skipped: set[str]
) -> None:
    plugins = [PreBindStub(n, pre_flight=s) for n, s in zip("AB", pre_flights, strict=False)]
    state = CycleState()
    status = make_framework(pre_bind=plugins).run_pre_bind_pre_flights(state, POD, "n1")
    assert (status.code, status.message()) == (code, message)
    assert state.skip_pre_bind_plugins == skipped


@pytest.mark.parametrize(
    ("statuses", "skip", "expected", "ran"),
    [
        pytest.param([None, None], set(), None, ["A", "B"], id="all succeed"),
        pytest.param(
            [Status.as_error("nope"), None],
            {"A"},
            None,
            ["B"],
            id="plugins skipped at pre-flight do not run",
        ),
        pytest.param(
            [Status.unresolvable("volume gone"), None],
            set(),
            Status.unresolvable("volume gone").with_plugin("A"),
            ["A"],
            id="a rejection keeps its code",
        ),
        pytest.param(
            [None, Status.as_error("api down")],
            set(),
            Status.as_error('running PreBind plugin "B": api down').with_plugin("B"),
            ["A", "B"],
            id="an error is wrapped",
        ),
    ],
)
async def test_pre_bind(
    statuses: list[Status | None], skip: set[str], expected: Status | None, ran: list[str]
) -> None:
    log: list[str] = []
    plugins = [PreBindStub(n, s, log=log) for n, s in zip("AB", statuses, strict=True)]
    state = CycleState()
    state.skip_pre_bind_plugins.update(skip)
    assert await make_framework(pre_bind=plugins).run_pre_bind(state, POD, "n1") == expected
    assert log == [f"PreBind:{name}@n1" for name in ran]


@pytest.mark.parametrize(
    ("binders", "code", "message", "plugin", "ran"),
    [
        pytest.param([], Code.SKIP, "", "", [], id="no binder: skip"),
        pytest.param(
            [BindStub("A", Status.skip()), BindStub("B"), BindStub("C")],
            Code.SUCCESS,
            "",
            "",
            ["A", "B"],
            id="skip passes to the next binder; the first to bind decides",
        ),
        pytest.param(
            [BindStub("A", Status.skip()), BindStub("B", Status.skip())],
            Code.SKIP,
            "",
            "",
            ["A", "B"],
            id="all skip: skip",
        ),
        pytest.param(
            [BindStub("A", Status.as_error("conflict")), BindStub("B")],
            Code.ERROR,
            'running Bind plugin "A": conflict',
            "A",
            ["A"],
            id="an error is final and wrapped",
        ),
        pytest.param(
            [BindStub("A", Status.unschedulable("node gone")), BindStub("B")],
            Code.UNSCHEDULABLE,
            "node gone",
            "A",
            ["A"],
            id="a rejection is final and kept",
        ),
        pytest.param(
            [BindStub("A", raises=ConnectionError("reset"))],
            Code.ERROR,
            'running Bind plugin "A": reset',
            "A",
            ["A"],
            id="a raising binder is an error",
        ),
    ],
)
async def test_bind(
    binders: list[BindStub], code: Code, message: str, plugin: str, ran: list[str]
) -> None:
    log: list[str] = []
    for binder in binders:
        binder.log = log
    status = await make_framework(bind=binders).run_bind(CycleState(), POD, "n1")
    assert (status.code, status.message(), status.plugin) == (code, message, plugin)
    assert log == [f"Bind:{name}@n1" for name in ran]


def test_post_bind_runs_every_plugin_even_after_one_raises() -> None:
    log: list[str] = []
    plugins = [PostBindStub("A", raises=RuntimeError("x"), log=log), PostBindStub("B", log=log)]
    make_framework(post_bind=plugins).run_post_bind(CycleState(), POD, "n1")
    assert log == ["PostBind:A@n1", "PostBind:B@n1"]
