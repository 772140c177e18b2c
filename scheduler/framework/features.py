"""Feature gates as plugins read them: ``handle.feature_gates.enabled(name)``.

Pure data. ``CATALOGUE`` (generated, ``gatecatalogue``) is every gate that
kube-scheduler v1.36 registers, with its default, stage and lock, so
``--feature-gates`` accepts any list a platform shares between its
components. Of those:

- ``KNOWN_GATES`` are the gates whose both positions this scheduler
  implements; a plugin that reads a gate adds it here, with its v1.36 default.
- ``SCHEDULER_GATES`` are the gates upstream's scheduler reads
  (``pkg/scheduler``); those not in ``KNOWN_GATES`` behave here as their v1.36
  default, so any other value is refused (``scheduler.app.gateflags``), naming the
  gate.
- Every other gate does not change what a scheduler does (kubelet, API server
  and controller gates): accepted at any value that upstream accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from scheduler.framework.gatecatalogue import CATALOGUE

__all__ = ["CATALOGUE", "KNOWN_GATES", "NOT_IMPLEMENTED", "SCHEDULER_GATES", "FeatureGates"]

# Gate name -> default in v1.36 (pkg/features/kube_features.go), for the gates
# a plugin or the engine here reads in both positions.
KNOWN_GATES: Mapping[str, bool] = MappingProxyType(
    {
        # NodeDeclaredFeatures joins the default plugins when on (beta, on).
        "NodeDeclaredFeatures": True,
        # DynamicResources (plugins/dynamicresources/features.py says what
        # each switches); NodeResourcesFit reads DRAExtendedResource too.
        "DRAAdminAccess": True,  # GA, locked on
        "DRAConsumableCapacity": True,
        "DRADeviceBindingConditions": True,
        "DRADeviceTaints": True,
        "DRAExtendedResource": True,
        "DRAPartitionableDevices": True,
        "DRAPrioritizedList": True,
        "DRAResourceClaimDeviceStatus": True,
        "DRASchedulerFilterTimeout": True,
        "DRADeviceTaintRules": False,  # beta, off (its API is beta too)
        "DRAListTypeAttributes": False,  # alpha, off
    }
)

# The gates that k8s.io/kubernetes v1.36.3's pkg/scheduler reads (non-test
# sources), plus MatchLabelKeysInPodTopologySpreadSelectorMerge, which
# PodTopologySpread's selector merge follows.
SCHEDULER_GATES: frozenset[str] = frozenset(
    {
        "DRAAdminAccess",
        "DRAConsumableCapacity",
        "DRADeviceBindingConditions",
        "DRADeviceTaintRules",
        "DRADeviceTaints",
        "DRAExtendedResource",
        "DRAListTypeAttributes",
        "DRANodeAllocatableResources",
        "DRAPartitionableDevices",
        "DRAPrioritizedList",
        "DRAResourceClaimDeviceStatus",
        "DRASchedulerFilterTimeout",
        "DRAWorkloadResourceClaims",
        "DynamicResourceAllocation",
        "GangScheduling",
        "GenericWorkload",
        "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScaling",
        "MatchLabelKeysInPodTopologySpread",
        "MatchLabelKeysInPodTopologySpreadSelectorMerge",
        "NodeDeclaredFeatures",
        "NodeInclusionPolicyInPodTopologySpread",
        "NominatedNodeNameForExpectation",
        "OpportunisticBatching",
        "PodLevelResources",
        "SchedulerAsyncAPICalls",
        "SchedulerAsyncPreemption",
        "SchedulerPopFromBackoffQ",
        "SchedulerQueueingHints",
        "SidecarContainers",
        "StorageCapacityScoring",
        "TaintTolerationComparisonOperators",
        "TopologyAwareWorkloadScheduling",
        "VolumeAttributesClass",
        "VolumeLimitScaling",
        "WorkloadAwarePreemption",
    }
)


# Why a scheduler gate's other position is refused, where that helps the
# operator more than "not implemented" (the refusal names the gate either way).
NOT_IMPLEMENTED: Mapping[str, str] = MappingProxyType(
    {
        "DRANodeAllocatableResources": (
            "DynamicResources does not implement devices that consume the node's CPU and"
            " memory (nodeAllocatableResourceMappings, alpha in 1.36): NodeResourcesFit"
            " would not count them, so pods would land on nodes without the resources"
        ),
        "DRAWorkloadResourceClaims": (
            "DynamicResources does not implement claims reserved for a PodGroup (the"
            " Workload API, alpha in 1.36): such claims would be reserved for each pod"
            " instead of the group"
        ),
    }
)


@dataclass(frozen=True)
class FeatureGates:
    """The gates in force: ``overrides`` from the command line over the defaults.

    ``overrides`` holds every gate the command line set (any catalogue gate);
    only ``KNOWN_GATES`` can be read, since only they change behaviour here.
    """

    overrides: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, name: str) -> bool:
        """The value of a known gate; KeyError for a gate nobody declared."""
        if name not in KNOWN_GATES:
            raise KeyError(f"unknown feature gate {name!r}")
        return self.overrides.get(name, KNOWN_GATES[name])

    def effective(self) -> dict[str, bool]:
        """Every known gate and its value in force."""
        return {name: self.enabled(name) for name in sorted(KNOWN_GATES)}

    def every_gate(self) -> dict[str, bool]:
        """Every catalogue gate and the value in force (set, else the v1.36
        default); what ``kubernetes_feature_enabled`` reports."""
        return {
            name: self.overrides.get(name, default)
            for name, (default, _stage, _locked) in sorted(CATALOGUE.items())
        }
