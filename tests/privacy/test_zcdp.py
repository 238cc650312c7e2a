"""zCDP conversions: round trips, closed-form inverse vs root-finding, validity vs the exact
Gaussian profile."""

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from dperm import privacy as P

GRID = [(e, d) for e in (0.05, 0.1, 0.4, 1.0, 1.6, 5.0, 20.0) for d in (1e-5, 1e-8, 1e-12)]


@pytest.mark.parametrize("epsilon,delta", GRID)
def test_closed_form_inverse_agrees_with_root_finding(epsilon, delta):
    # what the DP-AGD reference code does: root-find ε = ρ + 2√(ρ ln(1/δ))
    L = math.log(1 / delta)
    rho_root = brentq(lambda r: r + 2 * math.sqrt(r * L) - epsilon, 0.0, epsilon, xtol=1e-300,
                      rtol=4 * np.finfo(float).eps, maxiter=500)
    assert P.zcdp_from_dp(epsilon, delta) == pytest.approx(rho_root, rel=1e-12)


@pytest.mark.parametrize("epsilon,delta", GRID)
def test_round_trip_dp_to_zcdp_and_back(epsilon, delta):
    assert P.zcdp_to_dp(P.zcdp_from_dp(epsilon, delta), delta) == pytest.approx(epsilon, rel=1e-12)


@pytest.mark.parametrize("rho,sens", [(1e-4, 1.0), (0.01, 3.0), (0.5, 0.2), (7.0, 1.0)])
def test_gaussian_and_pure_dp_round_trips(rho, sens):
    assert P.zcdp_of_gaussian(P.gaussian_sigma_for_zcdp(rho, sens), sens) == pytest.approx(rho, rel=1e-14)
    assert P.zcdp_of_pure_dp(P.pure_dp_epsilon_for_zcdp(rho)) == pytest.approx(rho, rel=1e-14)


def test_known_small_values():
    # ε-DP ⇒ ε²/2-zCDP; Gaussian with σ = Δ is 1/2-zCDP
    assert P.zcdp_of_pure_dp(0.2) == pytest.approx(0.02)
    assert P.zcdp_of_gaussian(2.0, 2.0) == pytest.approx(0.5)
    assert P.zcdp_to_dp(0.0, 1e-5) == 0.0


@pytest.mark.parametrize("rho", [1e-4, 1e-2, 0.1, 1.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-8])
def test_zcdp_to_dp_is_valid_for_the_gaussian_mechanism(rho, delta):
    # independent check of Prop. 1.3 on the mechanism it is most used for
    sigma = P.gaussian_sigma_for_zcdp(rho, 1.0)
    eps = P.zcdp_to_dp(rho, delta)
    assert P.gaussian_delta(eps, sigma, 1.0) <= delta


def test_monotonicity():
    assert P.zcdp_from_dp(1.0, 1e-8) < P.zcdp_from_dp(2.0, 1e-8)
    assert P.zcdp_from_dp(1.0, 1e-8) < P.zcdp_from_dp(1.0, 1e-5)
    assert P.zcdp_to_dp(0.01, 1e-8) > P.zcdp_to_dp(0.01, 1e-5)
