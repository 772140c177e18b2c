"""Cross-type numeric comparisons, as Kubernetes' CEL has them (cel-go's
``CrossTypeNumericComparisons``, in the base environment since 1.28).

``1 < 1.5``, ``x > 2u`` with ``x`` an int, ``2.0 >= 1``: the ordering
operators ``<``, ``<=``, ``>``, ``>=`` compare int, uint and double with one
another. cel-cpp's *runtime* already does (a dyn attribute compared with a
double literal works), but its type checker only has the same-type
overloads and refuses a statically typed mix. The adapter (``cel.py``)
therefore drops the standard library's declarations of the four operators
from the checker (``stdlib.exclude_functions``) and declares them again
with every standard overload plus the six cross-type numeric ones. The
declarations carry no implementation, so evaluation stays the runtime's
own, the same comparison a dyn operand already gets.

Equality is not cross-typed, in cel-go either: ``1 == 1.0`` stays a
compile error. Pure data: the overloads as (operator, overload id, operand
kinds); the adapter maps the kind names to its library's types.
"""

from __future__ import annotations

import itertools

# operator -> the standard overload-id stem (cel-spec's names)
OPERATORS = {"_<_": "less", "_<=_": "less_equals", "_>_": "greater", "_>=_": "greater_equals"}
# kind -> the overload-id word
_SAME_TYPE = {
    "bool": "bool",
    "int": "int64",
    "uint": "uint64",
    "double": "double",
    "string": "string",
    "bytes": "bytes",
    "timestamp": "timestamp",
    "duration": "duration",
}
NUMERIC = ("int", "uint", "double")


def overloads() -> list[tuple[str, str, tuple[str, str]]]:
    """(operator, overload id, (left kind, right kind)) for every ordering
    overload of the standard library with cross-type numeric comparisons."""
    result = []
    for operator, stem in OPERATORS.items():
        for kind, word in _SAME_TYPE.items():
            result.append((operator, f"{stem}_{word}", (kind, kind)))
        for left, right in itertools.permutations(NUMERIC, 2):
            result.append(
                (operator, f"{stem}_{_SAME_TYPE[left]}_{_SAME_TYPE[right]}", (left, right))
            )
    return result


def stdlib_exclusions() -> str:
    """The environment YAML's ``stdlib`` section dropping the four operators."""
    lines = ["stdlib:", "  exclude_functions:"]
    lines += [f'    - name: "{operator}"' for operator in OPERATORS]
    return "\n".join(lines) + "\n"
