"""The CEL adapter: device selectors evaluated in the Kubernetes DRA environment.

The only module that imports the CEL library (``cel_expr_python``, the CEL
project's wrapper of cel-cpp; ARCHITECTURE.md records why and the figures).
Swapping the library means rewriting this file only. What it provides,
as ``k8s.io/dynamic-resource-allocation/cel`` does upstream:

- one variable ``device`` with ``driver``, ``attributes[domain][id]``,
  ``capacity[domain][id]`` (Quantity) and ``allowMultipleAllocations``;
  names without a domain belong to the device's driver; ``version``
  attributes are Semver values;
- the Quantity and Semver libraries (``celfunctions``), ``cel.bind``,
  optional syntax (``.?x``, ``orValue``), the strings extension and
  cross-type numeric comparisons (``celnumeric``) and Kubernetes' format
  library (``celformat``, whose optionals come from rewriting the call
  sites);
- the missing-domain rule: looking up ``device.attributes["unknown.domain"]``
  finds an empty map, so ``"x" in device.attributes["d"]`` is safe, while a
  missing key inside a present domain is the runtime error ``no such key:
  x``; ``"d" in device.attributes``, ``size()`` and iteration see only the
  device's domains. The runtime cannot give a map a default, so the
  expression's lookups on those maps are rewritten onto CEL's optional
  library (``celdomains``) and the device is passed as it is;
- the result must be a bool: other compile-time types are a compile error,
  other runtime values a runtime error;
- the cost limit: cel-cpp's comprehension iteration budget is enforced during
  evaluation; exceeding it is upstream's runtime error for an exceeded cost
  budget, deterministic and cached. cel-cpp has no cost counter beyond it, so
  an evaluation that takes longer than ``cost_limit_seconds`` is reported
  with the same error as a backstop, but NOT cached: it depends on the
  moment (a GC pause), not on the expression and the device. Any other
  exception of the library becomes a runtime ``SelectorError``.

Invariants: each expression is compiled once (compile errors too) and kept;
a selector's outcome on a device depends only on the expression and the
device (the wall-time backstop aside, which is never cached), so it is
cached on the ``CelDevice``, which the allocator's device
model keeps for as long as the ResourceSlice version that holds it.
Synchronous and pure apart from those caches.
"""

from __future__ import annotations

import itertools
import logging
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from plugins.dynamicresources import (
    celdomains,
    celformat,
    cellists,
    celnet,
    celnumeric,
    celregex,
    celurls,
)
from plugins.dynamicresources import celfunctions as fn
from scheduler.framework import QuantityError, parse_quantity

MAX_EXPRESSION_LENGTH = 10 * 1024  # upstream CELSelectorExpressionMaxLength
DEFAULT_COST_LIMIT_SECONDS = 0.1  # stands in for CELSelectorExpressionMaxCost
MAX_COMPILED = 4096
# Selector results kept per device (oldest dropped first), keyed by the
# compiled selector's number, not its text: at most this many small entries
# per device whatever the number or length of the expressions pods use.
MAX_RESULTS_PER_DEVICE = 16
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"

_T = cel.Type
# cel-cpp's own extensions that upstream's base environment (k8s.io/apiserver
# pkg/cel/environment, 1.36) has: ext.Sets, ext.Lists (cel-cpp's newest,
# version 2, has what cel-go's version 3 adds: first/last), and
# ext.TwoVarComprehensions; ext.Strings is version 2, as upstream's.
_LIBRARIES = """\
name: dra-selectors
extensions:
  - name: sets
  - name: lists
  - name: two-var-comprehensions
""" + celnumeric.stdlib_exclusions()
STRINGS_VERSION = 2
log = logging.getLogger(__name__)
_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
# cel-cpp's comprehension iteration budget: deterministic, so upstream's
# cost error and cached like any other result.
_ITERATION_BUDGET = "Iteration budget exceeded"
_NO_SUCH_KEY = re.compile(r'^Key not found in map : "?(.*?)"?$')
# Compiled selectors' numbers, unique in the process and not only per
# environment: a device's result cache is keyed by them, and one device can
# meet environments with different features (tests, a gate flipped in a
# restarted manager), whose results differ.
_SELECTOR_KEYS = itertools.count(1)


class _Overrun(Exception):
    """The evaluation took longer than the wall-time backstop."""


class SelectorError(Exception):
    """A selector that does not compile or fails on a device.

    ``str()`` is upstream's wording: ``CEL compile error: ...`` or
    ``CEL runtime error: ...``; the allocator prefixes the claim, the request
    and the selector's position, and appends the expression."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"CEL {kind} error: {detail}")
        self.kind = kind
        self.detail = detail


class CelDevice:
    """One device as CEL sees it, built once per variant, with its selector
    results."""

    __slots__ = ("_attributes", "_capacity", "_variables", "allow_multiple", "driver", "results")

    def __init__(
        self,
        driver: str,
        attributes: Mapping[str, Mapping[str, Any]],
        capacity: Mapping[str, Mapping[str, Any]],
        allow_multiple: bool = False,
    ) -> None:
        self.driver = driver
        self._attributes = attributes
        self._capacity = capacity
        self.allow_multiple = allow_multiple
        # list-type attributes -> the variable, or the error building it; one
        # entry in practice (gates are process-wide)
        self._variables: dict[bool, dict[str, Any] | SelectorError] = {}
        # CompiledSelector.key -> outcome (True/False, or the error it
        # raised); at most MAX_RESULTS_PER_DEVICE entries
        self.results: dict[int, bool | SelectorError] = {}

    def input(self, *, list_types: bool = False) -> dict[str, Any]:
        """The ``device`` variable (without DRAListTypeAttributes a list
        attribute has no value); raises SelectorError for an attribute value
        CEL cannot represent. ``allowMultipleAllocations`` is there whatever
        DRAConsumableCapacity says, as upstream's scheduler declares and
        sets it in both positions (stored-expressions environment)."""
        variable = self._variables.get(list_types)
        if variable is None:
            try:
                variable = self._build(list_types)
            except SelectorError as error:
                variable = error
            self._variables[list_types] = variable
        if isinstance(variable, SelectorError):
            raise variable
        return variable

    def _build(self, list_types: bool) -> dict[str, Any]:
        attributes: dict[str, dict[str, Any]] = {}
        for name, attribute in self._attributes.items():
            domain, ident = split_qualified_name(name, self.driver)
            attributes.setdefault(domain, {})[ident] = _attribute_value(name, attribute, list_types)
        capacity: dict[str, dict[str, Any]] = {}
        for name, entry in self._capacity.items():
            domain, ident = split_qualified_name(name, self.driver)
            try:
                value = fn.quantity_value(parse_quantity(str(entry.get("value", "0"))))
            except QuantityError as error:
                raise SelectorError("runtime", f"capacity {name}: {error}") from None
            capacity.setdefault(domain, {})[ident] = value
        return {
            "driver": self.driver,
            "allowMultipleAllocations": self.allow_multiple,
            "attributes": attributes,
            "capacity": capacity,
        }


def split_qualified_name(name: str, driver: str) -> tuple[str, str]:
    """``domain/id`` -> (domain, id); a bare ``id`` belongs to the driver."""
    domain, slash, ident = name.partition("/")
    return (domain, ident) if slash else (driver, name)


# list attribute (DRAListTypeAttributes) -> the scalar kind of its elements,
# in the order upstream's getAttributeValue tries them
LIST_KINDS = (("ints", "int"), ("bools", "bool"), ("strings", "string"), ("versions", "version"))


def _attribute_value(name: str, attribute: Mapping[str, Any], list_types: bool) -> Any:
    if list_types:
        for key, kind in LIST_KINDS:
            values = attribute.get(key)
            if values is not None:
                return [_scalar(name, kind, value) for value in values]
    for kind in ("int", "bool", "string", "version"):
        if kind in attribute:
            return _scalar(name, kind, attribute[kind])
    raise SelectorError("runtime", f"attribute {name}: unsupported attribute value")


def _scalar(name: str, kind: str, value: Any) -> Any:
    if kind == "int":
        return int(value)
    if kind == "bool":
        return bool(value)
    if kind == "string":
        return str(value)
    try:
        return fn.semver_value(str(value))
    except ValueError as error:
        raise SelectorError(
            "runtime", f"attribute {name}: parse semantic version: {error}"
        ) from None


class CompiledSelector:
    """One compiled expression; ``matches`` evaluates it on a device."""

    __slots__ = (
        "_clock",
        "_cost_limit",
        "_list_types",
        "_program",
        "expression",
        "key",
    )

    def __init__(
        self,
        expression: str,
        program: Any,
        clock: Callable[[], float],
        cost_limit: float,
        *,
        key: int = 0,
        list_types: bool = False,
    ) -> None:
        self.expression = expression
        self._list_types = list_types
        self.key = key  # unique per environment: the devices' result-cache key
        self._program = program
        self._clock = clock
        self._cost_limit = cost_limit

    def matches(self, device: CelDevice) -> bool:
        """True/False, cached on the device; raises SelectorError (cached too,
        except a wall-time overrun, which depends on the moment)."""
        results = device.results
        cached = results.get(self.key)
        if cached is None:
            try:
                cached = self._evaluate(device)
            except _Overrun as error:
                raise SelectorError("runtime", COST_LIMIT_EXCEEDED) from error
            except SelectorError as error:
                cached = error
            if len(results) >= MAX_RESULTS_PER_DEVICE:
                del results[next(iter(results))]
            results[self.key] = cached
        if isinstance(cached, SelectorError):
            raise cached
        return cached

    def _evaluate(self, device: CelDevice) -> bool:
        started = self._clock()
        try:
            variable = device.input(list_types=self._list_types)
            result = self._program.eval(data={"device": variable})
        except RuntimeError as error:
            if _ITERATION_BUDGET in str(error):
                raise SelectorError("runtime", COST_LIMIT_EXCEEDED) from None
            raise SelectorError("runtime", _runtime_detail(str(error))) from None
        if self._clock() - started > self._cost_limit:
            raise _Overrun
        kind = result.type()
        if kind == _T.BOOL:
            return bool(result.value())
        if kind == _T.ERROR:
            raise SelectorError("runtime", _runtime_detail(str(result.value())))
        raise SelectorError(
            "runtime",
            f"CEL result of type {kind.name().lower()} could not be converted to bool",
        )


def _runtime_detail(text: str) -> str:
    text = _STATUS_PREFIX.sub("", text)
    missing = _NO_SUCH_KEY.match(text)
    return f"no such key: {missing[1]}" if missing else text


class CelEnvironment:
    """The DRA CEL environment and its compiled-expression cache."""

    def __init__(
        self,
        clock: Callable[[], float] = time.perf_counter,
        cost_limit_seconds: float = DEFAULT_COST_LIMIT_SECONDS,
        *,
        list_type_attributes: bool = False,
    ) -> None:
        # DRAListTypeAttributes (cel.Features): list attributes have values.
        # ``includes`` is declared whatever the gate: the scheduler compiles
        # with the "stored expressions" environment, which ignores
        # FeatureEnabled (k8s.io/apiserver pkg/cel/environment)
        self._list_types = list_type_attributes
        extensions = [
            ext_bindings.ExtBindings(),
            ext_optional.ExtOptional(),
            ext_strings.ExtStrings(STRINGS_VERSION),
            # after strings: its indexOf/lastIndexOf gain the list overloads
            cel.CelExtension("kubernetes.lists", _lists_decls()),
            cel.CelExtension("kubernetes.net", _net_decls()),
            cel.CelExtension("kubernetes.urls", _url_decls()),
            cel.CelExtension("kubernetes.regex", _regex_decls(celregex.Regexes())),
            cel.CelExtension("kubernetes.format", _format_decls()),
            cel.CelExtension("dra.lists", _includes_decls()),
        ]
        self._env = cel.NewEnv(
            config=cel.NewEnvConfigFromYaml(_LIBRARIES),
            variables={"device": _T.Map(_T.STRING, _T.DYN)},
            extensions=extensions,
            functions=[*_function_decls(), *_ordering_decls()],
        )
        self._clock = clock
        self._cost_limit = cost_limit_seconds
        self._compiled: dict[str, CompiledSelector | SelectorError] = {}

    def compile(self, expression: str) -> CompiledSelector:
        """The compiled selector; raises SelectorError("compile", ...)."""
        compiled = self._compiled.get(expression)
        if compiled is None:
            compiled = self._compile(expression)
            if len(self._compiled) >= MAX_COMPILED:
                del self._compiled[next(iter(self._compiled))]
            self._compiled[expression] = compiled
        if isinstance(compiled, SelectorError):
            raise compiled
        return compiled

    def _compile(self, expression: str) -> CompiledSelector | SelectorError:
        if len(expression) > MAX_EXPRESSION_LENGTH:
            return SelectorError(
                "compile",
                f"expression is {len(expression)} bytes long, "
                f"more than the limit of {MAX_EXPRESSION_LENGTH}",
            )
        try:
            # format.named()/validate() return optionals: onto list helpers
            source = celformat.rewrite(expression)
        except ValueError:
            source = expression  # unbalanced: the compiler says where
        try:
            program = self._env.compile(source)
        except RuntimeError as error:
            detail = _STATUS_PREFIX.sub("", str(error)).replace(" [INVALID_ARGUMENT]", "")
            detail = celformat.upstream_names(detail)
            return SelectorError("compile", f"compilation failed: {detail}")
        output = program.return_type()
        if output not in (_T.BOOL, _T.DYN):
            return SelectorError(
                "compile", f"must evaluate to bool or the unknown type, not {output.name().lower()}"
            )
        with_defaults = celdomains.rewrite(source)
        if with_defaults != source:
            try:
                program = self._env.compile(with_defaults)
            except RuntimeError as error:  # keep the original: no default for missing domains
                log.warning("DynamicResources: CEL rewrite of %r failed: %s", expression, error)
        return CompiledSelector(
            expression,
            program,
            self._clock,
            self._cost_limit,
            key=next(_SELECTOR_KEYS),
            list_types=self._list_types,
        )


def _overload(
    name: str, result: Any, params: list[Any], impl: Callable[..., Any], member: bool = False
) -> Any:
    return cel.Overload(name, result, params, is_member=member, impl=impl)


def _function_decls() -> list[Any]:
    map_, str_, int_, bool_ = _T.MAP, _T.STRING, _T.INT, _T.BOOL

    def member(name: str, result: Any, impl: Callable[..., Any], *args: Any) -> Any:
        ids = "_".join(a.name().lower() for a in args)
        return _overload(f"k8s_{name}_{ids}", result, [map_, *args], impl, member=True)

    return [
        cel.FunctionDecl("quantity", [_overload("k8s_quantity", map_, [str_], fn.quantity)]),
        cel.FunctionDecl(
            "isQuantity", [_overload("k8s_is_quantity", bool_, [str_], fn.is_quantity)]
        ),
        cel.FunctionDecl(
            "semver",
            [
                _overload("k8s_semver", map_, [str_], fn.semver),
                _overload("k8s_semver_normalize", map_, [str_, bool_], fn.semver),
            ],
        ),
        cel.FunctionDecl(
            "isSemver",
            [
                _overload("k8s_is_semver", bool_, [str_], fn.is_semver),
                _overload("k8s_is_semver_normalize", bool_, [str_, bool_], fn.is_semver),
            ],
        ),
        cel.FunctionDecl("sign", [member("sign", int_, fn.sign)]),
        cel.FunctionDecl("isInteger", [member("isInteger", bool_, fn.is_integer)]),
        cel.FunctionDecl("asInteger", [member("asInteger", int_, fn.as_integer)]),
        cel.FunctionDecl(
            "asApproximateFloat", [member("asApproximateFloat", _T.DOUBLE, fn.as_approximate_float)]
        ),
        cel.FunctionDecl(
            "add", [member("add", map_, fn.add, map_), member("add", map_, fn.add, int_)]
        ),
        cel.FunctionDecl(
            "sub", [member("sub", map_, fn.sub, map_), member("sub", map_, fn.sub, int_)]
        ),
        cel.FunctionDecl("compareTo", [member("compareTo", int_, fn.compare_to, map_)]),
        cel.FunctionDecl(
            "isGreaterThan", [member("isGreaterThan", bool_, fn.is_greater_than, map_)]
        ),
        cel.FunctionDecl("isLessThan", [member("isLessThan", bool_, fn.is_less_than, map_)]),
        cel.FunctionDecl("major", [member("major", int_, fn.major)]),
        cel.FunctionDecl("minor", [member("minor", int_, fn.minor)]),
        cel.FunctionDecl("patch", [member("patch", int_, fn.patch)]),
    ]


def _lists_decls() -> list[Any]:
    """Upstream's Kubernetes ``lists`` library on any list."""
    list_, dyn, int_, bool_ = _T.List(_T.DYN), _T.DYN, _T.INT, _T.BOOL

    def on_list(name: str, result: Any, impl: Callable[..., Any], *args: Any) -> Any:
        return cel.FunctionDecl(
            name, [_overload(f"k8s_list_{name}", result, [list_, *args], impl, member=True)]
        )

    return [
        on_list("isSorted", bool_, cellists.is_sorted),
        on_list("sum", dyn, cellists.total),
        on_list("min", dyn, cellists.minimum),
        on_list("max", dyn, cellists.maximum),
        on_list("indexOf", int_, cellists.index_of, dyn),
        on_list("lastIndexOf", int_, cellists.last_index_of, dyn),
    ]


_KINDS = {
    "bool": _T.BOOL,
    "int": _T.INT,
    "uint": _T.UINT,
    "double": _T.DOUBLE,
    "string": _T.STRING,
    "bytes": _T.BYTES,
    "timestamp": _T.TIMESTAMP,
    "duration": _T.DURATION,
}


def _ordering_decls() -> list[Any]:
    """``<``, ``<=``, ``>``, ``>=`` with cross-type numeric overloads
    (``celnumeric``), evaluated by the runtime's own implementations."""
    by_operator: dict[str, list[Any]] = {}
    for operator, overload_id, (left, right) in celnumeric.overloads():
        by_operator.setdefault(operator, []).append(
            cel.Overload(overload_id, _T.BOOL, [_KINDS[left], _KINDS[right]])
        )
    return [cel.FunctionDecl(operator, decls) for operator, decls in by_operator.items()]


def _format_decls() -> list[Any]:
    """Upstream's Kubernetes ``format`` library; optionals through list
    helpers and ``celformat.rewrite``."""
    map_, str_ = _T.MAP, _T.STRING
    decls = [
        cel.FunctionDecl(
            f"format.{name}", [_overload(f"k8s_format_{name}", map_, [], celformat.constant(name))]
        )
        for name in celformat.VALIDATORS
    ]
    decls.append(
        cel.FunctionDecl(
            celformat.NAMED_LIST,
            [_overload("k8s_format_named_list", _T.List(map_), [str_], celformat.named_list)],
        )
    )
    decls.append(
        cel.FunctionDecl(
            celformat.VALIDATE_LIST,
            [
                _overload(
                    "k8s_format_validate_list",
                    _T.List(_T.List(str_)),
                    [map_, str_],
                    celformat.validate_list,
                    member=True,
                )
            ],
        )
    )
    return decls


def _includes_decls() -> list[Any]:
    """DRA's ``includes`` (added for DRAListTypeAttributes, declared in every
    position of the gate, as upstream's stored-expressions environment):
    ``<dyn>.includes(<dyn>)``."""
    return [
        cel.FunctionDecl(
            "includes",
            [
                _overload(
                    "dra_includes_dyn_dyn",
                    _T.BOOL,
                    [_T.DYN, _T.DYN],
                    cellists.includes,
                    member=True,
                )
            ],
        )
    ]


def _net_decls() -> list[Any]:
    """Upstream's Kubernetes ``IP`` and ``CIDR`` libraries; an address and a
    prefix are tagged maps (``celnet``)."""
    map_, str_, int_, bool_ = _T.MAP, _T.STRING, _T.INT, _T.BOOL

    def on_map(name: str, result: Any, impl: Callable[..., Any], *args: Any) -> Any:
        ids = "_".join(a.name().lower() for a in args)
        return _overload(f"k8s_net_{name}_{ids}", result, [map_, *args], impl, member=True)

    def function(name: str, result: Any, impl: Callable[..., Any]) -> Any:
        return cel.FunctionDecl(name, [_overload(f"k8s_net_{name}", result, [str_], impl)])

    return [
        cel.FunctionDecl(
            "ip",
            [
                _overload("k8s_net_ip", map_, [str_], celnet.ip),
                on_map("ip", map_, celnet.cidr_ip),
            ],
        ),
        function("isIP", bool_, celnet.is_ip),
        function("ip.isCanonical", bool_, celnet.is_canonical),
        function("cidr", map_, celnet.cidr),
        function("isCIDR", bool_, celnet.is_cidr),
        cel.FunctionDecl("family", [on_map("family", int_, celnet.family)]),
        cel.FunctionDecl("isUnspecified", [on_map("isUnspecified", bool_, celnet.is_unspecified)]),
        cel.FunctionDecl("isLoopback", [on_map("isLoopback", bool_, celnet.is_loopback)]),
        cel.FunctionDecl(
            "isLinkLocalMulticast",
            [on_map("isLinkLocalMulticast", bool_, celnet.is_link_local_multicast)],
        ),
        cel.FunctionDecl(
            "isLinkLocalUnicast",
            [on_map("isLinkLocalUnicast", bool_, celnet.is_link_local_unicast)],
        ),
        cel.FunctionDecl(
            "isGlobalUnicast", [on_map("isGlobalUnicast", bool_, celnet.is_global_unicast)]
        ),
        cel.FunctionDecl(
            "containsIP",
            [
                on_map("containsIP", bool_, celnet.contains_ip, map_),
                on_map("containsIP", bool_, celnet.contains_ip, str_),
            ],
        ),
        cel.FunctionDecl(
            "containsCIDR",
            [
                on_map("containsCIDR", bool_, celnet.contains_cidr, map_),
                on_map("containsCIDR", bool_, celnet.contains_cidr, str_),
            ],
        ),
        cel.FunctionDecl("masked", [on_map("masked", map_, celnet.masked)]),
        cel.FunctionDecl("prefixLength", [on_map("prefixLength", int_, celnet.prefix_length)]),
        cel.FunctionDecl(
            "string", [_overload("k8s_net_string_map", str_, [map_], celnet.to_string)]
        ),
    ]


def _url_decls() -> list[Any]:
    """Upstream's Kubernetes ``URLs`` library; a URL is a tagged map (``celurls``)."""
    map_, str_ = _T.MAP, _T.STRING

    def accessor(name: str, result: Any, impl: Callable[..., Any]) -> Any:
        return cel.FunctionDecl(
            name, [_overload(f"k8s_url_{name}", result, [map_], impl, member=True)]
        )

    return [
        cel.FunctionDecl("url", [_overload("k8s_url", map_, [str_], celurls.url)]),
        cel.FunctionDecl("isURL", [_overload("k8s_is_url", _T.BOOL, [str_], celurls.is_url)]),
        accessor("getScheme", str_, celurls.get_scheme),
        accessor("getHost", str_, celurls.get_host),
        accessor("getHostname", str_, celurls.get_hostname),
        accessor("getPort", str_, celurls.get_port),
        accessor("getEscapedPath", str_, celurls.get_escaped_path),
        accessor("getQuery", _T.Map(str_, _T.List(str_)), celurls.get_query),
    ]


def _regex_decls(regexes: celregex.Regexes) -> list[Any]:
    """Upstream's Kubernetes ``Regex`` library (RE2, ``celregex``)."""
    str_ = _T.STRING
    return [
        cel.FunctionDecl(
            "find", [_overload("k8s_find", str_, [str_, str_], regexes.find, member=True)]
        ),
        cel.FunctionDecl(
            "findAll",
            [
                _overload("k8s_find_all", _T.List(str_), [str_, str_], regexes.find_all, True),
                _overload(
                    "k8s_find_all_n", _T.List(str_), [str_, str_, _T.INT], regexes.find_all, True
                ),
            ],
        ),
    ]
