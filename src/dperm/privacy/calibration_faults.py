"""Audit-only fault injection into the privacy calibration: how the audit builds its mutants from
every algorithm's own calibration, without editing the algorithm or the audit.

Two factors, both exactly 1.0 except inside :func:`injected`, which only the privacy audit
(:mod:`dperm.audit`) enters, in the process of one audit subject, around the fits of a mutant:

* ``noise`` multiplies the scale of every noise draw: the Gaussian σ, the Laplace and
  ℓ2-Laplace scales, the noisy-max noise scale, the exponential mechanism's temperature, and the
  σ of the few loops that draw their Gaussian noise in bulk (DP-SGD's engine, the lecture notes'
  projected loop, the individual filter, BST14, RRPSGD, DP-AGD, the selection's score, the
  reference variants). 0.5 is the "half the noise" mutant; 0 releases the noiseless value, which
  is how the audit measures the shift a case achieves.
* ``sensitivity`` multiplies the sensitivity an algorithm hands a calibration: the Δ of
  :func:`~dperm.privacy.gaussian.gaussian_sigma_classical` and its siblings,
  :func:`~dperm.privacy.laplace.laplace_scale`, the ℓ2-Laplace's Δ₂,
  :func:`~dperm.privacy.noisy_max.noisy_max_scale`, the exponential mechanism's Δu, the
  output-perturbation rule :func:`~dperm.privacy.perturbation.noise_calibration` (ε-DP branch),
  ObjPert's gradient sensitivity and DP-AGD's gradient sensitivity. 0.5 is the "sensitivity
  halved" mutant. A calibration expressed as a noise multiplier relative to a clip (DP-SGD's
  accountants) takes no sensitivity: there this mutant changes nothing and the audit says so.

Each noise draw passes through exactly one ``noise_scale`` and each calibration through exactly
one ``sensitivity``, so a factor is applied once. The factors are process-global state: a fit
run inside :func:`injected` in another thread would see them; the audit runs subjects one per
process. Outside the audit nothing sets them, and every function here returns its argument
unchanged (``x * 1.0 == x`` bit for bit), so the pipeline's records do not depend on this module.
A test runs every registered private algorithm under ``noise=0.5`` with a fixed seed and fails,
naming it, if its release does not change: an algorithm drawing noise past these hooks would
otherwise escape its mutants (tests/privacy/test_calibration_faults.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["injected", "noise_scale", "sensitivity", "factors"]

_FACTORS = {"noise": 1.0, "sensitivity": 1.0}


def _factor(value, name: str) -> float:
    x = float(value)
    if not (math.isfinite(x) and x >= 0.0):
        raise ValueError(f"the {name} factor must be a finite number >= 0; got {name}={value!r}")
    return x


@contextmanager
def injected(*, noise: float = 1.0, sensitivity: float = 1.0) -> Iterator[None]:
    """Within the block, every noise scale is multiplied by ``noise`` and every calibrated
    sensitivity by ``sensitivity`` (module docstring); the previous factors come back after it,
    also when it raises. For the audit's mutants only."""
    new = {"noise": _factor(noise, "noise"), "sensitivity": _factor(sensitivity, "sensitivity")}
    old = dict(_FACTORS)
    _FACTORS.update(new)
    try:
        yield
    finally:
        _FACTORS.update(old)


def factors() -> dict[str, float]:
    """The factors in force (both 1.0 outside :func:`injected`)."""
    return dict(_FACTORS)


def noise_scale(scale):
    """``scale`` (a noise std, Laplace scale or temperature) times the ``noise`` factor."""
    f = _FACTORS["noise"]
    return scale if f == 1.0 else scale * f


def sensitivity(value):
    """``value`` (a sensitivity a calibration is about to use) times the ``sensitivity`` factor."""
    f = _FACTORS["sensitivity"]
    return value if f == 1.0 else value * f
