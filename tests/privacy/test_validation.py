"""Every validator raises ValueError naming the parameter and the bad value."""

import math

import numpy as np
import pytest

from dperm import privacy as P

NAN, INF = math.nan, math.inf

# (callable taking the bad value, parameter name, bad values)
CASES = [
    (lambda v: P.gaussian_sigma_zhao(v, 1e-5), "epsilon", [0.0, -1.0, NAN, INF]),
    (lambda v: P.gaussian_sigma_analytic(v, 1e-5), "epsilon", [0.0, -0.5, NAN, INF]),
    (lambda v: P.gaussian_sigma_classical(v, 1e-5), "epsilon", [0.0, -1.0, NAN]),
    (lambda v: P.gaussian_sigma_zhang(v, 1e-5), "epsilon", [0.0, NAN]),
    (lambda v: P.gaussian_sigma_zhao(0.5, v), "delta", [0.0, 1.0, 1.5, -0.1, NAN, INF]),
    (lambda v: P.gaussian_sigma_analytic(0.5, v), "delta", [0.0, 1.0, -1e-9, NAN]),
    (lambda v: P.gaussian_sigma_classical(0.5, v), "delta", [0.0, 2.0, NAN]),
    (lambda v: P.gaussian_sigma_zhao(0.5, 1e-5, v), "sensitivity", [-1.0, 0.0, NAN, INF]),
    (lambda v: P.gaussian_delta(1.0, v), "sigma", [0.0, -2.0, NAN, INF]),
    (lambda v: P.gaussian_delta(v, 1.0), "epsilon", [-0.1, NAN, INF]),
    (lambda v: P.laplace_scale(v, 1.0), "sensitivity", [-1.0, NAN]),
    (lambda v: P.laplace_noise(sensitivity=1.0, epsilon=v, rng=np.random.default_rng(0)),
     "epsilon", [0.0, -3.0, INF]),
    (lambda v: P.l2_laplace_noise(sensitivity=v, epsilon=1.0, rng=np.random.default_rng(0), size=3),
     "sensitivity", [-1.0, NAN]),
    (lambda v: P.report_noisy_min([0.0, 1.0], sensitivity=1.0, epsilon=v,
                                  rng=np.random.default_rng(0)), "epsilon", [0.0, NAN]),
    (lambda v: P.exponential_mechanism([0.0, 1.0], sensitivity=v, epsilon=1.0,
                                       rng=np.random.default_rng(0)), "sensitivity", [-1.0, INF]),
    (lambda v: P.zcdp_of_gaussian(v), "sigma", [0.0, -1.0, NAN]),
    (lambda v: P.zcdp_to_dp(v, 1e-5), "rho", [-0.1, NAN, INF]),
    (lambda v: P.zcdp_to_dp(0.1, v), "delta", [0.0, 1.0, NAN]),
    (lambda v: P.zcdp_from_dp(v, 1e-5), "epsilon", [0.0, -1.0, INF]),
    (lambda v: P.gaussian_sigma_for_zcdp(v), "rho", [0.0, -1.0, NAN]),
    (lambda v: P.ZCDPFilter(v), "budget", [0.0, -1.0, NAN, INF]),
    (lambda v: P.ZCDPFilter(1.0).charge(v), "rho", [-1e-3, NAN, INF]),
    (lambda v: P.advanced_composition_split(v, 1e-5, 10), "epsilon", [0.0, NAN]),
    (lambda v: P.advanced_composition_split(1.0, v, 10), "delta", [0.0, 1.0]),
    (lambda v: P.amplify_subsampling(1.0, 1e-5, v), "q", [0.0, -0.1, 1.5, NAN]),
    (lambda v: P.amplify_linear(0.5, 1e-5, v), "q", [0.0, 2.0]),
    (lambda v: P.rdp_sampled_gaussian(v, 1.0), "q", [0.0, 1.01, NAN]),
    (lambda v: P.rdp_sampled_gaussian(0.01, v), "noise_multiplier", [0.0, -1.0, INF]),
    (lambda v: P.epsilon_sampled_gaussian(0.01, 1.0, 10, v), "delta", [0.0, 1.0, NAN]),
    (lambda v: P.moments_accountant_epsilon(v, 4.0, 1, 1e-8), "q", [0.0, 1.5]),
    (lambda v: P.moments_accountant_epsilon(0.01, 4.0, v, 1e-8), "steps", [0, -5, 1.5]),
    (lambda v: P.epsilon_lower_bound(1, 10, 1, 10, delta=v), "delta", [-0.1, 1.0]),
    (lambda v: P.clopper_pearson(1, 10, v), "confidence", [0.0, 1.0, 1.5]),
]


@pytest.mark.parametrize(
    "fn,name,bad", [(fn, name, bad) for fn, name, bads in CASES for bad in bads]
)
def test_invalid_parameter_raises_value_error_naming_it(fn, name, bad):
    with pytest.raises(ValueError) as info:
        fn(bad)
    message = str(info.value)
    assert name in message
    assert repr(float(bad)) in message or repr(bad) in message
    assert "must be" in message  # says what is allowed


@pytest.mark.parametrize("bad_rng", [None, 0, np.random.RandomState(0)])
def test_drawing_functions_require_an_explicit_generator(bad_rng):
    with pytest.raises(TypeError, match="Generator"):
        P.laplace_noise(sensitivity=1.0, epsilon=1.0, rng=bad_rng)
    with pytest.raises(TypeError, match="Generator"):
        P.report_noisy_max([1.0, 2.0], sensitivity=1.0, epsilon=1.0, rng=bad_rng)


def test_non_numeric_parameter_is_a_type_error():
    with pytest.raises(TypeError, match="epsilon"):
        P.gaussian_sigma_zhao("one", 1e-5)
    with pytest.raises(TypeError, match="epsilon"):
        P.gaussian_sigma_zhao(True, 1e-5)


def test_bad_scores_and_options_are_rejected():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="finite"):
        P.report_noisy_max([0.0, np.nan], sensitivity=1.0, epsilon=1.0, rng=rng)
    with pytest.raises(ValueError, match="noise"):
        P.report_noisy_max([0.0, 1.0], sensitivity=1.0, epsilon=1.0, rng=rng, noise="cauchy")
    with pytest.raises(ValueError, match="conversion"):
        P.rdp_to_epsilon(np.zeros(2), [2.0, 3.0], 1e-5, conversion="fancy")
    with pytest.raises(ValueError, match="orders"):
        P.rdp_sampled_gaussian(0.01, 1.0, orders=[0.5, 2.0])
