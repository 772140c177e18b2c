"""PreBind of DynamicResources: the API writes that make an allocation real.

For every claim of the pod not yet reserved for it: the finalizer, then
``status.allocation`` (when this cycle allocated it) and ``reservedFor`` in
one status write (``writes.bind_claim``). The claim for extended resources is
created first and recorded in the pod's status afterwards. After each write,
synchronously: the written claim enters the assume cache, then its
in-flight entry goes, so its devices never look free in between. Last, if a
device has binding conditions, poll the assume cache until the driver
reports it ready (every 5s on the injected clock; at most ``bindingTimeout``
from the start of the wait, as upstream's poll, whatever the claims'
``allocationTimestamp``).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from plugins.dynamicresources import extended as extended_claims
from plugins.dynamicresources.bindingconditions import Binding, binding_state
from plugins.dynamicresources.claims import reserved_for_pod
from plugins.dynamicresources.cycledata import CycleData
from plugins.dynamicresources.model import Raw
from plugins.dynamicresources.state import ClaimTracker, allocation_of, claim_key, claim_uid
from plugins.dynamicresources.writes import (
    STRATEGIC_MERGE,
    BindError,
    bind_claim,
    claims_collection,
)
from scheduler.framework import ApiWriter, Clock, EventRecorder, PluginMetrics, Pod, Status

BINDING_POLL_SECONDS = 5.0
BINDING_TIMEOUT = "device binding timeout"  # upstream's message when its poll's deadline passes


def _results(claim: Raw) -> list[dict[str, Any]]:
    devices = (allocation_of(claim) or {}).get("devices") or {}
    return list(devices.get("results") or ())


class _NoMetrics:
    def preemption_attempt(self) -> None:
        return None

    def preemption_victims(self, count: int) -> None:
        return None

    def resourceclaim_create(self, status: str) -> None:
        return None

    def binding_conditions(self, profile: str, driver: str, status: str, seconds: float) -> None:
        return None

    def volume_scheduling_stage_error(self, operation: str) -> None:
        return None


class ClaimBinder:
    def __init__(
        self,
        tracker: ClaimTracker,
        api: ApiWriter,
        clock: Clock,
        binding_timeout: float,
        *,
        metrics: PluginMetrics | None = None,
        events: EventRecorder | None = None,
        profile: str = "",
        binding_conditions: bool = True,
    ) -> None:
        self.tracker = tracker
        # DRADeviceBindingConditions and DRAResourceClaimDeviceStatus: off, no
        # wait and no allocationTimestamp (upstream PreBind and bindClaim)
        self._binding_conditions = binding_conditions
        self._events = events
        self._metrics: PluginMetrics = metrics if metrics is not None else _NoMetrics()
        self._profile = profile
        self._api = api
        self._clock = clock
        self._binding_timeout = binding_timeout

    async def bind(self, data: CycleData, pod: Pod, node_name: str) -> Status | None:
        """Write every claim of the pod not yet reserved for it, then wait
        for binding conditions."""
        allocations = dict(
            zip(data.to_allocate, data.node_allocations.get(node_name) or [], strict=False)
        )
        written_claims: list[Raw] = []
        extended = data.node_extended.get(node_name)
        if extended is not None:
            status, written = await self._bind_extended(data, pod, *extended)
            if status is not None:
                return status
            written_claims.append(written)
        for index, claim in enumerate(data.claims):
            if index == data.extended_index and extended is not None:
                continue
            if index == data.extended_index and extended_claims.is_placeholder(claim):
                continue  # the node advertises the resources itself
            written_claims.append(claim)
            namespace, name = claim_key(claim).split("/", 1)
            if reserved_for_pod(self.tracker.get(namespace, name) or claim, pod):
                continue
            allocation = allocations.get(index)
            uid = claim_uid(claim)
            try:
                written = await bind_claim(self._api, claim, allocation, pod, self._timestamp())
            except BindError as error:
                return Status.as_error(error)
            except Exception as error:
                return Status.as_error(f"add reservation to claim {claim_key(claim)}: {error}")
            # Synchronously, in this order: the written claim holds the devices
            # before the in-flight entry that held them goes away.
            self.tracker.assume(written)
            self.tracker.remove_in_flight(uid)
        if not self._binding_conditions:
            return None
        return await self._wait_for_binding_conditions(written_claims, pod, node_name)

    async def _bind_extended(
        self, data: CycleData, pod: Pod, claim: dict[str, Any], mappings: list[dict[str, str]]
    ) -> tuple[Status | None, Raw]:
        """Create the extended-resource claim, allocate and reserve it, and
        record it in the pod's status (upstream's extended-claim PreBind)."""
        api = self._api
        in_flight_uid = claim_uid(claim)
        allocation = claim["status"]["allocation"]
        try:
            created: Raw = await api.request(
                "POST",
                claims_collection(pod.namespace),
                extended_claims.for_create(claim),
            )
        except Exception as error:
            self._metrics.resourceclaim_create("failure")
            return Status.as_error(f"create claim for extended resources: {error}"), claim
        self._metrics.resourceclaim_create("success")
        data.created_extended = created
        try:
            written = await bind_claim(api, created, allocation, pod, self._timestamp())
        except BindError as error:
            return Status.as_error(error), created
        except Exception as error:
            return Status.as_error(
                f"add reservation to claim {claim_key(created)}: {error}"
            ), created
        self.tracker.assume(written)
        self.tracker.remove_in_flight(in_flight_uid)
        name = (written.get("metadata") or {}).get("name", "")
        body = {
            "status": {
                "extendedResourceClaimStatus": {
                    "requestMappings": mappings,
                    "resourceClaimName": name,
                }
            }
        }
        try:
            await api.request(
                "PATCH",
                f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status",
                body,
                STRATEGIC_MERGE,
            )
        except Exception as error:
            return (
                Status.as_error(
                    f"update pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus: {error}"
                ),
                written,
            )
        data.created_extended = None  # kept: the pod owns it now
        return None, written

    async def _wait_for_binding_conditions(
        self, claims: Sequence[Raw], pod: Pod, node_name: str
    ) -> Status | None:
        """Poll the assume cache until every device reports ready (upstream:
        every 5s, up to bindingTimeout); failed or timed out is an Error."""
        keys = [claim_key(claim).split("/", 1) for claim in claims]
        drivers = sorted(
            {
                str(result.get("driver", ""))
                for claim, (namespace, name) in zip(claims, keys, strict=True)
                for result in _results(self.tracker.get(namespace, name) or claim)
                if result.get("bindingConditions")
            }
        )
        if not drivers:
            return None
        if self._events is not None:
            self._events.event(
                pod.raw,
                "Normal",
                "BindingConditionsPending",
                "Scheduling",
                f"waiting for binding conditions for device on node {node_name}",
            )
        started = self._clock.now()
        deadline = started + self._binding_timeout

        def outcome(status: str) -> None:
            for driver in drivers:
                self._metrics.binding_conditions(
                    self._profile, driver, status, self._clock.now() - started
                )

        while True:
            states = []
            for namespace, name in keys:
                current = self.tracker.get(namespace, name)
                if current is None:
                    outcome("error")
                    return Status.as_error(f"claim {namespace}/{name} got deleted in the meantime")
                states.append(
                    (
                        f"{namespace}/{name}",
                        binding_state(current, self._clock.wall(), self._binding_timeout),
                    )
                )
            for key, state_ in states:
                if state_ is Binding.FAILED:
                    outcome("failed")
                    return Status.as_error(f"device binding failed: claim={key}")
                if state_ is Binding.TIMED_OUT:
                    outcome("timeout")
                    return Status.as_error(f"device binding timeout: claim={key}")
            if all(state_ in (Binding.NONE, Binding.READY) for _, state_ in states):
                outcome("success")
                return None
            # Bounded by bindingTimeout from the start of the wait whatever the
            # claims' allocationTimestamp (upstream's poll has that deadline):
            # a claim stamped elsewhere, or never, cannot hold the pod forever.
            remaining = deadline - self._clock.now()
            if remaining < BINDING_POLL_SECONDS:
                if remaining > 0:
                    await self._clock.sleep(remaining)
                outcome("timeout")
                return Status.as_error(BINDING_TIMEOUT)
            await self._clock.sleep(BINDING_POLL_SECONDS)

    def _timestamp(self) -> str | None:
        if not self._binding_conditions:
            return None
        moment = datetime.datetime.fromtimestamp(self._clock.wall(), tz=datetime.UTC)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
