"""Advanced composition of (ε₀, δ₀)-DP mechanisms (Dwork, Rothblum & Vadhan 2010).

Adjacency: that of the composed mechanisms (the theorem holds for either relation).
"""

from __future__ import annotations

import math

from .validation import check_delta, check_epsilon, check_steps

__all__ = ["advanced_composition", "advanced_composition_split"]


def advanced_composition(epsilon_step, delta_step, steps, delta_slack) -> tuple[float, float]:
    """Total (ε, δ) of T adaptive (ε₀, δ₀)-DP steps (Dwork & Roth 2014, Thm 3.20):

    ε = √(2T ln(1/δ')) ε₀ + T ε₀ (e^{ε₀} − 1),   δ = T δ₀ + δ'.

    ``delta_step`` may be 0 (pure-DP steps); ``delta_slack`` = δ' must be in (0, 1).
    """
    e0 = check_epsilon(epsilon_step, "epsilon_step")
    d0 = check_delta(delta_step, "delta_step", allow_zero=True)
    t = check_steps(steps)
    ds = check_delta(delta_slack, "delta_slack")
    eps = math.sqrt(2.0 * t * math.log(1.0 / ds)) * e0 + t * e0 * math.expm1(e0)
    return eps, t * d0 + ds


def advanced_composition_split(epsilon, delta, steps) -> tuple[float, float]:
    """Per-step budget used by the papers for a total (ε, δ) over T steps (DP-AGD
    ``compute_advcomp_budget``; Wang's lecture notes (Lecture 15), Lemma 15.2):
    ε₀ = ε / (2√(2T ln(2/δ))), δ₀ = δ/(2T).

    With δ' = δ/2 in :func:`advanced_composition` the first term is exactly ε/2 and the δ's sum to
    δ; the second term T ε₀(e^{ε₀} − 1) ≈ ε²/(8 ln(2/δ)) is ≤ ε/2 in every practical regime. We
    check the resulting total and raise ``ValueError`` in the (huge-ε) cases where it is not.
    """
    eps = check_epsilon(epsilon)
    d = check_delta(delta)
    t = check_steps(steps)
    e0 = eps / (2.0 * math.sqrt(2.0 * t * math.log(2.0 / d)))
    d0 = d / (2.0 * t)
    total, _ = advanced_composition(e0, d0, t, d / 2.0)
    if total > eps * (1.0 + 1e-12):
        raise ValueError(
            f"advanced_composition_split does not reach epsilon={eps!r} for delta={d!r}, "
            f"steps={t}: the split composes to {total!r}; use a smaller epsilon or an RDP/zCDP "
            "accountant"
        )
    return e0, d0
