"""Kubernetes' CEL format library in DRA selectors: upstream's own table
(``k8s.io/apiserver/pkg/cel/library/format_test.go`` v0.36.2, case names as
ids) evaluated through the adapter, then the call-site rewrite that turns
the list helpers into the optionals upstream returns."""

from __future__ import annotations

import itertools

import pytest

from plugins.dynamicresources import celformat
from plugins.dynamicresources.cel import CelDevice, SelectorError
from tests.unit.plugins.dynamicresources.fakes import steady_cel

ENV = steady_cel()
DEVICE = CelDevice("d", {"name": {"string": "My_Name"}}, {})
NONE = "optional.none()"


def _errors(*messages: str) -> str:
    quoted = ", ".join("'" + m.replace("\\", "\\\\").replace("'", "\\'") + "'" for m in messages)
    return f"optional.of([{quoted}])"


LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
QUALIFIED = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        pytest.param(
            'format.dns1123Label().validate("my-label-name")', NONE, id="example_usage_dns1123Label"
        ),
        pytest.param(
            'format.dns1123Subdomain().validate("apiextensions.k8s.io")',
            NONE,
            id="example_usage_dns1123Subdomain",
        ),
        pytest.param(
            'format.qualifiedName().validate("apiextensions.k8s.io/v1beta1")',
            NONE,
            id="example_usage_qualifiedName",
        ),
        pytest.param(
            'format.dns1123LabelPrefix().validate("my-label-prefix-")',
            NONE,
            id="example_usage_dns1123LabelPrefix",
        ),
        pytest.param(
            'format.dns1123SubdomainPrefix().validate("mysubdomain.prefix.-")',
            NONE,
            id="example_usage_dns1123SubdomainPrefix",
        ),
        pytest.param(
            'format.dns1035LabelPrefix().validate("my-label-prefix-")',
            NONE,
            id="example_usage_dns1035LabelPrefix",
        ),
        pytest.param('format.uri().validate("http://example.com")', NONE, id="example_usage_uri"),
        pytest.param(
            'format.uuid().validate("123e4567-e89b-12d3-a456-426614174000")',
            NONE,
            id="example_usage_uuid",
        ),
        pytest.param('format.byte().validate("aGVsbG8=")', NONE, id="example_usage_byte"),
        pytest.param('format.date().validate("2021-01-01")', NONE, id="example_usage_date"),
        pytest.param(
            'format.datetime().validate("2021-01-01T00:00:00Z")', NONE, id="example_usage_datetime"
        ),
        pytest.param(
            'format.dns1123Label().validate("contains a space")', _errors(LABEL), id="dns1123Label"
        ),
        pytest.param(
            'format.dns1123Subdomain().validate("contains a space")',
            _errors(SUBDOMAIN),
            id="dns1123Subdomain",
        ),
        pytest.param(
            'format.dns1035Label().validate("contains a space")',
            _errors(DNS1035),
            id="dns1035Label",
        ),
        pytest.param(
            'format.qualifiedName().validate("contains a space")',
            _errors(QUALIFIED),
            id="qualifiedName",
        ),
        pytest.param(
            'format.dns1123LabelPrefix().validate("contains a space-")',
            _errors(LABEL),
            id="dns1123LabelPrefix",
        ),
        pytest.param(
            'format.dns1123SubdomainPrefix().validate("contains a space-")',
            _errors(SUBDOMAIN),
            id="dns1123SubdomainPrefix",
        ),
        pytest.param(
            'format.dns1035LabelPrefix().validate("contains a space-")',
            _errors(DNS1035),
            id="dns1035LabelPrefix",
        ),
        pytest.param(
            'format.dns1123Label().validate("my-label-name")', NONE, id="dns1123Label_Success"
        ),
        pytest.param(
            'format.dns1123Subdomain().validate("example.com")', NONE, id="dns1123Subdomain_Success"
        ),
        pytest.param(
            'format.dns1035Label().validate("my-label-name")', NONE, id="dns1035Label_Success"
        ),
        pytest.param(
            'format.qualifiedName().validate("my.name")', NONE, id="qualifiedName_Success"
        ),
        pytest.param(
            'format.byte().validate("aGVsbG8")', _errors("invalid base64"), id="byte_failure"
        ),
        pytest.param(
            'format.date().validate("2020-01-32")', _errors("invalid date"), id="date_failure"
        ),
        pytest.param(
            'format.datetime().validate("2020-01-32T00:00:00Z")',
            _errors("invalid datetime"),
            id="datetime_failure",
        ),
        pytest.param(
            'format.labelValue().validate("my-cool-label-Value")', NONE, id="labelValue_success"
        ),
        pytest.param(
            'format.labelValue().validate("my-cool-label-Value!!\\n\\n!!!")',
            _errors(LABEL_VALUE),
            id="labelValue_failure",
        ),
        pytest.param(
            'format.dns1123Label().validate("a.b")',
            _errors("must not contain dots"),
            id="IsDNS1123Label: a subdomain is no label",
        ),
    ],
)
def test_upstream_format_table(expression: str, expected: str) -> None:
    assert ENV.compile(f"{expression} == {expected}").matches(DEVICE) is True


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        pytest.param('format.named("unknown").hasValue()', False, id="unknown_format"),
        pytest.param('format.named("dns1123Label").hasValue()', True, id="lookup and comparison"),
        pytest.param(
            'format.named("uuid").value() == format.uuid()',
            True,
            id="comparison with lookup succeeds",
        ),
        pytest.param("format.uuid() == format.date()", False, id="compare_uuid_date"),
        pytest.param(
            'format.named("labelValue").value().validate(device.attributes["d"].name).hasValue()',
            False,
            id="a device attribute validated through a named format",
        ),
        pytest.param(
            'format.dns1123Label().validate(device.attributes["d"].name).value().size() == 1',
            True,
            id="the messages of an invalid attribute",
        ),
        pytest.param(
            '"x.validate(y)" == "x" + ".validate(y)"', True, id="string literals are not rewritten"
        ),
    ],
)
def test_format_in_selectors(expression: str, expected: bool) -> None:
    assert ENV.compile(expression).matches(DEVICE) is expected


@pytest.mark.parametrize("name", list(celformat.VALIDATORS))
def test_every_format_constant_is_found_by_name(name: str) -> None:
    assert ENV.compile(f'format.named("{name}").value() == format.{name}()').matches(DEVICE)


def test_distinct_formats_differ() -> None:
    for left, right in itertools.permutations(list(celformat.VALIDATORS)[:4], 2):
        assert ENV.compile(f"format.{left}() != format.{right}()").matches(DEVICE)


@pytest.mark.parametrize(
    ("expression", "rewritten"),
    [
        pytest.param(
            'format.named("x")', 'format.k8sNamedList("x")[?0]', id="named becomes a list index"
        ),
        pytest.param(
            'f.validate("a")', 'f.k8sValidateList("a")[?0]', id="validate on any receiver"
        ),
        pytest.param(
            'format.named(format.named("a").value().validate("b").value()[0])',
            'format.k8sNamedList(format.k8sNamedList("a")[?0].value()'
            '.k8sValidateList("b")[?0].value()[0])[?0]',
            id="nested calls",
        ),
        pytest.param('"format.named(1)"', '"format.named(1)"', id="string literal verbatim"),
        pytest.param("x.format.named(1)", "x.format.named(1)", id="a field named format"),
        pytest.param("myformat.named(1)", "myformat.named(1)", id="another identifier"),
        pytest.param("x.validated(1)", "x.validated(1)", id="another member"),
    ],
)
def test_rewrite(expression: str, rewritten: str) -> None:
    assert celformat.rewrite(expression) == rewritten


def test_a_wrong_argument_is_reported_under_upstreams_name() -> None:
    with pytest.raises(SelectorError, match="no matching overload for 'validate'"):
        ENV.compile("format.dns1123Label().validate(1)")


def test_a_too_long_label_says_so_first() -> None:
    assert celformat.dns1123_label("a" * 64) == ["must be no more than 63 characters"]
