"""DynamicResources' status messages and event reasons: the strings users
and tests read, upstream's where upstream has one. Owned here, never
retyped elsewhere; ``plugin`` re-exports the ones the package exports."""

from __future__ import annotations

from scheduler.framework import Status

REASON_CANNOT_ALLOCATE = "cannot allocate all claims"
REASON_NOT_AVAILABLE = "resourceclaim not available on the node"
# Upstream says "deallocation of ResourceClaim completed" after its
# synchronous write; here the write runs after PostFilter returns.
REASON_DEALLOCATING = "deallocation of ResourceClaim started"
EVENT_DEALLOCATION_FAILED = "ResourceClaimDeallocationFailed"
# upstream's default podInitialBackoffSeconds: an Error in PostFilter backs off
RETRY_AFTER_FAILED_DEALLOCATION_SECONDS = 1.0
REASON_STILL_UNSCHEDULABLE = "still not schedulable"
REASON_NO_CLAIMS = "no new claims to deallocate"
REASON_STALE_EXTENDED_CLAIM = "cannot schedule extended resource claim"
REASON_DELETED = "deletion of ResourceClaim completed"

# Filter's per-node rejections: frozen, so shared (tagged with the plugin once)
CANNOT_ALLOCATE = Status.unresolvable(REASON_CANNOT_ALLOCATE)
NOT_AVAILABLE = Status.unresolvable(REASON_NOT_AVAILABLE)
