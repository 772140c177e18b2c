"""The Kubernetes IP and CIDR CEL libraries (``k8s.io/apiserver/pkg/cel/
library`` ``IP`` and ``CIDR``), for the DRA selector adapter.

As Quantity and Semver (``celfunctions``), an address travels through CEL as
a tagged map holding its canonical text, ``{IP_TAG: "2001:db8::1"}``, and a
prefix as ``{CIDR_TAG: "192.168.0.1/24"}`` (the address as written, not
masked, as Go's ``netip.Prefix``), so CEL's map equality is the libraries'
``==``. Parsing follows Go's ``netip`` as upstream uses it: no zones, no
IPv4-mapped IPv6 addresses, no leading zeros in IPv4 octets; the address
predicates are Go's (``IsGlobalUnicast`` includes private ranges).

Each function is the Python implementation of one CEL overload declared by
``cel.py``; a wrong argument raises ``ValueError`` (a CEL error value).
Linear in the input (``ipaddress``); pure.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

IP_TAG = "__k8s_ip__"
CIDR_TAG = "__k8s_cidr__"

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Interface = ipaddress.IPv4Interface | ipaddress.IPv6Interface


def _parse_ip(text: str) -> Address:
    if "%" in text:
        raise ValueError(f'IP address "{text}" with zone value is not allowed')
    try:
        address = ipaddress.ip_address(text)
    except ValueError as error:
        raise ValueError(
            f'IP Address "{text}" parse error during conversion from string: {error}'
        ) from None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise ValueError(f'IPv4-mapped IPv6 address "{text}" is not allowed')
    return address


def _parse_cidr(text: str) -> Interface:
    address, slash, bits = text.partition("/")
    if not slash or not bits.isdigit() or (len(bits) > 1 and bits[0] == "0") or "%" in address:
        raise ValueError(
            f'network address parse error during conversion from string: invalid prefix "{text}"'
        )
    try:
        parsed = ipaddress.ip_interface(text)
    except ValueError as error:
        raise ValueError(
            f"network address parse error during conversion from string: {error}"
        ) from None
    if isinstance(parsed, ipaddress.IPv6Interface) and parsed.ip.ipv4_mapped is not None:
        raise ValueError(f'IPv4-mapped IPv6 address "{text}" is not allowed')
    return parsed


def _ip_value(address: Address) -> dict[str, str]:
    return {IP_TAG: str(address)}


def _cidr_value(interface: Interface) -> dict[str, str]:
    return {CIDR_TAG: f"{interface.ip}/{interface.network.prefixlen}"}


def _address(value: Any) -> Address:
    if isinstance(value, str):
        return _parse_ip(value)
    if isinstance(value, Mapping) and IP_TAG in value:
        return ipaddress.ip_address(value[IP_TAG])
    raise ValueError("no such overload: not an IP address")


def _interface(value: Any) -> Interface:
    if isinstance(value, str):
        return _parse_cidr(value)
    if isinstance(value, Mapping) and CIDR_TAG in value:
        return ipaddress.ip_interface(value[CIDR_TAG])
    raise ValueError("no such overload: not a CIDR")


# ------------------------------------------------------------------- IP
def ip(text: str) -> dict[str, str]:
    return _ip_value(_parse_ip(text))


def is_ip(text: str) -> bool:
    try:
        _parse_ip(text)
    except ValueError:
        return False
    return True


def is_canonical(text: str) -> bool:
    return str(_parse_ip(text)) == text


def family(value: Any) -> int:
    return _address(value).version


def is_unspecified(value: Any) -> bool:
    return _address(value).is_unspecified


def is_loopback(value: Any) -> bool:
    return _address(value).is_loopback


def is_link_local_multicast(value: Any) -> bool:
    address = _address(value)
    if address.version == 4:
        return address in ipaddress.IPv4Network("224.0.0.0/24")
    return (int(address) >> 112) & 0xFF0F == 0xFF02  # Go: v6u16(0)&0xff0f == 0xff02


def _link_local_unicast(address: Address) -> bool:
    if address.version == 4:
        return address in ipaddress.IPv4Network("169.254.0.0/16")
    return address in ipaddress.IPv6Network("fe80::/10")


def is_link_local_unicast(value: Any) -> bool:
    return _link_local_unicast(_address(value))


def is_global_unicast(value: Any) -> bool:
    """Go's ``IsGlobalUnicast``: private ranges included."""
    address = _address(value)
    if address.version == 4 and address == ipaddress.IPv4Address("255.255.255.255"):
        return False
    return not (
        address.is_unspecified
        or address.is_loopback
        or address.is_multicast
        or _link_local_unicast(address)
    )


# ----------------------------------------------------------------- CIDR
def cidr(text: str) -> dict[str, str]:
    return _cidr_value(_parse_cidr(text))


def is_cidr(text: str) -> bool:
    try:
        _parse_cidr(text)
    except ValueError:
        return False
    return True


def contains_ip(value: Any, other: Any) -> bool:
    return _address(other) in _interface(value).network


def contains_cidr(value: Any, other: Any) -> bool:
    outer, inner = _interface(value).network, _interface(other).network
    return inner.version == outer.version and inner.subnet_of(outer)  # type: ignore[arg-type]


def cidr_ip(value: Any) -> dict[str, str]:
    return _ip_value(_interface(value).ip)


def masked(value: Any) -> dict[str, str]:
    network = _interface(value).network
    return {CIDR_TAG: str(network)}


def prefix_length(value: Any) -> int:
    return _interface(value).network.prefixlen


def to_string(value: Any) -> str:
    """``string(ip)`` and ``string(cidr)``."""
    if isinstance(value, Mapping):
        for tag in (IP_TAG, CIDR_TAG):
            if tag in value:
                return str(value[tag])
    raise ValueError("no such overload: string")
