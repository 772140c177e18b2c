"""Kubernetes' CEL ``format`` library (``k8s.io/apiserver/pkg/cel/library``
``Format``, in the base environment since 1.31), for the DRA selector
adapter.

Upstream declares ``format.dns1123Label()`` (and one such constant per
format below) returning a Format, ``format.named(string)`` returning
``optional<Format>`` (none for an unknown name) and
``<Format>.validate(string)`` returning ``optional<list<string>>``: none
when the string is valid, else the validator's messages. cel-expr-python
cannot return an optional from a Python function, so:

- a Format travels through CEL as a tagged map ``{FORMAT_TAG: name}``;
- the Python functions return a list of at most one element instead
  (``named_list``: ``[format]`` or ``[]``; ``validate_list``: ``[]`` or
  ``[messages]``), declared under helper names (``NAMED_LIST``,
  ``VALIDATE_LIST``);
- ``rewrite`` turns each call site ``format.named(a)`` into
  ``format.k8sNamedList(a)[?0]`` and each member call ``x.validate(a)``
  into ``x.k8sValidateList(a)[?0]``: CEL's optional list index makes the
  optional upstream returns (``[][?0]`` is ``optional.none()``). Only the
  function name and a suffix change, so the receiver ``x`` needs no
  parsing; arguments are rewritten too (nested calls), string literals are
  copied verbatim. ``validate`` is no other function's name in the DRA
  environment, so every member call of it is the library's.

The validators and their messages are apimachinery's (``NameIsDNSLabel``,
``IsQualifiedName``...) and kube-openapi's ``strfmt`` (uuid, byte, date,
datetime); ``uri`` is Go's ``url.ParseRequestURI`` (``celurls``). Pure,
linear in the input; ``rewrite`` raises ValueError only for text whose
brackets or literals do not close (the caller then compiles the original).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import date
from typing import Any

from plugins.dynamicresources import celurls
from plugins.dynamicresources.celdomains import closing_bracket, literal_end

FORMAT_TAG = "__k8s_format__"
NAMED_LIST = "format.k8sNamedList"
VALIDATE_LIST = "k8sValidateList"

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + "(\\." + _LABEL + ")*"
_DNS1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"
_KEY = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = "(" + _KEY + ")?"
# Go's ^...$ match the whole text (Python's $ also before a final newline):
# every pattern is used with fullmatch
_LABEL_RE = re.compile(_LABEL)
_SUBDOMAIN_RE = re.compile(_SUBDOMAIN)
_DNS1035_RE = re.compile(_DNS1035)
_KEY_RE = re.compile(_KEY)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE)
_UUID_RE = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.I)
_BASE64_RE = re.compile(
    r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})"
)
_DATE_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME_RE = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))")


def _regex_error(message: str, regex: str, *examples: str) -> str:
    """apimachinery's ``RegexError``."""
    if not examples:
        return f"{message} (regex used for validation is '{regex}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{regex}')"


def _too_long(limit: int, unit: str = "characters") -> str:
    return f"must be no more than {limit} {unit}"


def _mask_trailing_dash(name: str) -> str:
    """apimachinery's ``maskTrailingDash`` (for the ``*Prefix`` formats)."""
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def dns1123_label(value: str) -> list[str]:
    errors = []
    if len(value.encode()) > 63:
        errors.append(_too_long(63))
    if not _LABEL_RE.fullmatch(value):
        if _SUBDOMAIN_RE.fullmatch(value):
            errors.append("must not contain dots")
        else:
            errors.append(
                _regex_error(
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                    "characters or '-', and must start and end with an alphanumeric character",
                    _LABEL,
                    "my-name",
                    "123-abc",
                )
            )
    return errors


def dns1123_subdomain(value: str, unit: str = "characters") -> list[str]:
    errors = []
    if len(value.encode()) > 253:
        errors.append(_too_long(253, unit))
    if not _SUBDOMAIN_RE.fullmatch(value):
        errors.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character",
                _SUBDOMAIN,
                "example.com",
            )
        )
    return errors


def dns1035_label(value: str) -> list[str]:
    errors = []
    if len(value.encode()) > 63:
        errors.append(_too_long(63))
    if not _DNS1035_RE.fullmatch(value):
        errors.append(
            _regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character",
                _DNS1035,
                "my-name",
                "abc-123",
            )
        )
    return errors


_KEY_MESSAGE = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)


def qualified_name(value: str) -> list[str]:
    """apimachinery ``content.IsLabelKey`` (its lengths are in bytes)."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        return [
            "a valid label key "
            + _regex_error(_KEY_MESSAGE, _KEY, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += ["prefix part " + m for m in dns1123_subdomain(prefix, "bytes")]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errors.append("name part " + _too_long(63, "bytes"))
    if not _KEY_RE.fullmatch(name):
        errors.append(
            "name part " + _regex_error(_KEY_MESSAGE, _KEY, "MyName", "my.name", "123-abc")
        )
    return errors


def label_value(value: str) -> list[str]:
    """apimachinery ``content.IsLabelValue``."""
    errors = []
    if len(value.encode()) > 63:
        errors.append(_too_long(63, "bytes"))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errors.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, "
                "'-', '_' or '.', and must start and end with an alphanumeric character",
                _LABEL_VALUE,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errors


def _uri(value: str) -> list[str]:
    error = celurls.request_uri_error(value)
    return [] if error is None else [error]


def _is_date(value: str) -> bool:
    match = _DATE_RE.fullmatch(value)
    if match is None:
        return False
    try:
        date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return False
    return True


def _is_datetime(value: str) -> bool:
    """kube-openapi ``strfmt.IsDateTime``."""
    if len(value) < 4:
        return False
    parts = value.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return False
    match = _TIME_RE.fullmatch(parts[1])
    if match is None:
        return False
    return match[1] <= "23" and match[2] <= "59" and match[3] <= "59"


def _check(test: Callable[[str], bool], message: str) -> Callable[[str], list[str]]:
    return lambda value: [] if test(value) else [message]


VALIDATORS: Mapping[str, Callable[[str], list[str]]] = {
    "dns1123Label": dns1123_label,
    "dns1123Subdomain": dns1123_subdomain,
    "dns1035Label": dns1035_label,
    "qualifiedName": qualified_name,
    "dns1123LabelPrefix": lambda v: dns1123_label(_mask_trailing_dash(v)),
    "dns1123SubdomainPrefix": lambda v: dns1123_subdomain(_mask_trailing_dash(v)),
    "dns1035LabelPrefix": lambda v: dns1035_label(_mask_trailing_dash(v)),
    "labelValue": label_value,
    "uri": _uri,
    "uuid": _check(lambda v: bool(_UUID_RE.fullmatch(v)), "does not match the UUID format"),
    "byte": _check(lambda v: bool(_BASE64_RE.fullmatch(v)), "invalid base64"),
    "date": _check(_is_date, "invalid date"),
    "datetime": _check(_is_datetime, "invalid datetime"),
}


def constant(name: str) -> Callable[[], dict[str, str]]:
    """The implementation of ``format.<name>()``."""
    value = {FORMAT_TAG: name}
    return lambda: dict(value)


def named_list(name: str) -> list[dict[str, str]]:
    """``format.named(name)`` as a list of at most one Format."""
    return [{FORMAT_TAG: name}] if name in VALIDATORS else []


def validate_list(value: Any, text: str) -> list[list[str]]:
    """``<Format>.validate(text)`` as ``[]`` (valid) or ``[messages]``."""
    name = value.get(FORMAT_TAG) if isinstance(value, Mapping) else None
    validator = VALIDATORS.get(name) if isinstance(name, str) else None
    if validator is None:
        raise ValueError("no such overload: validate needs a Format")
    errors = validator(text)
    return [errors] if errors else []


# ------------------------------------------------------------------ rewrite
def upstream_names(message: str) -> str:
    """A compiler message about the rewritten text, with upstream's names."""
    return message.replace(NAMED_LIST, "format.named").replace(VALIDATE_LIST, "validate")


def rewrite(expression: str) -> str:
    """``expression`` with ``format.named(...)`` and ``.validate(...)`` calls
    turned into their list helpers indexed with ``[?0]``."""
    return _rewrite(expression, 0, len(expression))


def _ident_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _skip(text: str, i: int, end: int) -> int:
    while i < end and text[i].isspace():
        i += 1
    return i


def _word(text: str, i: int, end: int, word: str) -> int | None:
    """Where ``word`` (a whole identifier at ``i``) ends, else None."""
    if not text.startswith(word, i):
        return None
    j = i + len(word)
    return None if j < end and _ident_char(text[j]) else j


def _call(text: str, i: int, end: int) -> tuple[int, int] | None:
    """``(`` after optional space at ``i``: (its index, its partner's)."""
    j = _skip(text, i, end)
    if j >= end or text[j] != "(":
        return None
    return j, closing_bracket(text, j)


def _rewrite(text: str, start: int, end: int) -> str:
    out: list[str] = []
    i = start
    while i < end:
        literal = literal_end(text, i)
        if literal is not None:
            out.append(text[i:literal])
            i = literal
            continue
        char = text[i]
        if char == "." and (found := _member_validate(text, i, end)) is not None:
            open_, close = found
            out.append(f".{VALIDATE_LIST}({_rewrite(text, open_ + 1, close)})[?0]")
            i = close + 1
            continue
        if (
            char == "f"
            and (i == start or not _ident_char(text[i - 1]))
            and not _after_dot(text, start, i)
            and (found := _format_named(text, i, end)) is not None
        ):
            open_, close = found
            out.append(f"{NAMED_LIST}({_rewrite(text, open_ + 1, close)})[?0]")
            i = close + 1
            continue
        if _ident_char(char):
            j = i
            while j < end and _ident_char(text[j]):
                j += 1
            out.append(text[i:j])
            i = j
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _after_dot(text: str, start: int, i: int) -> bool:
    j = i - 1
    while j >= start and text[j].isspace():
        j -= 1
    return j >= start and text[j] == "."


def _member_validate(text: str, i: int, end: int) -> tuple[int, int] | None:
    j = _skip(text, i + 1, end)
    after = _word(text, j, end, "validate")
    return None if after is None else _call(text, after, end)


def _format_named(text: str, i: int, end: int) -> tuple[int, int] | None:
    after = _word(text, i, end, "format")
    if after is None:
        return None
    j = _skip(text, after, end)
    if j >= end or text[j] != ".":
        return None
    named = _word(text, _skip(text, j + 1, end), end, "named")
    return None if named is None else _call(text, named, end)
