"""Lee & Kifer 2018 reproduction: the Table 1 noisy gradient descent, the Table 1 join with the
published column, the Table 2 layout, and the claims check (on hand-built summaries)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dperm.papers import published
from dperm.papers.lee2018.claims import claims
from dperm.papers.lee2018.tables import noisy_gd_table, table1, table2

SMALL_EPS = [0.05, 0.1, 0.2, 0.4, 0.8]


def separable(n=200, p=10, seed=0):
    """Rows in the unit ball (so the mean logistic loss is 1/4-smooth), labels {0,1} from a plane."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, (X @ rng.normal(size=p) > 0).astype(float)


# -- Table 1: noisy gradient descent -------------------------------------------------------------

def test_noise_free_descent_matches_gradient_norm_and_decreases():
    """Without noise the noisy column is the gradient itself, t runs 0..steps, f(w_0) = log 2, and
    gradient descent with a step below 2/β decreases the objective at every step."""
    X, y = separable()
    table = noisy_gd_table(X, y, steps=15, learning_rate=1.0, noise_norm=0.0, runs=2, seed=3)
    assert table["t"].tolist() == list(range(16))
    np.testing.assert_array_equal(table["grad_norm"], table["noisy_grad_norm"])
    assert table["objective"].iloc[0] == pytest.approx(np.log(2))
    assert (np.diff(table["objective"]) < 0).all()
    assert (table["noise_rms"] == 0.0).all()


def test_noise_is_isotropic_with_the_given_rms():
    """Y_t ~ N(0, σ²/p I): E‖∇f + Y‖² = ‖∇f‖² + σ² (not + pσ², not + σ), checked on the mean of
    many runs at every t."""
    X, y = separable(p=40, seed=1)
    sigma = 0.5
    table = noisy_gd_table(X, y, steps=5, learning_rate=0.5, noise_norm=sigma, runs=600, seed=7)
    expected = table["grad_norm"] ** 2 + sigma**2
    np.testing.assert_allclose(table["noisy_grad_norm"] ** 2, expected, rtol=0.05)
    assert (table["noise_rms"] == sigma).all()


def test_noisy_table_is_reproducible_from_the_seed():
    """Same seed → identical table; another seed → a different one."""
    X, y = separable()
    kwargs = dict(steps=4, learning_rate=1.0, noise_norm=0.3, runs=3)
    a, b = noisy_gd_table(X, y, seed=11, **kwargs), noisy_gd_table(X, y, seed=11, **kwargs)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["noisy_grad_norm"], noisy_gd_table(X, y, seed=12, **kwargs)["noisy_grad_norm"])


def test_table1_joins_published_columns_on_t():
    """Rows are matched on t (not position), only shared t are kept, columns come in the order
    ours/published pairwise, and the published values are carried over unchanged."""
    X, y = separable()
    ours = noisy_gd_table(X, y, steps=3, learning_rate=1.0, noise_norm=0.5, runs=2, seed=0)
    with published("lee2018", "table1.csv").open() as fh:
        reference = pd.read_csv(fh, comment="#")
    joined = table1(ours, reference.sample(frac=1.0, random_state=0))
    assert list(joined.columns) == ["t", "grad_norm", "grad_norm_published", "noisy_grad_norm",
                                    "noisy_grad_norm_published", "noise_rms", "objective", "objective_published"]
    assert joined["t"].tolist() == [0, 1, 2, 3]
    pub = reference.set_index("t").loc[joined["t"]]
    for column in ("grad_norm", "noisy_grad_norm", "objective"):
        np.testing.assert_array_equal(joined[f"{column}_published"], pub[column])
        np.testing.assert_array_equal(joined[column], ours[column])


# -- Table 2 -------------------------------------------------------------------------------------

def test_table2_keeps_key_order_and_marks_missing_datasets_na():
    """A dataset absent from the input is a row of NA counts, and rows follow ``keys``, not the input."""
    datasets = pd.DataFrame({"dataset": ["kddcup99", "adult"], "n": [494021, 45222], "p": [120, 105],
                             "label": ["attack", ">50K"], "positive_rate": [0.8, 0.25], "status": ["ok", "ok"]})
    shapes = {"kddcup99": (4898431, 125), "adult": (48842, 124)}
    out = table2(datasets, shapes, keys=("kddcup99", "bank-dpagd", "adult"))
    assert out["dataset"].tolist() == ["kddcup99", "bank-dpagd", "adult"]
    assert out["n_ours"].tolist()[::2] == [494021, 45222] and out["dim_paper"].tolist()[::2] == [125, 124]
    for column in ("n_ours", "dim_ours", "n_paper", "dim_paper"):
        assert pd.isna(out[column].iloc[1])
    assert out["label"].tolist()[::2] == ["attack", ">50K"]


# -- claims --------------------------------------------------------------------------------------

def row(algorithm, epsilon, accuracy, *, ci=0.002, objective=0.5, spent=None, dataset="adult", model="lr",
        learns="yes", n=20):
    """One summary cell (``n`` fits, standard deviations from the half-width ``ci``); SGD-MA rows
    (``spent`` given) have setting 'T…' and ε = inf as the runner writes."""
    from dperm.report.stats import t_quantile

    computed = spent is not None
    std = ci * np.sqrt(n) / t_quantile(n - 1)
    return {"dataset": dataset, "model": model, "algorithm": algorithm, "label": algorithm,
            "setting": "T1000" if computed else f"{epsilon:g}", "epsilon": np.inf if computed else epsilon,
            "accuracy_mean": accuracy, "accuracy_ci95": ci, "accuracy_std": std, "accuracy_n": n,
            "objective_mean": objective, "objective_ci95": ci, "objective_std": std, "objective_n": n,
            "epsilon_spent_mean": spent if computed else epsilon, "learns": learns}


def grid(agd, others, extra=()):
    """DP-AGD at ``agd`` accuracy and ObjPert/PrivGene at ``others`` accuracy for every ε up to 1.6."""
    rows = [row("dp-agd", e, agd) for e in SMALL_EPS + [1.6]]
    rows += [row(k, e, others) for k in ("objpert", "privgene") for e in SMALL_EPS + [1.6]]
    return pd.DataFrame(rows + list(extra))


def verdict(table, prefix):
    hit = table[table["claim"].str.startswith(prefix)]
    assert len(hit) == 1, table
    return hit["verdict"].iloc[0]


@pytest.mark.parametrize("agd, others, expected", [(0.85, 0.70, "supported"), (0.60, 0.80, "not supported")])
def test_dp_agd_claim_clear_win_and_clear_loss(agd, others, expected):
    """DP-AGD well above every rival at each ε ≤ 0.8 is 'supported'; well below everywhere is not."""
    out = claims(grid(agd, others))
    assert list(out.columns) == ["claim", "source", "scope", "verdict", "test", "reason"]
    assert verdict(out, "DP-AGD is best") == expected
    assert "Welch" in out.loc[out["claim"].str.startswith("DP-AGD is best"), "test"].iloc[0]


def test_dp_agd_claim_resting_on_a_cell_that_does_not_learn_is_inconclusive():
    """A clear win over a rival stuck at the majority rate says nothing about DP-AGD."""
    stuck = [row(k, e, 0.70, learns="no") for k in ("objpert", "privgene") for e in SMALL_EPS + [1.6]]
    out = claims(pd.DataFrame([row("dp-agd", e, 0.85) for e in SMALL_EPS + [1.6]] + stuck))
    assert verdict(out, "DP-AGD is best") == "inconclusive"
    assert "does not learn" in out.loc[out["claim"].str.startswith("DP-AGD is best"), "reason"].iloc[0]


def test_dp_agd_rivals_are_compared_at_their_own_privacy():
    """A rival only counts at ε at least its own: ObjPert excellent at ε = 1.6 alone does not beat DP-AGD
    at 0.1, and SGD-MA counts at the ε it spent (0.3 → rival at 0.4 and 0.8 only: supported at 3 of 5
    ε, not supported at 2, so not supported)."""
    extra = [row("objpert", 1.6, 0.99), row("sgd-ma", None, 0.95, spent=0.3)]
    rows = [row("dp-agd", e, 0.80) for e in SMALL_EPS] + [row("privgene", e, 0.70) for e in SMALL_EPS]
    out = claims(pd.DataFrame(rows + extra))
    assert verdict(out, "DP-AGD is best") == "not supported"
    assert "supported on 3 of 5" in out["reason"].iloc[0] and "not supported on 2 of 5" in out["reason"].iloc[0]


def test_claims_with_no_rival_rows_at_all():
    """Regression: with only DP-AGD and SGD-MA (spent ε above every small ε) the rival set is empty for
    each algorithm; filtering an empty frame used to select no columns and raise KeyError 'epsilon'."""
    summary = pd.DataFrame([row("dp-agd", e, 0.8) for e in SMALL_EPS + [1.6]] + [row("sgd-ma", None, 0.9, spent=1.2)])
    out = claims(summary)
    assert verdict(out, "DP-AGD is best") == "not tested"  # no rival at any ε ≤ 0.8
    assert verdict(out, "SGD-MA is best for ε > 0.8 (RDP") == "supported"


def test_sgd_ma_not_testable_without_a_setting_in_the_window():
    """SGD-MA spent ε of 0.5 and 2.0 brackets (0.8, 1.6] without entering it: not tested, while
    ε = 1.6 exactly is in the window."""
    out = claims(grid(0.8, 0.7, [row("sgd-ma", None, 0.9, spent=0.5), row("sgd-ma", None, 0.9, spent=2.0)]))
    assert verdict(out, "SGD-MA is best for ε > 0.8 (RDP") == "not tested"
    assert verdict(out, "SGD-MA is best for ε > 0.8 (moments") == "not tested"
    edge = claims(grid(0.8, 0.7, [row("sgd-ma", None, 0.6, spent=1.6)]))
    assert verdict(edge, "SGD-MA is best for ε > 0.8 (RDP") == "not supported"


@pytest.mark.parametrize("acc04, obj04, expected", [
    (0.85, 0.35, "supported"),       # accuracy falls while the objective falls
    (0.85, 0.45, "not supported"),   # accuracy falls, objective rises
    (0.90, 0.35, "not supported"),   # accuracy rises, objective falls
    (0.90, 0.45, "not supported"),   # both rise
    (0.8805, 0.35, "inconclusive"),  # no significant change in accuracy
])
def test_bank_svm_instability_claim(acc04, obj04, expected):
    """BANK SVM: DP-AGD accuracy at ε = 0.4 below ε = 0.1 while the objective still decreases."""
    cells = [row("dp-agd", 0.1, 0.88, objective=0.40, dataset="bank-dpagd", model="svm"),
             row("dp-agd", 0.4, acc04, objective=obj04, dataset="bank-dpagd", model="svm")]
    assert verdict(claims(pd.DataFrame(cells)), "DP-AGD is unstable") == expected


# -- public bounds beside data bounds --------------------------------------------------------------

def test_public_bounds_movement_pairs_each_curve_with_its_figure2_twin():
    from dperm.papers.lee2018.public_bounds import movement

    def rows(keys, accuracy, objective):
        return pd.DataFrame([dict(dataset="adult", model="lr", algorithm=k, setting=s, epsilon=e,
                                  epsilon_spent_mean=0.3 if s == "T1000" else e, accuracy_mean=accuracy,
                                  accuracy_ci95=0.003, objective_mean=objective, objective_ci95=0.004)
                             for k in keys for s, e in ((("T1000", np.inf),) if "sgd-ma" in k else (("0.1", 0.1),))])

    data = rows(["dp-agd", "sgd-ma", "objpert"], 0.80, 0.40)
    public = rows(["dp-agd-public", "sgd-ma-public"], 0.78, 0.43)
    table = movement(public, data, {"dp-agd-public": "dp-agd", "sgd-ma-public": "sgd-ma", "objpert-public": "objpert"})
    assert table["algorithm"].tolist() == ["dp-agd", "sgd-ma"]  # objpert has no public cell: no row
    assert table["epsilon"].tolist() == [0.1, 0.3]  # SGD-MA at the epsilon its accountant computed
    np.testing.assert_allclose(table["accuracy_delta"], -2.0)  # percentage points
    np.testing.assert_allclose(table["objective_delta"], 0.03)
    np.testing.assert_allclose(table["accuracy_delta_ci95"], 100 * np.hypot(0.003, 0.003))


def test_dp_agd_claim_is_tested_for_the_published_code_the_correct_version_and_the_gumbel_one():
    """Three rows with the same rivals; no DP-AGD version is another's rival (the published code's
    0.95 does not make the correct version lose)."""
    rows = [row(k, e, acc) for k, acc in (("dp-agd", 0.72), ("dp-agd-gumbel", 0.76), ("dp-agd-reference", 0.95))
            for e in SMALL_EPS]
    rows += [row("privgene", e, 0.75, ci=0.001) for e in SMALL_EPS]
    out = claims(pd.DataFrame(rows))
    assert verdict(out, "DP-AGD is best or competitive for ε ≤ 0.8 (correct: dp-agd)") == "not supported"
    assert verdict(out, "DP-AGD is best or competitive for ε ≤ 0.8 (Gumbel selection") == "supported"
    assert verdict(out, "DP-AGD is best or competitive for ε ≤ 0.8 (published code") == "supported"


# -- the gap the Gumbel selection closes -------------------------------------------------------------

def records(means, n=(100, 100, 10), spread=0.01, dataset="adult", model="lr", eps=0.1):
    """Fit records of the three DP-AGD keys with the given mean accuracies: values mean ± spread
    alternating (std ≈ spread)."""
    out = []
    for key, mean, count in zip(("dp-agd", "dp-agd-gumbel", "dp-agd-reference"), means, n):
        for i in range(count):
            out.append({"dataset": dataset, "model": model, "algorithm": key, "epsilon": eps,
                        "accuracy": mean + (spread if i % 2 else -spread)})
    return pd.DataFrame(out)


def test_selection_gap_fraction_and_its_standard_error():
    from dperm.papers.lee2018.selection import selection_gap

    table = selection_gap(records((0.70, 0.76, 0.80)))
    r = table.iloc[0]
    assert r["gap"] == pytest.approx(0.10) and r["fraction_closed"] == pytest.approx(0.6)
    se = {k: 0.01 * np.sqrt(n / (n - 1)) / np.sqrt(n) for k, n in (("c", 100), ("g", 100), ("r", 10))}
    expected = np.sqrt(se["g"] ** 2 + 0.4**2 * se["c"] ** 2 + 0.6**2 * se["r"] ** 2) / 0.10
    assert r["fraction_se"] == pytest.approx(expected) and r["fraction"] == f"0.60 ± {expected:.2f}"
    assert r["correct_n"] == 100 and r["reference_n"] == 10


@pytest.mark.parametrize("means, reason", [((0.80, 0.80, 0.805), "gap within noise"),
                                           ((0.80, 0.81, 0.70), "reference not better")])
def test_selection_gap_is_na_when_there_is_no_clear_gap(means, reason):
    from dperm.papers.lee2018.selection import selection_gap

    r = selection_gap(records(means)).iloc[0]
    assert np.isnan(r["fraction_closed"]) and r["fraction"].startswith(f"n/a: {reason}")


def test_selection_gap_reads_the_three_dp_agd_cells_of_figures_2_3_and_the_reference():

    from conftest import REPO

    from dperm.grid import load_paper
    from dperm.papers.lee2018.selection import gap_cells


    cells = gap_cells(load_paper(REPO / "config" / "papers" / "lee2018.yaml"))
    assert {c.algorithm for c in cells} == {"dp-agd", "dp-agd-gumbel", "dp-agd-reference"}
    assert {c.experiment for c in cells if c.algorithm == "dp-agd-reference"} == {"reference"}
    assert {c.experiment for c in cells if c.algorithm == "dp-agd-gumbel"} == {"fig2", "fig3"}


# -- the price of private tuning -------------------------------------------------------------------

def test_end_to_end_searches_the_grids_the_tuning_step_searches():
    """A fair comparison: every end-to-end algorithm searches exactly the grid the non-private
    tuning step searches for its base (λ for all, OutPert's T and step size too)."""
    from conftest import REPO

    from dperm.grid import load_paper
    from dperm.papers.lee2018.private_tuning import table_spec

    paper = load_paper(REPO / "config" / "papers" / "lee2018.yaml")
    pairs = table_spec(paper)["pairs"]
    assert set(pairs.values()) == {"dp-agd", "objpert", "outpert"}
    tuning = paper.tuning
    for key, base in pairs.items():
        grid = paper.algorithms[key]["grid"]
        expected = {"l2": list(tuning.l2_grid)} if base in tuning.l2_algorithms else {}
        for block in tuning.hyper:
            if block.algorithm == base:
                expected.update(block.grid)
        assert grid == expected, (key, grid, expected)
        assert paper.algorithms[key].get("profile") == paper.algorithms[base].get("profile")


def _summary_row(algorithm, eps, mean, std, n):
    return {"dataset": "bank-dpagd", "model": "lr", "algorithm": algorithm, "epsilon": eps, "accuracy_mean": mean,
            "accuracy_std": std, "accuracy_ci95": 2 * std / np.sqrt(n), "accuracy_n": n}


def test_the_price_is_the_difference_with_a_welch_interval_and_the_selection_is_summarised():
    import json

    from scipy import stats

    from dperm.papers.lee2018.private_tuning import price_table

    reference = pd.DataFrame([_summary_row("objpert", 0.1, 0.88, 0.01, 100), _summary_row("objpert", 1.6, 0.90, 0.01, 100)])
    end_to_end = pd.DataFrame([_summary_row("objpert-private-tuning", 0.1, 0.80, 0.04, 20),
                               _summary_row("objpert-private-tuning", 1.6, 0.89, 0.02, 20)])
    extras = [{"trial_epsilon": 0.02, "trials": k, "chosen": {"l2": 0.001 if k < 9 else 0.01}} for k in (6, 8, 10, 7)]
    records = pd.DataFrame({"dataset": "bank-dpagd", "model": "lr", "algorithm": "objpert-private-tuning",
                            "epsilon": 0.1, "extra": [json.dumps(e) for e in extras]})
    table = price_table(reference, end_to_end, records, {"objpert-private-tuning": "objpert"})
    assert table["epsilon"].tolist() == [0.1, 1.6] and (table["algorithm"] == "objpert").all()
    first = table.iloc[0]
    assert first["price"] == pytest.approx(0.08)
    v1, v2 = 0.01 ** 2 / 100, 0.04 ** 2 / 20
    df = (v1 + v2) ** 2 / (v1 ** 2 / 99 + v2 ** 2 / 19)
    assert first["price_ci95"] == pytest.approx(stats.t.ppf(0.975, df) * np.sqrt(v1 + v2))
    assert first["mean_trials"] == pytest.approx(7.75) and first["trial_epsilon"] == pytest.approx(0.02)
    assert first["chosen_most"] == "l2=0.001" and first["chosen_share"] == pytest.approx(0.75)
    assert np.isnan(table.iloc[1]["trial_epsilon"])  # no records given for that cell
