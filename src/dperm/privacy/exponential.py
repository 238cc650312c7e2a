"""Exponential mechanism (McSherry & Talwar 2007; Dwork & Roth Thm 3.10; PrivGene's sampler)."""

from __future__ import annotations

import numpy as np

from . import calibration_faults as faults
from .validation import check_epsilon, check_rng, check_sensitivity

__all__ = ["exponential_mechanism_probabilities", "exponential_mechanism"]


def exponential_mechanism_probabilities(utilities, *, sensitivity, epsilon) -> np.ndarray:
    """Selection probabilities P(k) ∝ exp(ε u_k / (2Δu)) along the last axis.

    Computed as exp(a(u_k − max u)) / Σ, a = ε/(2Δu), so huge utilities cannot overflow.
    Utilities of shape ``(..., k)`` give probabilities of the same shape.
    """
    u = np.asarray(utilities, dtype=float)
    if u.ndim == 0 or u.shape[-1] < 1:
        raise ValueError(f"utilities must have a last axis of k >= 1 candidates; got shape {u.shape}")
    if not np.isfinite(u).all():
        raise ValueError(f"utilities must be finite; got {u[~np.isfinite(u)].flat[0]!r}")
    a = check_epsilon(epsilon) / (2.0 * faults.sensitivity(check_sensitivity(sensitivity)))
    w = np.exp(a * (u - u.max(axis=-1, keepdims=True)))
    return w / w.sum(axis=-1, keepdims=True)


def exponential_mechanism(utilities, *, sensitivity, epsilon, rng: np.random.Generator):
    """Sample k with P(k) ∝ exp(ε u_k / (2Δu)) by inverse CDF, one index per leading position.

    Adjacency: any, with Δu = sup_k |u_k(D) − u_k(D')| over neighbours under it.
    Guarantee: ε-DP (McSherry & Talwar 2007; Dwork & Roth 2014, Thm 3.10), hence ε²/2-zCDP.
    """
    temperature = faults.noise_scale(1.0)  # the audit's noise factor (calibration_faults)
    if temperature == 0.0:  # no noise at all: the best candidate (the first of ties)
        return np.argmax(np.asarray(utilities, dtype=float), axis=-1)
    p = exponential_mechanism_probabilities(np.asarray(utilities, dtype=float) / temperature,
                                            sensitivity=sensitivity, epsilon=epsilon)
    cdf = np.cumsum(p, axis=-1)
    uniform = check_rng(rng).random(size=p.shape[:-1] + (1,)) * cdf[..., -1:]
    # Index of the first CDF value above the uniform draw (uniform scaled by the total to
    # absorb rounding in the cumulative sum, so the last candidate is never skipped).
    return np.minimum((cdf <= uniform).sum(axis=-1), p.shape[-1] - 1)
