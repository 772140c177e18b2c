"""The missing-domain rewrite: each lookup on ``device.attributes`` or
``device.capacity`` becomes the optional lookup with an empty-map default;
nothing else changes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugins.dynamicresources.celdomains import rewrite

A = "device.attributes"


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        pytest.param(f'{A}["d"].x', f'{A}[?"d"].orValue(dyn({{}})).x', id="index"),
        pytest.param(
            'device.capacity["d"].mem', 'device.capacity[?"d"].orValue(dyn({})).mem', id="capacity"
        ),
        pytest.param(f"{A}.d.x", f'{A}[?"d"].orValue(dyn({{}})).x', id="select"),
        pytest.param(
            f'{A}[?"d"]', f'optional.of({A}[?"d"].orValue(dyn({{}})))', id="optional index finds"
        ),
        pytest.param(f"{A}.?d", f'optional.of({A}[?"d"].orValue(dyn({{}})))', id="optional select"),
        pytest.param(f"has({A}.d)", "true", id="has finds"),
        pytest.param(
            f"{A}[device.driver].x",
            f"{A}[?device.driver].orValue(dyn({{}})).x",
            id="computed key",
        ),
        pytest.param(
            f'{A}[{A}["a"].name]',
            f'{A}[?{A}[?"a"].orValue(dyn({{}})).name].orValue(dyn({{}}))',
            id="nested lookups",
        ),
        pytest.param(f'"d" in {A}', f'"d" in {A}', id="in is left alone"),
        pytest.param(f"size({A}) == 2", f"size({A}) == 2", id="size is left alone"),
        pytest.param(
            f"{A}.exists(k, k == 'd')", f"{A}.exists(k, k == 'd')", id="macros are left alone"
        ),
        pytest.param(
            f"\"{A}[x]\" == r'{A}.y'",
            f"\"{A}[x]\" == r'{A}.y'",
            id="string literals are copied",
        ),
        pytest.param(
            'mydevice.attributes["d"]', 'mydevice.attributes["d"]', id="another identifier"
        ),
        pytest.param(
            'x.device.attributes["d"]', 'x.device.attributes["d"]', id="a field named device"
        ),
        pytest.param(f'{A}["d"', f'{A}["d"', id="unbalanced text is left as it is"),
        pytest.param(
            f'cel.bind(a, {A}, a["d"])', f'cel.bind(a, {A}, a["d"])', id="aliases are not seen"
        ),
    ],
)
def test_rewrite(expression: str, expected: str) -> None:
    assert rewrite(expression) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("device.attributes capacity[]?(){}\"'rb\\has.x1 ")),
        max_size=60,
    )
)
def test_rewrite_never_raises_and_leaves_text_without_lookups_alone(text: str) -> None:
    rewritten = rewrite(text)
    if "device" not in text:
        assert rewritten == text
