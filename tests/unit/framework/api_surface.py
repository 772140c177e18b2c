"""Render the public plugin API (``__all__`` of ``scheduler.framework`` and
``scheduler.testing``) as text.

One line per exported name with its kind and signature; for classes, one
indented line per public member (methods with signatures, properties,
dataclass fields and annotated attributes, enum members). The rendering is
stable (sorted, no addresses) so ``public_api.txt`` can pin it.

Regenerate after a deliberate API change:
    PYTHONPATH=. python tests/unit/framework/api_surface.py > tests/unit/framework/public_api.txt
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re
import sys
from typing import Any

import scheduler.framework
import scheduler.testing

PUBLIC_MODULES = (scheduler.framework, scheduler.testing)

_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def _signature(obj: Any) -> str:
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"
    return _ADDRESS.sub("", text)


def _class_lines(cls: type) -> list[str]:
    lines: list[str] = []
    if issubclass(cls, enum.Enum):
        return [f"    member {member.name} = {member.value!r}" for member in cls]
    if dataclasses.is_dataclass(cls):
        lines += [f"    field {f.name}: {f.type}" for f in dataclasses.fields(cls)]
    annotations = {
        k: v for k, v in vars(cls).get("__annotations__", {}).items() if not k.startswith("_")
    }
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    lines += [f"    attribute {k}: {v}" for k, v in sorted(annotations.items()) if k not in fields]
    for name, member in sorted(vars(cls).items()):
        if name.startswith("_") and name not in ("__init__", "__call__"):
            continue
        if isinstance(member, property):
            lines.append(f"    property {name}")
        elif isinstance(member, staticmethod | classmethod):
            lines.append(f"    method {name}{_signature(member.__func__)}")
        elif inspect.isfunction(member):
            lines.append(f"    method {name}{_signature(member)}")
    return lines


def surface() -> list[str]:
    lines: list[str] = []
    for module in PUBLIC_MODULES:
        lines.append(f"module {module.__name__}")
        lines += _module_lines(module)
    return lines


def _module_lines(module: Any) -> list[str]:
    lines: list[str] = []
    for name in sorted(module.__all__):
        obj = getattr(module, name)
        if inspect.isclass(obj):
            bases = ", ".join(b.__name__ for b in obj.__bases__)
            lines.append(f"class {name}({bases})")
            lines += _class_lines(obj)
        elif inspect.isfunction(obj) or hasattr(obj, "__wrapped__"):
            lines.append(f"def {name}{_signature(obj)}")
        else:
            lines.append(f"value {name}: {type(obj).__name__} = {_ADDRESS.sub('', repr(obj))[:80]}")
    return lines


if __name__ == "__main__":
    sys.stdout.write("\n".join(surface()) + "\n")
