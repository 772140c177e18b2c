"""Claim constraints: ``matchAttribute`` and ``distinctAttribute``.

A constraint covers the requests it names (all when it names none; a
request name covers its subrequests, ``req/sub`` one subrequest). ``add``
is called for every device the search picks and says whether the
constraint still holds; ``remove`` undoes one ``add`` that returned True.
Attribute lookup: the fully qualified name, or, in the driver's own domain,
the bare id. Values compare by type and value (versions as strings, valid
because semantic versions have one minimal form).

Two ways of comparing, as upstream's allocators (v0.36.2):

- scalar (*stable* / *incubating*, what kube-scheduler 1.36 runs whatever
  DRAListTypeAttributes says): an attribute without a scalar value (a list)
  has no type, so it matches nothing and is distinct from nothing, but,
  like any attribute, may be the first device;
- sets (*experimental*, ``Features.list_type_constraints``, which no gate
  sets in 1.36): a scalar is a one-element
  set, a list the set of its elements; ``matchAttribute`` keeps the running
  intersection, which must stay non-empty, ``distinctAttribute`` wants the
  new set disjoint from each one held. An attribute with neither a scalar
  nor a non-empty list is no set and is refused. As upstream, ``remove``
  does not widen the intersection again: only the count goes down, and the
  next first device starts afresh.
"""

from __future__ import annotations

from typing import Any

from plugins.dynamicresources.model import Device, Raw

_SCALAR_KINDS = ("string", "int", "bool", "version")
# list field -> its elements' kind, in upstream's attributeAsSet order
_SET_KINDS = (("ints", "int"), ("bools", "bool"), ("strings", "string"), ("versions", "version"))
_UNTYPED = ("", None)  # an attribute with no scalar value

AttributeSet = tuple[str, frozenset[Any]]


class Constraint:
    def __init__(self, requests: frozenset[str], attribute: str, *, sets: bool = False) -> None:
        self.requests = requests
        self.attribute = attribute
        self.sets = sets  # DRAListTypeAttributes

    def applies(self, request: str, sub: str) -> bool:
        if not self.requests:
            return True
        return request in self.requests or bool(sub and f"{request}/{sub}" in self.requests)

    def add(self, request: str, sub: str, device: Device) -> bool:
        raise NotImplementedError

    def remove(self, request: str, sub: str) -> None:
        raise NotImplementedError


def find_attribute(device: Device, name: str) -> Raw | None:
    """A fully qualified attribute; a name in the driver's domain also finds
    the unqualified attribute."""
    attribute = device.attributes.get(name)
    if attribute is None:
        domain, slash, ident = name.partition("/")
        if slash and domain == device.id[0]:
            attribute = device.attributes.get(ident)
    return attribute


def scalar_value(attribute: Raw) -> tuple[str, Any]:
    """(type, value), or ``_UNTYPED`` for an attribute without a scalar."""
    for kind in _SCALAR_KINDS:
        if kind in attribute:
            return (kind, attribute[kind])
    return _UNTYPED


def attribute_set(attribute: Raw) -> AttributeSet | None:
    """(element type, values) of an attribute seen as a set; None when it
    has neither a non-empty list nor a scalar."""
    for key, kind in _SET_KINDS:
        values = attribute.get(key)
        if values:
            return (kind, frozenset(values))
    for kind in _SCALAR_KINDS:
        if kind in attribute:
            return (kind, frozenset((attribute[kind],)))
    return None


def _overlap(left: AttributeSet, right: AttributeSet) -> bool:
    return left[0] == right[0] and not left[1].isdisjoint(right[1])


class MatchAttribute(Constraint):
    """All affected devices share the attribute (same type and value, or,
    with sets, a common element)."""

    def __init__(self, requests: frozenset[str], attribute: str, *, sets: bool = False) -> None:
        super().__init__(requests, attribute, sets=sets)
        self.value: tuple[str, Any] | None = None
        self.intersection: AttributeSet | None = None
        self.count = 0

    def add(self, request: str, sub: str, device: Device) -> bool:
        if not self.applies(request, sub):
            return True
        attribute = find_attribute(device, self.attribute)
        if attribute is None:
            return False
        if self.sets:
            return self._add_set(attribute)
        value = scalar_value(attribute)
        if self.count == 0:
            self.value = value
        elif value is _UNTYPED or value != self.value:
            return False
        self.count += 1
        return True

    def _add_set(self, attribute: Raw) -> bool:
        values = attribute_set(attribute)
        if values is None:
            return False
        if self.count == 0:
            self.intersection = values
        else:
            held = self.intersection
            if held is None or not _overlap(held, values):
                return False
            self.intersection = (held[0], held[1] & values[1])
        self.count += 1
        return True

    def remove(self, request: str, sub: str) -> None:
        if self.applies(request, sub):
            self.count -= 1


class DistinctAttribute(Constraint):
    """Affected devices have pairwise different values (one kept per
    request), or, with sets, pairwise disjoint ones."""

    def __init__(self, requests: frozenset[str], attribute: str, *, sets: bool = False) -> None:
        super().__init__(requests, attribute, sets=sets)
        self.values: dict[str, Raw] = {}
        self.count = 0

    def add(self, request: str, sub: str, device: Device) -> bool:
        if not self.applies(request, sub):
            return True
        attribute = find_attribute(device, self.attribute)
        if attribute is None:
            return False
        if self.count and not self._distinct(attribute):
            return False
        self.values[request] = attribute
        self.count += 1
        return True

    def _distinct(self, attribute: Raw) -> bool:
        if self.sets:
            values = attribute_set(attribute)
            if values is None:
                return False
            for held in self.values.values():
                held_set = attribute_set(held)
                if held_set is not None and _overlap(held_set, values):
                    return False
            return True
        value = scalar_value(attribute)
        for held in self.values.values():
            if value is _UNTYPED or scalar_value(held) == value:
                return False
        return True

    def remove(self, request: str, sub: str) -> None:
        if self.applies(request, sub):
            self.values.pop(request, None)
            self.count -= 1
