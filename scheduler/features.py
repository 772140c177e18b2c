"""Feature gates: ``--feature-gates=Name=true,Other=false`` as upstream.

Only the gates this scheduler reads are known; a name we do not know or a value
that is not a boolean is refused at start-up (upstream refuses unknown gates
too), so a gate is never accepted and silently ignored. Defaults are
Kubernetes v1.36's. ``FeatureGates`` is immutable and built once by the
command line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

# Gate name -> default in v1.36 (pkg/features/kube_features.go), for the gates
# a plugin or the engine here reads.
KNOWN_GATES: Mapping[str, bool] = MappingProxyType(
    {
        # NodeDeclaredFeatures joins the default plugins when on (beta, on).
        "NodeDeclaredFeatures": True,
    }
)


class FeatureGateError(ValueError):
    """A ``--feature-gates`` value names an unknown gate or a non-boolean."""


@dataclass(frozen=True)
class FeatureGates:
    overrides: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        if name not in KNOWN_GATES:
            raise KeyError(f"unknown feature gate {name!r}")
        return self.overrides.get(name, KNOWN_GATES[name])

    def effective(self) -> dict[str, bool]:
        """Every known gate and its value in force."""
        return {name: self.enabled(name) for name in sorted(KNOWN_GATES)}


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
