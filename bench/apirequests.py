"""What the apiserver served during the measured phase, by verb and resource
(pure; parses ``apiserver_request_total`` from its ``/metrics``).

The counter has no client label, so the scheduler's share of the writes is
the total minus the harness's own, which are exactly the pod creations
(``POST pods``: a scheduler never creates pods), plus, in churn mode, the
status patches and deletions its kubelet counted (``PATCH pods/status`` is
also a scheduler's verb, for pods it cannot place). That share per pod shows
whether both schedulers did the same API work (a bind, an event, ...) for
each pod.
"""

from __future__ import annotations

import re

REQUESTS_TOTAL = "apiserver_request_total"
MUTATING_VERBS = frozenset({"POST", "PUT", "PATCH", "DELETE", "APPLY"})
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def request_counts(text: str) -> dict[str, float]:
    """``"VERB resource[/subresource]"`` -> requests served, over codes and scopes."""
    counts: dict[str, float] = {}
    prefix = REQUESTS_TOTAL + "{"
    for line in text.splitlines():
        if not line.startswith(prefix):
            continue
        labels_text, _, value = line[len(prefix) :].rpartition("} ")
        labels = dict(_LABEL.findall(labels_text))
        resource = labels.get("resource", "")
        if labels.get("subresource"):
            resource = f"{resource}/{labels['subresource']}"
        key = f"{labels.get('verb', '')} {resource}"
        counts[key] = counts.get(key, 0.0) + float(value)
    return counts


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, int]:
    """Requests served between two scrapes, keeping only what changed."""
    changed = {key: round(count - before.get(key, 0.0)) for key, count in after.items()}
    return {key: count for key, count in sorted(changed.items()) if count}


HARNESS_WRITES = "POST pods"


def mutating(requests: dict[str, int]) -> int:
    return sum(count for key, count in requests.items() if key.split(" ", 1)[0] in MUTATING_VERBS)


def scheduler_writes(requests: dict[str, int], harness_writes: int = 0) -> int:
    """Writes other than the harness's pod creations and its other
    ``harness_writes``: binds, events, status patches."""
    return mutating(requests) - requests.get(HARNESS_WRITES, 0) - harness_writes
