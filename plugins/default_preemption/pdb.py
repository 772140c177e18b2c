"""PodDisruptionBudgets as preemption reads them, and which victims would
violate one (upstream ``filterPodsWithPDBViolation``).

Pure. A PDB is parsed once per preemption from the informer's raw object;
only what the decision needs is kept: namespace, selector, the disruptions
still allowed, and the pods the API server already counted as disrupted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from plugins.default_preemption.selector import LabelSelector, parse_selector
from scheduler.framework import Pod


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    namespace: str
    name: str
    selector: LabelSelector | None  # None: invalid or absent, matches nothing
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    def selects(self, pod: Pod) -> bool:
        return (
            self.namespace == pod.namespace
            and self.selector is not None
            and self.selector.matches(pod.labels)
        )


def parse_pdb(raw: Mapping[str, Any]) -> DisruptionBudget:
    metadata = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    return DisruptionBudget(
        namespace=metadata.get("namespace") or "",
        name=metadata.get("name") or "",
        selector=parse_selector(spec.get("selector")),
        disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
        disrupted_pods=frozenset(status.get("disruptedPods") or ()),
    )


def split_by_pdb_violation(
    pods: Iterable[Pod], pdbs: Sequence[DisruptionBudget]
) -> tuple[list[Pod], list[Pod]]:
    """(violating, non-violating), each in the given order. Each pod that a
    PDB selects uses one of its allowed disruptions (unless the API server
    already counts it as disrupted); a pod that drives any budget below zero
    violates it."""
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating: list[Pod] = []
    non_violating: list[Pod] = []
    for pod in pods:
        violated = False
        if pod.labels:  # a pod without labels matches no PDB
            for index, pdb in enumerate(pdbs):
                if not pdb.selects(pod) or pod.name in pdb.disrupted_pods:
                    continue
                allowed[index] -= 1
                if allowed[index] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating
