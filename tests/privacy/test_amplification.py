"""Subsampling amplification: both forms, their inverses, ranges, and tightness of form (b)."""

import math

import numpy as np
import pytest

from dperm import privacy as P


@pytest.mark.parametrize("epsilon", [0.01, 0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("q", [1e-3, 0.05, 0.5, 1.0])
def test_subsampling_form_round_trip(epsilon, q):
    eps_amp, delta_amp = P.amplify_subsampling(epsilon, 1e-6, q)
    assert eps_amp <= epsilon * (1 + 1e-15)
    base_eps, base_delta = P.amplify_subsampling_inverse(eps_amp, delta_amp, q)
    assert base_eps == pytest.approx(epsilon, rel=1e-12)
    assert base_delta == pytest.approx(1e-6, rel=1e-12)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
@pytest.mark.parametrize("q", [0.01, 0.3])
def test_subsampling_form_is_tight_for_subsampled_randomized_response(epsilon, q):
    # Base: one bit, P(1) = e^ε/(1+e^ε) if the target row is in the sample, 1/(1+e^ε) if not
    # (ε-DP under add/remove). Poisson sampling includes the added row with probability q.
    p_without = 1 / (1 + math.exp(epsilon))
    p_with = q * math.exp(epsilon) / (1 + math.exp(epsilon)) + (1 - q) * p_without
    true_loss = math.log(p_with / p_without)
    assert P.amplify_subsampling(epsilon, 0.0, q)[0] == pytest.approx(true_loss, rel=1e-12)


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0])
@pytest.mark.parametrize("q", [1e-3, 0.01, 0.2])
def test_linear_form_is_an_upper_bound_of_the_exact_form_where_valid(epsilon, q):
    eps_lin, delta_lin = P.amplify_linear(epsilon, 1e-6, q)
    assert eps_lin == pytest.approx(2 * q * epsilon)
    assert delta_lin == pytest.approx(q * 1e-6)
    assert P.amplify_subsampling(epsilon, 1e-6, q)[0] <= eps_lin


def test_linear_form_refuses_base_epsilon_above_one():
    with pytest.raises(ValueError, match="amplify_subsampling"):
        P.amplify_linear(1.2, 1e-6, 0.01)
    # SGD-Adv-like numbers: a per-step budget that inverts to ε_base ≈ 1.09
    # (docs/privacy.md#gaussian-range)
    q = 0.01
    eps_step = 2 * q * 1.09
    with pytest.raises(ValueError, match="epsilon_base"):
        P.amplify_linear_inverse(eps_step, q)
    assert P.amplify_linear_inverse(eps_step, q, strict=False) == pytest.approx(1.09)
    assert P.amplify_linear_inverse(0.01, q) == pytest.approx(0.5)


def test_subsampling_inverse_gives_more_budget_than_linear_inverse():
    # the exact form always allows at least as large a base ε as ε_step/(2q)
    for q in np.geomspace(1e-3, 0.5, 8):
        eps_step = 2 * q * 0.8
        assert P.amplify_subsampling_inverse(eps_step, 1e-9, q)[0] >= P.amplify_linear_inverse(eps_step, q)


def test_subsampling_inverse_refuses_base_delta_of_one():
    with pytest.raises(ValueError, match="delta_step"):
        P.amplify_subsampling_inverse(0.1, 0.02, 0.01)
