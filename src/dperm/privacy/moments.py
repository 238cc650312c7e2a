"""Moments accountant of Abadi et al. (2016) as copied in the DP-AGD authors' code.

Mechanism and adjacency as in :mod:`dperm.privacy.rdp` (Poisson-subsampled Gaussian with noise
multiplier σ, add/remove-one). The log-moment of order λ after T steps is α(λ) = T ln A_λ with

    A_λ = (1−q) Σ_i C(λ,i) q^i Σ_j C(i,j)(−1)^{i−j} e^{(j²−j)/(2σ²)}
        +   q   Σ_i C(λ,i) q^i Σ_j C(i,j)(−1)^{i−j} e^{(j²+j)/(2σ²)},

the binomial expansion of E_{z∼μ}[(μ(z)/μ₀(z))^λ] = E_{z∼μ₀}[(μ(z)/μ₀(z))^{λ+1}]. The alternating
inner sums cancel catastrophically in floating point, so we evaluate the identical quantity as
the positive sum Σ_k C(λ+1,k) q^k (1−q)^{λ+1−k} e^{(k²−k)/(2σ²)} in log space — the sampled
Gaussian's A at Rényi order λ + 1 (the tests check the identity against the literal formula).

Tail bound (Abadi et al. 2016, Thm 2.2): δ = min_λ exp(α(λ) − λε), i.e. ε(δ) = min_λ (α(λ) − ln δ)/λ.

* ``reference=False`` (default): the minimum over λ = 1..max_order, as in the TF original.
* ``reference=True``: the DP-AGD copy's indentation bug (docs/deviations.md#moments-order-32) — ε is
  evaluated only at the last order λ = max_order (= 32). Still a valid upper bound (any single λ
  is), just looser.

Either way the orders stop at 32, which inflates small-T ε (docs/privacy.md#moments-accountant:
T = 1 costs ≈ 0.576 = ln(1/δ)/32 + tiny at δ = 1e-8);
:func:`dperm.privacy.rdp.epsilon_sampled_gaussian` is the recommended accountant.
"""

from __future__ import annotations

import math

import numpy as np

from .rdp import _log_a_integer
from .validation import check_delta, check_sampling_rate, check_sigma, check_steps

__all__ = ["moments_log_moments", "moments_accountant_epsilon"]


def moments_log_moments(q, noise_multiplier, steps, max_order: int = 32) -> np.ndarray:
    """Log-moments α(λ) = T ln A_λ for λ = 1, …, ``max_order`` (entry λ − 1)."""
    rate = check_sampling_rate(q)
    sig = check_sigma(noise_multiplier, "noise_multiplier")
    t = check_steps(steps)
    top = check_steps(max_order, "max_order")
    lambdas = np.arange(1, top + 1)
    if rate == 1.0:  # A_λ = E_{μ₀}[(μ₁/μ₀)^{λ+1}] = exp(λ(λ+1)/(2σ²))
        return t * lambdas * (lambdas + 1) / (2.0 * sig * sig)
    return t * np.maximum(_log_a_integer(rate, sig, lambdas + 1), 0.0)


def moments_accountant_epsilon(q, noise_multiplier, steps, delta, *, max_order: int = 32,
                               reference: bool = False) -> float:
    """ε of the moments accountant for T Poisson-subsampled Gaussian steps at the given δ.

    ``reference=True`` reproduces the DP-AGD code (ε taken at λ = ``max_order`` only);
    the default takes the minimum over λ = 1..``max_order``. Orders whose log-moment is not
    finite are skipped, as in the original code.
    """
    log_moments = moments_log_moments(q, noise_multiplier, steps, max_order)
    log_inv_delta = math.log(1.0 / check_delta(delta))
    lambdas = np.arange(1, log_moments.size + 1)
    eps = (log_moments + log_inv_delta) / lambdas
    if reference:
        return float(eps[-1]) if np.isfinite(eps[-1]) else math.inf
    eps = eps[np.isfinite(eps)]
    return float(eps.min()) if eps.size else math.inf
