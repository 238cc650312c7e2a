"""The one-run estimators (dperm.privacy.one_run_audit): the p-value against a direct sum, the
GDP conversion against the exact Gaussian profile, validity and power on Gaussian scores of known
privacy (fixed seeds, margins wide enough to be deterministic in practice)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import binom

from dperm.privacy import gaussian_delta
from dperm.privacy.one_run_audit import (
    gaussian_calibration,
    gdp_epsilon,
    gdp_rejects,
    guess_counts,
    one_run_epsilon,
    steinke_p_value,
)


@pytest.mark.parametrize("m, k, v", [(10, 1, 1), (100, 10, 9), (1000, 100, 80), (1000, 64, 33)])
@pytest.mark.parametrize("eps", [0.0, 0.5, 2.0])
@pytest.mark.parametrize("delta", [0.0, 1e-6, 1e-3])
def test_the_p_value_is_the_binomial_tail_plus_the_delta_term_summed_directly(m, k, v, eps, delta):
    p = expit(eps)
    tail = sum(binom.pmf(j, k, p) for j in range(v, k + 1))
    slack = max(sum(binom.pmf(v - j, k, p) for j in range(1, i + 1)) / i for i in range(1, v + 1))
    assert steinke_p_value(m, k, v, eps, delta) == pytest.approx(min(1.0, tail + 2 * m * delta * slack), abs=1e-12)


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-5, 1e-2])
def test_the_epsilon_of_mu_gdp_is_the_gaussian_mechanisms(mu, delta):
    eps = gdp_epsilon(mu, delta)  # a Gaussian mechanism of sensitivity 1 and σ = 1/μ is μ-GDP
    assert gaussian_delta(eps, 1.0 / mu, 1.0) == pytest.approx(delta, rel=1e-6)


def test_guess_counts_are_fixed_before_the_scores():
    assert guess_counts(100) == [1, 2, 4, 8, 16, 32, 64, 100] and guess_counts(1) == [1]


def test_the_gdp_test_rejects_a_perfect_guesser_and_not_a_blind_one():
    assert gdp_rejects(1000, 500, 500, 1.0, 0.05) and not gdp_rejects(1000, 500, 250, 1.0, 0.05)
    assert not gdp_rejects(1000, 500, 500, 20.0, 0.05)  # 20-GDP allows perfect guessing


@pytest.mark.parametrize("method", ["steinke", "gdp"])
def test_on_scores_of_known_privacy_the_estimates_stay_below_the_truth(method):
    """Validity: 14 one-run audits each of μ-GDP scores for μ = 0.5, 1, 2 (m = 2,000, fixed
    seeds): none exceeds the ε of μ-GDP at δ (at 95% each, about 2 of the 42 could; none does at
    this seed, and the estimates sit far below the truth: the margin is wide)."""
    rng = np.random.default_rng(2024)
    for mu in (0.5, 1.0, 2.0):
        target = gdp_epsilon(mu, 1e-5)
        for _ in range(14):
            coins = rng.random(2000) < 0.5
            res = one_run_epsilon(rng.standard_normal(2000) + mu * coins, coins, delta=1e-5, method=method)
            assert res.epsilon_lower <= target, (mu, res)


def test_the_estimates_have_power_and_the_gdp_variant_more():
    rows = gaussian_calibration([1.0], [10_000], delta=1e-5, seed=7)
    steinke, gdp = (r for r in rows)
    assert steinke["method"] == "steinke" and gdp["method"] == "gdp"
    assert 0.25 < steinke["ratio"] < 1 and steinke["ratio"] < gdp["ratio"] < 1
    assert gdp["epsilon"] == pytest.approx(4.377, abs=0.01)


def test_a_blind_guesser_gets_nothing():
    rng = np.random.default_rng(0)
    coins = rng.random(5000) < 0.5
    assert one_run_epsilon(rng.standard_normal(5000), coins, delta=1e-5).epsilon_lower < 0.15
    with pytest.raises(ValueError):
        one_run_epsilon([1.0, 2.0], [True], delta=1e-5)
    assert math.isfinite(one_run_epsilon(np.arange(10.0), np.arange(10) >= 5, delta=0.0).epsilon_lower)
