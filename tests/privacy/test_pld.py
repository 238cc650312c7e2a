"""The accountants of the sampled Gaussian against two independent oracles, dp-accounting (its RDP
and PLD accountants) and prv-accountant (Gopi, Lee & Wutschitz 2021), and against published
figures; the one calibration helper every sampled-Gaussian algorithm uses, for both accountants."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from prv_accountant import PRVAccountant
from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism

from dperm.algorithms import Privacy, get_algorithm
from dperm.losses import Logistic
from dperm.privacy import epsilon_sampled_gaussian, moments_accountant_epsilon
from dperm.privacy.pld import epsilon_sampled_gaussian_pld, epsilon_sampled_gaussian_wor
from dperm.privacy.sgd_calibration import ACCOUNTANTS, calibrate_noise_multiplier, sampled_gaussian_epsilon
from dperm.problem import Problem

MNIST = (256 / 60000, 1.12, 14063, 1e-5)  # the TensorFlow Privacy tutorial: 60 epochs of lots of 256
ABADI = (0.0167, 1.3, 900, 1e-5)


def _library_rdp(q, sigma, steps, delta):
    acc = rdp_privacy_accountant.RdpAccountant()
    acc.compose(dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps))
    return acc.get_epsilon(delta)


def _library_pld(q, sigma, steps, delta):
    acc = pld_privacy_accountant.PLDAccountant()
    acc.compose(dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps))
    return acc.get_epsilon(delta)


def _prv(q, sigma, steps, delta):
    """prv-accountant's (lower, estimate, upper) ε; its error bound eps_error = 0.01."""
    prv = PoissonSubsampledGaussianMechanism(noise_multiplier=sigma, sampling_probability=q)
    acc = PRVAccountant(prvs=prv, max_self_compositions=steps, eps_error=0.01, delta_error=delta / 1000)
    return acc.compute_epsilon(delta=delta, num_self_compositions=steps)


def test_published_figures_with_the_classic_conversion():
    """ε = min_α RDP(α) + ln(1/δ)/(α − 1): 2.92 (TF Privacy tutorial) and 2.47 (Abadi et al.'s
    setting q = 0.0167, σ = 1.3, 900 steps)."""
    assert epsilon_sampled_gaussian(*MNIST, conversion="standard") == pytest.approx(2.92, abs=0.005)
    assert epsilon_sampled_gaussian(*ABADI, conversion="standard") == pytest.approx(2.47, abs=0.005)


def test_improved_conversion_and_pld_give_less_on_the_published_setting():
    rdp = epsilon_sampled_gaussian(*MNIST)
    pld = epsilon_sampled_gaussian_pld(*MNIST)
    assert rdp == pytest.approx(2.52, abs=0.005) and pld == pytest.approx(2.31, abs=0.005)
    assert pld < rdp < epsilon_sampled_gaussian(*MNIST, conversion="standard")


@pytest.mark.parametrize("q,sigma,steps,delta", [MNIST, ABADI, (0.0055, 4.0, 20000, 1e-8), (0.01, 1.0, 1000, 1e-5),
                                                 (0.1, 2.0, 100, 1e-6), (1.0, 5.0, 50, 1e-5), (0.001, 0.8, 100000, 1e-8)])
def test_rdp_matches_dp_accounting_to_four_decimals(q, sigma, steps, delta):
    assert epsilon_sampled_gaussian(q, sigma, steps, delta) == pytest.approx(_library_rdp(q, sigma, steps, delta),
                                                                            abs=1e-4)


@pytest.mark.parametrize("q,sigma,steps,delta", [MNIST, ABADI, (0.0055, 4.0, 20000, 1e-8), (0.01, 1.0, 1000, 1e-5)])
def test_pld_matches_dp_accounting_and_lies_within_prv_accountants_bounds(q, sigma, steps, delta):
    pld = epsilon_sampled_gaussian_pld(q, sigma, steps, delta)
    assert pld == pytest.approx(_library_pld(q, sigma, steps, delta), rel=1e-12)
    low, estimate, high = _prv(q, sigma, steps, delta)
    # the PLD's pessimistic discretisation may only overestimate, by about its grid (1e-4 per step
    # is far less in practice): within the independent oracle's bracket, or just above it
    assert low - 1e-3 <= pld <= high + 0.02
    assert pld <= epsilon_sampled_gaussian(q, sigma, steps, delta) + 1e-9


def test_moments_accountant_with_orders_to_32_sits_above_rdp():
    """Abadi's moments accountant is RDP at integer orders with the classic conversion: orders ≤ 32
    as in the DP-AGD code are looser than RDP with all orders and the improved conversion."""
    q, sigma, steps, delta = 0.0055, 4.0, 1000, 1e-8
    ma32 = moments_accountant_epsilon(q, sigma, steps, delta, max_order=32)
    ma_all = moments_accountant_epsilon(q, sigma, steps, delta, max_order=1023)
    rdp = epsilon_sampled_gaussian(q, sigma, steps, delta)
    assert ma32 == pytest.approx(math.log(1 / delta) / 32, rel=0.06)
    assert rdp < ma_all < ma32


@pytest.mark.parametrize("accountant", sorted(ACCOUNTANTS))
@pytest.mark.parametrize("epsilon,q,steps", [(1.0, 0.01, 1000), (0.2, 0.005, 5000), (2.0, 1.0, 100)])
def test_calibration_meets_the_target_and_is_tight(accountant, epsilon, q, steps):
    delta = 1e-6
    sigma = calibrate_noise_multiplier(epsilon, delta, q, steps, accountant)
    assert sampled_gaussian_epsilon(sigma, delta, q, steps, accountant) <= epsilon
    assert sampled_gaussian_epsilon(sigma * (1 - 2e-3), delta, q, steps, accountant) > epsilon


def test_pld_needs_less_noise_than_rdp():
    rdp = calibrate_noise_multiplier(1.0, 1e-5, 0.01, 2000, "rdp")
    pld = calibrate_noise_multiplier(1.0, 1e-5, 0.01, 2000, "pld")
    assert pld < rdp and pld > 0.8 * rdp


def test_unknown_accountant_is_refused():
    with pytest.raises(ValueError, match="accountant must be one of"):
        calibrate_noise_multiplier(1.0, 1e-5, 0.01, 100, "moments")


def test_without_replacement_rdp_is_the_librarys_replace_one_bound():
    n, z, steps, delta = 1000, 1.0, 500, 1e-5
    acc = rdp_privacy_accountant.RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    acc.compose(dp_accounting.SelfComposedDpEvent(
        dp_accounting.SampledWithoutReplacementDpEvent(n, 1, dp_accounting.GaussianDpEvent(z)), steps))
    assert epsilon_sampled_gaussian_wor(n, 1, z, steps, delta) == pytest.approx(acc.get_epsilon(delta), rel=1e-12)
    # close to (and not below by much) the Poisson add/remove bound at the same multiplier
    assert epsilon_sampled_gaussian_wor(n, 1, z, steps, delta) >= 0.95 * epsilon_sampled_gaussian(1 / n, z, steps,
                                                                                                   delta)


def _problem(n=400, p=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) / 2
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(float)
    return Problem(X, y, Logistic(), 0.0)


def test_dp_sgd_with_pld_needs_less_noise_and_says_so():
    problem = _problem()
    args = dict(epochs=2.0, batch_size=40)
    rdp = get_algorithm("dp-sgd").fit(problem, Privacy(1.0, 1e-5), np.random.default_rng(1), **args)
    pld = get_algorithm("dp-sgd").fit(problem, Privacy(1.0, 1e-5), np.random.default_rng(1), accountant="pld", **args)
    assert pld.extra["noise_multiplier"] < rdp.extra["noise_multiplier"]
    assert pld.epsilon_spent <= 1.0 and rdp.epsilon_spent <= 1.0
    assert rdp.accounting == ACCOUNTANTS["rdp"] and pld.accounting == ACCOUNTANTS["pld"]


def test_sgd_ma_reports_the_pld_epsilon_below_rdp_and_moments():
    problem = _problem()
    out = get_algorithm("sgd-ma").fit(problem, Privacy(math.inf, 1e-8), np.random.default_rng(2), steps=200,
                                      accountant="pld", snapshots=(20,))
    for res in (out, out.path[20]):
        extra = res.extra
        assert res.epsilon_spent == extra["epsilon_pld"] < extra["epsilon_rdp"] < extra["epsilon_moments_ref"]
        assert res.accounting == ACCOUNTANTS["pld"]
    rdp = get_algorithm("sgd-ma").fit(problem, Privacy(math.inf, 1e-8), np.random.default_rng(2), steps=200)
    assert rdp.epsilon_spent == rdp.extra["epsilon_rdp"] and "epsilon_pld" not in rdp.extra
    np.testing.assert_array_equal(rdp.weights, out.weights)  # the accountant changes the ε, not the run
