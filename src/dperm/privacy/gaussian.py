"""Gaussian mechanism: exact privacy profile and every noise calibration the papers use.

The Gaussian mechanism releases f(D) + N(0, σ² I). Its guarantee depends only on the ℓ2
sensitivity Δ = sup ‖f(D) − f(D')‖₂ over neighbouring D ~ D'; the *adjacency* (add/remove-one or
replace-one) enters only through how the caller computes Δ (e.g. a sum of per-example
gradients clipped to norm C has Δ = C under add/remove and 2C under replace-one).

Calibrations (all return σ for ``(epsilon, delta, sensitivity)``):

========================  ===========================================  ==================
function                  σ                                             valid for
========================  ===========================================  ==================
gaussian_sigma_classical  Δ √(2 ln(1.25/δ)) / ε   (Dwork & Roth Thm A.1)  0 < ε < 1
gaussian_sigma_zhang      Δ √(2 ln(2/δ)) / ε      (Dwork et al. 2006)     0 < ε ≤ 1
gaussian_sigma_zhao       (c_δ + √(c_δ² + ε)) Δ / (√2 ε) (Zhao et al.)    all ε > 0
gaussian_sigma_analytic   smallest σ with gaussian_delta(ε, σ, Δ) ≤ δ     all ε > 0 (tight)
========================  ===========================================  ==================

The first two are *refused* outside their range (docs/privacy.md#gaussian-range: SGD-Adv, DP-AGD's
OutPert and Zhang et al. use them beyond ε = 1).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

from . import calibration_faults as faults
from .validation import check_delta, check_epsilon, check_rng, check_sensitivity, check_sigma

__all__ = [
    "gaussian_delta",
    "gaussian_sigma_classical",
    "gaussian_sigma_zhang",
    "gaussian_sigma_zhao",
    "gaussian_sigma_analytic",
    "gaussian_noise",
]

_ALTERNATIVES = "use gaussian_sigma_zhao or gaussian_sigma_analytic, which are valid for every ε > 0"


def gaussian_delta(epsilon, sigma, sensitivity=1.0):
    """Exact privacy profile δ(ε) of the Gaussian mechanism (Balle & Wang 2018, Thm 8).

    δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ).

    The mechanism N(f(D), σ²I) with ℓ2 sensitivity Δ is (ε, δ)-DP **iff** δ ≥ δ(ε); this is the
    reference every calibration in this module is tested against. Computed as
    Φ(a)·(−expm1(ε + ln Φ(b) − ln Φ(a))) so tiny δ keep full relative precision.
    ``epsilon`` (>= 0) and ``sigma`` broadcast as numpy arrays.
    """
    eps = check_epsilon(epsilon, allow_zero=True)
    sig = check_sigma(sigma)
    sens = check_sensitivity(sensitivity)
    a = sens / (2.0 * sig) - eps * sig / sens
    b = -sens / (2.0 * sig) - eps * sig / sens
    log_a, log_b = log_ndtr(a), log_ndtr(b)
    with np.errstate(over="ignore", invalid="ignore"):
        delta = np.exp(log_a) * -np.expm1(eps + log_b - log_a)
    delta = np.where(np.isfinite(delta), delta, 0.0)  # Φ(a) underflowed to 0: δ is 0 too
    delta = np.clip(delta, 0.0, 1.0)
    return float(delta) if np.ndim(delta) == 0 else delta


def gaussian_sigma_classical(epsilon, delta, sensitivity=1.0) -> float:
    """Classical Gaussian calibration σ = Δ √(2 ln(1.25/δ)) / ε.

    Dwork & Roth (2014), Thm 3.22 / A.1; Lee & Kifer 2018, Theorem 3.3 (eq. 3); Wang's lecture notes
    (Lecture 15), Lemma 15.3. Adjacency: any, with Δ the ℓ2 sensitivity under it. Guarantee:
    (ε, δ)-DP, **proven only for 0 < ε < 1**; ``ValueError`` is raised for ε >= 1.
    """
    eps = check_epsilon(epsilon)
    if eps >= 1.0:
        raise ValueError(
            f"gaussian_sigma_classical is only proven for epsilon < 1; got epsilon={eps!r}; "
            + _ALTERNATIVES
        )
    d = check_delta(delta)
    return faults.sensitivity(check_sensitivity(sensitivity)) * math.sqrt(2.0 * math.log(1.25 / d)) / eps


def gaussian_sigma_zhang(epsilon, delta, sensitivity=1.0) -> float:
    """Gaussian calibration σ = Δ √(2 ln(2/δ)) / ε (Dwork et al. 2006 form).

    Used by Zhang et al. 2017, Alg. 1 (density exp(−ε²‖z‖²/(4 ln(2/δ)Δ²))), DP-AGD's OutPert
    and dpml's PSGD. Adjacency: any, with Δ the ℓ2 sensitivity under it. Guarantee: (ε, δ)-DP for
    **0 < ε ≤ 1** only; ``ValueError`` is raised for ε > 1.
    """
    eps = check_epsilon(epsilon)
    if eps > 1.0:
        raise ValueError(
            f"gaussian_sigma_zhang is only valid for epsilon <= 1; got epsilon={eps!r}; "
            + _ALTERNATIVES
        )
    d = check_delta(delta)
    return faults.sensitivity(check_sensitivity(sensitivity)) * math.sqrt(2.0 * math.log(2.0 / d)) / eps


def gaussian_sigma_zhao(epsilon, delta, sensitivity=1.0) -> float:
    """Gaussian calibration valid for every ε > 0 (Zhao et al. 2019; used by Lowy & Razaviyayn).

    c_δ = √(ln(2/(√(16δ + 1) − 1))),  σ = (c_δ + √(c_δ² + ε)) Δ / (√2 ε).

    Adjacency: any, with Δ the ℓ2 sensitivity under it. Guarantee: (ε, δ)-DP for all ε > 0
    (the formula is recalled, since our copy of Lowy & Razaviyayn has its formulas stripped; it is
    checked numerically against :func:`gaussian_delta` in the tests).
    """
    eps = check_epsilon(epsilon)
    d = check_delta(delta)
    sens = faults.sensitivity(check_sensitivity(sensitivity))
    # √(16δ+1) − 1 = 16δ / (√(16δ+1) + 1): no cancellation for tiny δ.
    c = math.sqrt(math.log(2.0 * (math.sqrt(16.0 * d + 1.0) + 1.0) / (16.0 * d)))
    return (c + math.sqrt(c * c + eps)) * sens / (math.sqrt(2.0) * eps)


def gaussian_sigma_analytic(epsilon, delta, sensitivity=1.0, *, rtol: float = 1e-12) -> float:
    """Analytic Gaussian mechanism (Balle & Wang 2018, Alg. 1 / Thm 8): the smallest σ with
    :func:`gaussian_delta` (ε, σ, Δ) ≤ δ, found by bisection on ln σ.

    Adjacency: any, with Δ the ℓ2 sensitivity under it. Guarantee: (ε, δ)-DP for every ε > 0,
    and tight: the returned σ satisfies δ(ε) ≤ δ while σ·(1 − rtol) would not.
    """
    eps = check_epsilon(epsilon)
    d = check_delta(delta)
    sens = faults.sensitivity(check_sensitivity(sensitivity))
    log_d = math.log(d)

    def excess(log_sigma: float) -> float:  # > 0 while σ is too small
        return math.log(max(gaussian_delta(eps, math.exp(log_sigma), sens), 1e-300)) - log_d

    # Bracket in units of Δ; δ(σ) decreases from 1 (σ → 0) to 0 (σ → ∞).
    lo = hi = math.log(sens)
    while excess(hi) > 0.0:
        hi += 1.0
    while excess(lo) <= 0.0:
        lo -= 1.0
    # Plain bisection keeps the invariant excess(lo) > 0 >= excess(hi), so hi is always valid.
    while hi - lo > rtol:
        mid = 0.5 * (lo + hi)
        if excess(mid) > 0.0:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)


def gaussian_noise(*, sigma, rng: np.random.Generator, size=None):
    """Draw N(0, σ²) noise of shape ``size`` (e.g. ``(draws, p)``) for the Gaussian mechanism.

    Adjacency and sensitivity: those Δ was computed for. Guarantee: f(D) + noise is (ε, δ)-DP
    when σ comes from one of the calibrations above, and Δ²/(2σ²)-zCDP for any σ
    (:func:`dperm.privacy.zcdp.gaussian_sigma_for_zcdp`).
    """
    sig = faults.noise_scale(check_sigma(sigma))
    return check_rng(rng).normal(0.0, sig, size=size)
