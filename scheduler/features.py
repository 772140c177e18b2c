"""``--feature-gates=Name=true,Other=false`` as upstream, parsed into the
framework's ``FeatureGates`` (``scheduler.framework.features``).

Only the gates this scheduler reads are known; a name we do not know or a value
that is not a boolean is refused at start-up (upstream refuses unknown gates
too), so a gate is never accepted and silently ignored. Defaults are
Kubernetes v1.36's. ``FeatureGates`` is immutable and built once by the
command line.
"""

from __future__ import annotations

from types import MappingProxyType

from scheduler.framework.features import KNOWN_GATES, FeatureGates

__all__ = ["KNOWN_GATES", "FeatureGateError", "FeatureGates", "parse_feature_gates"]


class FeatureGateError(ValueError):
    """A ``--feature-gates`` value names an unknown gate or a non-boolean."""


def _boolean(name: str, text: str) -> bool:
    value = text.strip().lower()
    if value in {"true", "1", "t"}:
        return True
    if value in {"false", "0", "f"}:
        return False
    raise FeatureGateError(f"feature gate {name}: invalid value {text!r}, expected true or false")


def parse_feature_gates(text: str) -> FeatureGates:
    """``A=true,B=false`` (spaces around items allowed, empty text = defaults)."""
    overrides: dict[str, bool] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise FeatureGateError(f"feature gate {item!r}: expected Name=true|false")
        if name not in KNOWN_GATES:
            known = ", ".join(sorted(KNOWN_GATES))
            raise FeatureGateError(f"unrecognized feature gate: {name} (known: {known})")
        overrides[name] = _boolean(name, value)
    return FeatureGates(MappingProxyType(overrides))
