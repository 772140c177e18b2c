"""Label selectors and pod affinity terms, parsed as upstream converts them."""

from __future__ import annotations

import pytest

from scheduler.framework import parse_pod
from scheduler.framework.labels import (
    EVERYTHING,
    NOTHING,
    LabelSelectorError,
    parse_label_selector,
    selector_from_set,
)
from scheduler.framework.podaffinity import parse_pod_affinity
from tests.support.builders import make_pod

Obj = dict[str, object]


@pytest.mark.parametrize(
    ("raw", "labels", "matches"),
    [
        pytest.param(None, {"a": "1"}, False, id="absent selector selects nothing"),
        pytest.param({}, {"a": "1"}, True, id="empty selector selects everything"),
        pytest.param({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True, id="matchLabels"),
        pytest.param({"matchLabels": {"a": "1"}}, {"a": "2"}, False, id="matchLabels other value"),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]},
            {"a": "2"},
            True,
            id="In",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
            {},
            True,
            id="NotIn holds without the key",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
            {"a": "1"},
            False,
            id="NotIn listed value",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True, id="Exists"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]},
            {"a": "x"},
            False,
            id="DoesNotExist",
        ),
        pytest.param(
            {
                "matchLabels": {"a": "1"},
                "matchExpressions": [{"key": "b", "operator": "Exists"}],
            },
            {"a": "1"},
            False,
            id="all requirements must hold",
        ),
    ],
)
def test_matches(raw: Obj | None, labels: dict[str, str], matches: bool) -> None:
    assert parse_label_selector(raw).matches(labels) is matches  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        pytest.param(
            {"key": "a", "operator": "In"}, "values set can't be empty", id="In without values"
        ),
        pytest.param(
            {"key": "a", "operator": "Exists", "values": ["x"]},
            "must be empty",
            id="Exists with values",
        ),
        pytest.param(
            {"key": "a", "operator": "Gt", "values": ["1"]}, "not a valid operator", id="Gt"
        ),
        pytest.param({"operator": "Exists"}, "key", id="no key"),
    ],
)
def test_malformed_expressions_are_refused(expression: Obj, problem: str) -> None:
    with pytest.raises(LabelSelectorError, match=problem):
        parse_label_selector({"matchExpressions": [expression]})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(
            {"matchExpressions": [{"key": "-app", "operator": "Exists"}]},
            'key: Invalid value: "-app": name part must consist of alphanumeric characters',
            id="expression key not a qualified name",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["ok", "-bad"]}]},
            'values[1]: Invalid value: "-bad": a valid label must be an empty string',
            id="expression value not a label value",
        ),
        pytest.param(
            {"matchLabels": {"a/b/c": "x"}},
            'key: Invalid value: "a/b/c": a qualified name must consist of',
            id="matchLabels key with two slashes",
        ),
        pytest.param(
            {"matchLabels": {"app": "x" * 64}},
            'values[0]: Invalid value: "' + "x" * 64 + '": must be no more than 63 characters',
            id="matchLabels value too long",
        ),
    ],
)
def test_invalid_keys_and_values_are_refused_as_label_selector_as_selector_does(
    raw: Obj, expected: str
) -> None:
    with pytest.raises(LabelSelectorError) as caught:
        parse_label_selector(raw)
    assert str(caught.value).startswith(expected)


def test_empty_and_nothing() -> None:
    assert EVERYTHING.empty
    assert not NOTHING.empty
    assert selector_from_set({}).empty
    assert NOTHING.add(selector_from_set({"a": "1"}).requirements) is NOTHING


def test_pod_affinity_terms_default_to_the_pods_namespace() -> None:
    raw = (
        make_pod("p", "team")
        .pod_affinity_term("podAffinity", "zone", {"matchLabels": {"a": "1"}})
        .obj()
    )
    [term] = parse_pod(raw).pod_affinity.required_affinity
    assert term.namespaces == frozenset({"team"})
    assert term.namespace_selector is NOTHING
    assert term.matches("team", {"a": "1"}, {})
    assert not term.matches("other", {"a": "1"}, {})


def test_namespace_selector_replaces_the_default_namespace() -> None:
    raw = (
        make_pod("p", "team")
        .pod_affinity_term(
            "podAffinity", "zone", {}, namespaceSelector={"matchLabels": {"env": "x"}}
        )
        .obj()
    )
    [term] = parse_pod(raw).pod_affinity.required_affinity
    assert term.namespaces == frozenset()
    assert term.matches("any", {}, {"env": "x"})
    resolved = term.with_selected_namespaces(["n1"])
    assert resolved.matches("n1", {}, {})
    assert not resolved.matches("any", {}, {"env": "x"})


def test_match_label_keys_are_applied_once() -> None:
    selector = {"matchLabels": {"app": "web"}}
    raw = (
        make_pod("p")
        .label("app", "web")
        .label("version", "v2")
        .pod_affinity_term(
            "podAntiAffinity", "zone", selector, matchLabelKeys=["version", "absent"]
        )
        .obj()
    )
    [term] = parse_pod(raw).pod_affinity.required_anti_affinity
    assert term.matches("default", {"app": "web", "version": "v2"}, {})
    assert not term.matches("default", {"app": "web", "version": "v1"}, {})
    # As the API server leaves it: the requirement already merged is not added again.
    merged = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "version", "operator": "In", "values": ["v2"]}],
    }
    again = (
        make_pod("q")
        .label("version", "v2")
        .pod_affinity_term("podAntiAffinity", "zone", merged, matchLabelKeys=["version"])
        .obj()
    )
    [same] = parse_pod(again).pod_affinity.required_anti_affinity
    assert same.selector == term.selector


def test_preferred_terms_keep_their_weights_and_errors_are_reported() -> None:
    bad = {"matchExpressions": [{"key": "a", "operator": "In"}]}
    affinity = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 7, "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {}}}
            ],
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "zone", "labelSelector": bad}
            ],
        }
    }
    terms = parse_pod_affinity(affinity, "default", {})
    assert [t.weight for t in terms.preferred_affinity] == [7]
    assert terms.required_affinity == ()
    assert "values set can't be empty" in terms.error


def test_pods_without_pod_affinity_have_no_terms() -> None:
    assert not parse_pod(make_pod("p").obj()).pod_affinity
    node_affinity_only = {"nodeAffinity": {}}
    assert not parse_pod_affinity(node_affinity_only, "default", {})
