"""``--feature-gates=Name=true,Other=false`` as upstream, parsed into the
framework's ``FeatureGates`` (``scheduler.framework.features``).

Every gate kube-scheduler v1.36 registers is accepted under upstream's rules:
an unknown name, a value that is not a boolean, or a locked gate set away from
its lock is refused with upstream's wording; ``kube:`` (the only component) may
prefix a name; ``AllAlpha``/``AllBeta`` set every unlocked alpha/beta gate not
named explicitly. On top of that, a gate upstream's scheduler reads whose
other position is not implemented here is refused when it would end up away
from its v1.36 default, naming the gate, so a setting is never accepted and
silently ignored. ``FeatureGates`` is immutable and built once by the command
line.
"""

from __future__ import annotations

from types import MappingProxyType

from scheduler.framework.features import (
    CATALOGUE,
    KNOWN_GATES,
    NOT_IMPLEMENTED,
    SCHEDULER_GATES,
    FeatureGates,
)

__all__ = ["KNOWN_GATES", "FeatureGateError", "FeatureGates", "parse_feature_gates"]

COMPONENT_PREFIX = "kube:"
_ALL = {"AllAlpha": "ALPHA", "AllBeta": "BETA"}


class FeatureGateError(ValueError):
    """A ``--feature-gates`` value upstream refuses, or one we cannot honour."""


def _boolean(name: str, text: str) -> bool:
    value = text.strip().lower()
    if value in {"true", "1", "t"}:
        return True
    if value in {"false", "0", "f"}:
        return False
    raise FeatureGateError(f"feature gate {name}: invalid value {text!r}, expected true or false")


def _explicit(text: str) -> dict[str, bool]:
    overrides: dict[str, bool] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip().removeprefix(COMPONENT_PREFIX)
        if not sep:
            raise FeatureGateError(f"feature gate {item!r}: expected Name=true|false")
        if name not in CATALOGUE:
            raise FeatureGateError(
                f"unrecognized feature gate: {name} (kube-scheduler v1.36 does not have it)"
            )
        setting = _boolean(name, value)
        default, _stage, locked = CATALOGUE[name]
        if locked and setting != default:
            raise FeatureGateError(
                f"cannot set feature gate {name} to {str(setting).lower()},"
                f" feature is locked to {str(default).lower()}"
            )
        overrides[name] = setting
    return overrides


def _in_force(overrides: dict[str, bool]) -> dict[str, bool]:
    """Every gate's value once AllAlpha/AllBeta are applied to the gates not
    set explicitly."""
    values = {}
    for name, (default, stage, locked) in CATALOGUE.items():
        value = default
        for toggle, toggled_stage in _ALL.items():
            if stage == toggled_stage and not locked and toggle in overrides:
                value = overrides[toggle]
        values[name] = overrides.get(name, value)
    return values


def parse_feature_gates(text: str) -> FeatureGates:
    """``A=true,kube:B=false`` (spaces around items allowed, empty = defaults)."""
    overrides = _explicit(text)
    values = _in_force(overrides)
    unsupported = sorted(
        name for name in SCHEDULER_GATES - KNOWN_GATES.keys() if values[name] != CATALOGUE[name][0]
    )
    if unsupported:
        wanted = ", ".join(f"{name}={str(values[name]).lower()}" for name in unsupported)
        gates = "feature gate" if len(unsupported) == 1 else "feature gates"
        raise FeatureGateError(
            f"{gates} {wanted}: pyscheduler implements only the v1.36 default of"
            f" {'this scheduler gate' if len(unsupported) == 1 else 'these scheduler gates'};"
            " remove it from --feature-gates"
            + (" (set by AllAlpha/AllBeta)" if any(n not in overrides for n in unsupported) else "")
            + "".join(
                f". {name}: {NOT_IMPLEMENTED[name]}"
                for name in unsupported
                if name in NOT_IMPLEMENTED
            )
        )
    in_force = {
        name: value
        for name, value in values.items()
        if name in overrides or value != CATALOGUE[name][0]
    }
    return FeatureGates(MappingProxyType(in_force))
