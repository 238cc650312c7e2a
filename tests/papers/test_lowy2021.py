"""The lowy2021 plugin: its evaluation reproduces the protocol's fits, its metrics, the rate
slopes, the claims rules; and the solver options it added (projected Nesterov, SGD's average of
the evaluated points)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dperm import solvers
from dperm.losses import Logistic
from dperm.problem import Problem


def spec(algorithm, epsilon="1", *, hyper=None, delta=0.0, draws=3, experiment="term", cell=None,
         protocol=None):
    return {"paper": "lowy2021", "experiment": experiment, "dataset": "toy", "profile": "default",
            "model": {"name": "lr", "loss": "logistic", "l2": 0.05}, "algorithm": algorithm,
            "cell_algorithm": cell or algorithm, "hyper": hyper or {}, "sweep": "", "epsilon": epsilon,
            "delta": delta, "protocol": protocol or {"kind": "holdout", "test_fraction": 0.25, "repeats": 2,
                                                     "draws": draws},
            "seed": 7, "tuning": "private"}


def toy_arrays(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)) / 2
    X[:, 0] = 0.5
    sex = rng.random(n) < 0.4
    race = rng.integers(3, size=n)
    X[:, 1], X[:, 2] = sex, ~sex
    X[:, 3] = race == 0
    X[:, 4] = race != 0
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y01 = (rng.random(n) < 1 / (1 + np.exp(-3 * X[:, 1] + X[:, 3]))).astype(np.int8)
    columns = np.array(["bias", "sex=Female", "sex=Male", "race=Black", "race=White"])
    return {"X": X, "y01": y01, "ypm": (2 * y01 - 1).astype(np.int8), "columns": columns,
            "preprocessing": np.array("data-dependent")}


def test_evaluation_reproduces_the_protocols_fits():
    """The evaluation's fits are run_cell's: same rows, seeds and hyper-parameters, so the same
    test accuracy draw by draw (cells of a row fitted together, as the protocol may)."""
    from dperm.papers.lowy2021.evaluate import evaluate
    from dperm.protocol.runner import run_cell

    arrays = toy_arrays()
    specs = [spec("term", e, hyper={"tilt": 0.5, "radius": 3.0}) for e in ("1", "10")]
    records = evaluate(specs, arrays, {"kind": "groups", "group_by": ["sex", "race"]})
    for s in specs:
        ours = records[records["setting"] == s["epsilon"]].sort_values(["repeat", "draw"])
        generic = run_cell(s, arrays).sort_values(["repeat", "draw"])
        np.testing.assert_allclose(ours["accuracy"].to_numpy(float), generic["accuracy"].to_numpy(float), rtol=0,
                                   atol=0)
        assert list(ours["seed"]) == list(generic["seed"])
    assert set(records["n_groups"]) == {4}
    assert (records["worst_group_accuracy"] <= records["accuracy"] + 1e-12).all()
    assert (records["worst_group_loss"] >= records["test_loss"] - 1e-12).all()


def test_group_masks_split_rows_by_one_hot_attributes():
    from dperm.papers.lowy2021.evaluate import group_masks

    arrays = toy_arrays()
    masks = group_masks(arrays["columns"], arrays["X"], ["sex", "race"])
    assert set(masks) == {"sex=Female & race=Black", "sex=Female & race=White", "sex=Male & race=Black",
                          "sex=Male & race=White"}
    assert sum(m.sum() for m in masks.values()) == len(arrays["X"])
    with pytest.raises(ValueError, match="education"):
        group_masks(arrays["columns"], arrays["X"], ["education"])


def test_robust_and_population_evaluations():
    from dperm.papers.lowy2021.evaluate import evaluate, population_arrays

    arrays = toy_arrays(n=200)
    robust = evaluate([spec("adv", "2", hyper={"radius": 0.1}, experiment="adv")], arrays,
                      {"kind": "robust", "test_radii": [0, 0.1, 0.5]})
    assert (robust["robust_accuracy_0"] >= robust["robust_accuracy_0.1"]).all()
    assert (robust["robust_accuracy_0.1"] >= robust["robust_accuracy_0.5"]).all()
    full = {"kind": "full", "repeats": 1, "draws": 4}
    train = {k: v[:150] for k, v in arrays.items() if k not in ("columns", "preprocessing")}
    train["columns"], train["preprocessing"] = arrays["columns"], arrays["preprocessing"]
    population = population_arrays(arrays, "01", 150)
    records = evaluate([spec("outpert-exact", "1", protocol=full, experiment="rates-pure"),
                        spec("nonprivate", "inf", protocol=full, experiment="rates-pure")], train,
                       {"kind": "population"}, population)
    private = records[records["algorithm"] == "outpert-exact"]
    assert (private["excess_risk"] > 0).all() and private["population_excess_risk"].notna().all()
    nonprivate = records[records["algorithm"] == "nonprivate"]
    assert abs(float(nonprivate["excess_risk"].iloc[0])) < 1e-10
    assert (records["curvature"] > 0.05).all()  # ≥ μ


def test_rate_slopes_recover_a_power_law():
    from dperm.papers.lowy2021 import rates

    rng = np.random.default_rng(0)
    rows = []
    for privacy in ("pure", "approx"):
        for n in (1000, 3000, 10000, 30000):
            for _ in range(20):
                value = 5.0 * n**-2.0 * rng.lognormal(0, 0.1)
                rows.append({"privacy": privacy, "algorithm": "outpert-exact", "label": "x", "n": n, "d": 20,
                             "excess_risk": value, "normalised_excess": value, "population_excess_risk": 1 / n})
    slopes = rates.slopes(pd.DataFrame(rows), 20, 10000)
    row = slopes[(slopes["sweep"] == "n") & (slopes["quantity"] == "excess_risk")].iloc[0]
    assert row["fitted_slope"] == pytest.approx(-2.0, abs=0.05) and row["ci95_low"] < -2.0 < row["ci95_high"]
    pop = slopes[slopes["quantity"] == "population_excess_risk"].iloc[0]
    assert pop["fitted_slope"] == pytest.approx(-1.0, abs=1e-9)


def test_claims_rules_decide_from_the_tables():
    from dperm.papers.lowy2021 import claims

    ratios = pd.DataFrame([
        {"experiment": "e", "privacy": "pure", "dataset": "d", "model": "m", "algorithm": a, "label": a,
         "excess_ratio_geomean": r, "grad_evals": g, "grad_evals_vs_lbfgs": g / 30, "seconds": 1.0,
         "seconds_vs_lbfgs": 2.0, "grad_evals_for_target_alpha": g}
        for a, r, g in (("outpert-exact", 1.0, 30), ("bb-gd", 4.1, 3000), ("bb-agd", 3.9, 300),
                        ("bb-katyusha", 4.0, 120), ("bb-sgd", 5e3, 1e7), ("outpert-gd", 7.0, 3500))])
    assert claims.blackbox_factor(ratios, 4.0)["verdict"] == "holds"
    assert claims.solver_speed(ratios)["verdict"] == "holds"
    assert claims.beats_zhang(ratios)["verdict"] == "holds"
    worse = ratios.assign(excess_ratio_geomean=ratios["excess_ratio_geomean"].where(ratios["algorithm"] != "bb-agd", 9.0))
    assert claims.blackbox_factor(worse, 4.0)["verdict"] != "holds"
    slow = ratios.assign(grad_evals_for_target_alpha=ratios["grad_evals_for_target_alpha"].where(
        ratios["algorithm"] != "bb-sgd", 10.0))
    assert claims.solver_speed(slow)["verdict"].startswith("does not hold")


def test_evaluation_jobs_cover_the_configured_experiments():
    from conftest import REPO

    from dperm.experiments import load_paper
    from dperm.papers import lowy2021

    paper = load_paper(REPO / "config" / "papers" / "lowy2021.yaml")
    jobs = lowy2021.evaluation_jobs(paper, 2018)
    rates = {d for (a, d) in jobs if a == "rates"}
    assert rates == set(paper["experiments"]["rates-pure"]["datasets"])
    with_population = {d for (a, d), job in jobs.items() if job["population"]}
    assert with_population == {d for d in rates if d.endswith("-d20")}
    term = jobs[("term", "adult")]
    assert {s["hyper"]["tilt"] for s in term["specs"]} == {0, 0.1, 0.5, 1, 2}
    assert json.loads(json.dumps(term["analysis"]))["kind"] == "groups"
    assert lowy2021.evaluated_files(paper, "adv") == ["results/lowy2021/evaluate/adv/adult.csv",
                                                      "results/lowy2021/evaluate/adv/synthetic-logistic-n50000-d20.csv"]


# -- solver options -----------------------------------------------------------------------------------

def test_projected_nesterov_reaches_the_constrained_minimiser():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4)) / 2
    y = (rng.random(200) < 1 / (1 + np.exp(-6 * X[:, 0]))).astype(float)
    prob = Problem(X, y, Logistic(), 0.01)
    beta = 0.25 * np.max(np.linalg.norm(X, axis=1)) ** 2 + 0.01
    free = solvers.lbfgs(prob, gtol=1e-12).x
    R = 0.5 * np.linalg.norm(free)
    proj = solvers.nesterov(prob, n_iter=3000, smoothness=beta, mu=0.01, radius=R).x
    assert np.linalg.norm(proj) <= R * (1 + 1e-12)
    # optimality on the ball: the gradient points outwards along w (KKT), so −∇F = c·w, c ≥ 0
    g = prob.grad(proj)
    cos = -g @ proj / (np.linalg.norm(g) * np.linalg.norm(proj))
    assert cos > 1 - 1e-8
    long = solvers.gradient_descent(prob, step=1 / beta, n_iter=1, return_path=False)  # smoke: unprojected API kept
    assert np.isfinite(long.fun)


def test_sgd_average_of_evaluated_points_meets_bubecks_bound_in_expectation():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = (rng.random(300) < 0.5).astype(float)
    mu = 0.5
    prob = Problem(X, y, Logistic(), mu)
    f_star = solvers.lbfgs(prob, gtol=1e-12).fun
    T, G = 400, 2.0
    gaps = [solvers.sgd(prob, rng=np.random.default_rng(s), step=lambda t: 2.0 / (mu * (t + 2)), n_iter=T,
                        average="evaluated", radius=1 / mu).fun - f_star for s in range(30)]
    assert np.mean(gaps) <= 2 * G * G / (mu * (T + 1))
    with pytest.raises(ValueError, match="evaluated"):
        solvers.sgd(prob, rng=rng, step=0.1, n_iter=1, average="bad")
    assert math.isfinite(np.mean(gaps))
