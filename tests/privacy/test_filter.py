"""zCDP filter: never overspends, keeps a ledger, supports DP-AGD's stop-on-refusal loop."""

from fractions import Fraction

import numpy as np
import pytest

from dperm import privacy as P


def test_refuses_to_overspend_and_records_nothing():
    f = P.ZCDPFilter(0.1)
    assert f.charge(0.06, what="noisy gradient") == pytest.approx(0.04)
    with pytest.raises(P.BudgetExceededError, match="exceed"):
        f.charge(0.05, what="noisy max")
    assert f.spent == pytest.approx(0.06) and len(f.ledger) == 1
    assert f.try_charge(0.05) is False
    assert f.try_charge(0.04, what="last") is True
    assert f.spent <= f.budget and f.remaining < 1e-15
    assert not f.can_afford(1e-12)
    assert f.try_charge(0.0)  # free post-processing is always fine


def test_random_adaptive_charges_never_exceed_budget_exactly():
    rng = np.random.default_rng(0)
    for _trial in range(50):
        f = P.ZCDPFilter(rng.uniform(0.01, 1.0))
        for _ in range(200):
            rho = f.remaining * rng.uniform(0.5, 1.5) if rng.random() < 0.3 else rng.exponential(0.01)
            f.try_charge(rho, what="step")
        exact = sum((Fraction(c.rho) for c in f.ledger), Fraction(0))
        assert exact <= Fraction(f.budget)


def test_charge_remaining_spends_exactly_up_to_the_budget():
    f = P.ZCDPFilter.from_dp(1.0, 1e-8)
    for rho in (0.1 / 3, 1e-3, 0.1 / 7):
        f.charge(rho * f.budget)
    paid = f.charge_remaining(what="final")
    assert paid > 0
    exact = sum((Fraction(c.rho) for c in f.ledger), Fraction(0))
    assert exact <= Fraction(f.budget)
    assert float(Fraction(f.budget) - exact) < 1e-15 * f.budget
    assert f.epsilon(1e-8) <= 1.0 + 1e-12


def test_ledger_records_what_rho_and_running_total():
    f = P.ZCDPFilter(1.0)
    f.charge(0.25, what="gradient")
    f.charge(0.5, what="noisy max")
    assert [(c.what, c.rho) for c in f.ledger] == [("gradient", 0.25), ("noisy max", 0.5)]
    assert [c.total for c in f.ledger] == [0.25, 0.75]
    assert "ZCDPFilter" in repr(f)


def test_from_dp_budget_implies_the_dp_target():
    f = P.ZCDPFilter.from_dp(0.8, 1e-8)
    f.charge_remaining()
    assert f.epsilon(1e-8) == pytest.approx(0.8, rel=1e-12)


def test_dp_agd_style_loop_stops_when_next_charge_would_overspend():
    # DP-AGD: each iteration needs a noisy gradient and a noisy max; ρ_ng grows on failures.
    f = P.ZCDPFilter.from_dp(0.5, 1e-8)
    rho_nmax, rho_ng, iterations = f.budget / 40, f.budget / 60, 0
    while f.try_charge(rho_ng, "noisy gradient"):
        if not f.try_charge(rho_nmax, "noisy max"):
            break
        iterations += 1
        rho_ng *= 1.1
    assert iterations > 0
    assert f.spent <= f.budget
    assert f.remaining < max(rho_ng, rho_nmax)  # it stopped because the next charge was unaffordable


def test_docstring_cites_fixed_budget_filter_results():
    doc = P.ZCDPFilter.__doc__
    assert "Feldman" in doc and "Zrnic" in doc and "Whitehouse" in doc


def test_totals_are_exact_so_rounding_never_lets_a_charge_through():
    # Float accounting rounds (1 − 2⁻⁵³) + 2⁻⁵⁴ up to 1.0 and then 1.0 + 2⁻⁵⁴ down to 1.0, so it
    # would accept charges of 2⁻⁵⁴ for ever. The filter's exact total accepts exactly two.
    f = P.ZCDPFilter(1.0)
    f.charge(1.0 - 2.0**-53)
    accepted = sum(f.try_charge(2.0**-54, what="tiny") for _ in range(10))
    assert accepted == 2
    exact = sum((Fraction(c.rho) for c in f.ledger), Fraction(0))
    assert exact == Fraction(f.budget) and f.remaining == 0.0 and not f.can_afford(5e-324)
    # a charge that float addition would absorb entirely (1.0 + 1e-300 == 1.0) is refused
    assert f.try_charge(0.0) and not f.try_charge(1e-300)
    # subnormal charges and budgets are counted exactly too
    g = P.ZCDPFilter(3 * 5e-324)
    assert [g.try_charge(5e-324) for _ in range(4)] == [True, True, True, False]
    assert g.spent == g.budget


def test_exact_totals_agree_with_fraction_arithmetic_on_random_charges():
    rng = np.random.default_rng(3)
    for _ in range(20):
        f = P.ZCDPFilter(float(rng.uniform(1e-6, 10.0)))
        exact = Fraction(0)
        for _ in range(300):
            rho = float(f.remaining * rng.uniform(0.0, 1.2) if rng.random() < 0.2
                        else rng.exponential(f.budget / 200) * 10.0 ** rng.integers(-12, 1))
            fits = exact + Fraction(rho) <= Fraction(f.budget)
            assert f.can_afford(rho) == fits and f.try_charge(rho) == fits
            exact += Fraction(rho) if fits else 0
            assert f.spent == float(exact)
            assert f.remaining == max(0.0, float(Fraction(f.budget) - exact))
        assert [c.total for c in f.ledger][-1:] == [float(exact)] or not f.ledger


def test_numpy_scalars_and_ints_are_accepted_as_charges():
    f = P.ZCDPFilter(2)
    assert f.try_charge(np.float64(0.5)) and f.try_charge(1) and f.try_charge(np.float32(0.25))
    assert f.spent == 1.75 and all(type(c.rho) is float for c in f.ledger)
