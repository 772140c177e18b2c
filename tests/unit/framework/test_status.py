"""Status.with_plugin: a tagged copy, the same one for the same plugin, never
sharing state with a status derived by ``dataclasses.replace``."""

from __future__ import annotations

from dataclasses import replace

from scheduler.framework.status import Code, Status


def test_with_plugin_tags_a_copy_once_per_plugin() -> None:
    status = Status.unschedulable("node(s) didn't match")
    tagged = status.with_plugin("A")
    assert (tagged.plugin, tagged.reasons, tagged.code) == (
        "A",
        ("node(s) didn't match",),
        Code.UNSCHEDULABLE,
    )
    assert status.plugin == "", "the original is unchanged"
    assert status.with_plugin("A") is tagged
    assert status.with_plugin("B").plugin == "B"
    assert tagged == Status.unschedulable("node(s) didn't match").with_plugin("A")


def test_a_replaced_status_does_not_inherit_the_cached_copy() -> None:
    status = Status.unschedulable("one")
    status.with_plugin("A")
    other = replace(status, reasons=("two",))
    assert other.with_plugin("A").reasons == ("two",)
