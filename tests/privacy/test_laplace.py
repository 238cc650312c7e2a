"""Laplace and ℓ2-Laplace (Gamma-norm) noise: calibration via density ratios, sampler moments."""

import math

import numpy as np
import pytest
from scipy import stats

from dperm import privacy as P


@pytest.mark.parametrize("sens,eps", [(1.0, 0.1), (2.0, 1.0), (0.5, 3.0)])
def test_laplace_density_ratio_is_bounded_by_epsilon(sens, eps):
    b = P.laplace_scale(sens, eps)
    x = np.linspace(-50 * b, 50 * b, 20001)
    log_ratio = stats.laplace.logpdf(x, 0.0, b) - stats.laplace.logpdf(x, sens, b)
    assert log_ratio.max() <= eps * (1 + 1e-12)
    assert log_ratio.max() >= eps * (1 - 1e-9)  # and the bound is attained: no wasted budget


def test_laplace_noise_moments_and_shape():
    z = P.laplace_noise(sensitivity=2.0, epsilon=0.5, rng=np.random.default_rng(3), size=(50000, 4))
    b = 4.0
    assert z.shape == (50000, 4)
    # E|z| = b with sd b, E z² = 2b²
    assert abs(np.abs(z).mean() - b) < 5 * b / math.sqrt(z.size)
    assert abs(z.mean()) < 5 * math.sqrt(2) * b / math.sqrt(z.size)


def test_laplace_mechanism_audit_stays_below_epsilon():
    eps, sens, n = 0.5, 1.0, 300_000
    rng = np.random.default_rng(11)
    y_d = sens + P.laplace_noise(sensitivity=sens, epsilon=eps, rng=rng, size=n)
    y_p = P.laplace_noise(sensitivity=sens, epsilon=eps, rng=rng, size=n)
    events = [lambda y, t=t: y > t for t in (0.5, 1.0, 2.0, 3.0)]
    res = P.audit_outputs(y_d, y_p, events=events, confidence=0.95)
    assert 0.3 < res.epsilon_lower <= eps


@pytest.mark.parametrize("p", [1, 3, 20])
def test_l2_laplace_moments_match_theory(p):
    sens, eps, n = 2.0, 0.7, 40_000
    z = P.l2_laplace_noise(sensitivity=sens, epsilon=eps, rng=np.random.default_rng(p), size=(n, p))
    assert z.shape == (n, p)
    r = np.linalg.norm(z, axis=1)
    scale = sens / eps
    mean_r, mean_r2 = p * scale, p * (p + 1) * scale**2
    sd_r = math.sqrt(p) * scale                                   # Gamma(p, scale) sd
    sd_r2 = math.sqrt(p * (p + 1) * (p + 2) * (p + 3) * scale**4 - mean_r2**2)
    assert abs(r.mean() - mean_r) < 5 * sd_r / math.sqrt(n)
    assert abs((r**2).mean() - mean_r2) < 5 * sd_r2 / math.sqrt(n)
    # the norm has the Gamma(p, Δ/ε) law implied by the density ∝ exp(−ε‖z‖/Δ)
    assert stats.kstest(r, stats.gamma(a=p, scale=scale).cdf).pvalue > 1e-3


def test_l2_laplace_direction_is_uniform():
    p, n = 5, 60_000
    z = P.l2_laplace_noise(sensitivity=1.0, epsilon=1.0, rng=np.random.default_rng(5), size=(n, p))
    u = z / np.linalg.norm(z, axis=1, keepdims=True)
    # E u = 0 and E u uᵀ = I/p; each coordinate has variance 1/p
    assert np.abs(u.mean(axis=0)).max() < 5 / math.sqrt(p * n)
    cov = u.T @ u / n
    assert np.abs(cov - np.eye(p) / p).max() < 0.01
    # the direction is independent of the radius
    r = np.linalg.norm(z, axis=1)
    assert abs(np.corrcoef(r, np.abs(u[:, 0]))[0, 1]) < 5 / math.sqrt(n)


def test_l2_laplace_mechanism_audit_from_the_sampler_stays_below_epsilon():
    """The sampler's own outputs, on neighbours f(D) = 0 and f(D') at distance Δ: the
    Clopper-Pearson lower bound on ε over half-space events along the shift is at most ε (the
    density ratio of the law the sampler draws from is bounded by e^ε) and not far below it
    (the test has power: a sampler with half the scale is caught)."""
    sens, eps, p, n = 1.0, 1.0, 2, 400_000
    rng = np.random.default_rng(9)
    shift = np.array([sens, 0.0])
    events = [lambda z, t=t: z[:, 0] > t for t in (1.0, 2.0, 3.0, 4.0, 5.0)]

    def audit(scale_factor):
        d = P.l2_laplace_noise(sensitivity=sens * scale_factor, epsilon=eps, rng=rng, size=(n, p))
        d_prime = shift + P.l2_laplace_noise(sensitivity=sens * scale_factor, epsilon=eps, rng=rng, size=(n, p))
        return P.audit_outputs(d_prime, d, events=events, confidence=0.95).epsilon_lower

    assert 0.5 * eps < audit(1.0) <= eps
    assert audit(0.5) > eps  # half the calibrated scale: the audit catches it


def test_l2_laplace_single_vector_and_bad_size():
    rng = np.random.default_rng(0)
    assert P.l2_laplace_noise(sensitivity=1.0, epsilon=1.0, rng=rng, size=7).shape == (7,)
    with pytest.raises(ValueError, match="size"):
        P.l2_laplace_noise(sensitivity=1.0, epsilon=1.0, rng=rng, size=0)


def test_same_seed_same_noise():
    a = P.l2_laplace_noise(sensitivity=1.0, epsilon=1.0, rng=np.random.default_rng(42), size=(3, 2))
    b = P.l2_laplace_noise(sensitivity=1.0, epsilon=1.0, rng=np.random.default_rng(42), size=(3, 2))
    assert np.array_equal(a, b)
