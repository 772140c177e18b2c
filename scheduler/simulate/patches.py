"""The API server's patch and selector semantics the simulator needs. Pure.

- ``field_matcher``: field selectors (``status.phase!=Failed,spec.nodeName=``).
- ``merge_patch``: RFC 7386 JSON merge patch.
- ``strategic_status``: a strategic merge patch of ``status`` for the lists
  the scheduler patches (conditions by ``type``, a claim's ``reservedFor``
  by ``uid``, ``$patch: delete`` entries removing), other fields replaced.
- ``check_uid``: the ``metadata.uid`` precondition of a patch (409).

Every function returns new values and never mutates its arguments.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from scheduler.kube.errors import HTTP_CONFLICT, ApiError

Raw = dict[str, Any]

# Strategic merge keys of the lists the scheduler patches.
MERGE_KEYS = {"conditions": "type", "reservedFor": "uid"}


def _field(obj: Mapping[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return "" if value is None else str(value)


def field_matcher(selector: str | None) -> Callable[[Mapping[str, Any]], bool]:
    """``a=b,c!=d`` over dotted paths (``status.phase``, ``spec.nodeName``)."""
    terms: list[tuple[str, str, bool]] = []
    for raw_term in (selector or "").split(","):
        term = raw_term.strip()
        if not term:
            continue
        if "!=" in term:
            path, _, value = term.partition("!=")
            terms.append((path.strip(), value.strip(), False))
        else:
            path, _, value = term.partition("==" if "==" in term else "=")
            terms.append((path.strip(), value.strip(), True))

    def matches(obj: Mapping[str, Any]) -> bool:
        return all((_field(obj, path) == value) == equal for path, value, equal in terms)

    return matches


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch; returns a new value."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def merge_list(current: Iterable[Raw], patched: Iterable[Raw], key: str) -> list[Raw]:
    """Strategic merge of a list of objects keyed by ``key``; an entry with
    ``$patch: delete`` removes the matching one."""
    merged = [dict(c) for c in current]
    for entry in patched:
        index = next((i for i, e in enumerate(merged) if e.get(key) == entry.get(key)), None)
        if entry.get("$patch") == "delete":
            if index is not None:
                del merged[index]
        elif index is not None:
            merged[index] = {**merged[index], **entry}
        else:
            merged.append(dict(entry))
    return merged


def strategic_status(obj: Mapping[str, Any], patch: Mapping[str, Any]) -> Raw:
    """``status`` after a strategic merge patch (see the module docstring)."""
    status = dict(obj.get("status") or {})
    for key, value in (patch.get("status") or {}).items():
        if key in MERGE_KEYS:
            status[key] = merge_list(status.get(key) or [], value or [], MERGE_KEYS[key])
        elif value is None:
            status.pop(key, None)
        else:
            status[key] = copy.deepcopy(value)
    return status


def check_uid(obj: Mapping[str, Any], patch: Mapping[str, Any]) -> None:
    """Raise 409 when the patch's ``metadata.uid`` precondition fails."""
    uid = (patch.get("metadata") or {}).get("uid")
    if uid and (obj.get("metadata") or {}).get("uid") != uid:
        raise ApiError(HTTP_CONFLICT, "Conflict", "Precondition failed: UID in precondition")
