"""The Gumbel selection (report-noisy-min with Gumbel noise, DP-AGD's ``selection: gumbel``) is
ε-bounded-range and so ε²/8-zCDP (docs/privacy.md#bounded-range-selection).

Exact checks on the mechanism as implemented: its selection probabilities by quadrature over
the Gumbel noise of argmin_k (s_k − G_k) (the implementation's rule and noise law, not the
softmax formula they are claimed to equal); then, over enumerated score vectors and their
neighbours (every score moved by 0, Δ/2 or Δ, the extremes included), the privacy-loss range and
the Rényi divergences D_α ≤ ρα, ρ = ε²/8, in both directions, on a grid of α. The same checks
fail where the argument says they must: the monotone scale on scores that move in opposite
directions (fixed-size batches), and exp_dec > 1 without its larger sensitivity. A sampling test
(chi-square against the exact probabilities, fixed seeds) checks that the draws have that law.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import logsumexp

from dperm import privacy as P

ALPHAS = [1.01, 1.1, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0]


def quadrature_probabilities(scores, b):
    """P(argmin_k (s_k − G_k) = k), G iid Gumbel(0, b), for one score vector, by quadrature:
    candidate k wins at G_k = x when s_j − G_j > s_k − x for every j ≠ k, i.e. G_j < x + (s_j − s_k),
    so P(k) = ∫ g(x) Π_{j≠k} F(x + s_j − s_k) dx with the Gumbel density g and CDF F."""
    s = np.asarray(scores, float)

    def cdf(x):
        return np.exp(-np.exp(-x / b))

    def pdf(x):
        z = x / b
        return np.exp(-z - np.exp(-z)) / b

    out = []
    for k in range(len(s)):
        others = np.delete(s, k) - s[k]
        value, _ = integrate.quad(lambda x, o=others: pdf(x) * np.prod(cdf(x + o)), -40 * b, 60 * b + np.ptp(s),
                                  epsabs=1e-13, epsrel=1e-11, limit=500)
        out.append(value)
    return np.array(out)


def exact_probabilities(scores, b):
    """exp(−s_k/b) / Σ_j exp(−s_j/b) — what the Gumbel-max identity says the draws follow (checked
    against :func:`quadrature_probabilities` below)."""
    z = -np.asarray(scores, float) / b
    return np.exp(z - logsumexp(z, axis=-1, keepdims=True))


def renyi(p, q, alphas):
    """D_α(p ‖ q) for each α (> 1) and each row of q, distributions on the same finite support:
    shape (len(alphas), rows)."""
    a = np.asarray(alphas, float)[:, None, None]
    return logsumexp(a * np.log(p) + (1 - a) * np.log(q), axis=-1) / (a[..., 0] - 1)


def worst_case(base_scores, shifts, b):
    """(max privacy-loss range, max over α of D_α/α in both directions) over every neighbour
    base + shift."""
    p = exact_probabilities(base_scores, b)[None, :]
    q = exact_probabilities(base_scores + np.asarray(shifts), b)
    widest = float(np.ptp(np.log(p) - np.log(q), axis=1).max())
    alphas = np.asarray(ALPHAS)[:, None]
    worst = max(float((renyi(p, q, ALPHAS) / alphas).max()), float((renyi(q, p, ALPHAS) / alphas).max()))
    return widest, worst


def score_vectors(k, sens):
    """Score vectors of k candidates: ties, one apart, spread, with gaps of 0, Δ/2, Δ, 3Δ."""
    grid = sens * np.array([0.0, 0.5, 1.0, 3.0])
    return [np.array(v) for v in itertools.product(grid, repeat=k) if v[0] == 0.0]


def monotone_shifts(k, sens, top=None):
    """Every score raised by 0, Δ/2 or Δ (an added row's clipped loss in [0, Δ]); the first by up to
    ``top`` (exp_dec·Δ) when given. Removal is the same pairs read the other way round."""
    levels = sens * np.array([0.0, 0.5, 1.0])
    first = levels if top is None else np.array([0.0, 0.5 * top, top])
    return [np.array(v) for v in itertools.product(first, *[levels] * (k - 1))]


def general_shifts(k, sens):
    """Each score moved by −Δ, 0 or Δ independently (fixed-size batches: a row replaced)."""
    return [sens * np.array(v) for v in itertools.product([-1.0, 0.0, 1.0], repeat=k)]


# -- the mechanism as implemented ----------------------------------------------------------------

@pytest.mark.parametrize("scores", [[0.0, 0.0, 0.0], [0.0, 1.0, 3.0], [2.0, -1.0, 0.5, 0.5], [0.0, 7.0]])
@pytest.mark.parametrize("b", [0.5, 1.0, 3.0])
def test_argmin_minus_gumbel_noise_has_the_exponential_mechanism_s_law(scores, b):
    np.testing.assert_allclose(quadrature_probabilities(scores, b), exact_probabilities(scores, b),
                               rtol=1e-7, atol=1e-12)


def test_the_draws_follow_the_exact_law_and_exponential_noise_does_not():
    """Chi-square of 200,000 selections against the exact probabilities (fixed seeds). Exponential
    noise at the same scale, a different mechanism, is rejected by the same test: it can fail."""
    scores, sens, eps = np.array([0.0, 0.4, 1.0, 1.0, 2.5, 6.0]), 1.0, 1.0
    b = P.noisy_max_scale(sens, eps, monotone=True)
    n = 200_000
    expected = exact_probabilities(scores, b) * n
    gumbel = P.report_noisy_min(np.tile(scores, (n, 1)), sensitivity=sens, epsilon=eps, monotone=True,
                                noise="gumbel", rng=np.random.default_rng(11))
    counts = np.bincount(gumbel, minlength=len(scores))
    assert stats.chisquare(counts, expected).pvalue > 1e-3
    exponential = P.report_noisy_min(np.tile(scores, (n, 1)), sensitivity=sens, epsilon=eps, monotone=True,
                                     noise="exponential", rng=np.random.default_rng(11))
    assert stats.chisquare(np.bincount(exponential, minlength=len(scores)), expected).pvalue < 1e-12


# -- bounded range and zCDP, exactly ------------------------------------------------------------

@pytest.mark.parametrize("k", [2, 3, 4])
def test_monotone_scale_is_epsilon_bounded_range_and_epsilon_squared_over_8_zcdp(k):
    eps, sens = 0.8, 1.0
    rho = P.zcdp_of_bounded_range(eps)
    b = P.noisy_max_scale(sens, eps, monotone=True)
    widest, worst = 0.0, 0.0
    for base in score_vectors(k, sens):
        w, r = worst_case(base, monotone_shifts(k, sens), b)
        widest, worst = max(widest, w), max(worst, r)
    assert widest <= eps * (1 + 1e-9)
    assert widest >= eps * (1 - 1e-9)  # a shift of 0 on one score and Δ on another attains it
    assert worst <= rho * (1 + 1e-9)
    # … and the NoisyMin charge of the same ε would be 4 times as large: ε²/2 = 4ρ
    assert P.zcdp_of_pure_dp(eps) == pytest.approx(4 * rho)


@pytest.mark.parametrize("k", [2, 3])
def test_non_monotone_neighbours_need_the_general_scale(k):
    """Scores moving in opposite directions (a fixed-size batch): 2Δ/ε is ε-bounded-range and
    ε²/8-zCDP; the monotone scale Δ/ε is only 2ε-bounded-range and breaks D_α ≤ ρα."""
    eps, sens = 0.8, 1.0
    rho = P.zcdp_of_bounded_range(eps)
    general = [worst_case(base, general_shifts(k, sens), P.noisy_max_scale(sens, eps, monotone=False))
               for base in score_vectors(k, sens)]
    assert max(w for w, _ in general) <= eps * (1 + 1e-9)
    assert max(r for _, r in general) <= rho * (1 + 1e-9)
    wrong = [worst_case(base, general_shifts(k, sens), P.noisy_max_scale(sens, eps, monotone=True))
             for base in score_vectors(k, sens)]
    assert max(w for w, _ in wrong) == pytest.approx(2 * eps)
    assert max(r for _, r in wrong) > 1.5 * rho


def test_exp_dec_above_one_needs_its_larger_sensitivity():
    """s_0 scaled by e = 1.5 moves by up to e·Δ: the scale max(1, e)·Δ/ε keeps ε-bounded range,
    Δ/ε does not."""
    eps, sens, e, k = 0.8, 1.0, 1.5, 3
    rho = P.zcdp_of_bounded_range(eps)
    shifts = monotone_shifts(k, sens, top=e * sens)
    right = [worst_case(base, shifts, P.noisy_max_scale(e * sens, eps, monotone=True)) for base in score_vectors(k, sens)]
    assert max(w for w, _ in right) <= eps * (1 + 1e-9) and max(r for _, r in right) <= rho * (1 + 1e-9)
    wrong = [worst_case(base, shifts, P.noisy_max_scale(sens, eps, monotone=True)) for base in score_vectors(k, sens)]
    assert max(w for w, _ in wrong) == pytest.approx(e * eps)


def test_bounded_range_conversions():
    assert P.zcdp_of_bounded_range(2.0) == 0.5
    assert P.bounded_range_epsilon_for_zcdp(0.5) == pytest.approx(2.0)
    rho = 0.003
    assert P.bounded_range_epsilon_for_zcdp(rho) == pytest.approx(2 * P.pure_dp_epsilon_for_zcdp(rho))
    with pytest.raises(ValueError):
        P.bounded_range_epsilon_for_zcdp(0.0)
    assert math.isclose(P.zcdp_of_bounded_range(P.bounded_range_epsilon_for_zcdp(rho)), rho)
