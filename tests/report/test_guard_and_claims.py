"""The learning guard and the claim predicates: every rule can come out either way, a verdict
resting on a cell that does not learn is inconclusive, and every verdict names its test."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dperm.report import claims as c
from dperm.report.guard import NA, NO, YES, learns, learns_column


def test_the_guard_flags_constant_classifiers_only():
    assert learns(0.885, 0.002, 0.885, 0.0) == NO  # at the majority rate, no positive predicted
    assert learns(0.884, 0.004, 0.885, 1.0) == NO  # the other constant
    assert learns(0.886, 0.004, 0.885, 0.006) == NO  # a handful of positives is still one class
    assert learns(0.905, 0.004, 0.885, 0.05) == YES  # above the majority rate
    assert learns(0.885, 0.004, 0.885, 0.30) == YES  # at the rate, but not one class (a coin, not a constant)
    assert learns(0.9, float("nan"), 0.9, 0.0) == NO  # one fit: a tie within 0.001
    assert learns(0.9, float("nan"), 0.88, 0.0) == YES
    assert learns(float("nan"), 0.1, 0.88, 0.0) == NA  # regression


def test_the_guard_reads_summaries():
    summary = pd.DataFrame({"accuracy_mean": [0.885, 0.91], "accuracy_ci95": [0.003, 0.003],
                            "majority_rate_mean": [0.885, 0.885], "positive_share_mean": [0.0, 0.1]})
    assert list(learns_column(summary)) == [NO, YES]
    assert set(learns_column(summary.drop(columns="positive_share_mean"))) == {NA}


def est(name, mean, std=0.01, n=20, learns=YES):
    from dperm.report.stats import t_quantile

    return c.Estimate(name, mean, t_quantile(n - 1) * std / np.sqrt(n), n, std, learns)


def test_greater_than_can_support_contradict_or_stay_inconclusive():
    a, b = est("a", 0.90), est("b", 0.80)
    assert c.greater_than(a, b).verdict == c.SUPPORTED
    assert c.greater_than(b, a).verdict == c.NOT_SUPPORTED
    assert c.greater_than(est("a", 0.801), b).verdict == c.INCONCLUSIVE
    assert c.greater_than(a, b, margin=0.2).verdict == c.NOT_SUPPORTED  # by more than 0.2: no
    assert "Welch" in c.greater_than(a, b).test
    assert c.lower_than(b, a).verdict == c.SUPPORTED and c.lower_than(a, b).verdict == c.NOT_SUPPORTED


def test_a_verdict_on_a_cell_that_does_not_learn_is_inconclusive_and_names_it():
    method, rival = est("dp-sgd (bank at ε = 1)", 0.885, learns=NO), est("rival", 0.80)
    verdict = c.greater_than(method, rival)
    assert verdict.verdict == c.INCONCLUSIVE and "dp-sgd (bank at ε = 1) does not learn" in verdict.reason
    reference = est("nonprivate", 0.885, learns=NO)
    assert c.competitive(est("m", 0.9), est("r", 0.9), 0.01, guarded=[reference]).verdict == c.INCONCLUSIVE


def test_rises_and_falls():
    xs = [0.1, 0.4, 1.6]
    up = [est(f"p{i}", m) for i, m in enumerate((0.7, 0.8, 0.9))]
    assert c.rises(up, xs).verdict == c.SUPPORTED and c.falls(up, xs).verdict == c.NOT_SUPPORTED
    flat = [est(f"p{i}", m) for i, m in enumerate((0.80, 0.81, 0.80))]
    assert c.rises(flat, xs).verdict == c.INCONCLUSIVE
    assert c.rises(up[::-1], xs[::-1]).verdict == c.SUPPORTED  # order does not matter
    assert c.rises(up[:1], xs[:1]).verdict == c.INCONCLUSIVE


def test_competitive_within_factor_within_and_paired():
    assert c.competitive(est("a", 0.895), est("b", 0.90), margin=0.02).verdict == c.SUPPORTED
    assert c.competitive(est("a", 0.80), est("b", 0.90), margin=0.02).verdict == c.NOT_SUPPORTED
    assert c.within_factor(est("a", 4.0, std=0.1), est("b", 1.0, std=0.01), 5).verdict == c.SUPPORTED
    assert c.within_factor(est("a", 40.0, std=0.1), est("b", 1.0, std=0.01), 5).verdict == c.NOT_SUPPORTED
    assert c.within(est("slope", -1.98, std=0.02), -2.2, -1.8, "slope").verdict == c.SUPPORTED
    assert c.within(est("slope", -1.0, std=0.02), -2.2, -1.8, "slope").verdict == c.NOT_SUPPORTED
    rng = np.random.default_rng(0)
    assert c.paired_greater("x", 0.01 + rng.normal(0, 0.001, 30)).verdict == c.SUPPORTED
    assert c.paired_greater("x", rng.normal(0, 0.01, 5)).verdict == c.INCONCLUSIVE


def test_combine_and_rows():
    s, n, i = (c.Verdict(v, "t", "r") for v in (c.SUPPORTED, c.NOT_SUPPORTED, c.INCONCLUSIVE))
    assert c.combine([s, s]).verdict == c.SUPPORTED
    assert c.combine([s, i]).verdict == c.INCONCLUSIVE
    assert c.combine([s, n, i]).verdict == c.NOT_SUPPORTED
    row = c.row("a claim", "all", s, source="ours")
    assert list(row) == c.COLUMNS and row["source"] == "ours"
    with pytest.raises(ValueError):
        c.row("a claim", "all", s, source="theirs")
    with pytest.raises(ValueError):
        c.Verdict("partly", "t", "r")


def test_estimate_reads_a_summary_row():
    row = {"label": "DP-SGD", "dataset": "bank", "model": "lr", "setting": "0.4", "accuracy_mean": 0.9,
           "accuracy_ci95": 0.01, "accuracy_n": 10, "accuracy_std": 0.014, "learns": "yes"}
    e = c.estimate(row)
    assert e.name == "DP-SGD (bank/lr at ε = 0.4)" and e.n == 10 and e.learns == "yes"
