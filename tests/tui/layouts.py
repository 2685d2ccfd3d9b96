"""The terminal sizes every screen is snapshot at (issue 15: columns size to the terminal)."""

from __future__ import annotations

import pytest

SIZES = ((80, 24), (120, 36), (200, 50))


def with_sizes(states: list[str], populated: str, default: tuple[int, int]) -> pytest.MarkDecorator:
    """Parametrize (state, size): `populated` at every size in SIZES, the other states at `default`."""
    params = []
    for state in states:
        if state == populated:
            params += [pytest.param(state, size, id=f"{state}-{size[0]}x{size[1]}") for size in SIZES]
        else:
            params.append(pytest.param(state, default, id=state))
    return pytest.mark.parametrize("state, size", params)
