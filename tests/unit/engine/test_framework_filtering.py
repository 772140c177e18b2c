"""Framework: PreFilter, Filter and PostFilter aggregate plugin statuses as
upstream's runtime does (reference §1.4)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from scheduler.framework import (
    Code,
    CycleState,
    ExtensionPoint,
    NodeInfo,
    NodeToStatus,
    Pod,
    PreFilterExtensions,
    Status,
)
from scheduler.framework.types import NominatingInfo, NominatingMode
from tests.support.objects import node_info, pod
from tests.unit.engine.plugins import (
    FilterStub,
    PostFilterStub,
    PreFilterStub,
    RecordingFrameworkMetrics,
    make_framework,
)

POD = pod("p")
NODES = [node_info("n1"), node_info("n2"), node_info("n3")]


@dataclass(frozen=True)
class PreFilterCase:
    plugins: list[PreFilterStub]
    code: Code
    message: str = ""
    plugin: str = ""
    nodes: frozenset[str] | None = None
    narrowing: frozenset[str] = frozenset()
    ran: tuple[str, ...] = ()
    skipped: frozenset[str] = frozenset()


PRE_FILTER_CASES = [
    pytest.param(
        PreFilterCase([PreFilterStub("A"), PreFilterStub("B")], Code.SUCCESS, ran=("A", "B")),
        id="all succeed: no narrowing",
    ),
    pytest.param(
        PreFilterCase(
            [PreFilterStub("A", Status.skip()), PreFilterStub("B")],
            Code.SUCCESS,
            ran=("A", "B"),
            skipped=frozenset({"A"}),
        ),
        id="skip marks the plugin's Filter skipped and the others run",
    ),
    pytest.param(
        PreFilterCase(
            [
                PreFilterStub("A", nodes={"n1"}),
                PreFilterStub("B", Status.unresolvable("never here")),
                PreFilterStub("C"),
            ],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "never here",
            "B",
            ran=("A", "B"),
        ),
        id="unresolvable stops the rest and reports no narrowing",
    ),
    pytest.param(
        PreFilterCase(
            [
                PreFilterStub("A", Status.unschedulable("first")),
                PreFilterStub("B", Status.unschedulable("second")),
                PreFilterStub("C", nodes={"n2"}),
            ],
            Code.UNSCHEDULABLE,
            "second",
            "B",
            narrowing=frozenset({"C"}),
            ran=("A", "B", "C"),
        ),
        id="unschedulable keeps running the others; the last rejection is reported",
    ),
    pytest.param(
        PreFilterCase(
            [PreFilterStub("A", Status.as_error("boom")), PreFilterStub("B")],
            Code.ERROR,
            'running PreFilter plugin "A": boom',
            "A",
            ran=("A",),
        ),
        id="error is wrapped with the plugin name",
    ),
    pytest.param(
        PreFilterCase(
            [PreFilterStub("A", raises=RuntimeError("kaput"))],
            Code.ERROR,
            'running PreFilter plugin "A": kaput',
            "A",
            ran=("A",),
        ),
        id="a raising plugin is an error, not a crash",
    ),
    pytest.param(
        PreFilterCase(
            [PreFilterStub("A", Status.pending("later"))],
            Code.ERROR,
            'running PreFilter plugin "A": later',
            "A",
            ran=("A",),
        ),
        id="pending is not a PreFilter answer: an error",
    ),
    pytest.param(
        PreFilterCase(
            [
                PreFilterStub("A", nodes={"n1", "n2"}),
                PreFilterStub("B"),
                PreFilterStub("C", nodes={"n2"}),
            ],
            Code.SUCCESS,
            nodes=frozenset({"n2"}),
            narrowing=frozenset({"A", "C"}),
            ran=("A", "B", "C"),
        ),
        id="node sets intersect; an all-nodes result does not narrow",
    ),
    pytest.param(
        PreFilterCase(
            [PreFilterStub("A", nodes=()), PreFilterStub("B")],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "node(s) didn't satisfy plugin A",
            narrowing=frozenset({"A"}),
            ran=("A",),
        ),
        id="one plugin narrowing to nothing",
    ),
    pytest.param(
        PreFilterCase(
            [PreFilterStub("Zeta", nodes={"n1"}), PreFilterStub("Alpha", nodes={"n2"})],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "node(s) didn't satisfy plugin(s) [Alpha Zeta] simultaneously",
            narrowing=frozenset({"Alpha", "Zeta"}),
            ran=("Zeta", "Alpha"),
        ),
        id="two plugins with disjoint sets (names sorted)",
    ),
]


@pytest.mark.parametrize("case", PRE_FILTER_CASES)
def test_pre_filter(case: PreFilterCase) -> None:
    log: list[str] = []
    for plugin in case.plugins:
        plugin.log = log
    metrics = RecordingFrameworkMetrics()
    framework = make_framework(pre_filter=case.plugins, metrics=metrics)
    state = CycleState()

    result, status, narrowing = framework.run_pre_filter(state, POD, NODES)

    code = Code.SUCCESS if status is None else status.code
    assert (code, "" if status is None else status.message()) == (case.code, case.message)
    assert (status.plugin if status else "") == case.plugin
    if case.code is Code.SUCCESS:
        assert (None if result is None else result.node_names) == case.nodes
    assert narrowing == case.narrowing
    assert log == [f"PreFilter:{name}" for name in case.ran]
    assert state.skip_filter_plugins == case.skipped
    assert metrics.points == [(ExtensionPoint.PRE_FILTER, case.code)]


@dataclass(frozen=True)
class FilterCase:
    plugins: list[FilterStub]
    code: Code
    message: str = ""
    plugin: str = ""
    ran: tuple[str, ...] = ()
    skip: frozenset[str] = frozenset()


FILTER_CASES = [
    pytest.param(
        FilterCase([FilterStub("A"), FilterStub("B")], Code.SUCCESS, ran=("A", "B")),
        id="all pass",
    ),
    pytest.param(
        FilterCase(
            [FilterStub("A", {"n1": Status.unschedulable("too small")}), FilterStub("B")],
            Code.UNSCHEDULABLE,
            "too small",
            "A",
            ran=("A",),
        ),
        id="the first rejection stops the others",
    ),
    pytest.param(
        FilterCase(
            [FilterStub("A"), FilterStub("B", {"n1": Status.unresolvable("wrong zone")})],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "wrong zone",
            "B",
            ran=("A", "B"),
        ),
        id="unresolvable keeps its code",
    ),
    pytest.param(
        FilterCase(
            [FilterStub("A", {"n1": Status.pending("wait for it")})],
            Code.PENDING,
            "wait for it",
            "A",
            ran=("A",),
        ),
        id="pending is a rejection",
    ),
    pytest.param(
        FilterCase(
            [FilterStub("A", {"n1": Status.as_error("boom")}), FilterStub("B")],
            Code.ERROR,
            'running "A" filter plugin: boom',
            "A",
            ran=("A",),
        ),
        id="error is wrapped",
    ),
    pytest.param(
        FilterCase(
            [FilterStub("A", raises=ValueError("bad value"))],
            Code.ERROR,
            'running "A" filter plugin: bad value',
            "A",
            ran=("A",),
        ),
        id="a raising plugin is an error",
    ),
    pytest.param(
        FilterCase(
            [FilterStub("A", {"n1": Status.unschedulable("skipped anyway")}), FilterStub("B")],
            Code.SUCCESS,
            ran=("B",),
            skip=frozenset({"A"}),
        ),
        id="a plugin skipped at PreFilter does not filter",
    ),
]


@pytest.mark.parametrize("case", FILTER_CASES)
def test_filter(case: FilterCase) -> None:
    log: list[str] = []
    for plugin in case.plugins:
        plugin.log = log
    framework = make_framework(filter=case.plugins)
    state = CycleState()
    state.skip_filter_plugins.update(case.skip)

    status = framework.run_filter(state, POD, NODES[0])

    assert (Code.SUCCESS if status is None else status.code) == case.code
    assert ("" if status is None else status.message()) == case.message
    assert ("" if status is None else status.plugin) == case.plugin
    assert log == [f"Filter:{name}@n1" for name in case.ran]


@dataclass(frozen=True)
class PostFilterCase:
    plugins: list[PostFilterStub]
    code: Code
    message: str = ""
    plugin: str = ""
    nominated: NominatingInfo | None = None
    ran: tuple[str, ...] = field(default=())


NOMINATE_N2 = NominatingInfo("n2", NominatingMode.OVERRIDE)

POST_FILTER_CASES = [
    pytest.param(
        PostFilterCase(
            [
                PostFilterStub("A", Status.unschedulable("a")),
                PostFilterStub("B", None, nominate="n2"),
                PostFilterStub("C", Status.unschedulable("c")),
            ],
            Code.SUCCESS,
            nominated=NOMINATE_N2,
            ran=("A", "B"),
        ),
        id="the first success wins with its result",
    ),
    pytest.param(
        PostFilterCase(
            [
                PostFilterStub("A", Status.unresolvable("hopeless"), nominate=""),
                PostFilterStub("B", None),
            ],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "hopeless",
            "A",
            nominated=NominatingInfo("", NominatingMode.OVERRIDE),
            ran=("A",),
        ),
        id="unresolvable stops with its plugin",
    ),
    pytest.param(
        PostFilterCase(
            [PostFilterStub("A", Status.as_error("api down"), nominate="n2")],
            Code.ERROR,
            "api down",
            "A",
            ran=("A",),
        ),
        id="error passes the plugin's message on, without a result",
    ),
    pytest.param(
        PostFilterCase(
            [PostFilterStub("A", None, raises=RuntimeError("kaput"))],
            Code.ERROR,
            "kaput",
            "A",
            ran=("A",),
        ),
        id="a raising plugin is an error",
    ),
    pytest.param(
        PostFilterCase(
            [
                PostFilterStub("A", Status.unschedulable("a1", "a2"), nominate="n2"),
                PostFilterStub(
                    "B", Status.unschedulable("b"), nominate="n9", mode=NominatingMode.NOOP
                ),
                PostFilterStub("C", Status.unschedulable()),
            ],
            Code.UNSCHEDULABLE,
            "a1, a2, b",
            "A",
            nominated=NOMINATE_N2,
            ran=("A", "B", "C"),
        ),
        id="all unschedulable: reasons joined, first rejector, last non-noop result",
    ),
]


@pytest.mark.parametrize("case", POST_FILTER_CASES)
def test_post_filter(case: PostFilterCase) -> None:
    log: list[str] = []
    for plugin in case.plugins:
        plugin.log = log
    framework = make_framework(post_filter=case.plugins)

    result, status = framework.run_post_filter(CycleState(), POD, NodeToStatus())

    assert (status.code, status.message(), status.plugin) == (case.code, case.message, case.plugin)
    assert (None if result is None else result.nominating_info) == case.nominated
    assert log == [f"PostFilter:{name}" for name in case.ran]


class Extended(PreFilterStub, PreFilterExtensions):
    """A PreFilter plugin whose AddPod/RemovePod answer ``verdict`` or raise."""

    def __init__(self, name: str, verdict: Status | None = None, *, fails: bool = False) -> None:
        super().__init__(name)
        self.verdict = verdict
        self.fails = fails

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(
        self, state: CycleState, pod: Pod, pod_to_add: Pod, node_info: NodeInfo
    ) -> Status | None:
        self.log.append(f"AddPod:{self.name}")
        if self.fails:
            raise RuntimeError("kaput")
        return self.verdict

    def remove_pod(
        self, state: CycleState, pod: Pod, pod_to_remove: Pod, node_info: NodeInfo
    ) -> Status | None:
        self.log.append(f"RemovePod:{self.name}")
        if self.fails:
            raise RuntimeError("kaput")
        return self.verdict


@pytest.mark.parametrize(
    ("plugins", "skip", "message", "ran"),
    [
        pytest.param([Extended("A"), PreFilterStub("B")], set(), "", ["A"], id="all succeed"),
        pytest.param(
            [Extended("A", Status.unschedulable("no")), Extended("B")],
            set(),
            'running {op} on PreFilter plugin "A": no',
            ["A"],
            id="anything but success is an error",
        ),
        pytest.param(
            [Extended("A", fails=True)],
            set(),
            'running {op} on PreFilter plugin "A": kaput',
            ["A"],
            id="a raising plugin is an error",
        ),
        pytest.param(
            [Extended("A", fails=True), Extended("B")],
            {"A"},
            "",
            ["B"],
            id="plugins skipped at PreFilter are not asked",
        ),
    ],
)
@pytest.mark.parametrize("op", ["AddPod", "RemovePod"])
def test_pre_filter_extensions(
    plugins: list[PreFilterStub], skip: set[str], message: str, ran: list[str], op: str
) -> None:
    log: list[str] = []
    for plugin in plugins:
        plugin.log = log
    framework = make_framework(pre_filter=plugins)
    state = CycleState()
    state.skip_filter_plugins.update(skip)
    run = (
        framework.run_pre_filter_add_pod if op == "AddPod" else framework.run_pre_filter_remove_pod
    )

    status = run(state, POD, pod("other"), NODES[0])

    assert ("" if status is None else status.message()) == message.format(op=op)
    assert log == [f"{op}:{name}" for name in ran]
