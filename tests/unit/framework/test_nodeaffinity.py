"""Node selectors and node affinity: upstream's parsing, errors and matching rules."""

from __future__ import annotations

import pytest

from scheduler.framework import parse_pod
from scheduler.framework.nodeaffinity import (
    NodeSelectorError,
    parse_go_int64,
    parse_node_selector,
    parse_preferred_terms,
    strict_node_selector,
)
from tests.support.builders import expression, make_pod, term


@pytest.mark.parametrize(
    ("text", "value"),
    [
        pytest.param("42", 42, id="plain"),
        pytest.param("+7", 7, id="plus sign"),
        pytest.param("-7", -7, id="minus sign"),
        pytest.param("9223372036854775807", 2**63 - 1, id="int64 max"),
        pytest.param("9223372036854775808", None, id="overflow"),
        pytest.param(" 1", None, id="space"),
        pytest.param("1_000", None, id="underscore"),
        pytest.param("0x10", None, id="hex"),
        pytest.param("", None, id="empty"),
        pytest.param("٣", None, id="non-ASCII digit"),
    ],
)
def test_parse_go_int64(text: str, value: int | None) -> None:
    assert parse_go_int64(text) == value


def selector(*terms: dict[str, object]) -> dict[str, object]:
    return {"nodeSelectorTerms": list(terms)}


def test_lazy_selector_keeps_bad_terms_that_never_match() -> None:
    parsed = parse_node_selector(
        selector(term(expression("a", "Gt", "x")), term(expression("b", "Exists")))
    )
    assert parsed.errors() == (
        'nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "x": '
        "for 'Gt', 'Lt' operators, the value must be an integer",
    )
    assert not parsed.matches("n", {"a": "1"})
    assert parsed.matches("n", {"b": ""})


def test_empty_terms_are_dropped() -> None:
    assert parse_node_selector(selector(term(), term())).terms == ()


def test_strict_selector_raises_every_problem_with_its_path() -> None:
    with pytest.raises(NodeSelectorError) as raised:
        strict_node_selector(
            selector(
                term(expression("a", "In")),
                term(fields=(expression("metadata.name", "Exists"),)),
            ),
            "args",
        )
    message = str(raised.value)
    assert message.startswith("[args.nodeSelectorTerms[0].matchExpressions[0].values:")
    assert 'args.nodeSelectorTerms[1].matchFields[0].operator: Unsupported value: "Exists"' in (
        message
    )


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        pytest.param("zone", True, id="name"),
        pytest.param("topology.kubernetes.io/zone", True, id="prefixed"),
        pytest.param("Zone_1.a", True, id="mixed name"),
        pytest.param("-zone", False, id="leading dash"),
        pytest.param("UPPER.example/zone", False, id="upper-case prefix"),
        pytest.param("a/b/c", False, id="two slashes"),
        pytest.param("x" * 64, False, id="name too long"),
    ],
)
def test_label_keys_must_be_qualified_names(key: str, ok: bool) -> None:
    parsed = parse_node_selector(selector(term(expression(key, "Exists"))))
    assert (parsed.errors() == ()) is ok


def test_preferred_terms_weight_zero_and_empty_dropped() -> None:
    terms = parse_preferred_terms(
        [
            {"weight": 0, "preference": term(expression("a", "Exists"))},
            {"weight": 5, "preference": term()},
            {"weight": 3, "preference": term(expression("a", "Exists"))},
        ]
    )
    assert [entry.weight for entry in terms.terms] == [3]
    assert terms.score("n", {"a": "x"}) == 3


def test_parsed_once_on_the_pod() -> None:
    pod = parse_pod(
        make_pod("p")
        .node_selector(zone="a")
        .required_node_affinity(term(fields=(expression("metadata.name", "In", "n1"),)))
        .preferred_node_affinity(4, term(expression("disk", "Exists")))
        .obj()
    )
    assert pod.required_affinity.pinned_names == frozenset({"n1"})
    assert pod.required_affinity.matches("n1", {"zone": "a"})
    assert not pod.required_affinity.matches("n2", {"zone": "a"})
    assert not pod.required_affinity.matches("n1", {"zone": "b"})
    assert pod.preferred_affinity is not None
    assert pod.preferred_affinity.score("n1", {"disk": "ssd"}) == 4
    hash(pod.required_affinity)


def test_match_fields_are_ignored_for_a_node_without_a_name() -> None:
    parsed = parse_node_selector(selector(term(fields=(expression("metadata.name", "In", "n1"),))))
    assert parsed.matches("", {})


_NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an"
    " alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for"
    " validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or"
    " '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or"
    " 'my_value',  or '12345', regex used for validation is"
    " '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_PATH = "nodeSelectorTerms[0].matchExpressions[0]"


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        pytest.param(
            expression("-zone", "Exists"),
            f'{_PATH}.key: Invalid value: "-zone": name part {_NAME_RULE}',
            id="bad name part",
        ),
        pytest.param(
            expression("a" * 64, "Exists"),
            f'{_PATH}.key: Invalid value: "{"a" * 64}": name part must be no more than'
            " 63 characters",
            id="name part too long",
        ),
        pytest.param(
            expression("Example.com/zone", "Exists"),
            f'{_PATH}.key: Invalid value: "Example.com/zone": prefix part a DNS-1123 subdomain'
            " must consist of lower case alphanumeric characters, '-' or '.', and must start and"
            " end with an alphanumeric character (e.g. 'example.com', regex used for validation"
            " is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            id="bad prefix",
        ),
        pytest.param(
            expression("/zone", "Exists"),
            f'{_PATH}.key: Invalid value: "/zone": prefix part must be non-empty',
            id="empty prefix",
        ),
        pytest.param(
            expression("a/b/c", "Exists"),
            f'{_PATH}.key: Invalid value: "a/b/c": a qualified name {_NAME_RULE} with an'
            " optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            id="two slashes",
        ),
        pytest.param(
            expression("zone", "In", "-bad"),
            f'{_PATH}.values[0]: Invalid value: "-bad": {_VALUE_RULE}',
            id="bad value",
        ),
        pytest.param(
            expression("zone", "In", "a" * 64),
            f'{_PATH}.values[0]: Invalid value: "{"a" * 64}": must be no more than 63 characters',
            id="value too long",
        ),
        pytest.param(
            expression("zone", "In", "a\n"),
            f'{_PATH}.values[0]: Invalid value: "a\\n": {_VALUE_RULE}',
            id="a trailing newline is not a valid value",
        ),
        pytest.param(
            expression("zone", "Exists", "a", "b"),
            f'{_PATH}.values: Invalid value: ["a","b"]: values set must be empty for exists'
            " and does not exist",
            id="a list is rendered as JSON",
        ),
    ],
)
def test_invalid_requirements_are_worded_as_apimachinery(
    requirement: dict[str, object], expected: str
) -> None:
    assert parse_node_selector(selector(term(requirement))).errors() == (expected,)
