"""Privacy settings as a cell's file name spells them (the ``eps`` part of ``eps<setting>.csv``).

A number is the target ε; ``inf`` is a non-private algorithm; ``T<steps>`` is an algorithm whose
ε is *computed* from a fixed number of steps (SGD-MA), reported in ``epsilon_spent``.
"""

from __future__ import annotations

import math
import re

import numpy as np

_STEPS = re.compile(r"^T([1-9][0-9]*)$")


def format_epsilon(value) -> str:
    """The one spelling of a privacy setting in file names: 0.05 -> '0.05', 1 and 1.0 -> '1',
    inf -> 'inf', 'T100' stays 'T100'."""
    if isinstance(value, str):
        if value == "inf" or _STEPS.match(value):
            return value
        value = float(value)
    value = float(value)
    if math.isinf(value) and value > 0:
        return "inf"
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"epsilon must be > 0, inf, or T<steps>; got {value!r}")
    return np.format_float_positional(value, trim="-")


def parse_setting(token: str) -> tuple[float, int | None]:
    """(target ε, steps) of a privacy setting token: ('0.1') -> (0.1, None); ('T100') -> (inf, 100)."""
    token = format_epsilon(token)
    match = _STEPS.match(token)
    return (math.inf, int(match.group(1))) if match else (float(token), None)
