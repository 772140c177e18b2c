"""Claim constraints: ``matchAttribute`` and ``distinctAttribute``.

A constraint covers the requests it names (all when it names none; a
request name covers its subrequests, ``req/sub`` one subrequest). ``add``
is called for every device the search picks and says whether the
constraint still holds; ``remove`` undoes one ``add`` that returned True.
Attribute lookup: the fully qualified name, or, in the driver's own domain,
the bare id. Values compare by type and value (versions as strings, valid
because semantic versions have one minimal form).
"""

from __future__ import annotations

from typing import Any

from plugins.dynamicresources.model import Device


class Constraint:
    def __init__(self, requests: frozenset[str], attribute: str) -> None:
        self.requests = requests
        self.attribute = attribute

    def applies(self, request: str, sub: str) -> bool:
        if not self.requests:
            return True
        return request in self.requests or bool(sub and f"{request}/{sub}" in self.requests)

    def add(self, request: str, sub: str, device: Device) -> bool:
        raise NotImplementedError

    def remove(self, request: str, sub: str) -> None:
        raise NotImplementedError


def lookup_attribute(device: Device, name: str) -> tuple[str, Any] | None:
    """(type, value) of a fully qualified attribute; a name in the driver's
    domain also finds the unqualified attribute."""
    attribute = device.attributes.get(name)
    if attribute is None:
        domain, slash, ident = name.partition("/")
        if slash and domain == device.id[0]:
            attribute = device.attributes.get(ident)
    if attribute is None:
        return None
    for kind in ("string", "int", "bool", "version"):
        if kind in attribute:
            return (kind, attribute[kind])
    return None


class MatchAttribute(Constraint):
    """All affected devices share the attribute (same type and value)."""

    def __init__(self, requests: frozenset[str], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.value: tuple[str, Any] | None = None
        self.count = 0

    def add(self, request: str, sub: str, device: Device) -> bool:
        if not self.applies(request, sub):
            return True
        value = lookup_attribute(device, self.attribute)
        if value is None:
            return False
        if self.count == 0:
            self.value = value
        elif value != self.value:
            return False
        self.count += 1
        return True

    def remove(self, request: str, sub: str) -> None:
        if self.applies(request, sub):
            self.count -= 1


class DistinctAttribute(Constraint):
    """Affected devices have pairwise different values (one kept per request)."""

    def __init__(self, requests: frozenset[str], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.values: dict[str, tuple[str, Any]] = {}
        self.count = 0

    def add(self, request: str, sub: str, device: Device) -> bool:
        if not self.applies(request, sub):
            return True
        value = lookup_attribute(device, self.attribute)
        if value is None:
            return False
        if self.count and any(held == value for held in self.values.values()):
            return False
        self.values[request] = value
        self.count += 1
        return True

    def remove(self, request: str, sub: str) -> None:
        if self.applies(request, sub):
            self.values.pop(request, None)
            self.count -= 1
