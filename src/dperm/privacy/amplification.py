"""Privacy amplification by subsampling: the two forms the papers use, each with its inverse.

(a) :func:`amplify_linear` — the DP-AGD code comment: an (ε, δ)-DP mechanism run on a q-fraction
    subsample is (2qε, qδ)-DP, valid for ε ≤ 1 (a standard ε ≤ 1 simplification of the
    subsampling lemma, as used for noisy SGD by Bassily, Smith & Thakurta 2014).
(b) :func:`amplify_subsampling` — ε' = ln(1 + q(e^ε − 1)), δ' = qδ, valid for every ε > 0:
    Poisson sampling with rate q under add/remove-one, or uniform sampling of m = qn rows without
    replacement under replace-one (Balle, Barthe & Gaboardi 2018; Wang's lecture notes (Lecture 15),
    Lemma 15.4).

Adjacency of the result: as stated for each form; the base mechanism must be (ε, δ)-DP under the
relation that the sampling scheme induces on the subsample.
"""

from __future__ import annotations

import math

from .validation import check_delta, check_epsilon, check_sampling_rate

__all__ = [
    "amplify_linear",
    "amplify_linear_inverse",
    "amplify_subsampling",
    "amplify_subsampling_inverse",
]


def _refuse_above_one(eps: float, name: str) -> None:
    if eps > 1.0:
        raise ValueError(
            f"the 2q-epsilon amplification bound is only valid for a base epsilon <= 1; got "
            f"{name}={eps!r}; use amplify_subsampling / amplify_subsampling_inverse "
            "(ln(1 + q(e^eps - 1)), valid for all epsilon), or strict=False to reproduce the "
            "reference code (not DP as implemented)"
        )


def amplify_linear(epsilon, delta, q) -> tuple[float, float]:
    """(ε, δ) on a q-subsample ⇒ (2qε, qδ) on the full data (DP-AGD code comment); ε ≤ 1 required."""
    eps = check_epsilon(epsilon)
    d = check_delta(delta, allow_zero=True)
    rate = check_sampling_rate(q)
    _refuse_above_one(eps, "epsilon")
    return 2.0 * rate * eps, rate * d


def amplify_linear_inverse(epsilon_step, q, *, strict: bool = True) -> float:
    """Base ε for a per-step target under form (a): ε_base = ε_step / (2q) (DP-AGD/SGD-Adv code).

    The reference code does **not** rescale δ (it keeps δ_step for the base mechanism, which is
    conservative) and does not check ε_base ≤ 1; at ε = 1.6 SGD-Adv gets ε_base ≈ 1.09
    (docs/privacy.md#gaussian-range). With ``strict=True`` (default) an ε_base > 1 raises
    ``ValueError``; ``strict=False`` returns it anyway for the reference variant (not DP as
    implemented in that case).
    """
    eps = check_epsilon(epsilon_step, "epsilon_step")
    base = eps / (2.0 * check_sampling_rate(q))
    if strict:
        _refuse_above_one(base, "epsilon_base")
    return base


def amplify_subsampling(epsilon, delta, q) -> tuple[float, float]:
    """(ε, δ) on a q-subsample ⇒ (ln(1 + q(e^ε − 1)), qδ) (Balle et al. 2018; Wang's lecture notes
    (Lecture 15), Lemma 15.4)."""
    eps = check_epsilon(epsilon)
    d = check_delta(delta, allow_zero=True)
    rate = check_sampling_rate(q)
    return math.log1p(rate * math.expm1(eps)), rate * d


def amplify_subsampling_inverse(epsilon_step, delta_step, q) -> tuple[float, float]:
    """Base (ε, δ) whose amplified guarantee is exactly (ε_step, δ_step) under form (b):
    ε = ln(1 + (e^{ε_step} − 1)/q), δ = δ_step / q (which must stay below 1)."""
    eps = check_epsilon(epsilon_step, "epsilon_step")
    rate = check_sampling_rate(q)
    d = check_delta(delta_step, "delta_step", allow_zero=True)
    base_delta = d / rate
    if base_delta >= 1.0:
        raise ValueError(
            f"delta_step / q must be < 1 for a meaningful base delta; got delta_step={d!r}, q={rate!r}"
        )
    return math.log1p(math.expm1(eps) / rate), base_delta
