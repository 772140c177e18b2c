"""The plugin API is documented: every abstract method of every class a plugin
may subclass carries a docstring, and the package ships ``py.typed``."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import scheduler
from scheduler.framework import interfaces

CLASSES = [
    cls
    for _, cls in inspect.getmembers(interfaces, inspect.isclass)
    if cls.__module__ == interfaces.__name__ and inspect.isabstract(cls)
]
ABSTRACT = [
    pytest.param(cls, name, id=f"{cls.__name__}.{name}")
    for cls in CLASSES
    for name in sorted(cls.__abstractmethods__)
    if name in vars(cls)
]


def test_there_are_abstract_methods_to_check() -> None:
    assert len(ABSTRACT) >= 15


@pytest.mark.parametrize(("cls", "name"), ABSTRACT)
def test_every_abstract_method_has_a_docstring(cls: type, name: str) -> None:
    doc = inspect.getdoc(vars(cls)[name])
    assert doc, f"{cls.__name__}.{name} has no docstring"


def test_the_package_is_marked_typed() -> None:
    assert (Path(scheduler.__file__).parent / "py.typed").is_file()
