"""The kang plugin: the noise-free table, the claims (on synthetic summaries that come out each
way), and the r-sensitivity product (table, Markdown view and figure) from synthetic records."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dperm.papers.kang import claims as kc
from dperm.papers.kang.r_sensitivity import r_name, r_sensitivity_figure, r_sensitivity_table, shown
from dperm.papers.kang.tables import noise_free_table
from dperm.report import claims as c

EPS = [0.1, 1.0, 3.0]


def _record(key, eps, fold, *, accuracy=0.9, gap=0.05, extra=None, radius=1.0, positive=0.1, majority=0.88):
    return {"paper": "kang", "experiment": "r", "dataset": "bank", "model": "lr", "algorithm": key, "label": key,
            "variant": "reference", "setting": f"{eps:g}", "sweep": "", "epsilon": eps, "tuning": "non-private",
            "preprocessing": "data-dependent", "dp_as_implemented": False, "fold": fold, "accuracy": accuracy,
            "majority_rate": majority, "positive_share": positive, "test_loss": 0.3, "objective": 0.3,
            "opt_gap": gap, "excess_risk": np.nan, "epsilon_spent": eps, "fit_seconds": 1.0, "grad_evals": 1.0,
            "hyper": json.dumps({"radius": radius}), "extra": json.dumps(extra or {})}


def _pidp_extra(fraction, probability, *, radius=1.0, reading="proof", rounds=5):
    return {"noise_free_fraction": fraction, "noise_free_probability": probability, "threshold": 2e-5 * radius,
            "sigma_c": 1.2, "error_bound": 0.09, "zeta": 1e-3, "radius": radius, "rounds": rounds,
            "zeta_reading": reading}


# -- the noise-free table ---------------------------------------------------------------------------

def test_noise_free_table_averages_the_fraction_and_keeps_the_exact_probability():
    rows = [_record("pidp-sgd-reference", e, f, extra=_pidp_extra(0.1 * f * e, 0.2 * e, radius=100.0 + f))
            for e in (1.0, 3.0) for f in range(3)]
    rows.append(_record("dp-sgd", 1.0, 0))  # no noise-free fraction: not PIDP-SGD
    table = noise_free_table(pd.DataFrame(rows))
    assert list(table["epsilon"]) == [1.0, 3.0] and set(table["algorithm"]) == {"pidp-sgd-reference"}
    first = table.iloc[0]
    assert first["runs"] == 3 and first["noise_free_fraction"] == pytest.approx(0.1)
    assert first["noise_free_probability"] == pytest.approx(0.2) and first["radius"] == pytest.approx(101.0)
    assert first["two_error"] == pytest.approx(0.18) and first["ci95"] > 0
    assert noise_free_table(pd.DataFrame([_record("dp-sgd", 1.0, 0)])).empty


# -- claims -----------------------------------------------------------------------------------------

def _cell(key, eps, accuracy, *, gap=0.1, half=0.002, n=10, learns="yes"):
    std = half * np.sqrt(n) / 2.262
    return {"dataset": "bank", "model": "lr", "algorithm": key, "label": key, "setting": f"{eps:g}",
            "epsilon": eps, "accuracy_mean": accuracy, "accuracy_ci95": half, "accuracy_n": n, "accuracy_std": std,
            "opt_gap_mean": gap, "opt_gap_ci95": half, "opt_gap_n": n, "opt_gap_std": std, "learns": learns}


def _summary(pidp_up=True, baseline_stuck=False, control_above=False, pidp_gap=None):
    rows = []
    for i, e in enumerate(EPS):
        for key, base in (("dp-sgd", 0.85), ("outpert-sgd", 0.84), ("dp-lssgd", 0.845)):
            learns = "no" if (baseline_stuck and key == "dp-lssgd") else "yes"
            rows.append(_cell(key, e, base + 0.01 * i, gap=0.3 - 0.1 * i, learns=learns))
        pidp = 0.80 + (0.05 * i if pidp_up else -0.02 * i)
        gap = (0.4 - 0.15 * i) if pidp_gap is None else pidp_gap
        rows.append(_cell("pidp-sgd-reference", e, pidp, gap=gap))
        rows.append(_cell("dp-sgd-batch1", e, pidp + (0.02 if control_above else -0.02), gap=0.002))
    rows.append(_cell("nonprivate", float("inf"), 0.91, gap=0.0) | {"setting": "inf"})
    return pd.DataFrame(rows)


def _verdict(table, claim, scope="bank / lr"):
    rows = table[table["claim"].str.startswith(claim) & (table["scope"] == scope)]
    assert len(rows) == 1, (claim, scope, table[["claim", "scope"]])
    return rows.iloc[0]["verdict"]


def _noise_free(fractions, half=0.001):
    return pd.DataFrame([{"dataset": "bank", "model": "lr", "algorithm": "pidp-sgd-reference", "epsilon": e,
                          "runs": 10, "noise_free_fraction": f, "ci95": half} for e, f in zip(EPS, fractions)])


def test_claims_can_be_supported():
    table = kc.claims(_summary(), _noise_free([0.0, 0.4, 0.9]))
    assert _verdict(table, "1.") == c.SUPPORTED
    assert _verdict(table, "2.") == c.SUPPORTED  # 0.90 > 0.87 at ε = 3, margin grows
    assert _verdict(table, "4.") == c.SUPPORTED
    assert _verdict(table, "5.") == c.SUPPORTED
    assert _verdict(table, "6.") == c.SUPPORTED
    assert _verdict(table, "7.") == c.SUPPORTED and _verdict(table, "8.") == c.SUPPORTED
    assert set(table.loc[table["claim"].str.startswith(("7.", "8.")), "source"]) == {"ours"}
    assert (table["test"].str.len() > 0).all()


def test_claims_can_fail():
    table = kc.claims(_summary(pidp_up=False, control_above=True, pidp_gap=0.3), _noise_free([0.0, 0.0, 0.0]))
    assert _verdict(table, "1.") == c.NOT_SUPPORTED  # PIDP-SGD falls with ε
    assert _verdict(table, "2.") == c.NOT_SUPPORTED
    assert _verdict(table, "3.") == c.NOT_SUPPORTED  # smallest gap 0.3
    assert _verdict(table, "6.") == c.NOT_SUPPORTED  # no step escapes at any ε
    assert "no step escapes" in table.loc[table["claim"].str.startswith("6.")].iloc[0]["reason"]
    assert _verdict(table, "7.") == c.NOT_SUPPORTED
    assert _verdict(table, "1.", "all panels") == c.NOT_SUPPORTED


def test_a_claim_resting_on_a_cell_that_does_not_learn_is_inconclusive():
    table = kc.claims(_summary(baseline_stuck=True), _noise_free([0.0, 0.4, 0.9]))
    row = table[table["claim"].str.startswith("1.") & (table["scope"] == "bank / lr")].iloc[0]
    assert row["verdict"] == c.INCONCLUSIVE and "not learn" in row["reason"]
    stuck = _summary(pidp_gap=0.001)
    stuck.loc[stuck["algorithm"] == "pidp-sgd-reference", "learns"] = "no"
    assert _verdict(kc.claims(stuck), "3.") == c.INCONCLUSIVE


def test_the_mechanism_is_judged_where_the_branch_fires_in_the_r_sensitivity_table():
    rows = []
    for r, fractions in (("1", [0.0, 0.0, 0.0]), ("1e4", [0.0, 0.9, 1.0])):
        for e, f in zip(EPS, fractions):
            rows.append({"dataset": "bank", "model": "lr", "zeta_reading": "printed", "rounds": 1, "r": r,
                         "epsilon": e, "runs": 5, "noise_free_fraction": f, "noise_free_ci95": 0.01})
    table = kc.claims(_summary(), _noise_free([0.0, 0.4, 0.9]), pd.DataFrame(rows))
    fired = table[table["claim"].str.startswith("6'.")]
    assert list(fired["scope"]) == ["bank / lr, r = 1e4, zeta printed, R = 1", "all panels"]
    assert set(fired["verdict"]) == {c.SUPPORTED}
    never = pd.DataFrame(rows).assign(noise_free_fraction=0.0)
    row = kc.claims(_summary(), None, never)
    assert _verdict(row, "6'.", "all r-sensitivity settings") == c.NOT_SUPPORTED


# -- the r-sensitivity product ----------------------------------------------------------------------

def _r_records():
    rows = []
    for fold in range(3):
        for e in EPS:
            fires = e >= 1.0
            rows.append(_record("pidp-r1e4-printed-rounds1", e, fold, accuracy=0.91, gap=0.001, radius=1e4,
                                extra=_pidp_extra(1.0 if fires else 0.0, 1.0 if fires else 0.0, radius=1e4,
                                                  reading="printed", rounds=1)))
            rows.append(_record("pidp-r1-proof-rounds5", e, fold, accuracy=0.88, gap=0.23, radius=1.0,
                                positive=0.0, majority=0.88, extra=_pidp_extra(0.0, 0.0)))
            rows.append(_record("control-r1e4", e, fold, accuracy=0.905, gap=0.004, radius=1e4,
                                extra={"noise_multiplier": 1.0, "radius": 1e4}))
    return pd.DataFrame(rows)


def test_r_sensitivity_table_pairs_each_setting_with_its_control():
    table = r_sensitivity_table(_r_records())
    assert len(table) == 6 and set(table["r"]) == {"1", "1e4"}
    fired = table[(table["r"] == "1e4") & (table["epsilon"] == 3.0)].iloc[0]
    assert fired["noise_free_fraction"] == 1.0 and fired["noise_free_probability"] == 1.0
    assert fired["control_accuracy"] == pytest.approx(0.905) and fired["control_opt_gap"] == pytest.approx(0.004)
    assert fired["zeta_reading"] == "printed" and fired["rounds"] == 1
    capped = table[table["r"] == "1"].iloc[0]
    assert capped["learns"] == "no" and np.isnan(capped["control_accuracy"])  # no control at r = 1 here
    view = shown(table)
    assert "noise-free fraction" in view and list(view["r"]) == list(table["r"])


def test_r_sensitivity_figure_draws_every_setting():
    table = r_sensitivity_table(_r_records())
    fig = r_sensitivity_figure(table, title="t", caption="c")
    assert len(fig.axes) == 3 * 2  # three metrics x (proof, R = 5) and (printed, R = 1)
    empty = r_sensitivity_figure(r_sensitivity_table(pd.DataFrame()), title="t", caption="c")
    assert len(empty.axes) == 1


@pytest.mark.parametrize("value, name", [(1.0, "1"), ("start-norm", "||theta*||"), (1000.0, "1e3"),
                                         (10000.0, "1e4"), (50, "50")])
def test_radius_names(value, name):
    assert r_name(value) == name
