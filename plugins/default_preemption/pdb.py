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

from scheduler.framework import Pod
from scheduler.framework.labels import LabelSelectorError, Selector, parse_label_selector


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    namespace: str
    name: str
    selector: Selector | None  # None: absent, empty or invalid; matches nothing
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    def selects(self, pod: Pod) -> bool:
        return (
            self.namespace == pod.namespace
            and self.selector is not None
            and self.selector.matches(pod.labels)
        )


def pdb_selector(raw: Mapping[str, Any] | None) -> Selector | None:
    """Upstream: an invalid selector matches no pod, and so does an absent
    or empty one (``selector.Empty()``), unlike label selectors elsewhere."""
    try:
        selector = parse_label_selector(raw)
    except LabelSelectorError:
        return None
    return None if selector.empty or selector.nothing else selector


def parse_pdb(raw: Mapping[str, Any]) -> DisruptionBudget:
    metadata = raw.get("metadata") or {}
    spec = raw.get("spec") or {}
    status = raw.get("status") or {}
    return DisruptionBudget(
        namespace=metadata.get("namespace") or "",
        name=metadata.get("name") or "",
        selector=pdb_selector(spec.get("selector")),
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
