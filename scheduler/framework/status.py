"""Status: the result of one plugin call, with upstream kube-scheduler codes.

Invariants:
- ``None`` stands for Success wherever a Status is returned; ``Status.success()``
  is the explicit form. ``is_success`` treats both alike via ``status_code``.
- Codes keep their upstream integer values, so ``Code(n).name`` is the label
  used in metrics.
- A Status is immutable; ``with_plugin`` returns a copy, the same copy each
  time for the same plugin (a plugin's constant statuses are tagged once, not
  once per rejected node).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Code(enum.IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    @property
    def label(self) -> str:
        """The upstream spelling, used in metric labels: ``Success``, ``Error``..."""
        return _LABELS[self]


_LABELS = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}

_REJECTED = frozenset({Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING})


@dataclass(frozen=True, slots=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    error: str = ""
    # The last ``with_plugin`` copy (a cache: not part of the value).
    _tagged: Status | None = field(default=None, init=False, compare=False, repr=False)

    # ---------------------------------------------------------- constructors
    @staticmethod
    def success() -> Status:
        return _SUCCESS

    @staticmethod
    def unschedulable(*reasons: str) -> Status:
        return Status(Code.UNSCHEDULABLE, reasons)

    @staticmethod
    def unresolvable(*reasons: str) -> Status:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)

    @staticmethod
    def skip() -> Status:
        return _SKIP

    @staticmethod
    def wait(*reasons: str) -> Status:
        return Status(Code.WAIT, reasons)

    @staticmethod
    def pending(*reasons: str) -> Status:
        return Status(Code.PENDING, reasons)

    @staticmethod
    def as_error(error: BaseException | str) -> Status:
        return Status(Code.ERROR, error=str(error))

    # ------------------------------------------------------------- predicates
    def is_success(self) -> bool:
        return self.code is Code.SUCCESS

    def is_rejected(self) -> bool:
        return self.code in _REJECTED

    def is_skip(self) -> bool:
        return self.code is Code.SKIP

    def is_wait(self) -> bool:
        return self.code is Code.WAIT

    def is_error(self) -> bool:
        return self.code is Code.ERROR

    # --------------------------------------------------------------- content
    def message(self) -> str:
        """Reasons joined by ", ", the wrapped error's text first (as upstream)."""
        parts = [self.error, *self.reasons] if self.error else list(self.reasons)
        return ", ".join(parts)

    def with_plugin(self, plugin: str) -> Status:
        tagged = self._tagged
        if tagged is not None and tagged.plugin == plugin:
            return tagged
        tagged = Status(self.code, self.reasons, plugin, self.error)
        object.__setattr__(self, "_tagged", tagged)
        return tagged


_SUCCESS = Status()
_SKIP = Status(Code.SKIP)


def status_code(status: Status | None) -> Code:
    return Code.SUCCESS if status is None else status.code


def is_success(status: Status | None) -> bool:
    return status is None or status.code is Code.SUCCESS
