"""The audit library: Clopper–Pearson intervals, validity (rarely exceeds the true ε) and power."""

import math

import numpy as np
import pytest
from scipy import stats

from dperm import privacy as P


@pytest.mark.parametrize("k,n,conf", [(0, 10, 0.95), (3, 10, 0.95), (10, 10, 0.9), (512, 1000, 0.99),
                                      (1, 100000, 0.95)])
def test_clopper_pearson_matches_scipy_exact_interval(k, n, conf):
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=conf, method="exact")
    lo, hi = P.clopper_pearson(k, n, conf)
    assert lo == pytest.approx(ci.low, rel=1e-5, abs=1e-15)  # scipy root-finds to ~1e-6
    assert hi == pytest.approx(ci.high, rel=1e-5, abs=1e-15)


def test_clopper_pearson_closed_forms():
    # P(X >= 1 | p) = 1 − (1 − p)^n and P(X <= n − 1 | p) = 1 − p^n give the k = 1, k = n bounds
    n, alpha = 100_000, 0.05
    assert P.clopper_pearson(1, n, 1 - alpha)[0] == pytest.approx(-math.expm1(math.log1p(-alpha / 2) / n), rel=1e-10)
    assert P.clopper_pearson(n, n, 1 - alpha)[0] == pytest.approx((alpha / 2) ** (1 / n), rel=1e-12)
    assert P.clopper_pearson(0, n, 1 - alpha) == (0.0, pytest.approx(-math.expm1(math.log(alpha / 2) / n), rel=1e-10))


def test_clopper_pearson_rejects_bad_counts():
    with pytest.raises(ValueError, match="count"):
        P.clopper_pearson(11, 10)
    with pytest.raises(ValueError, match="n"):
        P.clopper_pearson(0, 0)


def test_bound_approaches_true_ratio_from_below_with_many_runs():
    n = 10_000_000
    p, p_prime = 0.5, 0.5 * math.exp(-1.0)
    res = P.epsilon_lower_bound(round(p * n), n, round(p_prime * n), n, confidence=0.95)
    assert 0.98 < res.epsilon_lower < 1.0
    assert res.direction == "D>D'" and res.confidence == 0.95


def test_delta_and_complement_are_used():
    # S has probability 0.9 vs 0.5: the complement gives ln(0.5/0.1) = ln 5, S only ln 1.8
    n = 1_000_000
    res = P.epsilon_lower_bound(int(0.9 * n), n, int(0.5 * n), n)
    assert res.epsilon_lower == pytest.approx(math.log(5), rel=0.02)
    assert "complement" in res.direction
    # a large claimed δ absorbs the difference entirely
    assert P.epsilon_lower_bound(int(0.9 * n), n, int(0.5 * n), n, delta=0.5).epsilon_lower == 0.0


def test_randomized_response_audits_rarely_exceed_the_true_epsilon():
    # ε-DP randomized response: P(1 | D) = e^ε/(1+e^ε), P(1 | D') = 1/(1+e^ε).
    eps, n, reps, conf = 1.0, 2000, 400, 0.9
    rng = np.random.default_rng(0)
    p_d, p_p = math.exp(eps) / (1 + math.exp(eps)), 1 / (1 + math.exp(eps))
    k_d, k_p = rng.binomial(n, p_d, reps), rng.binomial(n, p_p, reps)
    bounds = np.array([P.epsilon_lower_bound(a, n, b, n, confidence=conf).epsilon_lower
                       for a, b in zip(k_d, k_p)])
    exceed = np.mean(bounds > eps)
    assert exceed <= 1 - conf  # valid (Clopper–Pearson is conservative, typically ≪ 10%)
    assert np.median(bounds) > 0.6 * eps  # and informative


def test_audit_outputs_with_events_and_support():
    rng = np.random.default_rng(1)
    out_d = rng.choice(3, size=50_000, p=[0.6, 0.3, 0.1])
    out_p = rng.choice(3, size=50_000, p=[0.2, 0.3, 0.5])
    by_value = P.audit_outputs(out_d, out_p, support=[0, 1, 2])
    assert by_value.event in (0, 2) and by_value.epsilon_lower > 1.0
    by_event = P.audit_outputs(out_d, out_p, events=lambda y: y == 0)
    assert by_event.event == 0 and by_event.epsilon_lower > 1.0
    # Bonferroni: more events can only lower the bound for the same best event
    many = P.audit_outputs(out_d, out_p, events=[lambda y: y == 0] * 50)
    assert many.epsilon_lower < by_event.epsilon_lower


def test_audit_outputs_input_checks():
    with pytest.raises(ValueError, match="one boolean per run"):
        P.audit_outputs(np.zeros(5), np.zeros(5), events=lambda y: np.array([True]))
    with pytest.raises(ValueError, match="either"):
        P.audit_outputs(np.zeros(5), np.zeros(5), events=lambda y: y > 0, support=[0])
    with pytest.raises(ValueError, match="non-empty"):
        P.audit_outputs(np.zeros(0), np.zeros(5))
