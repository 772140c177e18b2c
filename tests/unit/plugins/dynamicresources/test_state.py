"""ClaimTracker: the assume cache, in-flight allocations and the device index
stay consistent whatever the order of informer events and our own writes."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from plugins.dynamicresources.args import DynamicResourcesArgs
from plugins.dynamicresources.state import ClaimTracker
from scheduler.framework import object_key
from tests.support.drabuilders import make_claim
from tests.support.informers import FakeStore

DEVICE = ("drv", "pool", "dev-0")


def result(device: str = "dev-0", **extra: Any) -> dict[str, Any]:
    return {"request": "r", "driver": "drv", "pool": "pool", "device": device, **extra}


def claim(
    version: str, *results: dict[str, Any], uid: str = "u1", name: str = "c"
) -> dict[str, Any]:
    builder = make_claim(name).uid(uid).resource_version(version)
    if results:
        builder = builder.allocation({"devices": {"results": list(results)}})
    return builder.obj()


class Feed:
    """A store plus the tracker's informer handler, fed like an informer."""

    def __init__(self) -> None:
        self.store = FakeStore()
        self.tracker = ClaimTracker(self.store)

    def put(self, obj: dict[str, Any]) -> None:
        old = self.store.objects.get(object_key(obj))
        self.store.objects[object_key(obj)] = obj
        self.tracker.claim_changed(old, obj)

    def delete(self, obj: dict[str, Any]) -> None:
        old = self.store.objects.pop(object_key(obj))
        self.tracker.claim_changed(old, None)


def test_informer_allocation_and_deallocation_update_the_index() -> None:
    feed = Feed()
    feed.put(claim("1"))
    assert feed.tracker.allocated_state().devices == frozenset()
    feed.put(claim("2", result()))
    assert feed.tracker.allocated_state().devices == {DEVICE}
    feed.put(claim("3"))
    assert feed.tracker.allocated_state().devices == frozenset()


def test_admin_access_results_hold_nothing() -> None:
    feed = Feed()
    feed.put(claim("1", result(adminAccess=True)))
    assert feed.tracker.allocated_state().devices == frozenset()


def test_assumed_write_wins_until_the_informer_catches_up() -> None:
    feed = Feed()
    feed.put(claim("1"))
    feed.tracker.assume(claim("5", result()))
    assert feed.tracker.get("default", "c")["metadata"]["resourceVersion"] == "5"  # type: ignore[index]
    assert feed.tracker.allocated_state().devices == {DEVICE}
    feed.put(claim("3"))  # an older event arrives late: the assumption holds
    assert feed.tracker.allocated_state().devices == {DEVICE}
    feed.put(claim("5", result()))  # caught up: the informer's version is used
    assert feed.tracker.get("default", "c") is feed.store.objects["default/c"]
    assert feed.tracker.allocated_state().devices == {DEVICE}


def test_restore_drops_the_assumption() -> None:
    feed = Feed()
    feed.put(claim("1"))
    feed.tracker.assume(claim("5", result()))
    feed.tracker.restore("default", "c")
    assert feed.tracker.allocated_state().devices == frozenset()


def test_an_older_answer_is_not_assumed() -> None:
    feed = Feed()
    feed.put(claim("7", result()))
    feed.tracker.assume(claim("6"))
    assert feed.tracker.allocated_state().devices == {DEVICE}


def test_in_flight_devices_count_until_removed() -> None:
    feed = Feed()
    feed.put(claim("1"))
    feed.tracker.signal_in_flight("u1", claim("1", result()))
    assert feed.tracker.allocated_state().devices == {DEVICE}
    assert feed.tracker.remove_in_flight("u1")
    assert not feed.tracker.remove_in_flight("u1")
    assert feed.tracker.allocated_state().devices == frozenset()


SHARED_A = {"shareID": "s1", "consumedCapacity": {"bw": "2"}}
SHARED_B = {"shareID": "s2", "consumedCapacity": {"bw": "3"}}


@pytest.mark.parametrize(
    ("steps", "devices", "bandwidth"),
    [
        pytest.param(
            [
                ("reserve", claim("1", result())),
                ("write", claim("2", result())),
                ("bound", None),
                ("informer", claim("2", result())),
            ],
            [{DEVICE}, {DEVICE}, {DEVICE}, {DEVICE}],
            [None, None, None, None],
            id="reserve, prebind write, in-flight dropped, informer catches up",
        ),
        pytest.param(
            [("reserve", claim("1", result())), ("unreserve", None)],
            [{DEVICE}, set()],
            [None, None],
            id="reserve then unreserve",
        ),
        pytest.param(
            [
                ("reserve", claim("1", result(**SHARED_A))),
                ("write", claim("2", result(**SHARED_A))),
                ("bound", None),
                ("informer", claim("2", result(**SHARED_A))),
                ("informer-delete", claim("2", result(**SHARED_A))),
            ],
            [set(), set(), set(), set(), set()],
            [Decimal(5), Decimal(5), Decimal(5), Decimal(5), Decimal(3)],
            id="a shared allocation's capacity is counted once, in flight or written",
        ),
        pytest.param(
            [("reserve", claim("1", result(**SHARED_A))), ("unreserve", None)],
            [set(), set()],
            [Decimal(5), Decimal(3)],
            id="an unreserved shared allocation gives its capacity back",
        ),
    ],
)
def test_in_flight_and_written_versions_of_a_claim_count_once(
    steps: list[tuple[str, dict[str, Any] | None]],
    devices: list[set[Any]],
    bandwidth: list[Decimal | None],
) -> None:
    feed = Feed()
    feed.put(claim("1"))
    feed.put(claim("1", result(**SHARED_B), uid="other", name="other"))
    tracker = feed.tracker
    for (step, obj), expected_devices, expected_bandwidth in zip(
        steps, devices, bandwidth, strict=True
    ):
        if step == "reserve" and obj is not None:
            tracker.signal_in_flight("u1", obj)
        elif step == "write" and obj is not None:
            tracker.assume(obj)
        elif step == "bound":
            tracker.remove_in_flight("u1")
        elif step == "unreserve":
            tracker.remove_in_flight("u1")
            tracker.restore("", "c")
        elif step == "informer" and obj is not None:
            feed.put(obj)
        elif step == "informer-delete" and obj is not None:
            feed.delete(obj)
        state = tracker.allocated_state()
        assert set(state.devices) == expected_devices, step
        assert state.capacity.get(DEVICE, {}).get("bw") == (expected_bandwidth or Decimal(3)), step


def test_the_state_is_a_live_view_not_a_copy_per_pod() -> None:
    """Asking for the devices in use costs the same however many allocations
    are in flight: the state is views over one index that Reserve and
    Unreserve keep current, not a set rebuilt from them per pod."""
    feed = Feed()
    feed.put(claim("1"))
    state = feed.tracker.allocated_state()
    feed.tracker.signal_in_flight("u1", claim("1", result()))
    assert DEVICE in state.devices
    assert state.devices >= {DEVICE}
    feed.tracker.remove_in_flight("u1")
    assert DEVICE not in state.devices


def test_deleted_claim_frees_its_devices() -> None:
    feed = Feed()
    allocated = claim("2", result())
    feed.put(allocated)
    feed.delete(allocated)
    assert feed.tracker.allocated_state().devices == frozenset()
    assert feed.tracker.devices_in_use() == {}


def test_two_claims_on_one_device_are_counted_twice() -> None:
    """A double allocation (never ours) is visible, and freeing one keeps the other."""
    feed = Feed()
    feed.put(claim("1", result(), uid="u1", name="a"))
    feed.put(claim("1", result(), uid="u2", name="b"))
    assert feed.tracker.devices_in_use() == {DEVICE: 2}
    feed.put(claim("2", uid="u1", name="a"))
    assert feed.tracker.allocated_state().devices == {DEVICE}


def test_shared_allocations_add_up_their_capacity() -> None:
    feed = Feed()
    shared = {"shareID": "s1", "consumedCapacity": {"bw": "2"}}
    feed.put(claim("1", result(**shared), uid="u1", name="a"))
    feed.put(claim("1", result(shareID="s2", consumedCapacity={"bw": "3"}), uid="u2", name="b"))
    state = feed.tracker.allocated_state()
    assert state.devices == frozenset()
    assert state.shared == {(DEVICE, "s1"), (DEVICE, "s2")}
    assert state.capacity == {DEVICE: {"bw": Decimal(5)}}
    assert state.is_allocated(DEVICE)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param({}, (10.0, 600.0), id="defaults"),
        pytest.param(
            {"filterTimeout": "1m30s", "bindingTimeout": "2s"}, (90.0, 2.0), id="durations"
        ),
        pytest.param({"filterTimeout": "0"}, (0.0, 600.0), id="filter timeout off"),
    ],
)
def test_args(raw: dict[str, Any], expected: tuple[float, float]) -> None:
    args = DynamicResourcesArgs.model_validate(raw)
    assert (args.filter_timeout, args.binding_timeout) == expected


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({"bindingTimeout": "500ms"}, id="binding timeout under a second"),
        pytest.param({"filterTimeout": "ten"}, id="not a duration"),
        pytest.param({"unknown": 1}, id="unknown key"),
    ],
)
def test_bad_args(raw: dict[str, Any]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - pydantic's ValidationError
        DynamicResourcesArgs.model_validate(raw)


@pytest.mark.parametrize(
    ("raw", "dumped"),
    [
        pytest.param({}, {"filterTimeout": "10s", "bindingTimeout": "10m0s"}, id="defaults"),
        pytest.param(
            {"filterTimeout": "1m30s", "bindingTimeout": 1.5},
            {"filterTimeout": "1m30s", "bindingTimeout": "1.5s"},
            id="fractions",
        ),
    ],
)
def test_args_dump_as_go_durations(raw: dict[str, Any], dumped: dict[str, str]) -> None:
    """Upstream's decoder (the bench's same-plugins profile) wants strings."""
    args = DynamicResourcesArgs.model_validate(raw)
    assert args.model_dump(mode="json", by_alias=True) == dumped
    assert DynamicResourcesArgs.model_validate(dumped) == args
