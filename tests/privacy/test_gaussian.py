"""Gaussian calibrations checked against the exact privacy profile, which is itself checked
against direct numerical integration of the hockey-stick divergence."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dperm import privacy as P

DELTAS = [1e-3, 1e-5, 1e-8, 1e-12]
SENS = [0.5, 1.0, 3.0]


def hockey_stick(epsilon, sigma, sens):
    """δ(ε) = ∫ max(0, p(x) − e^ε p'(x)) dx for p = N(0, σ²), p' = N(Δ, σ²), by quadrature."""
    f = lambda x: max(0.0, stats.norm.pdf(x, 0, sigma) - math.exp(epsilon) * stats.norm.pdf(x, sens, sigma))
    # The integrand is positive only left of x* = Δ/2 − εσ²/Δ.
    x_star = sens / 2 - epsilon * sigma**2 / sens
    val, _ = integrate.quad(f, x_star - 40 * sigma, x_star, epsabs=0, epsrel=1e-12, limit=200)
    return val


@pytest.mark.parametrize("epsilon,sigma,sens", [(0.5, 1.0, 1.0), (1.0, 2.0, 1.0), (3.0, 0.7, 2.0),
                                                (0.1, 10.0, 3.0), (0.0, 1.5, 1.0),
                                                (1.0, 8.0, 1.0), (2.0, 0.9, 0.5)])
def test_gaussian_delta_matches_numerical_hockey_stick(epsilon, sigma, sens):
    exact = hockey_stick(epsilon, sigma, sens)
    assert exact > 0.0  # includes a δ ~ 1e-14 case: relative precision must survive
    assert P.gaussian_delta(epsilon, sigma, sens) == pytest.approx(exact, rel=1e-8)


def test_gaussian_delta_is_decreasing_in_epsilon_and_sigma_and_vectorised():
    eps = np.linspace(0.0, 5.0, 51)
    d = P.gaussian_delta(eps, 1.3)
    assert d.shape == eps.shape and np.all(np.diff(d) < 0)
    assert P.gaussian_delta(1.0, 2.0) < P.gaussian_delta(1.0, 1.0)


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("sens", SENS)
@pytest.mark.parametrize("epsilon", [0.01, 0.1, 0.5, 0.99])
def test_classical_and_zhang_meet_guarantee_below_one(epsilon, delta, sens):
    for calib in (P.gaussian_sigma_classical, P.gaussian_sigma_zhang):
        sigma = calib(epsilon, delta, sens)
        assert P.gaussian_delta(epsilon, sigma, sens) <= delta


def test_zhang_accepts_epsilon_one_and_meets_guarantee():
    sigma = P.gaussian_sigma_zhang(1.0, 1e-6)
    assert P.gaussian_delta(1.0, sigma) <= 1e-6


@pytest.mark.parametrize("epsilon", [1.0, 1.6, 10.0])
def test_classical_refused_from_epsilon_one(epsilon):
    with pytest.raises(ValueError, match="zhao|analytic"):
        P.gaussian_sigma_classical(epsilon, 1e-5)


@pytest.mark.parametrize("epsilon", [1.01, 1.6, 2.0])
def test_zhang_refused_above_one(epsilon):
    with pytest.raises(ValueError, match="epsilon <= 1"):
        P.gaussian_sigma_zhang(epsilon, 1e-5)


@pytest.mark.parametrize("epsilon", [10.0, 20.0])
def test_refusal_is_warranted_extrapolated_classical_form_breaks(epsilon):
    # The ε < 1 formulas, evaluated outside their range, really do violate the exact profile.
    for log_term in (math.log(1.25 / 1e-5), math.log(2 / 1e-5)):
        sigma = math.sqrt(2 * log_term) / epsilon
        assert P.gaussian_delta(epsilon, sigma) > 1e-5


@pytest.mark.parametrize("delta", DELTAS)
@pytest.mark.parametrize("sens", SENS)
@pytest.mark.parametrize("epsilon", [0.01, 0.1, 0.5, 1.0, 1.6, 5.0, 20.0, 50.0])
def test_zhao_and_analytic_meet_guarantee_for_all_epsilon(epsilon, delta, sens):
    s_zhao = P.gaussian_sigma_zhao(epsilon, delta, sens)
    s_ana = P.gaussian_sigma_analytic(epsilon, delta, sens)
    assert P.gaussian_delta(epsilon, s_zhao, sens) <= delta
    assert P.gaussian_delta(epsilon, s_ana, sens) <= delta
    # analytic is tight: δ(ε) is within 1e-6 of the target and a 1e-6 smaller σ fails
    assert P.gaussian_delta(epsilon, s_ana, sens) >= delta * (1 - 1e-6)
    assert P.gaussian_delta(epsilon, s_ana * (1 - 1e-6), sens) > delta
    # and hence never larger than any valid calibration
    assert s_ana <= s_zhao
    if epsilon < 1:
        assert s_ana <= P.gaussian_sigma_classical(epsilon, delta, sens)


def test_calibrations_scale_linearly_in_sensitivity():
    for calib in (P.gaussian_sigma_classical, P.gaussian_sigma_zhang, P.gaussian_sigma_zhao,
                  P.gaussian_sigma_analytic):
        assert calib(0.5, 1e-6, 2.5) == pytest.approx(2.5 * calib(0.5, 1e-6, 1.0), rel=1e-9)


def test_gaussian_noise_shape_and_moments():
    z = P.gaussian_noise(sigma=2.0, rng=np.random.default_rng(1), size=(20000, 5))
    assert z.shape == (20000, 5)
    se = 2.0 * math.sqrt(2 / z.size)  # std error of the sample std ≈ σ/√(2N)
    assert abs(z.std() - 2.0) < 5 * se
    assert abs(z.mean()) < 5 * 2.0 / math.sqrt(z.size)


def test_gaussian_mechanism_audit_stays_below_claim_and_bites_when_undernoised():
    eps, delta, sens = 1.0, 1e-3, 1.0
    sigma = P.gaussian_sigma_analytic(eps, delta, sens)
    rng = np.random.default_rng(7)
    n = 400_000
    thresholds = np.linspace(-1.0, 4.0, 11) * sigma
    events = [lambda y, t=t: y > t for t in thresholds]
    y_d = rng.normal(sens, sigma, n)          # f(D) = Δ
    y_p = rng.normal(0.0, sigma, n)           # f(D') = 0
    res = P.audit_outputs(y_d, y_p, events=events, delta=delta, confidence=0.95)
    assert res.epsilon_lower <= eps
    assert res.epsilon_lower > 0.5  # the test has power: it sees most of the budget
    # four times too little noise is caught
    y_d_bad = rng.normal(sens, sigma / 4, n)
    y_p_bad = rng.normal(0.0, sigma / 4, n)
    bad = P.audit_outputs(y_d_bad, y_p_bad, events=events, delta=delta, confidence=0.95)
    assert bad.epsilon_lower > eps
