"""Tiny validation helpers shared by the privacy primitives.

Every helper raises ``ValueError`` whose message names the parameter, shows the offending value
and says what is allowed, e.g. ``epsilon must be a finite number > 0; got epsilon=-1.0``.
Helpers accept Python or numpy scalars and (where noted) arrays; they return ``float`` for
scalars and a float ``ndarray`` for arrays, so callers can use the result directly.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "check_real",
    "check_epsilon",
    "check_delta",
    "check_sensitivity",
    "check_sigma",
    "check_rho",
    "check_sampling_rate",
    "check_steps",
    "check_confidence",
    "check_rng",
]


def _as_float(value, name: str):
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, got a boolean ({name}={value!r})")
    if isinstance(value, numbers.Real):
        return float(value)
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number or array of them; got {name}={value!r}") from None
    return float(arr) if arr.ndim == 0 else arr


def check_real(value, name: str, *, low=None, high=None, low_open=True, high_open=True,
               allowed: str | None = None):
    """Check that ``value`` is finite and inside the interval (low, high) (open/closed ends as
    requested); return it as float/ndarray. ``allowed`` overrides the generated description."""
    x = _as_float(value, name)
    arr = np.atleast_1d(x)
    ok = np.isfinite(arr)
    if low is not None:
        ok &= (arr > low) if low_open else (arr >= low)
    if high is not None:
        ok &= (arr < high) if high_open else (arr <= high)
    if not ok.all():
        bad = float(arr[~ok][0])
        if allowed is None:
            lo = "" if low is None else ("(" if low_open else "[") + f"{low:g}"
            hi = "" if high is None else f"{high:g}" + (")" if high_open else "]")
            if low is not None and high is not None:
                allowed = f"a finite number in {lo}, {hi}"
            elif low is not None:
                allowed = f"a finite number {'>' if low_open else '>='} {low:g}"
            elif high is not None:
                allowed = f"a finite number {'<' if high_open else '<='} {high:g}"
            else:
                allowed = "a finite number"
        raise ValueError(f"{name} must be {allowed}; got {name}={bad!r}")
    return x


def check_epsilon(epsilon, name: str = "epsilon", *, allow_zero: bool = False):
    """Privacy parameter ε: finite and > 0 (>= 0 if ``allow_zero``)."""
    return check_real(epsilon, name, low=0.0, low_open=not allow_zero)


def check_delta(delta, name: str = "delta", *, allow_zero: bool = False):
    """Privacy parameter δ: in (0, 1), or [0, 1) if ``allow_zero`` (δ = 0 is meaningless for
    approximate-DP calibrations such as the Gaussian mechanism, hence the default)."""
    return check_real(delta, name, low=0.0, high=1.0, low_open=not allow_zero)


def check_sensitivity(sensitivity, name: str = "sensitivity"):
    """Sensitivity Δ: finite and > 0 (a zero sensitivity needs no mechanism)."""
    return check_real(sensitivity, name, low=0.0)


def check_sigma(sigma, name: str = "sigma"):
    """Noise standard deviation / noise multiplier: finite and > 0."""
    return check_real(sigma, name, low=0.0)


def check_rho(rho, name: str = "rho", *, allow_zero: bool = True):
    """zCDP parameter ρ: finite and >= 0 (> 0 unless ``allow_zero``)."""
    return check_real(rho, name, low=0.0, low_open=not allow_zero)


def check_sampling_rate(q, name: str = "q"):
    """Sampling probability q in (0, 1]."""
    return check_real(q, name, low=0.0, high=1.0, high_open=False)


def check_steps(steps, name: str = "steps") -> int:
    """Number of compositions: a positive integer (integral floats such as 1e4 are accepted)."""
    if isinstance(steps, (bool, np.bool_)) or not isinstance(steps, numbers.Real):
        raise TypeError(f"{name} must be a positive integer; got {name}={steps!r}")
    if not np.isfinite(steps) or steps < 1 or int(steps) != steps:
        raise ValueError(f"{name} must be a positive integer; got {name}={steps!r}")
    return int(steps)


def check_confidence(confidence, name: str = "confidence") -> float:
    """Confidence level in (0, 1)."""
    return check_real(confidence, name, low=0.0, high=1.0)


def check_rng(rng, name: str = "rng") -> np.random.Generator:
    """Require an explicit ``np.random.Generator`` (no global state, no seeds, no None)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{name} must be a numpy.random.Generator (e.g. np.random.default_rng(seed)); "
            f"got {type(rng).__name__}"
        )
    return rng
