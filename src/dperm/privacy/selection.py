"""Private selection from private candidates: random search with a random number of trials.

Run a private algorithm Q (one *trial*: a candidate's fit and its private score) K times, with
K drawn from a data-independent distribution, and release only the best-scoring trial's output.
Liu & Talwar (STOC 2019) showed that a random (geometric) K costs a constant factor over one
trial (3ε for an ε-DP Q) where a fixed K costs K times; Papernot & Steinke ("Hyperparameter
tuning with Rényi differential privacy", ICLR 2022) give Rényi-DP bounds that are much tighter.
The two used here (numbered as in their arXiv 2110.03620v2):

* **Theorem 2** (K truncated negative binomial, Definition 1: η ∈ (−1, ∞), γ ∈ (0, 1),
  P[K = k] ∝ (1 − γ)^k·Π_{ℓ<k}(ℓ + η)/(ℓ + 1) for k ≥ 1; η = 0 the logarithmic distribution,
  η = 1 the geometric). If Q is (λ, ε)-RDP and (λ̂, ε̂)-RDP (λ > 1, λ̂ ≥ 1), the selection is
  (λ, ε′)-RDP with ε′ = ε + (1 + η)(1 − 1/λ̂)ε̂ + (1 + η)·ln(1/γ)/λ̂ + ln(E[K])/(λ − 1).
  K ≥ 1 always.
* **Theorem 6** (K ~ Poisson(μ)). If Q is (λ, ε)-RDP and (ε̂, δ̂)-DP with e^ε̂ ≤ 1 + 1/(λ − 1),
  the selection is (λ, ε + μδ̂ + ln(μ)/(λ − 1))-RDP. With probability e^{−μ}, K = 0: the
  selection then releases a fixed output that does not depend on the data.

Conditions as the theorems state them: Q's outputs are totally ordered (here: by the private
score, ties broken by trial index) and only the best output is released — K and the other
trials are not. Every (λ, ε) pair of Q's curve may serve as either pair of Theorem 2, so
:func:`selection_rdp` minimises over λ̂ on the order grid; for Theorem 6 it takes ε̂ =
ln(1 + 1/(λ − 1)), the largest the condition allows, and δ̂ from Q's statement at that ε̂. RDP is
monotone in the order, so each order's bound is finally lowered to the smallest bound at any
larger order (as dp-accounting does). The curve is converted to (ε, δ) by the conversion the
project uses everywhere (:func:`.rdp.rdp_to_epsilon`, improved; Canonne, Kamath & Steinke 2020).

A trial's guarantee is an :class:`RdpStatement`: ρ-zCDP ((α, αρ)-RDP at every α; Bun & Steinke
2016) and/or pure ε-DP, whose RDP curve is the tight one of randomized response
(Bun & Steinke 2016, Prop. 3.3: (1/(α − 1))·ln[(sinh(αε) − sinh((α − 1)ε))/sinh(ε)] ≤ αε²/2)
and whose δ(ε̂) is that of randomized response, (e^ε − e^ε̂)/(1 + e^ε) — pure ε-DP mechanisms are
dominated by it (Kairouz, Oh & Viswanath 2015). :func:`calibrate_trial` finds the largest per-trial
budget whose selection meets a target (ε, δ). Independent checks (``tests/privacy/test_selection.py``):
dp-accounting's ``RepeatAndSelectDpEvent`` and the exact Rényi divergence of whole selections on
toy bases.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.optimize import brentq

from .rdp import DEFAULT_RDP_ORDERS, rdp_to_epsilon
from .validation import check_delta, check_epsilon, check_real, check_rho

__all__ = [
    "DISTRIBUTIONS",
    "RdpStatement",
    "TrialCount",
    "calibrate_trial",
    "pure_dp_rdp",
    "rdp_to_delta",
    "selection_epsilon",
    "selection_rdp",
    "theorem_rdp",
    "tnb_gamma",
    "tnb_mean",
]

DISTRIBUTIONS = ("poisson", "truncated-negative-binomial")


def _orders(orders) -> np.ndarray:
    alphas = np.asarray(DEFAULT_RDP_ORDERS if orders is None else orders, dtype=float)
    if alphas.ndim != 1 or alphas.size == 0 or not (np.isfinite(alphas) & (alphas > 1.0)).all():
        raise ValueError(f"orders must be a non-empty 1-d sequence of finite numbers > 1; got orders={orders!r}")
    return alphas


def pure_dp_rdp(epsilon, orders=None) -> np.ndarray:
    """RDP of an ε-DP mechanism at each order: that of randomized response,
    (1/(α − 1))·ln[(e^{αε} + e^{−(α − 1)ε})/(1 + e^ε)] = (1/(α − 1))·ln[(sinh(αε) −
    sinh((α − 1)ε))/sinh(ε)] (Bun & Steinke 2016, Prop. 3.3), ≤ min(ε, αε²/2)."""
    eps = check_epsilon(epsilon)
    a = _orders(orders)
    log_num = np.logaddexp(a * eps, -(a - 1.0) * eps)
    return np.maximum((log_num - np.logaddexp(0.0, eps)) / (a - 1.0), 0.0)


def rdp_to_delta(rdp, orders, epsilon):
    """Smallest δ over the orders for which the RDP curve implies (ε, δ)-DP: the improved
    conversion δ = exp((α − 1)(r − ε + ln(1 − 1/α)) − ln α) (Canonne, Kamath & Steinke 2020,
    Prop. 12; the inverse of :func:`.rdp.rdp_to_epsilon`) and the order-free δ ≤ √(1 − e^{−r}).
    ``epsilon`` may be an array: one δ per value."""
    a = _orders(orders)
    r = np.asarray(rdp, dtype=float)
    if r.shape != a.shape or np.isnan(r).any() or (r < 0).any():
        raise ValueError(f"rdp must be {a.size} values >= 0 (one per order); got {rdp!r}")
    eps = np.asarray(epsilon, dtype=float)
    if not (eps >= 0).all():
        raise ValueError(f"epsilon must be >= 0; got epsilon={epsilon!r}")
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        log_conv = (a - 1.0) * (r - eps[..., None] + np.log1p(-1.0 / a)) - np.log(a)
        log_kl = 0.5 * np.log(-np.expm1(-r))
    log_conv = np.where(np.isfinite(r), log_conv, np.inf)
    best = np.min(np.minimum(log_conv, log_kl), axis=-1)
    out = np.minimum(1.0, np.exp(np.minimum(best, 0.0)))
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class RdpStatement:
    """What one mechanism (a selection trial) satisfies: ``rho``-zCDP and/or pure ``epsilon``-DP
    (at least one), under ``adjacency`` (informative: the bounds do not depend on it). Its RDP
    curve is the smaller of the two curves at every order."""

    rho: float | None = None
    epsilon: float | None = None
    adjacency: str | None = None

    def __post_init__(self):
        if self.rho is None and self.epsilon is None:
            raise ValueError("an RdpStatement needs rho (zCDP) or epsilon (pure DP)")
        if self.rho is not None:
            check_rho(self.rho, allow_zero=False)
        if self.epsilon is not None:
            check_epsilon(self.epsilon)

    def rdp(self, orders=None) -> np.ndarray:
        a = _orders(orders)
        curve = np.full(a.shape, np.inf)
        if self.rho is not None:
            curve = np.minimum(curve, a * self.rho)
        if self.epsilon is not None:
            curve = np.minimum(curve, pure_dp_rdp(self.epsilon, a))
        return curve

    def delta(self, epsilon_hat, orders=None):
        """δ̂ such that the mechanism is (ε̂, δ̂)-DP: from the RDP curve, and for a pure ε-DP
        mechanism exactly that of randomized response, max(0, (e^ε − e^ε̂)/(1 + e^ε)).
        ``epsilon_hat`` may be an array: one δ̂ per value."""
        out = rdp_to_delta(self.rdp(orders), _orders(orders), epsilon_hat)
        if self.epsilon is not None:
            e = np.asarray(epsilon_hat, dtype=float)
            rr = np.maximum(0.0, -np.expm1(np.minimum(e - self.epsilon, 0.0)) / (1.0 + math.exp(-self.epsilon)))
            out = np.minimum(out, rr)
            out = float(out) if np.ndim(out) == 0 else out
        return out

    def describe(self) -> str:
        parts = ([f"rho={self.rho:.6g}-zCDP"] if self.rho is not None else []) + \
                ([f"epsilon={self.epsilon:.6g}-DP"] if self.epsilon is not None else [])
        return " and ".join(parts)


# -- the number of trials ----------------------------------------------------------------------------

def tnb_mean(gamma: float, eta: float) -> float:
    """E[K] of the truncated negative binomial D_{η,γ}: η(1 − γ)/(γ(1 − γ^η)) for η ≠ 0,
    (1/γ − 1)/ln(1/γ) for η = 0 (logarithmic), 1/γ for η = 1 (geometric)."""
    g = check_real(gamma, "gamma", low=0.0, high=1.0)
    e = check_real(eta, "eta", low=-1.0)
    if e == 0.0:
        return (1.0 / g - 1.0) / math.log(1.0 / g)
    return e * (1.0 - g) / (g * -math.expm1(e * math.log(g)))


def tnb_gamma(mean: float, eta: float) -> float:
    """γ of the truncated negative binomial with shape η and E[K] = ``mean`` (> 1): the mean
    falls from ∞ to 1 as γ rises from 0 to 1, so one root."""
    m = check_real(mean, "mean", low=1.0)
    e = check_real(eta, "eta", low=-1.0)
    if e == 1.0:
        return 1.0 / m
    f = lambda log_g: math.log(tnb_mean(math.exp(log_g), e)) - math.log(m)  # noqa: E731
    lo = -1.0
    while f(lo) < 0:
        lo *= 2.0
    hi = -1e-12
    if f(hi) > 0:
        raise ValueError(f"mean={mean!r} is too close to 1 for a truncated negative binomial")
    return math.exp(brentq(f, lo, hi, xtol=1e-15, rtol=1e-14))


@dataclass(frozen=True)
class TrialCount:
    """The law of K, the number of trials: ``poisson`` with mean ``mean`` (K = 0 possible), or
    ``truncated-negative-binomial`` with shape ``eta`` and mean ``mean`` (K ≥ 1)."""

    distribution: str
    mean: float
    eta: float = 0.0

    def __post_init__(self):
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(f"distribution must be one of {DISTRIBUTIONS}; got distribution={self.distribution!r}")
        if self.distribution == "poisson":
            check_real(self.mean, "trials (the mean number of trials)", low=0.0)
        else:
            check_real(self.mean, "trials (the mean number of trials)", low=1.0)
            check_real(self.eta, "eta", low=-1.0)

    @cached_property
    def gamma(self) -> float:
        if self.distribution == "poisson":
            raise ValueError("a Poisson number of trials has no gamma")
        return tnb_gamma(self.mean, self.eta)

    def pmf(self, k_max: int) -> np.ndarray:
        """P[K = k] for k = 0..k_max."""
        k = np.arange(k_max + 1, dtype=float)
        if self.distribution == "poisson":
            from scipy.stats import poisson

            return poisson.pmf(k, self.mean)
        g, e = self.gamma, self.eta
        out = np.zeros(k_max + 1)
        if k_max >= 1:
            first = (1.0 - g) / math.log(1.0 / g) if e == 0.0 else (1.0 - g) * e / math.expm1(-e * math.log(g))
            ratios = (1.0 - g) * (k[1:-1] + e) / (k[1:-1] + 1.0)  # P[k+1]/P[k] for k = 1..k_max−1
            out[1:] = first * np.concatenate([[1.0], np.cumprod(ratios)])
        return out

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` independent draws of K (inverse CDF for the truncated negative binomial, so
        one uniform per draw; exact: the table grows until it covers every uniform drawn)."""
        if self.distribution == "poisson":
            return rng.poisson(self.mean, size=size).astype(int)
        u = rng.random(size)
        k_max = 64
        while True:
            cdf = np.cumsum(self.pmf(k_max))
            if (u < cdf[-1]).all():
                return np.searchsorted(cdf, u, side="right").astype(int)
            if k_max > 1 << 22:
                raise RuntimeError("the number of trials has a tail beyond 4 million: mean too large")
            k_max *= 2

    def describe(self) -> str:
        if self.distribution == "poisson":
            return f"K ~ Poisson({self.mean:g})"
        return f"K ~ truncated negative binomial (eta={self.eta:g}, gamma={self.gamma:.6g}, E[K]={self.mean:g})"


# -- the theorems ----------------------------------------------------------------------------------

def _statements(statements) -> list[RdpStatement]:
    out = [statements] if isinstance(statements, RdpStatement) else list(dict.fromkeys(statements))
    if not out:
        raise ValueError("need at least one RdpStatement")
    return out


def theorem_rdp(statements, count: TrialCount, orders=None) -> np.ndarray:
    """The theorem's bound at each order, as stated (before the monotone lowering of
    :func:`selection_rdp`). ``statements``: one :class:`RdpStatement`, or several when a trial is
    a data-independent mixture of mechanisms (a random candidate): its RDP curve is then at most
    the largest of theirs at each order and its δ̂ at most the largest δ̂ (Rényi divergence is
    jointly quasi-convex, the hockey-stick divergence jointly convex)."""
    a = _orders(orders)
    stated = _statements(statements)
    r = np.max([s.rdp(a) for s in stated], axis=0)
    if count.distribution == "poisson":
        mu = count.mean
        eps_hat = np.log1p(1.0 / (a - 1.0))  # the largest ε̂ with e^ε̂ ≤ 1 + 1/(λ − 1)
        delta_hat = np.max([s.delta(eps_hat, a) for s in stated], axis=0)
        # with μ < 1 the bound may fall below 0 at small orders; a divergence never does
        return np.maximum(r + mu * delta_hat + math.log(mu) / (a - 1.0), 0.0)
    eta, gamma = count.eta, count.gamma
    constant = (1.0 + eta) * np.min((1.0 - 1.0 / a) * r + math.log(1.0 / gamma) / a)  # best λ̂ on the grid
    return r + constant + math.log(count.mean) / (a - 1.0)


def selection_rdp(statements, count: TrialCount, orders=None) -> np.ndarray:
    """RDP curve of the best of K trials, each satisfying ``statements`` (Theorem 2 or 6 of
    Papernot & Steinke 2022, module docstring; :func:`theorem_rdp`), one value per order,
    lowered to the smallest bound at any larger order (RDP is non-decreasing in the order)."""
    a = _orders(orders)
    out = theorem_rdp(statements, count, a)
    if np.all(np.diff(a) > 0):
        return np.minimum.accumulate(out[::-1])[::-1]
    return np.array([out[a >= x].min() for x in a])


def selection_epsilon(sides, count: TrialCount, delta: float, orders=None) -> tuple[float, float]:
    """(ε, order) at ``delta`` of the best of K trials. ``sides``: the trial's statements
    (:func:`theorem_rdp`), or a list of such lists when which one holds depends on a
    data-independent coin shared by all trials (where the differing row fell in a random split):
    the selection is then a mixture over the coin of selections, each (ε_s, δ)-DP, and the
    hockey-stick divergence being jointly convex, it is (max ε_s, δ)-DP."""
    a = _orders(orders)
    d = check_delta(delta)
    if isinstance(sides, RdpStatement) or all(isinstance(s, RdpStatement) for s in sides):
        sides = [sides]
    best = (-1.0, 0.0)
    for side in sides:
        eps, order = rdp_to_epsilon(selection_rdp(side, count, a), a, d)
        best = max(best, (eps, order))
    return best


def calibrate_trial(total: Callable[[float], float], epsilon: float, rtol: float = 1e-7) -> float:
    """The largest per-trial budget t (to relative precision ``rtol``) with ``total(t)`` ≤
    ``epsilon``, where ``total`` is the selection's certified ε at per-trial budget t
    (non-decreasing in t); the returned t always meets the target. Raises when even a budget
    e^{−40} times the target does not."""
    target = check_epsilon(epsilon)
    lo = hi = math.log(target)
    while total(math.exp(lo)) > target:
        lo -= 1.0
        if lo < math.log(target) - 40.0:
            raise ValueError(f"no per-trial budget makes the selection {target:g}-DP at this delta")
    while total(math.exp(hi)) <= target:
        lo, hi = hi, hi + 1.0
    while hi - lo > rtol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if total(math.exp(mid)) <= target else (lo, mid)
    return math.exp(lo)
