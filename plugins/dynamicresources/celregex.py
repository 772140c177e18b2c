"""The Kubernetes Regex CEL library (``k8s.io/apiserver/pkg/cel/library``
``Regex``: ``find``, ``findAll``), for the DRA selector adapter.

Patterns are RE2, as upstream's Go ``regexp``: matching is linear in the
input whatever the pattern (google-re2; a claim author's pattern cannot
stall the scheduler as a backtracking engine would). ``find`` is Go's
``FindString`` (the leftmost match, "" if none); ``findAll`` is Go's
``FindAllString``: successive non-overlapping matches, an empty match right
after the previous match ignored, at most ``limit`` when it is >= 0.
Compiled patterns are kept per environment, at most ``MAX_PATTERNS``
(oldest dropped). A pattern that does not compile is a ``ValueError`` (a
CEL error value).
"""

from __future__ import annotations

from typing import Any

import re2

MAX_PATTERNS = 256


class Regexes:
    """The library's functions over one bounded cache of compiled patterns."""

    def __init__(self) -> None:
        self._compiled: dict[str, Any] = {}
        self._options = re2.Options()
        self._options.log_errors = False  # an author's bad pattern is a CEL error, not a log line

    def _compile(self, pattern: str) -> Any:
        compiled = self._compiled.get(pattern)
        if compiled is None:
            try:
                compiled = re2.compile(pattern, self._options)
            except re2.error as error:
                raise ValueError(f"error parsing regexp: {error}") from None
            if len(self._compiled) >= MAX_PATTERNS:
                del self._compiled[next(iter(self._compiled))]
            self._compiled[pattern] = compiled
        return compiled

    def find(self, text: str, pattern: str) -> str:
        match = self._compile(pattern).search(text)
        return "" if match is None else str(match.group(0))

    def find_all(self, text: str, pattern: str, limit: int = -1) -> list[str]:
        compiled = self._compile(pattern)
        found: list[str] = []
        position, previous_end = 0, -1
        while (limit < 0 or len(found) < limit) and position <= len(text):
            match = compiled.search(text, position)
            if match is None:
                break
            start, end = match.start(), match.end()
            accept = True
            if end == position:  # an empty match
                accept = start != previous_end
                position += 1
            else:
                position = end
            previous_end = end
            if accept:
                found.append(str(match.group(0)))
        return found
