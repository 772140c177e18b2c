"""May this pod preempt others now? (upstream ``PodEligibleToPreemptOthers``)

Pure. Not with ``preemptionPolicy: Never``. Not while a pod it may preempt is
still terminating because of scheduler preemption on its nominated node (an
earlier preemption for it is still in progress), unless the filters now
reject that node as unresolvable, in which case it may look elsewhere.
"""

from __future__ import annotations

from plugins.default_preemption.victims import may_preempt
from scheduler.framework import Code, NodeInfo, Pod, Status

DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
PREEMPT_NEVER = "Never"


def terminating_by_preemption(pod: Pod) -> bool:
    """Deleting, and its first DisruptionTarget condition says the scheduler did it."""
    if not pod.deleting:
        return False
    for condition in (pod.raw.get("status") or {}).get("conditions") or ():
        if condition.get("type") == DISRUPTION_TARGET:
            return bool(
                condition.get("status") == "True"
                and condition.get("reason") == REASON_PREEMPTION_BY_SCHEDULER
            )
    return False


def ineligibility(pod: Pod, nominated_status: Status, nominated_node: NodeInfo | None) -> str:
    """Why ``pod`` may not preempt now, or "" when it may. ``nominated_status``
    is the filter status of its nominated node in this cycle."""
    if pod.spec.get("preemptionPolicy") == PREEMPT_NEVER:
        return NOT_ELIGIBLE_NEVER
    if not pod.nominated_node_name:
        return ""
    if nominated_status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        return ""
    if nominated_node is not None:
        for other in nominated_node.pods.values():
            if may_preempt(pod, other) and terminating_by_preemption(other):
                return NOT_ELIGIBLE_TERMINATING
    return ""
