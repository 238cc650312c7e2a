"""RDP accountant for the Poisson-subsampled Gaussian mechanism (Mironov, Talwar & Zhang 2019).

Mechanism: each row enters a batch independently with probability q; the batch's sum of
per-example vectors clipped to ℓ2 norm C gets N(0, (σC)² I) noise; σ is the *noise multiplier*.
Adjacency: **add/remove-one** (Poisson sampling is analysed under it). Guarantee: per step,
RDP ε(α) = ln A_α / (α − 1) with A_α = E_{z∼μ₀}[(μ(z)/μ₀(z))^α], μ₀ = N(0, σ²),
μ = (1 − q)μ₀ + q N(1, σ²); T steps compose to T ε(α) (Mironov 2017, Prop. 1).

* integer α: A_α = Σ_{k=0}^{α} C(α,k) q^k (1−q)^{α−k} e^{(k²−k)/(2σ²)}, summed in log space;
* fractional α: the two-sided series of Mironov et al. (2019) §3.3, split at
  z₀ = σ² ln(1/q − 1) + 1/2 where (1−q)μ₀ = qμ₁; each side is a generalised binomial series with
  Gaussian tail factors Φ(·) and *signed* coefficients C(α, k), summed until the tail is below
  1e-10 of ln A_α. (dp-accounting 0.6.0 adds |C(α, k)| instead, which only overestimates, and
  noticeably so only at small fractional orders with q ≳ 0.1.)

RDP → (ε, δ): ``conversion="improved"`` (default) uses
ε = RDP + ln(1 − 1/α) − (ln δ + ln α)/(α − 1) (Canonne, Kamath & Steinke 2020, Prop. 12; Balle et
al. 2020; Asoodeh et al. 2020), as dp-accounting does; ``"standard"`` uses
ε = RDP + ln(1/δ)/(α − 1) (Mironov 2017, Prop. 3), as the TF-privacy copy in the DP-LSSGD repo does.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq
from scipy.special import gammaln, gammasgn, log_ndtr, logsumexp

from .validation import check_delta, check_epsilon, check_sampling_rate, check_sigma, check_steps

__all__ = [
    "DEFAULT_RDP_ORDERS",
    "rdp_sampled_gaussian",
    "rdp_to_epsilon",
    "epsilon_sampled_gaussian",
    "noise_multiplier_for_epsilon",
]

#: 1.1, 1.2, …, 10.9, then 11, …, 63 and 128, 256, 512, 1024 (dp-accounting's default grid).
DEFAULT_RDP_ORDERS: tuple[float, ...] = tuple(
    [1.0 + x / 10.0 for x in range(1, 100)] + [float(a) for a in range(11, 64)]
    + [128.0, 256.0, 512.0, 1024.0]
)
_CONVERSIONS = ("improved", "standard")
_MAX_TERMS = 1 << 15


def _log_a_integer(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """ln A_α for integer α >= 1 (ragged binomial sums, all orders in one vectorised pass)."""
    alphas = np.asarray(alphas, dtype=np.int64)
    lengths = alphas + 1
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    a = np.repeat(alphas, lengths).astype(float)
    k = np.arange(lengths.sum()) - np.repeat(starts, lengths).astype(float)
    terms = (gammaln(a + 1) - gammaln(k + 1) - gammaln(a - k + 1)
             + k * math.log(q) + (a - k) * math.log1p(-q) + (k * k - k) / (2 * sigma * sigma))
    peak = np.maximum.reduceat(terms, starts)
    return peak + np.log(np.add.reduceat(np.exp(terms - np.repeat(peak, lengths)), starts))


def _log_a_fractional_terms(q: float, sigma: float, alphas: np.ndarray, n: int):
    """Log-magnitudes and signs of the first ``n`` terms of both series, shape (m, 2n)."""
    a = alphas[:, None]
    i = np.arange(n, dtype=float)[None, :]
    j = a - i
    log_binom = gammaln(a + 1) - gammaln(i + 1) - gammaln(j + 1)
    sign = gammasgn(j + 1)  # sign of C(α, i); Γ(α + 1) > 0 and i! > 0
    z0 = sigma * sigma * math.log(1.0 / q - 1.0) + 0.5
    lq, l1q, two_s2 = math.log(q), math.log1p(-q), 2.0 * sigma * sigma
    # z < z0: expand in powers of qX/(1−q), X = μ₁/μ₀;  ∫_{−∞}^{z0} μ₀ X^i = e^{(i²−i)/2σ²} Φ((z0−i)/σ)
    left = log_binom + i * lq + j * l1q + (i * i - i) / two_s2 + log_ndtr((z0 - i) / sigma)
    # z > z0: expand in powers of (1−q)/(qX);  ∫_{z0}^{∞} μ₀ X^j = e^{(j²−j)/2σ²} Φ((j−z0)/σ)
    right = log_binom + j * lq + i * l1q + (j * j - j) / two_s2 + log_ndtr((j - z0) / sigma)
    return np.concatenate([left, right], axis=1), np.concatenate([sign, sign], axis=1)


def _log_a_fractional(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """ln A_α for non-integer α > 1, doubling the number of series terms until converged."""
    alphas = np.asarray(alphas, dtype=float)
    out = np.full(alphas.shape, np.inf)
    todo = np.arange(alphas.size)
    n = 64
    while todo.size and n <= _MAX_TERMS:
        logs, signs = _log_a_fractional_terms(q, sigma, alphas[todo], n)
        log_a, sgn = logsumexp(logs, b=signs, axis=1, return_sign=True)
        tail = np.maximum(logs[:, n - 1], logs[:, -1])  # last term of either series
        value = np.where(sgn > 0, log_a, np.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            done = np.isfinite(value) & (np.exp(tail) <= 1e-10 * np.abs(value) + 1e-300)
        out[todo[done]] = value[done]
        todo = todo[~done]
        n *= 2
    return out  # orders that did not converge stay +inf: excluded from the minimum, conservative


@lru_cache(maxsize=4096)
def _rdp_per_step(q: float, sigma: float, orders: tuple[float, ...]) -> np.ndarray:
    alphas = np.asarray(orders, dtype=float)
    if q == 1.0:
        rdp = alphas / (2.0 * sigma * sigma)
    else:
        is_int = alphas == np.floor(alphas)
        log_a = np.empty_like(alphas)
        if is_int.any():
            log_a[is_int] = _log_a_integer(q, sigma, alphas[is_int])
        if (~is_int).any():
            log_a[~is_int] = _log_a_fractional(q, sigma, alphas[~is_int])
        rdp = np.maximum(log_a, 0.0) / (alphas - 1.0)
    rdp.setflags(write=False)
    return rdp


def _orders(orders) -> tuple[float, ...]:
    if orders is None:
        return DEFAULT_RDP_ORDERS
    o = np.atleast_1d(np.asarray(orders, dtype=float))
    if o.ndim != 1 or o.size == 0 or not (np.isfinite(o) & (o > 1.0)).all():
        raise ValueError(f"orders must be a non-empty 1-d sequence of finite numbers > 1; got orders={orders!r}")
    return tuple(float(x) for x in o)


def rdp_sampled_gaussian(q, noise_multiplier, orders=None, steps=1) -> np.ndarray:
    """RDP ε(α) of ``steps`` compositions of the Poisson-subsampled Gaussian, one value per order.

    Adjacency: add/remove-one. Sensitivity: per-example ℓ2 norm C; noise std σC.
    Per-step values are cached per (q, σ, orders), so re-evaluation costs microseconds.
    """
    rate, sig = check_sampling_rate(q), check_sigma(noise_multiplier, "noise_multiplier")
    return check_steps(steps) * _rdp_per_step(rate, sig, _orders(orders))


def rdp_to_epsilon(rdp, orders, delta, conversion: str = "improved") -> tuple[float, float]:
    """Smallest ε over the orders such that the RDP curve implies (ε, δ)-DP; returns (ε, α*).

    ``conversion``: "improved" (Canonne et al. 2020, Prop. 12) or "standard" (Mironov 2017,
    Prop. 3); see the module docstring. Infinite RDP values are ignored (ε = inf if all are).
    """
    d = check_delta(delta)
    alphas = np.asarray(_orders(orders))
    r = np.asarray(rdp, dtype=float)
    if r.shape != alphas.shape or np.isnan(r).any() or (r < 0).any():
        raise ValueError(f"rdp must be {alphas.size} values >= 0 (one per order); got {rdp!r}")
    with np.errstate(invalid="ignore", over="ignore"):
        if conversion == "standard":
            eps = r + math.log(1.0 / d) / (alphas - 1.0)
        elif conversion == "improved":
            eps = r + np.log1p(-1.0 / alphas) - (math.log(d) + np.log(alphas)) / (alphas - 1.0)
            # Order-free bound δ ≤ √(1 − e^{−KL}) ≤ √(1 − e^{−RDP(α)}): (0, δ)-DP when it holds.
            eps = np.where(d * d + np.expm1(-r) > 0.0, 0.0, eps)
        else:
            raise ValueError(f"conversion must be one of {_CONVERSIONS}; got conversion={conversion!r}")
    eps = np.where(np.isnan(eps), np.inf, eps)
    best = int(np.argmin(eps))
    return max(0.0, float(eps[best])), float(alphas[best])


def epsilon_sampled_gaussian(q, noise_multiplier, steps, delta, *, orders=None,
                             conversion: str = "improved") -> float:
    """(ε, δ)-DP ε of ``steps`` Poisson-subsampled Gaussian steps (add/remove-one adjacency)."""
    o = _orders(orders)
    return rdp_to_epsilon(rdp_sampled_gaussian(q, noise_multiplier, o, steps), o, delta, conversion)[0]


def smallest_noise(epsilon_at, target: float, *, lo: float, hi: float, step: float, xtol: float,
                   down_step: float | None = None, max_noise: float = math.inf, min_noise: float = 0.0) -> float:
    """Smallest noise level σ with ``epsilon_at(σ) ≤ target`` (ε non-increasing in σ), to
    relative precision about ``xtol``; the σ returned always meets the target (it is nudged up
    by factors 1 + ``xtol`` until it does).

    Searches log σ: from the bracket [``lo``, ``hi``] it moves up by ``step`` while ``hi`` still
    exceeds the target (raising ``ValueError`` past ``max_noise``) and down by ``down_step``
    (default ``step``) while ``lo`` meets it (returning exp(hi) below ``min_noise``: any σ there
    will do), then solves by Brent's method. Shared by every calibration that inverts an
    accountant (this module's, DP-SGD's PLD, the lecture notes' algorithms and lab).
    """
    down = step if down_step is None else down_step

    def excess(log_sigma: float) -> float:
        return epsilon_at(math.exp(log_sigma)) - target

    while excess(hi) > 0.0:
        lo, hi = hi, hi + step
        if hi > math.log(max_noise):
            raise ValueError(f"epsilon={target!r} is not reachable with any noise multiplier <= {max_noise:g} "
                             "on this order grid; add larger orders or raise epsilon")
    while excess(lo) <= 0.0:
        hi, lo = lo, lo - down
        if min_noise > 0.0 and lo < math.log(min_noise):
            return math.exp(hi)
    sigma = math.exp(brentq(excess, lo, hi, xtol=xtol, rtol=4 * np.finfo(float).eps))
    while excess(math.log(sigma)) > 0.0:  # land on the private side of the root
        sigma *= 1.0 + xtol
    return sigma


def noise_multiplier_for_epsilon(epsilon, delta, q, steps, *, orders=None,
                                 conversion: str = "improved", rtol: float = 1e-9) -> float:
    """Smallest noise multiplier σ (to relative precision ``rtol``) whose T-step
    Poisson-subsampled Gaussian is (ε, δ)-DP by this accountant; the returned σ always meets the
    target. Raises ``ValueError`` if no σ ≤ 1e6 does (ε below what the order grid can certify).
    """
    target = check_epsilon(epsilon)
    args = dict(q=q, steps=check_steps(steps), delta=check_delta(delta),
                orders=_orders(orders), conversion=conversion)

    return smallest_noise(lambda sigma: epsilon_sampled_gaussian(noise_multiplier=sigma, **args), target,
                          lo=-1.0, hi=1.0, step=2.0, xtol=rtol / 4, max_noise=1e6, min_noise=1e-6)
