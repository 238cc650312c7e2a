"""Every composed calibration checked against accountants written by others (Google's
dp-accounting: RDP with Poisson and with fixed-size sampling, PLD; Microsoft's prv-accountant),
never against the project's own formulas: an independent accountant must certify, at the target δ,
an ε no larger than the one each algorithm claims.

* SGD-Adv (replace-one, b rows without replacement, T steps): RDP of the Gaussian subsampled
  without replacement (Wang, Balle & Kasiviswanathan 2019) at the σ we calibrate; and the
  (ε_step, δ_step) our advanced composition composes, composed instead by PLD.
* Bassily et al. (m rows with replacement): the exact per-step privacy profile of the
  with-replacement subsampled Gaussian by numerical integration (no accountant offers it), and
  the composition by PLD.
* DP-SGD and SGD-MA (Poisson): dp-accounting's RDP and PLD and prv-accountant.
* DP-AGD's budget: ρ-zCDP converted by dp-accounting's RDP accountant.
* The reference variants that are not DP as implemented are shown not to be certified.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import (
    ComposedDpEvent,
    GaussianDpEvent,
    PoissonSampledDpEvent,
    SampledWithoutReplacementDpEvent,
    SelfComposedDpEvent,
    ZCDpEvent,
)
from dp_accounting.pld import PLDAccountant
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import RdpAccountant
from scipy import integrate, stats

from dperm.algorithms.bassily import noisy_sgd_calibration
from dperm.algorithms.sgd_baselines import sgd_adv_calibration, sgd_adv_steps, sgd_ma_epsilons
from dperm.privacy import epsilon_sampled_gaussian, noise_multiplier_for_epsilon, zcdp_from_dp
from dperm.privacy.rdp import DEFAULT_RDP_ORDERS

prv = pytest.importorskip("prv_accountant")

# The oracle's RDP is its own implementation, evaluated at our orders: an RDP bound holds at every
# order, so a coarser grid would only give the oracle a looser ε, not a different verdict.
ORDERS = list(DEFAULT_RDP_ORDERS)


def rdp_epsilon(event, delta, relation=NeighboringRelation.ADD_OR_REMOVE_ONE) -> float:
    accountant = RdpAccountant(orders=ORDERS, neighboring_relation=relation)
    accountant.compose(event)
    return accountant.get_epsilon(delta)


def pld_epsilon(event, delta) -> float:
    accountant = PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(event)
    return accountant.get_epsilon(delta)


def pld_composed(eps_step, delta_step, steps, delta) -> float:
    """ε at ``delta`` of ``steps`` mechanisms each (ε_step, δ_step)-DP, composed optimally (PLD)."""
    one = pld_lib.from_privacy_parameters(pld_lib.common.DifferentialPrivacyParameters(eps_step, delta_step),
                                          value_discretization_interval=1e-4)
    return one.self_compose(steps).get_epsilon_for_delta(delta)


# -- SGD-Adv ---------------------------------------------------------------------------------------

SGD_ADV = [  # (ε, δ, n): the Lee & Kifer grid (training folds of BANK and Adult) and a larger ε
    (0.05, 1e-8, 36_169), (0.4, 1e-8, 36_169), (1.6, 1e-8, 36_169), (1.6, 1e-8, 39_073), (4.0, 1e-6, 20_000)]


@pytest.mark.parametrize("epsilon, delta, n", SGD_ADV)
def test_sgd_adv_sigma_is_certified_by_rdp_for_sampling_without_replacement(epsilon, delta, n):
    b, clip = int(math.sqrt(n) + 10), 3.0
    steps = sgd_adv_steps(n, epsilon)
    cal = sgd_adv_calibration(epsilon, delta, n, steps, b, clip)
    event = SelfComposedDpEvent(SampledWithoutReplacementDpEvent(
        n, b, GaussianDpEvent(cal["sigma"] / cal["sensitivity"])), steps)
    assert rdp_epsilon(event, delta, NeighboringRelation.REPLACE_ONE) <= epsilon


@pytest.mark.parametrize("epsilon, delta, n", SGD_ADV)
def test_sgd_adv_per_step_budget_composes_within_the_target(epsilon, delta, n):
    b = int(math.sqrt(n) + 10)
    steps = sgd_adv_steps(n, epsilon)
    cal = sgd_adv_calibration(epsilon, delta, n, steps, b, 3.0)
    # the per-step guarantee on the whole data set after amplification
    q = cal["sampling_rate"]
    eps_step = math.log1p(q * math.expm1(cal["epsilon_base"]))
    assert eps_step == pytest.approx(cal["epsilon_step"], rel=1e-9)
    assert pld_composed(eps_step, q * cal["delta_base"], steps, delta) <= epsilon


# -- Bassily et al. (with replacement) -----------------------------------------------------------------

def with_replacement_delta_numeric(eps, sigma, lipschitz, n, m) -> float:
    """δ(ε) of one step, exactly, by quadrature: the replaced row appears K ~ Binomial(m, 1/n)
    times; along the line joining the two rows the outputs are the mixtures Σ_k π_k N(±kL, σ²)
    (each copy moves the sum by L one way on D and the other way on D', 2kL apart)."""
    k = np.arange(m + 1)
    pi = stats.binom.pmf(k, m, 1.0 / n)
    keep = pi > 1e-300
    k, pi = k[keep], pi[keep]

    def p(x):
        return float(np.dot(pi, stats.norm.pdf(x, k * lipschitz, sigma)))

    def q(x):
        return float(np.dot(pi, stats.norm.pdf(x, -k * lipschitz, sigma)))

    def positive_part(x):
        return max(p(x) - math.exp(eps) * q(x), 0.0)

    hi = (m * lipschitz) + 40 * sigma
    value, _ = integrate.quad(positive_part, -hi, hi, points=[0.0], limit=500, epsabs=1e-14)
    return value


@pytest.mark.parametrize("epsilon, n, steps", [(0.5, 2_000, 200), (2.0, 6_497, 500), (1.0, 30_000, 2000)])
def test_bassily_per_step_profile_and_composition_are_certified(epsilon, n, steps):
    delta, m, lipschitz = 1e-3, 50, 1.0
    cal = noisy_sgd_calibration(epsilon, delta, n, m, steps, lipschitz)
    # our per-step claim: the step is (ε_step, δ_step)-DP on the data; check δ_step by quadrature
    exact = with_replacement_delta_numeric(cal["epsilon_step"], cal["sigma"], lipschitz, n, m)
    assert exact <= cal["delta_step_budget"] * (1 + 1e-6)
    assert pld_composed(cal["epsilon_step"], cal["delta_step_budget"], steps, delta) <= epsilon


# -- DP-SGD and SGD-MA (Poisson) ---------------------------------------------------------------------

@pytest.mark.parametrize("epsilon, delta, q, steps", [
    (1.0, 1e-5, 256 / 45_000, 900), (0.1, 1e-8, 0.0055, 200), (3.0, 1e-5, 0.01, 5000), (8.0, 1e-6, 0.1, 100)])
def test_dp_sgd_sigma_is_certified_by_three_accountants(epsilon, delta, q, steps):
    sigma = noise_multiplier_for_epsilon(epsilon, delta, q, steps)
    event = SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)), steps)
    if q < 0.05:  # dp-accounting's fractional-order series is inexact at large q (next test)
        assert rdp_epsilon(event, delta) <= epsilon * (1 + 1e-6)
    assert pld_epsilon(event, delta) <= epsilon
    accountant = prv.PRVAccountant(prvs=[prv.PoissonSubsampledGaussianMechanism(sampling_probability=q,
                                                                                 noise_multiplier=sigma)],
                                   max_self_compositions=[steps], eps_error=0.01, delta_error=delta / 1000)
    _, _, upper = accountant.compute_epsilon(delta=delta, num_self_compositions=[steps])
    assert upper <= epsilon * 1.01  # prv's own upper bound, to its stated ε error


def test_fractional_order_rdp_agrees_with_quadrature_where_dp_accounting_does_not():
    """At q = 0.1 and σ ≈ 1.06 (ε = 8 over 100 steps) dp-accounting 0.6.0's series for a
    fractional order α = 3.6 gives an RDP 0.23% above the exact value; ours matches the integral
    A_α = E_{z~N(0,σ²)}[((1 − q) + q·exp((2z − 1)/(2σ²)))^α] to 1e-9 (the bound our DP-SGD
    calibration stands on), and at integer orders the two libraries agree exactly."""
    from dperm.privacy.rdp import rdp_sampled_gaussian

    q, sigma = 0.1, 1.0592638195871653

    def exact(alpha):
        density = lambda z: stats.norm.pdf(z, 0.0, sigma) * ((1 - q) + q * math.exp((2 * z - 1) / (2 * sigma**2))) ** alpha
        value, _ = integrate.quad(density, -60, 60, points=[0.0, 5.0, 10.0], limit=400, epsabs=0, epsrel=1e-13)
        return math.log(value) / (alpha - 1)

    ours = rdp_sampled_gaussian(q, sigma, (3.6, 4.0), 1)
    accountant = RdpAccountant(orders=[3.6, 4.0])
    accountant.compose(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)))
    theirs = accountant._rdp  # per-order RDP (no public getter in 0.6.0)
    assert ours[0] == pytest.approx(exact(3.6), rel=1e-9) and ours[1] == pytest.approx(exact(4.0), rel=1e-9)
    assert theirs[1] == pytest.approx(ours[1], rel=1e-12)
    assert theirs[0] > exact(3.6) * 1.002


@pytest.mark.parametrize("steps", [1, 100, 1000, 10_000, 20_000])
def test_sgd_ma_reports_no_smaller_epsilon_than_the_oracles_certify(steps):
    """SGD-MA's computed ε (σ = 4, BANK-sized folds): our RDP value is what dp-accounting's RDP
    gives at the same orders, and never below what PLD certifies."""
    q, sigma, delta = 211 / 36_168, 4.0, 1e-8
    ours = sgd_ma_epsilons(q, sigma, steps, delta)["epsilon_rdp"]
    event = SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)), steps)
    assert ours == pytest.approx(rdp_epsilon(event, delta), rel=1e-4)
    assert ours >= pld_epsilon(event, delta) - 1e-3


def test_the_published_dp_sgd_figures_with_the_classic_conversion():
    """Abadi et al.'s MNIST settings (the TensorFlow Privacy tutorial): ε ≈ 2.92 with the
    classic RDP conversion; dp-accounting's PLD gives less (≈ 2.3)."""
    q, sigma, steps, delta = 256 / 60_000, 1.12, 14_063, 1e-5
    classic = epsilon_sampled_gaussian(q, sigma, steps, delta, conversion="standard")
    assert classic == pytest.approx(2.92, abs=0.01)
    assert epsilon_sampled_gaussian(q, sigma, steps, delta) == pytest.approx(2.52, abs=0.02)
    event = SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)), steps)
    assert pld_epsilon(event, delta) == pytest.approx(2.31, abs=0.02)


# -- DP-AGD's zCDP budget ------------------------------------------------------------------------------

@pytest.mark.parametrize("epsilon, delta", [(0.05, 1e-8), (0.4, 1e-8), (1.6, 1e-8), (1.6, 1e-12), (5.0, 1e-5)])
def test_dp_agd_budget_converts_to_the_target_epsilon(epsilon, delta):
    rho = zcdp_from_dp(epsilon, delta)
    assert rho + 2 * math.sqrt(rho * math.log(1 / delta)) == pytest.approx(epsilon, rel=1e-12)
    oracle = rdp_epsilon(ZCDpEvent(rho), delta)
    assert oracle <= epsilon * (1 + 1e-9)  # dp-accounting's conversion is no looser than Bun & Steinke's


# -- reference variants are not certified -------------------------------------------------------------

def test_sgd_ma_reference_claim_is_not_certified_for_fixed_size_batches():
    """The reference reads the moments accountant as if its fixed-size batches were Poisson
    samples at sensitivity C; a fixed-size batch without replacement turns an added row into a
    replaced one (sensitivity 2C). At T = 20,000 the RDP accountant for that sampling certifies
    nothing near the claimed ε."""
    n, b, sigma, delta, steps = 36_168, 211, 4.0, 1e-8, 20_000
    claimed = sgd_ma_epsilons(b / n, sigma, steps, delta)["epsilon_moments_ref"]
    event = SelfComposedDpEvent(SampledWithoutReplacementDpEvent(n, b, GaussianDpEvent(sigma / 2.0)), steps)
    assert rdp_epsilon(event, delta, NeighboringRelation.REPLACE_ONE) > 1.5 * claimed


def test_composed_events_are_what_the_oracles_see():
    """A self-check of the oracle wiring: two Gaussians of multiplier σ compose to one of σ/√2."""
    sigma, delta = 2.0, 1e-5
    two = ComposedDpEvent([GaussianDpEvent(sigma), GaussianDpEvent(sigma)])
    assert rdp_epsilon(two, delta) == pytest.approx(rdp_epsilon(GaussianDpEvent(sigma / math.sqrt(2)), delta),
                                                    rel=1e-9)


# -- replace-one for the Kang et al. comparison (docs/privacy.md#adjacency) -------------------------

@pytest.mark.parametrize("n, m, z, steps, delta", [(33_000, 1, 0.79, 5000, 5e-6), (33_000, 1, 3.5, 2000, 5e-6),
                                                   (1000, 10, 1.0, 500, 1e-5), (100, 1, 2.0, 100, 1e-5)])
def test_own_replace_one_wor_bound_is_dp_accountings_or_looser(n, m, z, steps, delta):
    """Theorem 9 of Wang, Balle & Kasiviswanathan (ours) against dp-accounting's Theorem 27 form:
    never smaller, and equal where the sampling rate is small."""
    from dperm.privacy.rdp_wor import epsilon_sampled_gaussian_wor_rdp

    event = SelfComposedDpEvent(SampledWithoutReplacementDpEvent(n, m, GaussianDpEvent(z)), steps)
    oracle = rdp_epsilon(event, delta, NeighboringRelation.REPLACE_ONE)
    ours = epsilon_sampled_gaussian_wor_rdp(n, m, z, steps, delta)
    assert ours >= oracle * (1 - 1e-9)
    if m / n < 0.005:
        assert ours == pytest.approx(oracle, rel=1e-3)


@pytest.mark.parametrize("name, epsilon", [("pidp-sgd-reference", 0.5), ("pidp-sgd-reference", 2.0),
                                           ("dp-sgd-batch1", 1.0)])
def test_batch1_training_noise_is_certified_for_replace_one(name, epsilon):
    """PIDP-SGD's noisy steps (at ε₁ = 3ε/4, δ₁ = δ/2) and its control (at ε, δ) draw one row
    uniformly per step and declare replace-one: dp-accounting's replace-one RDP for sampling one
    row without replacement, sensitivity 2G (z = σ/2), certifies their σ. Before issue 21 PIDP-SGD
    took σ from the add/remove Poisson accountant at rate 1/n, which this oracle puts above ε₁."""
    from dperm.algorithms import Privacy, get_algorithm
    from dperm.losses import Logistic
    from dperm.problem import Problem

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)) / 2
    prob = Problem(X, (X[:, 0] > 0).astype(float), Logistic())
    delta, steps = 1e-5, 300
    fit = get_algorithm(name).fit(prob, Privacy(epsilon, delta), np.random.default_rng(1), steps=steps,
                                  learning_rate=0.01, radius=10.0, start="zero")
    sigma = fit.extra["noise_multiplier"]
    train_eps, train_delta = (0.75 * epsilon, delta / 2) if name == "pidp-sgd-reference" else (epsilon, delta)
    event = SelfComposedDpEvent(SampledWithoutReplacementDpEvent(prob.n, 1, GaussianDpEvent(sigma / 2)), steps)
    assert rdp_epsilon(event, train_delta, NeighboringRelation.REPLACE_ONE) <= train_eps + 1e-6
    assert fit.adjacency == "replace-one"
    old = noise_multiplier_for_epsilon(train_eps, train_delta, 1 / prob.n, steps)
    old_event = SelfComposedDpEvent(SampledWithoutReplacementDpEvent(prob.n, 1, GaussianDpEvent(old / 2)), steps)
    assert rdp_epsilon(old_event, train_delta, NeighboringRelation.REPLACE_ONE) > 1.2 * train_eps


@pytest.mark.parametrize("name", ["dp-sgd", "dp-lssgd", "dp-gd-filter"])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_add_remove_methods_calibrated_for_replace_one_meet_half_epsilon_by_the_oracles(name, epsilon):
    """``adjacency: replace-one`` calibrates to the add/remove target (ε/2, δ/(1 + e^{ε/2})): the
    oracles certify that target, and group privacy for two rows (one removal, one addition) turns
    it into (ε, δ) under replace-one. Before issue 21 these methods had no such option."""
    from dperm.algorithms import Privacy, get_algorithm
    from dperm.losses import Logistic
    from dperm.problem import Problem

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3)) / 2
    prob = Problem(X, (X[:, 0] > 0).astype(float), Logistic())
    delta = 1e-5
    hyper = {"steps": 10} if name == "dp-gd-filter" else {"epochs": 2.0, "batch_size": 50}
    fit = get_algorithm(name).fit(prob, Privacy(epsilon, delta), np.random.default_rng(1), adjacency="replace-one",
                                  **hyper)
    assert fit.adjacency == "replace-one" and "group privacy" in fit.accounting
    sigma = fit.extra["noise_multiplier"]
    eps_a, delta_a = epsilon / 2, delta / (1 + math.exp(epsilon / 2))
    if name == "dp-gd-filter":  # B full-norm full-batch steps (the filter's budget)
        event = SelfComposedDpEvent(GaussianDpEvent(sigma), fit.extra["budget_steps"])
    else:
        event = SelfComposedDpEvent(PoissonSampledDpEvent(fit.extra["sampling_rate"], GaussianDpEvent(sigma)),
                                    fit.extra["steps"])
    assert rdp_epsilon(event, delta_a) <= eps_a + 1e-6
    assert pld_epsilon(event, delta_a) <= eps_a + 1e-6
    assert fit.epsilon_spent <= epsilon + 1e-9
    plain = get_algorithm(name).fit(prob, Privacy(epsilon, delta), np.random.default_rng(1), **hyper)
    assert plain.adjacency == "add-remove" and plain.extra["noise_multiplier"] < sigma
