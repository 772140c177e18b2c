"""DefaultBinder: the Bind plugin, a thin adapter over ``handle.api.bind``.

Any failure of the API call becomes an Error status (the framework prefixes
``running Bind plugin "DefaultBinder"``), which makes the binding cycle
unreserve, forget the assumed pod and requeue it. Cancellation is not a
failure: it propagates.
"""

from __future__ import annotations

from scheduler.framework import BindPlugin, CycleState, Handle, Pod, Status

NAME = "DefaultBinder"
REASON_PREFIX = "binding rejected"


class DefaultBinder(BindPlugin):
    name = NAME

    def __init__(self, handle: Handle) -> None:
        # The handle, not handle.api: the client may be wired after plugins are built.
        self._handle = handle

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        try:
            await self._handle.api.bind(pod, node_name)
        except Exception as error:  # any API or transport failure fails this bind
            return Status.as_error(f"{REASON_PREFIX}: {error}")
        return None


def new(args: object, handle: Handle) -> DefaultBinder:
    return DefaultBinder(handle)
