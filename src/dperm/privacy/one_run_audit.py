"""Privacy auditing in one training run: many canaries, each included or not by a fair coin, one
release, and a lower bound on ε from how well the canaries' scores guess the coins.

**The game** (Steinke, Nasr & Jagielski 2023, "Privacy auditing with one (1) training run").
m canaries; canary i's coin S_i (in / out, or under replace-one which of two rows fills its
slot) is a fair coin, independent of everything else; the mechanism runs once on the data with
the canaries the coins chose; a score per canary is computed from the release. The auditor guesses
"in" for the k highest scores (one-sided: no "out" guesses) and counts the correct guesses W. If
the mechanism is (ε, δ)-DP with respect to each canary's coin, then for every v (their Theorem
5.2, with p = e^ε/(1 + e^ε) and B ~ Binomial(k, p))

    P[W ≥ v] ≤ P[B ≥ v] + 2mδ · max_{1≤i≤v} (P[B ≥ v − i] − P[B ≥ v]) / i.

The right-hand side, at the observed v, is a p-value for the hypothesis "(ε, δ)-DP"; it grows
with ε, so ε_LB is the largest ε it rejects at the chosen significance (bisection). The δ term
costs little while 2mδ ≪ 1.

**The f-DP variant** (Mahloujifar, Melis & Chaudhuri 2024, "Auditing f-differential privacy in
one run"). It tests the stronger hypothesis "μ-GDP" (trade-off f(α) = Φ(Φ⁻¹(1 − α) − μ), Dong,
Roth & Su 2022), which every Gaussian mechanism and the accountants of DP-SGD and DP-GD describe
well. Under μ-GDP an event of probability r given one value of a coin has probability at least
g(r) = Φ(Φ⁻¹(r) − μ) given the other. Their bound on the guessing game, written with the
observed fractions of correct and wrong guesses scaled by the significance τ, r = τv/m and
h = τ(k − v)/m, walks back over the correct guesses i = v − 1, …, 0: each step raises h to
g(r) where the trade-off forces it and adds to r the correct-guess mass the raised h allows,
r ← min(1, r + i/(k − i)·Δh); the observation is inconsistent with μ-GDP at level τ when the
final r + h exceeds k/m, the fraction of canaries guessed. μ_LB is the largest μ it rejects; the
reported ε_LB is the ε at which a μ_LB-GDP mechanism is exactly (ε, δ)-DP (Dong et al.,
Corollary 2.13), so the two variants are comparable — but the second is evidence against the
GDP claim, which is stronger than (ε, δ)-DP.

Guess counts: k runs over a fixed grid (2^j, and the last value m), chosen before looking at
the scores; the best ε over the grid is reported, with the significance split evenly over it
(Bonferroni), so the bound holds at the stated confidence.

Calibration (:func:`gaussian_calibration`): scores of in-canaries N(μ, 1) and out-canaries N(0,
1) are exactly the one-run view of a μ-GDP mechanism with independent canaries, so the ε of μ-GDP
at δ is the target the estimates are measured against (docs/audit.md reports the table).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, log_ndtr, ndtr, ndtri
from scipy.stats import binom

__all__ = ["OneRunResult", "one_run_epsilon", "gdp_epsilon", "guess_counts", "gaussian_calibration",
           "steinke_p_value", "gdp_rejects"]


@dataclass(frozen=True)
class OneRunResult:
    """ε_LB of one variant, the guess count k that gave it, its correct guesses v, and m."""

    epsilon_lower: float
    method: str
    guesses: int
    correct: int
    canaries: int


def steinke_p_value(m: int, guesses: int, correct: int, epsilon: float, delta: float) -> float:
    """The p-value of "(ε, δ)-DP" for ``correct`` of ``guesses`` right among m canaries (module
    docstring)."""
    if correct <= 0:
        return 1.0
    p = float(expit(epsilon))
    tail = float(binom.sf(correct - 1, guesses, p))  # P[B ≥ v]
    if delta == 0:
        return tail
    i = np.arange(1, correct + 1)
    slack = float(np.max((binom.sf(correct - 1 - i, guesses, p) - tail) / i))
    return min(1.0, tail + 2.0 * m * delta * slack)


def _largest_rejected(rejects, hi: float = 1.0) -> float:
    """The largest x ≥ 0 with ``rejects(x)`` (rejections form an interval [0, x*))."""
    if not rejects(0.0):
        return 0.0
    lo = 0.0
    while rejects(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e3:
            return math.inf
    while hi - lo > 1e-6 * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if rejects(mid) else (lo, mid)
    return lo


def gdp_rejects(m: int, guesses: int, correct: int, mu: float, significance: float) -> bool:
    """Whether ``correct`` of ``guesses`` right among m canaries is inconsistent with μ-GDP at
    level ``significance`` (Mahloujifar et al.'s recursion, module docstring)."""
    if correct <= 0 or guesses <= 0:
        return False

    def trade_off(r: float) -> float:  # least mass on the other side of an event of mass r
        return float(ndtr(ndtri(min(max(r, 0.0), 1.0)) - mu)) if r > 0 else 0.0

    right = significance * correct / m
    wrong = significance * (guesses - correct) / m
    for i in range(correct - 1, -1, -1):
        raised = max(wrong, trade_off(right))
        if raised == wrong:
            break  # nothing changes from here on
        right = min(1.0, right + i / (guesses - i) * (raised - wrong))
        wrong = raised
    return right + wrong > guesses / m


def gdp_epsilon(mu: float, delta: float) -> float:
    """ε at which a μ-GDP mechanism is exactly (ε, δ)-DP: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)
    (Dong, Roth & Su 2022, Corollary 2.13), solved for ε."""
    if mu <= 0:
        return 0.0

    def excess(eps):
        a, b = log_ndtr(-eps / mu + mu / 2), eps + log_ndtr(-eps / mu - mu / 2)
        return (np.exp(a) * -np.expm1(b - a) if b < a else 0.0) - delta

    if excess(0.0) <= 0:
        return 0.0
    hi = 1.0
    while excess(hi) > 0:
        hi *= 2.0
    return brentq(excess, 0.0, hi, xtol=1e-9)


def guess_counts(m: int) -> list[int]:
    """The fixed grid of guess counts: 1, 2, 4, … below m, and m."""
    out, k = [], 1
    while k < m:
        out.append(k)
        k *= 2
    return out + [m]


def one_run_epsilon(scores, included, *, delta: float, confidence: float = 0.95,
                    method: str = "steinke") -> OneRunResult:
    """ε_LB from one run: ``scores`` per canary (larger where it shows), ``included`` its coin
    (True: in, or the slot's first row). ``method``: "steinke" ((ε, δ)-DP) or "gdp" (the f-DP
    variant; μ-GDP, reported as the ε of μ_LB-GDP at ``delta``)."""
    scores = np.asarray(scores, dtype=float)
    included = np.asarray(included, dtype=bool)
    if scores.shape != included.shape or scores.ndim != 1 or scores.size == 0:
        raise ValueError("scores and included must be 1-d arrays of one entry per canary")
    if method not in ("steinke", "gdp"):
        raise ValueError(f"method must be 'steinke' or 'gdp'; got {method!r}")
    m = scores.size
    order = np.argsort(-scores, kind="stable")
    hits = np.cumsum(included[order])
    grid = guess_counts(m)
    level = (1.0 - confidence) / len(grid)
    best = OneRunResult(0.0, method, 0, 0, m)
    for k in grid:
        v = int(hits[k - 1])
        if v <= k / 2:
            continue  # no better than chance: rejects nothing
        if method == "steinke":
            eps = _largest_rejected(lambda e, k=k, v=v: steinke_p_value(m, k, v, e, delta) <= level)
        else:
            mu = _largest_rejected(lambda u, k=k, v=v: gdp_rejects(m, k, v, u, level))
            eps = gdp_epsilon(mu, delta)
        if eps > best.epsilon_lower:
            best = OneRunResult(eps, method, k, v, m)
    return best


def gaussian_calibration(mus, canaries, *, delta: float = 1e-5, seed: int = 0, confidence: float = 0.95):
    """Rows (μ, m, method, ε of μ-GDP at δ, ε_LB, ε_LB/ε): one-run estimates on Gaussian scores
    (in-canaries N(μ, 1), out N(0, 1), fair coins), whose privacy is μ-GDP exactly."""
    rows = []
    rng = np.random.default_rng(seed)
    for mu in mus:
        target = gdp_epsilon(mu, delta)
        for m in canaries:
            coins = rng.random(m) < 0.5
            scores = rng.standard_normal(m) + mu * coins
            for method in ("steinke", "gdp"):
                res = one_run_epsilon(scores, coins, delta=delta, confidence=confidence, method=method)
                rows.append({"mu": mu, "canaries": m, "method": method, "epsilon": target,
                             "epsilon_lower": res.epsilon_lower, "ratio": res.epsilon_lower / target,
                             "guesses": res.guesses, "correct": res.correct})
    return rows
