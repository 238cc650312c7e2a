"""Report-noisy-max/min: exact selection probabilities by quadrature (calibration), Monte Carlo
audits on neighbouring inputs, and the DP-AGD sign bug (docs/privacy.md#noisymin-sign)."""

import itertools
import math

import numpy as np
import pytest
from scipy import integrate

from dperm import privacy as P

K_GRID = 21  # DP-AGD's step-size grid: 0 plus 20 positive step sizes


def _pdf_cdf(noise, b):
    if noise == "exponential":
        pdf = lambda x: np.where(x >= 0, np.exp(-np.maximum(x, 0) / b) / b, 0.0)
        cdf = lambda x: np.where(x >= 0, -np.expm1(-np.maximum(x, 0) / b), 0.0)
    else:
        pdf = lambda x: np.exp(-np.abs(x) / b) / (2 * b)
        cdf = lambda x: np.where(x < 0, 0.5 * np.exp(-np.abs(x) / b), 1 - 0.5 * np.exp(-np.abs(x) / b))
    return pdf, cdf


def select_probs_max(scores, b, noise):
    """P(argmax_j (u_j + N_j) = k) for every row of ``scores`` (m, k) and every k, by vectorised
    adaptive quadrature of ∫ pdf(x) Π_{j≠k} cdf(u_k + x − u_j) dx."""
    u = np.asarray(scores, float)
    pdf, cdf = _pdf_cdf(noise, b)

    def integrand(x):
        c = cdf(u[:, :, None] + x - u[:, None, :])        # (m, k, j)
        idx = np.arange(u.shape[1])
        c[:, idx, idx] = 1.0
        return pdf(x) * c.prod(axis=2)

    lo = 0.0 if noise == "exponential" else -60 * b
    kinks = np.unique(np.clip((u[:, None, :] - u[:, :, None]).ravel(), lo, 60 * b))
    val, _ = integrate.quad_vec(integrand, lo, 60 * b, epsabs=1e-14, epsrel=1e-10,
                                points=list(kinks), limit=5000)
    return val


def worst_log_ratio(u, perturbations, b, noise):
    """max over perturbations d and candidates k of |ln P_u(k) − ln P_{u+d}(k)|."""
    base = select_probs_max(u[None, :], b, noise)[0]
    moved = select_probs_max(u[None, :] + np.asarray(perturbations), b, noise)
    assert np.allclose(moved.sum(axis=1), 1.0, atol=1e-8)  # the quadrature is accurate
    return np.abs(np.log(moved) - np.log(base)).max()


@pytest.mark.parametrize("noise", ["exponential", "laplace"])
def test_monotone_calibration_meets_epsilon_exactly(noise):
    eps, sens = 0.7, 1.0
    b = P.noisy_max_scale(sens, eps, monotone=True)
    rng = np.random.default_rng(0)
    u = rng.uniform(-1, 1, 4)
    perturbations = sens * np.array(list(itertools.product([0.0, 1.0], repeat=4)))
    assert worst_log_ratio(u, perturbations, b, noise) <= eps * (1 + 1e-6)


@pytest.mark.parametrize("noise", ["exponential", "laplace"])
def test_general_calibration_meets_epsilon_and_monotone_one_would_not(noise):
    eps, sens = 0.7, 1.0
    u = np.random.default_rng(1).uniform(-1, 1, 3)
    perturbations = sens * np.array(list(itertools.product([-1.0, 0.0, 1.0], repeat=3)))
    b_gen = P.noisy_max_scale(sens, eps, monotone=False)
    assert worst_log_ratio(u, perturbations, b_gen, noise) <= eps * (1 + 1e-6)
    b_mono = P.noisy_max_scale(sens, eps, monotone=True)
    assert worst_log_ratio(u, perturbations, b_mono, noise) > eps * 1.05


def sign_flaw_scores(n, sens):
    """docs/privacy.md#noisymin-sign: all 21 clipped-loss sums equal on D; on D' candidate 0's is
    larger by Δ."""
    s_d = np.zeros((n, K_GRID))
    s_p = s_d.copy()
    s_p[:, 0] += sens
    return s_d, s_p


def test_reference_noisy_min_violates_its_claim_by_twenty_fold():
    eps, sens, n = 0.1, 1.0, 200_000
    rng = np.random.default_rng(2024)
    s_d, s_p = sign_flaw_scores(n, sens)
    out_d = P.report_noisy_min_reference(s_d, sensitivity=sens, epsilon=eps, rng=rng)
    out_p = P.report_noisy_min_reference(s_p, sensitivity=sens, epsilon=eps, rng=rng)
    res = P.audit_outputs(out_d, out_p, support=np.arange(K_GRID), confidence=0.95)
    assert res.epsilon_lower > 10 * eps           # the audit bites, by a wide margin
    # the point estimate matches the theory (k − 1)Δ/b = 20ε = 2.0
    observed = math.log(np.mean(out_d == 0) / np.mean(out_p == 0))
    assert observed == pytest.approx((K_GRID - 1) * eps, abs=0.15)


@pytest.mark.parametrize("noise,monotone", [("exponential", True), ("laplace", True),
                                            ("exponential", False), ("laplace", False)])
def test_correct_noisy_min_passes_the_same_audit(noise, monotone):
    eps, sens, n = 0.1, 1.0, 200_000
    rng = np.random.default_rng(7)
    s_d, s_p = sign_flaw_scores(n, sens)
    kw = dict(sensitivity=sens, epsilon=eps, rng=rng, monotone=monotone, noise=noise)
    out_d = P.report_noisy_min(s_d, **kw)
    out_p = P.report_noisy_min(s_p, **kw)
    res = P.audit_outputs(out_d, out_p, support=np.arange(K_GRID), confidence=0.95)
    assert res.epsilon_lower <= eps


def test_noisy_min_with_large_epsilon_finds_the_minimum_and_max_the_maximum():
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(500, 9))
    kw = dict(sensitivity=1.0, epsilon=1e7, rng=rng)
    assert np.array_equal(P.report_noisy_min(scores, **kw), scores.argmin(axis=1))
    assert np.array_equal(P.report_noisy_max(scores, **kw), scores.argmax(axis=1))
    assert np.array_equal(P.report_noisy_min(scores, noise="laplace", **kw), scores.argmin(axis=1))


def test_noisy_min_prefers_smaller_scores_and_reference_is_biased_the_other_way():
    # On D' the raised candidate is worse; the correct NoisyMin picks it *less* often than the
    # others, whereas the buggy form picks it *much* less often (it over-reacts to the change).
    eps, sens, n = 0.5, 1.0, 100_000
    rng = np.random.default_rng(4)
    _, s_p = sign_flaw_scores(n, sens)
    good = P.report_noisy_min(s_p, sensitivity=sens, epsilon=eps, rng=rng, monotone=True)
    bad = P.report_noisy_min_reference(s_p, sensitivity=sens, epsilon=eps, rng=rng)
    assert np.mean(good == 0) >= math.exp(-eps) / K_GRID * 0.95
    assert np.mean(bad == 0) < math.exp(-eps) / K_GRID * 0.5


def test_vectorised_shapes_and_scale():
    rng = np.random.default_rng(0)
    assert P.report_noisy_max(np.zeros((2, 3, 5)), sensitivity=1.0, epsilon=1.0, rng=rng).shape == (2, 3)
    assert np.ndim(P.report_noisy_min(np.zeros(5), sensitivity=1.0, epsilon=1.0, rng=rng)) == 0
    assert P.noisy_max_scale(2.0, 0.5, monotone=False) == 2 * P.noisy_max_scale(2.0, 0.5, monotone=True)
