"""The last scheduling attempts per pod, for ``/debug/pods/{namespace}/{name}``.

The scheduling cycle records one dict per attempt (its shape is the cycle's
business, e.g. ``{"cycle", "time", "result", "message", "nodes", "scores"}``);
this log stores it opaquely and hands it back to the debug endpoint.

Invariants:
- Bounded: at most ``attempts_per_pod`` attempts for each of at most ``max_pods``
  pods. Recording for a pod makes it the most recent; the least recently
  recorded pod is dropped first. Reading does not refresh a pod.
- Bounded in bytes: the cycle's records are at most
  ``scheduler.cycle.reporting.ATTEMPT_BYTES_BOUND`` (32 KiB) each whatever the
  cluster size (a histogram and a sample of nodes, not a verdict per node), so
  the default 1000 pods x 5 attempts hold at most 160 MiB, typically ~35 MiB.
- Pure and synchronous: recorded from the scheduling cycle without awaiting.
- Attempts are stored as given; ``attempts`` returns a new list of the same
  dicts, so callers must treat them as read-only.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Any

Attempt = dict[str, Any]


class AttemptLog:
    def __init__(self, max_pods: int = 1000, attempts_per_pod: int = 5) -> None:
        if max_pods < 1 or attempts_per_pod < 1:
            raise ValueError("AttemptLog bounds must be positive")
        self._max_pods = max_pods
        self._attempts_per_pod = attempts_per_pod
        self._pods: OrderedDict[str, deque[Attempt]] = OrderedDict()

    def record(self, pod_key: str, attempt: Attempt) -> None:
        """Append ``attempt`` for ``pod_key`` (``namespace/name``), oldest first."""
        attempts = self._pods.get(pod_key)
        if attempts is None:
            attempts = self._pods[pod_key] = deque(maxlen=self._attempts_per_pod)
            while len(self._pods) > self._max_pods:
                self._pods.popitem(last=False)
        else:
            self._pods.move_to_end(pod_key)
        attempts.append(attempt)

    def forget(self, pod_key: str) -> None:
        """Drop a pod's history (e.g. when the pod is deleted)."""
        self._pods.pop(pod_key, None)

    def attempts(self, namespace: str, name: str) -> list[Attempt] | None:
        """The pod's recorded attempts, oldest first; None if none are kept."""
        attempts = self._pods.get(f"{namespace}/{name}")
        return None if attempts is None else list(attempts)

    def __len__(self) -> int:
        return len(self._pods)
