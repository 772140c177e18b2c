"""PrioritySort: higher priority first, then the earlier queue timestamp."""

from __future__ import annotations

import pytest

from plugins.priority_sort import NAME, PrioritySort
from scheduler.framework import QueuedPodInfo
from tests.support.builders import make_pod
from tests.unit.plugins.support import pod


def queued(name: str, priority: int | None, timestamp: float) -> QueuedPodInfo:
    builder = make_pod(name)
    if priority is not None:
        builder.priority(priority)
    return QueuedPodInfo(pod=pod(builder.obj()), timestamp=timestamp)


@pytest.mark.parametrize(
    ("a", "b", "a_first"),
    [
        pytest.param(queued("a", 10, 2.0), queued("b", 5, 1.0), True, id="higher priority first"),
        pytest.param(queued("a", 5, 1.0), queued("b", 10, 2.0), False, id="lower priority later"),
        pytest.param(
            queued("a", 0, 1.0), queued("b", 0, 2.0), True, id="same priority, older first"
        ),
        pytest.param(
            queued("a", 0, 2.0), queued("b", 0, 1.0), False, id="same priority, newer later"
        ),
        pytest.param(queued("a", 7, 1.0), queued("b", 7, 1.0), False, id="equal is not less"),
        pytest.param(queued("a", None, 2.0), queued("b", -1, 1.0), True, id="unset priority is 0"),
        pytest.param(
            queued("a", -5, 1.0), queued("b", None, 2.0), False, id="negative after unset"
        ),
    ],
)
def test_less(a: QueuedPodInfo, b: QueuedPodInfo, a_first: bool) -> None:
    assert PrioritySort().less(a, b) is a_first


def test_name() -> None:
    assert PrioritySort.name == NAME == "PrioritySort"
