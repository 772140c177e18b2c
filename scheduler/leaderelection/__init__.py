"""Lease-based leader election with the semantics of client-go's ``leaderelection``.

Layers, one module each:
- ``LeaseRecord`` and ``ElectionState``: the pure core. Given what a GET of the
  coordination.k8s.io/v1 Lease returned and the time, it decides whether to
  create it, take it over, renew it, or wait; it also owns the answer to "are
  we the leader now?". No I/O, no awaits.
- ``LeaderElector``: the thin async runner. Acquire (retry every jittered
  ``retry_period``), then run the caller's work beside a renew loop; release the
  lease when the work ends or ``run`` is cancelled; raise ``LeadershipLost`` when
  renewing fails for ``renew_deadline``, after cancelling the work.
- ``ApiLeaseClient``: the ``LeaseClient`` protocol over a generic
  ``request(method, path, body, content_type)`` coroutine (``KubeClient.request``).

Invariants:
- Every write of an existing Lease carries the resourceVersion of the copy we
  last read or wrote, so a write based on a stale view fails (409) instead of
  overwriting another holder's record.
- Expiry is judged by our own monotonic clock, never by comparing the remote
  ``renewTime`` with ours: a Lease held by someone else is expired once its
  record has not changed for ``leaseDurationSeconds`` since we first saw it so.
- We count as leader only while less than ``renew_deadline`` has passed since we
  *sent* our last successful write. Every other candidate saw that write later
  and waits a full lease duration (> renew_deadline) from then, so two electors
  never lead at once (given clocks that run at the same rate). Upstream counts
  renewDeadline from the start of the failing renew round instead, up to one
  retryPeriod later; this is the conservative end of the same rule.
- ``leaseDurationSeconds`` is the lease duration rounded *up* to whole seconds
  (upstream truncates; rounding up keeps a fractional duration safe).
"""

from scheduler.leaderelection.client import ApiLeaseClient, LeaseClient
from scheduler.leaderelection.core import (
    ElectionState,
    LeaderElectionConfig,
    LeadershipLost,
    LeaseConflict,
    LeaseRecord,
    Write,
    micro_time,
    new_identity,
)
from scheduler.leaderelection.elector import LeaderElector

__all__ = [
    "ApiLeaseClient",
    "ElectionState",
    "LeaderElectionConfig",
    "LeaderElector",
    "LeadershipLost",
    "LeaseClient",
    "LeaseConflict",
    "LeaseRecord",
    "Write",
    "micro_time",
    "new_identity",
]
