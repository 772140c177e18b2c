"""Upstream's missing-domain rule, expressed with CEL's optional library.

Upstream hands the expression ``device.attributes`` and ``device.capacity``
as maps whose lookup of a missing domain finds an empty map (its ``mapper``
overrides ``Find`` only), while ``in``, ``size()`` and iteration see the
device's real domains. cel-cpp cannot take such a map from Python, so each
lookup on those two maps is rewritten, before compiling, into the optional
lookup that means the same, and the device is passed as it is:

- ``device.attributes[K]`` and ``device.attributes.d`` become
  ``device.attributes[?K].orValue(dyn({}))``;
- ``device.attributes[?K]`` and ``device.attributes.?d`` become
  ``optional.of(device.attributes[?K].orValue(dyn({})))`` (upstream's lookup
  always finds something);
- ``has(device.attributes.d)`` becomes ``true`` (likewise);
- anything else, ``in``, ``size()``, macros and member calls on the maps
  included, is left alone.

Only lookups written on ``device.attributes``/``device.capacity`` are seen:
a map reached through an alias (``cel.bind(a, device.attributes, a["d"])``)
keeps cel-cpp's "no such key" for a missing domain. String literals are
copied verbatim. Pure; ``rewrite`` never raises: text it cannot follow is
returned unchanged (the caller compiles the original then).
"""

from __future__ import annotations

_MAPS = ("attributes", "capacity")
_OPEN = {"[": "]", "(": ")", "{": "}"}
_QUOTES = ('"""', "'''", '"', "'")


class _Unbalanced(Exception):
    """A bracket without its partner: the text is left as it is."""


def rewrite(expression: str) -> str:
    """``expression`` with every lookup on the outer maps defaulting to ``{}``."""
    try:
        return _Rewriter(expression).run(0, len(expression))
    except _Unbalanced:
        return expression


def literal_end(text: str, i: int) -> int | None:
    """The end of the CEL string or bytes literal starting at ``i``, if one
    does; ValueError for one that never ends (shared with ``celformat``)."""
    try:
        return _Rewriter(text)._literal_end(i, len(text))
    except _Unbalanced:
        raise ValueError("unterminated string literal") from None


def closing_bracket(text: str, i: int) -> int:
    """The index of the bracket closing the one at ``i`` (string literals
    skipped); ValueError when it has none."""
    try:
        return _Rewriter(text)._closing(i, len(text))
    except _Unbalanced:
        raise ValueError("unbalanced brackets") from None


def _is_ident_char(char: str) -> bool:
    return char.isalnum() or char == "_"


class _Rewriter:
    def __init__(self, text: str) -> None:
        self.text = text

    def run(self, start: int, end: int) -> str:
        text, out, i = self.text, [], start
        while i < end:
            literal_end = self._literal_end(i, end)
            if literal_end is not None:
                out.append(text[i:literal_end])
                i = literal_end
                continue
            if _is_ident_char(text[i]) and (i == start or not _is_ident_char(text[i - 1])):
                word_end = i
                while word_end < end and _is_ident_char(text[word_end]):
                    word_end += 1
                word = text[i:word_end]
                after_dot = self._previous_char(i, start) == "."
                if word == "has" and not after_dot:
                    replaced = self._has(word_end, end)
                    if replaced is not None:
                        out.append("true")
                        i = replaced
                        continue
                if word == "device" and not after_dot:
                    replaced_text, replaced = self._lookup(word_end, end)
                    if replaced_text is not None:
                        out.append(replaced_text)
                        i = replaced
                        continue
                out.append(word)
                i = word_end
                continue
            out.append(text[i])
            i += 1
        return "".join(out)

    # ------------------------------------------------------------- scanning
    def _literal_end(self, i: int, end: int) -> int | None:
        """The end of the string or bytes literal starting at ``i``, if one does."""
        text = self.text
        prefix = i
        while prefix < end and prefix - i < 2 and text[prefix] in "rRbB":
            prefix += 1
        if prefix > i and i > 0 and _is_ident_char(text[i - 1]):
            return None  # the r/b is the end of an identifier
        raw = "r" in text[i:prefix].lower()
        for quote in _QUOTES:
            if text.startswith(quote, prefix):
                j = prefix + len(quote)
                while j < end:
                    if not raw and text[j] == "\\":
                        j += 2
                        continue
                    if text.startswith(quote, j):
                        return j + len(quote)
                    if len(quote) == 1 and text[j] == "\n":
                        break
                    j += 1
                raise _Unbalanced
        return None

    def _previous_char(self, i: int, start: int) -> str:
        j = i - 1
        while j >= start and self.text[j].isspace():
            j -= 1
        return self.text[j] if j >= start else ""

    def _skip_space(self, i: int, end: int) -> int:
        while i < end and self.text[i].isspace():
            i += 1
        return i

    def _ident(self, i: int, end: int) -> tuple[str, int]:
        j = i
        while j < end and _is_ident_char(self.text[j]):
            j += 1
        return self.text[i:j], j

    def _closing(self, i: int, end: int) -> int:
        """The index of the bracket closing the one at ``i``."""
        stack = [_OPEN[self.text[i]]]
        j = i + 1
        while j < end:
            literal_end = self._literal_end(j, end)
            if literal_end is not None:
                j = literal_end
                continue
            char = self.text[j]
            if char in _OPEN:
                stack.append(_OPEN[char])
            elif char in ")]}":
                if char != stack.pop():
                    raise _Unbalanced
                if not stack:
                    return j
            j += 1
        raise _Unbalanced

    # ------------------------------------------------------------ rewriting
    def _outer_map(self, i: int, end: int) -> tuple[str, int] | None:
        """After ``device``: ``.attributes`` or ``.capacity``, and where it ends."""
        j = self._skip_space(i, end)
        if j >= end or self.text[j] != ".":
            return None
        name, k = self._ident(self._skip_space(j + 1, end), end)
        if name not in _MAPS:
            return None
        return f"device.{name}", k

    def _lookup(self, i: int, end: int) -> tuple[str | None, int]:
        outer = self._outer_map(i, end)
        if outer is None:
            return None, i
        base, j = outer
        k = self._skip_space(j, end)
        text = self.text
        if k < end and text[k] == "[":
            close = self._closing(k, end)
            inner = self._skip_space(k + 1, close)
            optional = inner < close and text[inner] == "?"
            key = self.run(inner + 1 if optional else inner, close).strip()
            found = f"{base}[?{key}].orValue(dyn({{}}))"
            return (f"optional.of({found})" if optional else found), close + 1
        if k < end and text[k] == ".":
            m = self._skip_space(k + 1, end)
            optional = m < end and text[m] == "?"
            name, after = self._ident(self._skip_space(m + 1, end) if optional else m, end)
            if not name or name[0].isdigit():
                return None, i
            if self._skip_space(after, end) < end and text[self._skip_space(after, end)] == "(":
                return None, i  # a member call or macro on the map itself
            found = f'{base}[?"{name}"].orValue(dyn({{}}))'
            return (f"optional.of({found})" if optional else found), after
        return None, i

    def _has(self, i: int, end: int) -> int | None:
        """``has(device.attributes.d)`` from ``i`` (after ``has``): where it ends."""
        j = self._skip_space(i, end)
        if j >= end or self.text[j] != "(":
            return None
        word, k = self._ident(self._skip_space(j + 1, end), end)
        if word != "device":
            return None
        outer = self._outer_map(k, end)
        if outer is None:
            return None
        m = self._skip_space(outer[1], end)
        if m >= end or self.text[m] != ".":
            return None
        name, after = self._ident(self._skip_space(m + 1, end), end)
        close = self._skip_space(after, end)
        if not name or close >= end or self.text[close] != ")":
            return None
        return close + 1
