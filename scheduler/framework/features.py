"""Feature gates as plugins read them: ``handle.feature_gates.enabled(name)``.

Pure data: the gates something in this scheduler reads, with Kubernetes
v1.36's defaults, and the values in force (``--feature-gates`` overrides,
parsed by ``scheduler.features``). A plugin that reads a gate adds it to
``KNOWN_GATES`` here, so the flag accepts it; an unknown name is refused at
start-up, never silently ignored.
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


@dataclass(frozen=True)
class FeatureGates:
    """The gates in force: ``overrides`` from the command line over the defaults."""

    overrides: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        """The value of a known gate; KeyError for a gate nobody declared."""
        if name not in KNOWN_GATES:
            raise KeyError(f"unknown feature gate {name!r}")
        return self.overrides.get(name, KNOWN_GATES[name])

    def effective(self) -> dict[str, bool]:
        """Every known gate and its value in force."""
        return {name: self.enabled(name) for name in sorted(KNOWN_GATES)}
