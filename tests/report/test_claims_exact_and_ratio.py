"""The predicates for exact values and ratios (dperm.report.claims.exact, ratio_below): each can
come out every way, a censored denominator never gives "not supported", the guard stops them."""

from __future__ import annotations

from dperm.report import claims as c


def test_exact_values_compare_as_constants():
    cell = c.Estimate("private", 0.80, 0.01, 10, 0.014, "yes")
    assert c.greater_than(cell, c.exact("majority rate", 0.75)).verdict == c.SUPPORTED
    assert c.greater_than(cell, c.exact("majority rate", 0.85)).verdict == c.NOT_SUPPORTED
    assert c.greater_than(cell, c.exact("majority rate", 0.80)).verdict == c.INCONCLUSIVE
    assert c.lower_than(c.exact("a", 1.0), c.exact("b", 2.0)).verdict == c.SUPPORTED


def test_ratio_below_comes_out_every_way():
    gd, agd = c.exact("GD", 300), c.exact("AGD", 60)
    assert c.ratio_below(agd, gd, 1 / 3).verdict == c.SUPPORTED
    assert c.ratio_below(c.exact("AGD", 200), gd, 1 / 3).verdict == c.NOT_SUPPORTED
    noisy = c.Estimate("Katyusha", 100, 60, 10, 80)
    assert c.ratio_below(noisy, gd, 1 / 3).verdict == c.INCONCLUSIVE
    assert "delta method" in c.ratio_below(agd, gd, 1 / 3).test


def test_a_censored_denominator_supports_or_leaves_open_but_never_refutes():
    sgd_budget = c.exact("SGD (not reached within)", 20)
    assert c.ratio_below(c.exact("AGD", 5), sgd_budget, 1 / 3, b_lower_bound=True).verdict == c.SUPPORTED
    open_ = c.ratio_below(c.exact("AGD", 60), sgd_budget, 1 / 3, b_lower_bound=True)
    assert open_.verdict == c.INCONCLUSIVE and "censored" in open_.reason


def test_ratio_below_is_guarded():
    stuck = c.Estimate("constant", 0.75, 0.0, 10, 0.0, "no")
    assert c.ratio_below(stuck, c.exact("b", 1.0), 2.0).verdict == c.INCONCLUSIVE


def test_a_censored_numerator_refutes_or_leaves_open_but_never_supports():
    gd = c.exact("GD", 300)
    assert c.ratio_below(c.exact("Katyusha", 200), gd, 1 / 3, a_lower_bound=True).verdict == c.NOT_SUPPORTED
    assert c.ratio_below(c.exact("Katyusha", 20), gd, 1 / 3, a_lower_bound=True).verdict == c.INCONCLUSIVE
    both = c.ratio_below(c.exact("a", 1), c.exact("b", 100), 1 / 3, a_lower_bound=True, b_lower_bound=True)
    assert both.verdict == c.INCONCLUSIVE
