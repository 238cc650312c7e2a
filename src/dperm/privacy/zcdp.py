"""Zero-concentrated DP conversions (Bun & Steinke 2016), as used by DP-AGD (Lee & Kifer 2018,
§3.2).

ρ-zCDP: D_α(M(D) ‖ M(D')) ≤ ρα for all α > 1 and all neighbours. zCDP composes additively, also
adaptively (Lee & Kifer 2018, Lemma 3.5); for a *fixed total* with adaptively chosen shares see
:class:`dperm.privacy.zcdp_filter.ZCDPFilter`. The adjacency is whatever the underlying mechanisms'
sensitivities were computed for (Lee & Kifer 2018: add/remove-one).
"""

from __future__ import annotations

import math

from . import calibration_faults as faults
from .validation import check_delta, check_epsilon, check_rho, check_sensitivity, check_sigma

__all__ = [
    "zcdp_of_gaussian",
    "zcdp_of_pure_dp",
    "zcdp_to_dp",
    "zcdp_from_dp",
    "gaussian_sigma_for_zcdp",
    "pure_dp_epsilon_for_zcdp",
    "zcdp_of_bounded_range",
    "bounded_range_epsilon_for_zcdp",
]


def zcdp_of_gaussian(sigma, sensitivity=1.0) -> float:
    """ρ = Δ²/(2σ²): the Gaussian mechanism with ℓ2 sensitivity Δ and noise std σ is ρ-zCDP
    (Bun & Steinke 2016, Prop. 1.6; Lee & Kifer 2018, Lemma 3.6)."""
    return check_sensitivity(sensitivity) ** 2 / (2.0 * check_sigma(sigma) ** 2)


def gaussian_sigma_for_zcdp(rho, sensitivity=1.0) -> float:
    """σ = Δ/√(2ρ): the noise std making the Gaussian mechanism exactly ρ-zCDP (inverse of
    :func:`zcdp_of_gaussian`; Lee & Kifer 2018, §4: N(0, Δ²/(2ρ)))."""
    r = check_rho(rho, allow_zero=False)
    return faults.sensitivity(check_sensitivity(sensitivity)) / math.sqrt(2.0 * r)


def zcdp_of_pure_dp(epsilon) -> float:
    """ρ = ε²/2: every ε-DP mechanism is ε²/2-zCDP (Bun & Steinke 2016, Prop. 1.4; Lee & Kifer 2018,
    Lemma 3.7)."""
    return 0.5 * check_epsilon(epsilon) ** 2


def pure_dp_epsilon_for_zcdp(rho) -> float:
    """ε = √(2ρ): the pure-DP budget to give an ε-DP primitive (e.g. NoisyMax) charged ρ
    (Lee & Kifer 2018, §3.3)."""
    return math.sqrt(2.0 * check_rho(rho, allow_zero=False))


def zcdp_of_bounded_range(epsilon) -> float:
    """ρ = ε²/8: an ε-bounded-range mechanism (its privacy loss ln P[M(D) = o]/P[M(D') = o] ranges
    over an interval of width ≤ ε as o varies; Durfee & Rogers 2019) is ε²/8-zCDP (Cesar & Rogers
    2021). The exponential mechanism — report-noisy-max with Gumbel noise — is the example
    (:mod:`.noisy_max`). Proof sketch (docs/privacy.md#bounded-range-selection): f(t) = ln E_Q[e^{tL}]
    is convex with f(0) = f(1) = 0 and f'' ≤ ε²/4 (a variance of values in an interval of width
    ε), so f(α) ≤ α(α − 1)ε²/8 and D_α = f(α)/(α − 1) ≤ αε²/8 for every α > 1."""
    return check_epsilon(epsilon) ** 2 / 8.0


def bounded_range_epsilon_for_zcdp(rho) -> float:
    """ε = √(8ρ): the bounded-range parameter a selection charged ρ may use (inverse of
    :func:`zcdp_of_bounded_range`; twice :func:`pure_dp_epsilon_for_zcdp`)."""
    return math.sqrt(8.0 * check_rho(rho, allow_zero=False))


def zcdp_to_dp(rho, delta) -> float:
    """ε = ρ + 2√(ρ ln(1/δ)): ρ-zCDP implies (ε, δ)-DP for every δ in (0, 1)
    (Bun & Steinke 2016, Prop. 1.3; Lee & Kifer 2018, Lemma 3.8)."""
    r = check_rho(rho)
    return r + 2.0 * math.sqrt(r * math.log(1.0 / check_delta(delta)))


def zcdp_from_dp(epsilon, delta) -> float:
    """Largest ρ with zcdp_to_dp(ρ, δ) ≤ ε, in closed form (our derivation).

    Solving √ρ² + 2√ρ·√L − ε = 0 with L = ln(1/δ) gives ρ = (√(L + ε) − √L)²; we evaluate it as
    (ε / (√(L + ε) + √L))², free of cancellation. The DP-AGD reference code root-finds instead.
    """
    eps = check_epsilon(epsilon)
    log_inv_delta = math.log(1.0 / check_delta(delta))
    return (eps / (math.sqrt(log_inv_delta + eps) + math.sqrt(log_inv_delta))) ** 2
