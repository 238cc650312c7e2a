"""What values a hyper-parameter admits, declared once per algorithm beside its defaults
(``@register(..., domains={...})``) and checked when a configuration is loaded, so a negative
clip, ``epochs: 0`` or an unknown accountant is refused before anything runs, naming the file,
the key, the value and what is allowed.

A :class:`Domain` is a predicate with the words that describe it. ``needs`` (also declared at
registration) states what an algorithm needs of its privacy target: :func:`finite_epsilon`,
:func:`positive_delta`; and ``size_bounds`` the hyper-parameters that may not exceed the
training rows (``batch_size``), checked against an upper bound of each dataset's training rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Domain:
    """The values a hyper-parameter admits: ``test(value)`` and the words for them."""

    text: str
    test: Callable[[Any], bool]

    def admits(self, value) -> bool:
        try:
            return bool(self.test(value))
        except (TypeError, ValueError):
            return False


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


POSITIVE = Domain("a finite number > 0", lambda v: _number(v) and v > 0)
NON_NEGATIVE = Domain("a finite number >= 0", lambda v: _number(v) and v >= 0)
POSITIVE_INT = Domain("an integer >= 1", lambda v: _integer(v) and v >= 1)
NON_NEGATIVE_INT = Domain("an integer >= 0", lambda v: _integer(v) and v >= 0)
FRACTION = Domain("a number in (0, 1)", lambda v: _number(v) and 0 < v < 1)
UNIT = Domain("a number in (0, 1]", lambda v: _number(v) and 0 < v <= 1)
BOOLEAN = Domain("true or false", lambda v: isinstance(v, bool))
ANY = Domain("any value its algorithm checks itself", lambda v: True)


def one_of(*choices) -> Domain:
    return Domain(f"one of {list(choices)}", lambda v: v in choices)


def optional(domain: Domain) -> Domain:
    """``domain`` or null (the algorithm then derives the value itself)."""
    return Domain(f"null or {domain.text}", lambda v: v is None or domain.admits(v))


def at_least(bound: float) -> Domain:
    return Domain(f"a finite number >= {bound:g}", lambda v: _number(v) and v >= bound)


def integer_at_least(bound: int) -> Domain:
    return Domain(f"an integer >= {bound}", lambda v: _integer(v) and v >= bound)


def sequence_of(domain: Domain) -> Domain:
    return Domain(f"a list of {domain.text}", lambda v: isinstance(v, (list, tuple)) and all(domain.admits(x)
                                                                                              for x in v))


# -- what an algorithm needs of its privacy target ---------------------------------------------------

def finite_epsilon(epsilon: float, delta: float, hyper: dict) -> str | None:
    return None if math.isfinite(epsilon) else "a finite epsilon"


def positive_delta(epsilon: float, delta: float, hyper: dict) -> str | None:
    return None if delta > 0 else "delta > 0 (its Gaussian noise gives (epsilon, delta)-DP only)"


def unless_given(name: str, need: Callable) -> Callable:
    """``need``, waived when the hyper-parameter ``name`` is set (e.g. DP-SGD with an explicit
    noise multiplier computes its ε instead of meeting a target)."""

    def check(epsilon: float, delta: float, hyper: dict) -> str | None:
        return None if hyper.get(name) is not None else need(epsilon, delta, hyper)

    return check
