"""The plugin's API writes on ResourceClaims (the only I/O of DynamicResources).

- ``bind_claim`` (PreBind): add the delete-protection finalizer with an
  update of the claim if it lacks it, then write ``status.allocation`` (when
  this cycle allocated it) and the pod's ``status.reservedFor`` entry in one
  status update, stamping ``allocationTimestamp`` on an allocation that has
  none (also one made elsewhere), as upstream does. A conflict re-reads the
  claim and retries, up to five attempts as client-go's default backoff; a
  claim that got deleted, or got allocated (or deallocated) by someone else
  meanwhile, fails the bind.
- ``unreserve`` (Unreserve, PostFilter's cleanup): a strategic-merge patch of
  the status removing the pod from ``reservedFor``, with the claim's UID as
  precondition.
- ``deallocate`` (PostFilter): clear ``allocation``, ``reservedFor`` and
  ``devices`` of a claim allocated for a node that cannot serve the pod; a
  conflict re-reads the claim and retries (as ``bind_claim``) while it is
  still allocated and reserved for nobody else.
- ``delete_claim`` (Unreserve, PostFilter): remove a claim the scheduler
  created for extended resources (its finalizer first).

``BackgroundWrites`` runs writes asked for by synchronous extension points
(Unreserve, PostFilter) through the scheduler's background runner, filed by
claim; failures are logged and retried by the next scheduling attempt, as
upstream does (PostFilter's deallocation also tells the pod).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import Any

from plugins.dynamicresources.claims import FINALIZER, editable
from plugins.dynamicresources.model import Raw
from plugins.dynamicresources.state import allocation_of, claim_key
from scheduler.framework import ApiWriter, Pod

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
CONFLICT = 409
NOT_FOUND = 404
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
_EMPTY: Mapping[str, Any] = {}


class BindError(Exception):
    """PreBind could not write the claim."""


def claims_collection(namespace: str) -> str:
    return f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"


def claim_path(namespace: str, name: str, subresource: str = "") -> str:
    path = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}"
    return f"{path}/{subresource}" if subresource else path


def _is_conflict(error: Exception) -> bool:
    return getattr(error, "status", None) == CONFLICT


def _names(claim: Raw) -> tuple[str, str]:
    metadata = claim.get("metadata") or _EMPTY
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


async def bind_claim(
    api: ApiWriter,
    claim: Raw,
    allocation: Mapping[str, Any] | None,
    pod: Pod,
    allocation_timestamp: str | None = None,
) -> Raw:
    """Write allocation (if any) and reservation; the API's answer."""
    namespace, name = _names(claim)
    key = claim_key(claim)
    current: Raw = claim
    for attempt in range(MAX_ATTEMPTS):
        if attempt:
            current = await api.request("GET", claim_path(namespace, name))
        if (current.get("metadata") or _EMPTY).get("deletionTimestamp"):
            raise BindError(f"claim {key} got deleted in the meantime")
        updated = editable(current)
        if allocation is not None:
            if allocation_of(updated) is not None:
                raise BindError(f"claim {key} got allocated elsewhere in the meantime")
            finalizers = updated.setdefault("metadata", {}).setdefault("finalizers", [])
            if FINALIZER not in finalizers:
                finalizers.append(FINALIZER)
                try:
                    written = await api.request("PUT", claim_path(namespace, name), updated)
                except Exception as error:
                    if _is_conflict(error):
                        continue
                    raise BindError(f"add finalizer to claim {key}: {error}") from error
                updated = editable(written)
            updated.setdefault("status", {})["allocation"] = allocation
        elif allocation_of(updated) is None:
            raise BindError(f"claim {key} got deallocated elsewhere in the meantime")
        status = updated.setdefault("status", {})
        # As upstream (binding conditions on): every write that reserves the
        # claim stamps an allocation that has no timestamp yet, ours or not.
        written_allocation = dict(status["allocation"])  # only its top level changes
        if allocation_timestamp and not written_allocation.get("allocationTimestamp"):
            written_allocation["allocationTimestamp"] = allocation_timestamp
        status["allocation"] = written_allocation
        reserved = status.setdefault("reservedFor", [])
        if not any(ref.get("uid") == pod.uid for ref in reserved):
            reserved.append({"resource": "pods", "name": pod.name, "uid": pod.uid})
        try:
            answer: Raw = await api.request("PUT", claim_path(namespace, name, "status"), updated)
        except Exception as error:
            if _is_conflict(error):
                continue
            what = "add allocation and reservation to" if allocation else "add reservation to"
            raise BindError(f"{what} claim {key}: {error}") from error
        return answer
    raise BindError(
        f"add reservation to claim {key}: still conflicting after {MAX_ATTEMPTS} attempts"
    )


async def unreserve(api: ApiWriter, claim: Raw, pod: Pod) -> Raw:
    """The claim as the API server has it after the patch."""
    namespace, name = _names(claim)
    uid = (claim.get("metadata") or _EMPTY).get("uid")
    body = {
        "metadata": {"uid": uid},
        "status": {"reservedFor": [{"$patch": "delete", "uid": pod.uid}]},
    }
    answer: Raw = await api.request(
        "PATCH", claim_path(namespace, name, "status"), body, STRATEGIC_MERGE
    )
    return answer


class DeallocateError(Exception):
    """PostFilter's deallocation could not be written."""


async def deallocate(api: ApiWriter, claim: Raw, pod: Pod) -> Raw | None:
    """Clear the claim's allocation, reservation and device status; the API's
    answer, or None when there is nothing left to deallocate (someone else
    deallocated or re-reserved it, or it is gone). A conflict re-reads the
    claim and tries again, up to ``MAX_ATTEMPTS``; anything else, or
    conflicts to the end, raises ``DeallocateError``."""
    namespace, name = _names(claim)
    key = claim_key(claim)
    uid = (claim.get("metadata") or _EMPTY).get("uid")
    current: Raw = claim
    for attempt in range(MAX_ATTEMPTS):
        if attempt:
            try:
                current = await api.request("GET", claim_path(namespace, name))
            except Exception as error:
                if getattr(error, "status", None) == NOT_FOUND:
                    return None
                raise DeallocateError(f"deallocate claim {key}: {error}") from error
        if (current.get("metadata") or _EMPTY).get("uid") != uid:
            return None  # deleted and re-created: not the claim we judged
        if allocation_of(current) is None or not _only_for(current, pod):
            return None
        updated = editable(current)
        status = updated.setdefault("status", {})
        for field in ("allocation", "reservedFor", "devices"):
            status.pop(field, None)
        try:
            answer: Raw = await api.request("PUT", claim_path(namespace, name, "status"), updated)
        except Exception as error:
            if _is_conflict(error):
                continue
            raise DeallocateError(f"deallocate claim {key}: {error}") from error
        return answer
    raise DeallocateError(
        f"deallocate claim {key}: still conflicting after {MAX_ATTEMPTS} attempts"
    )


def _only_for(claim: Raw, pod: Pod) -> bool:
    """Reserved for nobody, or for this pod only (upstream PostFilter's test)."""
    reserved = (claim.get("status") or _EMPTY).get("reservedFor") or ()
    return not reserved or (len(reserved) == 1 and reserved[0].get("uid") == pod.uid)


async def delete_claim(api: ApiWriter, claim: Raw) -> None:
    """Delete a claim the scheduler made (extended resources): drop the
    delete-protection finalizer first, so deletion does not wait for it."""
    namespace, name = _names(claim)
    current: Raw = claim
    for attempt in range(MAX_ATTEMPTS):
        if attempt:
            current = await api.request("GET", claim_path(namespace, name))
        finalizers = list((current.get("metadata") or _EMPTY).get("finalizers") or ())
        if FINALIZER not in finalizers:
            break
        updated = editable(current)
        updated["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER]
        try:
            await api.request("PUT", claim_path(namespace, name), updated)
            break
        except Exception as error:
            if not _is_conflict(error):
                raise
    await api.request("DELETE", claim_path(namespace, name))


Spawn = Callable[[str, Coroutine[Any, Any, None]], None]
DRAIN_TIMEOUT_SECONDS = 10.0


class BackgroundWrites:
    """Writes on claims started from synchronous code, run by the scheduler's
    background runner (``Handle.spawn``: owned by the composition root,
    drained at shutdown); a failure is logged and left to the next attempt
    (a write that must report its failure catches it itself). Each write is filed under the
    claim it writes, so ``busy`` and ``drain`` concern only the claims asked
    about: PreBind orders itself after an earlier attempt's Unreserve of its
    own claims, never after other pods' writes."""

    def __init__(self, spawn: Spawn | None = None) -> None:
        self._spawn = spawn
        self._pending: dict[str, set[asyncio.Future[None]]] = {}

    def submit(
        self,
        claim: str,
        what: str,
        write: Callable[[], Awaitable[None]],
    ) -> None:
        """Run ``write`` (which writes ``claim``, ``namespace/name``) in the background."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            log.warning("DynamicResources: no event loop to %s; left to the next attempt", what)
            return
        done: asyncio.Future[None] = loop.create_future()
        self._pending.setdefault(claim, set()).add(done)

        def forget(_: asyncio.Future[None]) -> None:
            pending = self._pending.get(claim)
            if pending is not None:
                pending.discard(done)
                if not pending:
                    del self._pending[claim]

        done.add_done_callback(forget)

        async def run() -> None:
            try:
                await write()
            except Exception as error:
                log.warning("DynamicResources: could not %s: %s", what, error)
            finally:
                if not done.done():
                    done.set_result(None)

        name = f"dynamicresources:{what}"
        if self._spawn is not None:
            self._spawn(name, run())
        else:
            task = loop.create_task(run(), name=name)

            def finished(_: asyncio.Task[None]) -> None:
                if not done.done():  # cancelled before it ran
                    done.set_result(None)

            task.add_done_callback(finished)

    def busy(self, claim: str) -> bool:
        """Whether a write of ``claim`` started and has not finished."""
        return claim in self._pending

    async def drain(
        self,
        claims: Iterable[str] | None = None,
        timeout: float = DRAIN_TIMEOUT_SECONDS,  # noqa: ASYNC109
    ) -> None:
        """Until the writes of ``claims`` (all claims if None) started so far
        are done, or ``timeout`` passed (a write the runner refused at
        shutdown never reports back)."""
        keys = self._pending.keys() if claims is None else claims
        waiting = {done for key in keys for done in self._pending.get(key, ())}
        if waiting:
            await asyncio.wait(waiting, timeout=timeout)
