"""Moments accountant (Abadi et al.; DP-AGD's copy): the literal double-sum formula, SGD-MA's ε on
the Lee & Kifer datasets (reference behaviour = ε at order 32 only), and the correct minimum over
orders."""

import math

import numpy as np
import pytest
from scipy.special import binom

from dperm import privacy as P

# q = b / n_train for the first 5-fold training split, b = int(√n_train + 10)
# (docs/deviations.md#batch-size). The 4-digit values below need the exact ratio (q = 0.00530
# itself gives 0.8778 at T = 10⁴); IPUMS-US/BR have the row counts of the DP-AGD authors' files.
Q = {
    "adult": 207 / 39073,     # 48,842 rows (DP-AGD's Adult), n_train = 39,073 → 0.00530
    "bank": 200 / 36168,      # 45,211 rows, n_train = 36,168 → 0.00553
    "ipums_us": 188 / 32000,  # 40,000 rows → 0.00588
    "ipums_br": 184 / 30400,  # 38,000 rows → 0.00605
}
# SGD-MA's ε (σ = 4, δ = 1e-8, T = STEPS) computed with the moments-accountant formula of Abadi et al.
# 2016 as the DP-AGD code evaluates it (orders 1..32, ε taken at order 32 only), at these q.
TABLE = {
    "adult": [0.5757, 0.5787, 0.6058, 0.8776, 1.1795],
    "bank": [0.5757, 0.5789, 0.6086, 0.9048, 1.2339],
    "ipums_us": [0.5757, 0.5794, 0.6128, 0.9474, 1.3192],
    "ipums_br": [0.5757, 0.5796, 0.6151, 0.9704, 1.3651],
}
STEPS = [1, 100, 1000, 10_000, 20_000]
# The same at T = 20,000 with the minimum over orders 1..32 (docs/privacy.md#moments-accountant).
CORRECT_MIN_T20000 = {"bank": 1.2319, "ipums_us": 1.3102, "ipums_br": 1.3505}


def literal_log_moment(q, sigma, lam):
    """ln A_λ exactly as the module docstring writes it (the DP-AGD copy's alternating inner sums,
    float64)."""
    a1 = a2 = 0.0
    for i in range(lam + 1):
        ci = binom(lam, i) * q**i
        s1 = sum(binom(i, j) * (-1) ** (i - j) * math.exp((j * j - j) / (2 * sigma**2)) for j in range(i + 1))
        s2 = sum(binom(i, j) * (-1) ** (i - j) * math.exp((j * j + j) / (2 * sigma**2)) for j in range(i + 1))
        a1 += ci * s1
        a2 += ci * s2
    return math.log((1 - q) * a1 + q * a2)


@pytest.mark.parametrize("q,sigma", [(0.0055, 4.0), (0.01, 1.1), (0.1, 2.0), (0.3, 1.0)])
def test_log_moments_equal_the_literal_binomial_formula(q, sigma):
    lams = range(1, 13)  # orders where the alternating sums are still numerically benign
    ours = P.moments_log_moments(q, sigma, steps=1, max_order=12)
    literal = np.array([literal_log_moment(q, sigma, lam) for lam in lams])
    assert np.allclose(ours, literal, rtol=1e-8, atol=0)


def test_one_step_costs_0_5757_at_order_32():
    eps = P.moments_accountant_epsilon(0.0055, 4.0, 1, 1e-8, reference=True)
    assert round(eps, 4) == 0.5757
    # the artefact of stopping at λ = 32: ≈ ln(1/δ)/32 (docs/privacy.md#moments-accountant)
    assert eps == pytest.approx(math.log(1e8) / 32, abs=1e-3)


@pytest.mark.parametrize("dataset", list(TABLE))
def test_reference_reproduces_the_sgd_ma_table(dataset):
    got = [round(P.moments_accountant_epsilon(Q[dataset], 4.0, t, 1e-8, reference=True), 4) for t in STEPS]
    assert got == TABLE[dataset]


@pytest.mark.parametrize("dataset", list(CORRECT_MIN_T20000))
def test_correct_min_reproduces_the_table_parentheses(dataset):
    eps = P.moments_accountant_epsilon(Q[dataset], 4.0, 20_000, 1e-8)
    assert round(eps, 4) == CORRECT_MIN_T20000[dataset]


def test_correct_min_never_exceeds_reference():
    for q in (0.001, 0.0055, 0.05, 0.2):
        for sigma in (0.8, 1.1, 4.0, 8.0):
            for steps in (1, 100, 20_000):
                for delta in (1e-5, 1e-8):
                    fixed = P.moments_accountant_epsilon(q, sigma, steps, delta)
                    ref = P.moments_accountant_epsilon(q, sigma, steps, delta, reference=True)
                    assert fixed <= ref


def test_moments_accountant_is_the_rdp_accountant_at_orders_2_to_33():
    # α(λ) = T ln A_{λ+1}: the moments accountant is the RDP accountant at integer orders
    # λ + 1 with the standard conversion, so the two must agree exactly on those orders...
    orders = np.arange(2, 34, dtype=float)
    for q, sigma, steps in [(0.0055, 4.0, 10_000), (0.05, 1.1, 100)]:
        ma = P.moments_accountant_epsilon(q, sigma, steps, 1e-8)
        rdp = P.epsilon_sampled_gaussian(q, sigma, steps, 1e-8, orders=orders, conversion="standard")
        assert ma == pytest.approx(rdp, rel=1e-12)
        # ...and the wide default grid with the improved conversion is much tighter
        # (docs/privacy.md#moments-accountant)
        assert P.epsilon_sampled_gaussian(q, sigma, steps, 1e-8) < ma


def test_small_t_with_wide_orders_is_far_below_the_order_32_artefact():
    # RDP at many more orders: one step costs ≈ 0.15 with the default orders (≈ 0.11 with orders up
    # to 2000) instead of the moments accountant's 0.576
    eps = P.epsilon_sampled_gaussian(0.0055, 4.0, 1, 1e-8, conversion="standard")
    assert 0.08 < eps < 0.15


def test_no_subsampling_closed_form():
    # q = 1: A_λ = exp(λ(λ+1)/(2σ²))
    lm = P.moments_log_moments(1.0, 2.0, steps=3, max_order=5)
    lams = np.arange(1, 6)
    assert np.allclose(lm, 3 * lams * (lams + 1) / 8.0)
