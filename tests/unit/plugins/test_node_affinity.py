"""NodeAffinity: nodeSelector and required affinity filter, preferred terms score."""

from __future__ import annotations

from typing import cast

import pytest
from pydantic import ValidationError

from plugins.node_affinity import (
    NAME,
    REASON_CONFLICT,
    REASON_ENFORCED,
    REASON_POD,
    NodeAffinity,
    NodeAffinityArgs,
)
from plugins.node_affinity.plugin import new
from plugins.registry import in_tree_registry
from scheduler.config import ConfigError, parse_config
from scheduler.engine.assembly import resolve
from scheduler.framework import (
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    EventResource,
    Handle,
    NodeScore,
    QueueingHint,
)
from tests.support.builders import expression, make_node, make_pod, term
from tests.unit.plugins.support import Obj, maybe_node, node_info, pod

NAME_FIELD = "metadata.name"


def plugin_with(added: Obj | None = None) -> NodeAffinity:
    args = NodeAffinityArgs.model_validate({} if added is None else {"addedAffinity": added})
    return new(args, cast(Handle, object()))


ZONE_A = make_node("n").label("zone", "a").obj()


@pytest.mark.parametrize(
    ("raw_pod", "raw_node", "fits"),
    [
        pytest.param(make_pod("p").node_selector(zone="a").obj(), ZONE_A, True, id="selector"),
        pytest.param(
            make_pod("p").node_selector(zone="b").obj(), ZONE_A, False, id="selector value differs"
        ),
        pytest.param(
            make_pod("p").node_selector(zone="a", disk="ssd").obj(),
            ZONE_A,
            False,
            id="selector label missing",
        ),
        pytest.param(
            make_pod("p").required_node_affinity(term(expression("zone", "In", "a", "b"))).obj(),
            ZONE_A,
            True,
            id="In",
        ),
        pytest.param(
            make_pod("p").required_node_affinity(term(expression("zone", "NotIn", "a"))).obj(),
            ZONE_A,
            False,
            id="NotIn listed value",
        ),
        pytest.param(
            make_pod("p").required_node_affinity(term(expression("disk", "NotIn", "ssd"))).obj(),
            ZONE_A,
            True,
            id="NotIn holds without the label",
        ),
        pytest.param(
            make_pod("p").required_node_affinity(term(expression("zone", "Exists"))).obj(),
            ZONE_A,
            True,
            id="Exists",
        ),
        pytest.param(
            make_pod("p").required_node_affinity(term(expression("zone", "DoesNotExist"))).obj(),
            ZONE_A,
            False,
            id="DoesNotExist",
        ),
        pytest.param(
            make_pod("p").required_node_affinity(term(expression("cores", "Gt", "8"))).obj(),
            make_node("n").label("cores", "16").obj(),
            True,
            id="Gt",
        ),
        pytest.param(
            make_pod("p").required_node_affinity(term(expression("cores", "Gt", "16"))).obj(),
            make_node("n").label("cores", "16").obj(),
            False,
            id="Gt is strict",
        ),
        pytest.param(
            make_pod("p").required_node_affinity(term(expression("cores", "Lt", "20"))).obj(),
            make_node("n").label("cores", "3").obj(),
            True,
            id="Lt",
        ),
        pytest.param(
            make_pod("p").required_node_affinity(term(expression("cores", "Lt", "+20"))).obj(),
            make_node("n").label("cores", "3").obj(),
            False,
            id="Lt operand no label value: the term never matches",
        ),
        pytest.param(
            make_pod("p").required_node_affinity(term(expression("cores", "Gt", "1"))).obj(),
            make_node("n").label("cores", "many").obj(),
            False,
            id="Gt on a label that is no integer",
        ),
        pytest.param(
            make_pod("p")
            .required_node_affinity(term(expression("zone", "In", "a"), expression("x", "Exists")))
            .obj(),
            ZONE_A,
            False,
            id="expressions ANDed",
        ),
        pytest.param(
            make_pod("p")
            .required_node_affinity(
                term(expression("zone", "In", "b")), term(expression("zone", "In", "a"))
            )
            .obj(),
            ZONE_A,
            True,
            id="terms ORed",
        ),
        pytest.param(
            make_pod("p").required_node_affinity(term()).obj(),
            ZONE_A,
            False,
            id="only an empty term: matches nothing",
        ),
        pytest.param(
            make_pod("p").required_node_affinity().obj(),
            ZONE_A,
            False,
            id="no terms: matches nothing",
        ),
        pytest.param(
            make_pod("p")
            .required_node_affinity(
                term(expression("cores", "Gt", "lots")), term(expression("zone", "Exists"))
            )
            .obj(),
            ZONE_A,
            True,
            id="a term that does not parse is ignored",
        ),
        pytest.param(
            make_pod("p").required_node_affinity(term(expression("zone", "Near", "a"))).obj(),
            ZONE_A,
            False,
            id="unknown operator never matches",
        ),
        pytest.param(
            make_pod("p")
            .required_node_affinity(term(fields=(expression(NAME_FIELD, "In", "n"),)))
            .obj(),
            ZONE_A,
            True,
            id="match field name In",
        ),
        pytest.param(
            make_pod("p")
            .required_node_affinity(term(fields=(expression(NAME_FIELD, "NotIn", "n"),)))
            .obj(),
            ZONE_A,
            False,
            id="match field name NotIn",
        ),
        pytest.param(
            make_pod("p")
            .required_node_affinity(
                term(expression("zone", "In", "a"), fields=(expression(NAME_FIELD, "In", "m"),))
            )
            .obj(),
            ZONE_A,
            False,
            id="labels and fields ANDed",
        ),
        pytest.param(
            make_pod("p")
            .node_selector(zone="b")
            .required_node_affinity(term(expression("zone", "In", "a")))
            .obj(),
            ZONE_A,
            False,
            id="selector and affinity both needed",
        ),
    ],
)
def test_filter(raw_pod: Obj, raw_node: Obj, fits: bool) -> None:
    plugin = plugin_with()
    the_pod = pod(raw_pod)
    state = CycleState()
    _, pre = plugin.pre_filter(state, the_pod, [])
    assert pre is None or pre.code is not Code.SKIP
    status = plugin.filter(state, the_pod, node_info(raw_node))
    if fits:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_POD,))
        assert status.message() == "node(s) didn't match Pod's node affinity/selector"


ENFORCED = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term(expression("pool", "In", "batch"))]
    }
}


@pytest.mark.parametrize(
    ("raw_pod", "raw_node", "reason"),
    [
        pytest.param(make_pod("p").obj(), ZONE_A, REASON_ENFORCED, id="node outside added"),
        pytest.param(
            make_pod("p").obj(), make_node("n").label("pool", "batch").obj(), None, id="inside"
        ),
        pytest.param(
            make_pod("p").node_selector(zone="a").obj(),
            make_node("n").label("pool", "batch").obj(),
            REASON_POD,
            id="inside added, pod's selector fails",
        ),
    ],
)
def test_filter_with_added_affinity(raw_pod: Obj, raw_node: Obj, reason: str | None) -> None:
    plugin = plugin_with(ENFORCED)
    the_pod = pod(raw_pod)
    state = CycleState()
    _, pre = plugin.pre_filter(state, the_pod, [])
    assert pre is None  # added affinity: never skipped
    status = plugin.filter(state, the_pod, node_info(raw_node))
    if reason is None:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,))
    assert REASON_ENFORCED == "node(s) didn't match scheduler-enforced node affinity"


def names_in(*names: str) -> Obj:
    return expression(NAME_FIELD, "In", *names)


@pytest.mark.parametrize(
    ("raw_pod", "narrowed", "code"),
    [
        pytest.param(make_pod("p").obj(), None, Code.SKIP, id="nothing to filter: skip"),
        pytest.param(
            make_pod("p").node_selector(zone="a").obj(), None, Code.SUCCESS, id="selector only"
        ),
        pytest.param(
            make_pod("p").required_node_affinity(term(fields=(names_in("n1"),))).obj(),
            {"n1"},
            Code.SUCCESS,
            id="one pinned name",
        ),
        pytest.param(
            make_pod("p")
            .required_node_affinity(
                term(fields=(names_in("n1"),)), term(fields=(names_in("n2", "n3"),))
            )
            .obj(),
            {"n1", "n2", "n3"},
            Code.SUCCESS,
            id="terms: union",
        ),
        pytest.param(
            make_pod("p")
            .required_node_affinity(term(fields=(names_in("n1", "n2"), names_in("n2", "n3"))))
            .obj(),
            {"n2"},
            Code.SUCCESS,
            id="fields of one term: intersection",
        ),
        pytest.param(
            make_pod("p")
            .required_node_affinity(
                term(fields=(names_in("n1"),)), term(expression("zone", "Exists"))
            )
            .obj(),
            None,
            Code.SUCCESS,
            id="a term without names keeps every node",
        ),
        pytest.param(
            make_pod("p")
            .required_node_affinity(term(fields=(expression(NAME_FIELD, "NotIn", "n1"),)))
            .obj(),
            None,
            Code.SUCCESS,
            id="NotIn pins nothing",
        ),
        pytest.param(
            make_pod("p")
            .required_node_affinity(term(fields=(names_in("n1"), names_in("n2"))))
            .obj(),
            None,
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            id="conflicting names",
        ),
    ],
)
def test_pre_filter(raw_pod: Obj, narrowed: set[str] | None, code: Code) -> None:
    result, status = plugin_with().pre_filter(CycleState(), pod(raw_pod), [])
    if code is Code.SUCCESS:
        assert status is None
    else:
        assert status is not None
        assert status.code is code
    if code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        assert status is not None
        assert status.reasons == (REASON_CONFLICT,)
        assert REASON_CONFLICT == "pod affinity terms conflict"
    names = None if result is None else result.node_names
    assert names == (None if narrowed is None else frozenset(narrowed))


PREFERRED_POD = (
    make_pod("p")
    .preferred_node_affinity(2, term(expression("zone", "In", "a")))
    .preferred_node_affinity(3, term(expression("disk", "Exists")))
    .preferred_node_affinity(0, term(expression("zone", "Exists")))  # weight 0: dropped
    .obj()
)


@pytest.mark.parametrize(
    ("raw_pod", "added", "nodes", "raw_scores", "normalized"),
    [
        pytest.param(
            PREFERRED_POD,
            None,
            [
                make_node("n0").obj(),
                make_node("n1").label("zone", "a").obj(),
                make_node("n2").label("zone", "a").label("disk", "ssd").obj(),
                make_node("n3").label("disk", "hdd").obj(),
            ],
            [0, 2, 5, 3],
            [0, 40, 100, 60],
            id="weights of matching terms, scaled by the best",
        ),
        pytest.param(
            make_pod("p").preferred_node_affinity(7, term(expression("x", "Exists"))).obj(),
            None,
            [make_node("n0").obj(), make_node("n1").obj()],
            [0, 0],
            [0, 0],
            id="nothing matches: all zero",
        ),
        pytest.param(
            make_pod("p").preferred_node_affinity(1, term(expression("zone", "In", "a"))).obj(),
            {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 2, "preference": term(expression("gpu", "Exists"))}
                ]
            },
            [
                make_node("n0").label("zone", "a").obj(),
                make_node("n1").label("gpu", "1").obj(),
                make_node("n2").label("gpu", "1").label("zone", "a").obj(),
            ],
            [1, 2, 3],
            [33, 66, 100],
            id="added preferred terms count too, truncated",
        ),
    ],
)
def test_score_and_normalize(
    raw_pod: Obj, added: Obj | None, nodes: list[Obj], raw_scores: list[int], normalized: list[int]
) -> None:
    plugin = plugin_with(added)
    state = CycleState()
    the_pod = pod(raw_pod)
    infos = [node_info(raw) for raw in nodes]
    assert plugin.pre_score(state, the_pod, infos) is None
    scores = []
    for info in infos:
        value, status = plugin.score(state, the_pod, info)
        assert status is None
        scores.append(NodeScore(info.name, value))
    assert [entry.score for entry in scores] == raw_scores
    assert plugin.normalize_score(state, the_pod, scores) is None
    assert [entry.score for entry in scores] == normalized


def test_pre_score_skips_pods_without_preferences() -> None:
    status = plugin_with().pre_score(
        CycleState(), pod(make_pod("p").node_selector(a="b").obj()), []
    )
    assert status is not None
    assert status.code is Code.SKIP


def test_pre_score_runs_for_added_preferences() -> None:
    added = {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": term(expression("gpu", "Exists"))}
        ]
    }
    assert plugin_with(added).pre_score(CycleState(), pod(make_pod("p").obj()), []) is None


def test_preferred_term_that_does_not_parse_is_an_error() -> None:
    raw = make_pod("p").preferred_node_affinity(1, term(expression("cores", "Gt", "x"))).obj()
    status = plugin_with().pre_score(CycleState(), pod(raw), [])
    assert status is not None
    assert status.code is Code.ERROR
    assert status.message() == (
        '[0].matchExpressions[0].values[0]: Invalid value: "x": '
        "for 'Gt', 'Lt' operators, the value must be an integer"
    )


@pytest.mark.parametrize(
    ("added", "message"),
    [
        pytest.param(
            {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term(expression("zone", "Near", "a"))]
                }
            },
            "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            '.matchExpressions[0].operator: Unsupported value: "Near"',
            id="unknown operator",
        ),
        pytest.param(
            {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": term(expression("zone", "In"))}
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution[0]"
            ".matchExpressions[0].values: Invalid value",
            id="In without values",
        ),
        pytest.param(
            {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term(fields=(expression(NAME_FIELD, "In", "a", "b"),))]
                }
            },
            "nodeSelectorTerms[0].matchFields[0].values: Invalid value",
            id="match field with two values",
        ),
        pytest.param({"requiredDuringExecution": {}}, "unknown field", id="unknown field"),
    ],
)
def test_args_rejected(added: Obj, message: str) -> None:
    with pytest.raises(ValidationError) as raised:
        NodeAffinityArgs.model_validate({"addedAffinity": added})
    assert message in str(raised.value)
    assert "added_affinity" in str(raised.value) or "addedAffinity" in str(raised.value)


def test_args_default_to_nothing_added() -> None:
    args = NodeAffinityArgs.model_validate({})
    assert args.required() is None
    assert args.preferred() is None


@pytest.mark.parametrize(
    ("incoming", "matches"),
    [
        pytest.param(ClusterEvent(EventResource.NODE, ActionType.ADD), True, id="NodeAdd"),
        pytest.param(
            ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL),
            True,
            id="NodeUpdateNodeLabel",
        ),
        pytest.param(
            ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT),
            False,
            id="NodeUpdateNodeTaint",
        ),
        pytest.param(
            ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE),
            False,
            id="AssignedPodDelete",
        ),
    ],
)
def test_events(incoming: ClusterEvent, matches: bool) -> None:
    registered = plugin_with().events_to_register()
    assert any(r.event.matches(incoming) for r in registered) is matches


PLAIN = make_node("n").obj()
SELECTED = make_node("n").label("zone", "a").obj()
SELECTED_AND_MORE = make_node("n").label("zone", "a").label("x", "y").obj()
WANTS_A = make_pod("p").node_selector(zone="a").obj()


@pytest.mark.parametrize(
    ("added", "old", "new", "hint"),
    [
        pytest.param(None, None, SELECTED, QueueingHint.QUEUE, id="matching node added"),
        pytest.param(None, None, PLAIN, QueueingHint.QUEUE_SKIP, id="other node added"),
        pytest.param(None, PLAIN, SELECTED, QueueingHint.QUEUE, id="label added: now matches"),
        pytest.param(
            None, SELECTED, SELECTED_AND_MORE, QueueingHint.QUEUE_SKIP, id="matched already"
        ),
        pytest.param(None, SELECTED, PLAIN, QueueingHint.QUEUE_SKIP, id="label removed"),
        pytest.param(
            ENFORCED, None, SELECTED, QueueingHint.QUEUE_SKIP, id="outside added affinity"
        ),
    ],
)
def test_node_change_hint(added: Obj | None, old: Obj | None, new: Obj, hint: QueueingHint) -> None:
    plugin = plugin_with(added)
    assert (
        plugin.is_schedulable_after_node_change(pod(WANTS_A), maybe_node(old), maybe_node(new))
        is hint
    )


def test_sign_covers_selectors() -> None:
    plugin = plugin_with()
    a = pod(make_pod("p").node_selector(zone="a").obj())
    b = pod(make_pod("q").node_selector(zone="b").obj())
    again = pod(make_pod("r").node_selector(zone="a").obj())
    assert plugin.sign_pod(a) == plugin.sign_pod(again)
    assert plugin.sign_pod(a) != plugin.sign_pod(b)
    hash(plugin.sign_pod(a))


def test_name() -> None:
    assert NodeAffinity.name == NAME == "NodeAffinity"


CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: pinned
  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: pool, operator: %s, values: [batch]}
"""


def test_added_affinity_through_plugin_config() -> None:
    config = parse_config(CONFIG % "In")
    (profile,) = resolve(config, in_tree_registry())
    args = profile.plugin_args[NAME]
    assert isinstance(args, NodeAffinityArgs)
    required = args.required()
    assert required is not None
    assert required.matches("n", {"pool": "batch"})
    assert not required.matches("n", {"pool": "web"})


def test_bad_added_affinity_names_the_field() -> None:
    with pytest.raises(ConfigError) as raised:
        resolve(parse_config(CONFIG % "Near"), in_tree_registry())
    assert (
        "profiles[0].pluginConfig[NodeAffinity].args.addedAffinity: "
        "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        '.matchExpressions[0].operator: Unsupported value: "Near"'
    ) in str(raised.value)
