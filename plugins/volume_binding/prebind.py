"""PreBind's API writes and its bounded wait (upstream ``BindPodVolumes``).

The only async part of VolumeBinding. First the writes: each statically
matched PersistentVolume is updated with its claimRef, then each claim to
provision gets the ``volume.kubernetes.io/selected-node`` annotation (both
PUT with the assumed object's resourceVersion, so a concurrent change fails
the attempt instead of being overwritten). A failed write reverts the
assumptions not yet written. Then the wait: every ``poll_interval`` seconds
until the claims are fully bound (by the PV controller or an external
provisioner), an error shows it can't happen, or ``bind_timeout`` passes.

Time comes from the injected clock and sleep; nothing here holds shared
state across an await: each poll reads the informer stores afresh.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from plugins.volume_binding.binder import (
    BindingError,
    DynamicProvision,
    PodVolumes,
    StaticBinding,
    VolumeBinder,
)
from scheduler.framework import ApiWriter, Clock, Pod, parse_node
from scheduler.framework.volumes import StorageLister, meta, name_of

Raw = Mapping[str, Any]
Sleep = Callable[[float], Awaitable[None]]

POLL_INTERVAL_SECONDS = 1.0
NODES = "nodes"
PODS = "pods"


def volume_path(name: str) -> str:
    return f"/api/v1/persistentvolumes/{name}"


def claim_path(claim: Raw) -> str:
    metadata = meta(claim)
    return (
        f"/api/v1/namespaces/{metadata.get('namespace')}/persistentvolumeclaims/"
        f"{metadata.get('name')}"
    )


class VolumeBindingWriter:
    def __init__(
        self,
        api: ApiWriter,
        binder: VolumeBinder,
        lister: StorageLister,
        clock: Clock,
        bind_timeout: float,
        *,
        sleep: Sleep = asyncio.sleep,
        poll_interval: float = POLL_INTERVAL_SECONDS,
    ) -> None:
        self._api = api
        self._binder = binder
        self._lister = lister
        self._clock = clock
        self._bind_timeout = bind_timeout
        self._sleep = sleep
        self._poll_interval = poll_interval

    async def bind_pod_volumes(self, pod: Pod, node_name: str, volumes: PodVolumes) -> None:
        """Raises BindingError, or the API client's error for a failed write."""
        written = await self._write(volumes)
        deadline = self._clock.now() + self._bind_timeout
        while True:
            await self._sleep(self._poll_interval)
            try:
                if self._check(pod, node_name, written):
                    return
            except BindingError as error:
                raise BindingError(f"binding volumes: {error}") from None
            if self._clock.now() >= deadline:
                raise BindingError("binding volumes: context deadline exceeded")

    async def _write(self, volumes: PodVolumes) -> PodVolumes:
        bindings = list(volumes.static_bindings)
        provisions = list(volumes.dynamic_provisions)
        done_bindings = done_provisions = 0
        try:
            for index, binding in enumerate(bindings):
                pv = await self._api.request("PUT", volume_path(name_of(binding.pv)), binding.pv)
                bindings[index] = StaticBinding(pvc=binding.pvc, pv=pv)
                done_bindings += 1
            for index, provision in enumerate(provisions):
                claim = await self._api.request("PUT", claim_path(provision.pvc), provision.pvc)
                provisions[index] = DynamicProvision(pvc=claim, capacity=provision.capacity)
                done_provisions += 1
        except BaseException:
            self._binder.revert(
                PodVolumes(tuple(bindings[done_bindings:]), tuple(provisions[done_provisions:]))
            )
            raise
        return PodVolumes(tuple(bindings), tuple(provisions))

    def _check(self, pod: Pod, node_name: str, volumes: PodVolumes) -> bool:
        raw_node = self._lister.store(NODES).get(node_name)
        if raw_node is None:
            raise BindingError(f'failed to get node "{node_name}": node "{node_name}" not found')
        exists = self._lister.store(PODS).get(pod.key) is not None
        return self._binder.check_bindings(pod, parse_node(raw_node), volumes, exists)
