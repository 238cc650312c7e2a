"""Metric hooks: what an experiment asks the protocol to measure beyond the standard columns,
carried in the records' extra JSON; the fits themselves are the protocol's own."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dperm.protocol.metric_hooks import data_needs, group_masks
from dperm.protocol.runner import run_cell


def spec(algorithm, epsilon="1", *, hyper=None, metrics=None, delta=0.0, draws=3, experiment="term",
         protocol=None, dataset="toy"):
    out = {"paper": "p", "experiment": experiment, "dataset": dataset, "profile": "default",
           "model": {"name": "lr", "loss": "logistic", "l2": 0.05}, "algorithm": algorithm,
           "cell_algorithm": algorithm, "hyper": hyper or {}, "sweep": "", "epsilon": epsilon, "delta": delta,
           "protocol": protocol or {"kind": "holdout", "test_fraction": 0.25, "repeats": 2, "draws": draws},
           "seed": 7, "tuning": "private"}
    if metrics:
        out["metrics"] = metrics
    return out


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


def extra(records, key):
    return np.array([json.loads(e)[key] for e in records["extra"]])


def test_hooks_measure_the_protocols_own_fits():
    """Asking for a hook changes nothing a record already had: the same fits, seeds and accuracy
    draw by draw; the hook's measures come on top, in extra."""
    arrays = toy_arrays()
    plain = spec("term", hyper={"tilt": 0.5, "radius": 3.0})
    measured = {**plain, "metrics": {"groups": {"group_by": ["sex", "race"]}}}
    a, b = run_cell(plain, arrays), run_cell(measured, arrays)
    for column in ("seed", "accuracy", "test_loss", "objective", "epsilon_spent"):
        np.testing.assert_array_equal(a[column].to_numpy(), b[column].to_numpy())
    assert set(extra(b, "n_groups")) == {4}
    assert (extra(b, "worst_group_accuracy") <= b["accuracy"].to_numpy() + 1e-12).all()
    assert (extra(b, "worst_group_loss") >= b["test_loss"].to_numpy() - 1e-12).all()
    assert "n_groups" not in json.loads(a["extra"].iloc[0])


def test_the_tilted_objective_uses_the_fits_own_tilt_with_the_algorithms_default():
    """A TERM cell that leaves tilt at its default (1.0) is measured at t = 1, not at 0 (the
    earlier evaluation read a missing tilt as 0)."""
    from dperm.algorithms import get_algorithm

    default = get_algorithm("term").defaults["tilt"]
    assert default == 1.0
    records = run_cell(spec("term", hyper={"radius": 3.0}, metrics={"groups": {"group_by": ["sex"]}}), toy_arrays())
    assert set(extra(records, "tilted_objective_t")) == {default}


def test_group_masks_split_rows_by_one_hot_attributes():
    arrays = toy_arrays()
    masks = group_masks(arrays["columns"], arrays["X"], ["sex", "race"])
    assert set(masks) == {"sex=Female & race=Black", "sex=Female & race=White", "sex=Male & race=Black",
                          "sex=Male & race=White"}
    assert sum(m.sum() for m in masks.values()) == len(arrays["X"])
    with pytest.raises(ValueError, match="education"):
        group_masks(arrays["columns"], arrays["X"], ["education"])


def test_robust_accuracy_falls_with_the_attack_radius_and_records_the_training_radius():
    records = run_cell(spec("adv", "2", hyper={"radius": 0.1}, experiment="adv",
                            metrics={"robust": {"test_radii": [0, 0.1, 0.5]}}), toy_arrays(n=200))
    assert (extra(records, "robust_accuracy_0") >= extra(records, "robust_accuracy_0.1")).all()
    assert (extra(records, "robust_accuracy_0.1") >= extra(records, "robust_accuracy_0.5")).all()
    assert set(extra(records, "train_radius")) == {0.1}


def test_population_excess_and_curvature():
    """The population is rows [start, end) of a stream the training rows are a prefix of: excess
    population risk is positive for a private fit, about 0 at the population's own optimum."""
    from dperm.datasets.synthetic import generate
    from dperm.protocol.runner import run_job

    full = {"kind": "full", "repeats": 1, "draws": 4}
    metrics = {"population": {"dataset": "synthetic-logistic-n3000-d3", "start": 400}, "curvature": {}}
    population = _synthetic_arrays(generate("synthetic-logistic-n3000-d3"))
    train = {k: (v[:400] if k in ("X", "y01", "ypm") else v) for k, v in population.items()}
    cells = [spec("outpert-exact", "1", protocol=full, experiment="rates", metrics=metrics,
                  dataset="synthetic-logistic-n400-d3"),
             spec("nonprivate", "inf", protocol=full, experiment="rates", metrics=metrics,
                  dataset="synthetic-logistic-n400-d3")]
    assert set(data_needs(cells[0])) == {"population"}
    records = run_job(cells, train, data={"population": population})
    private = records[records["algorithm"] == "outpert-exact"]
    assert (extra(private, "population_excess_risk") > 0).all()
    assert (extra(records, "curvature") > 0.05).all()  # ≥ μ
    assert set(extra(records, "n_population")) == {2600}


def test_population_applies_only_to_a_prefix_of_its_stream():
    hook = {"population": {"dataset": "synthetic-logistic-n100000-d20", "start": 50000}}
    assert data_needs(spec("nonprivate", dataset="synthetic-logistic-n1000-d20", metrics=hook))
    assert not data_needs(spec("nonprivate", dataset="synthetic-logistic-n1000-d5", metrics=hook))  # other d
    assert not data_needs(spec("nonprivate", dataset="adult", metrics=hook))
    with pytest.raises(ValueError, match="would include training rows"):
        data_needs(spec("nonprivate", dataset="synthetic-logistic-n60000-d20", metrics=hook))


def test_a_hook_key_that_clashes_with_the_algorithms_extra_is_refused(monkeypatch):
    from dperm.protocol import metric_hooks

    monkeypatch.setitem(metric_hooks.HOOKS, "clash", lambda ctx: {"sensitivity": 1.0})
    with pytest.raises(ValueError, match="both report"):
        run_cell(spec("outpert-exact", "1", metrics={"clash": {}}), toy_arrays())


def _synthetic_arrays(generated):
    X, y = generated
    X = X / np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y01 = y.astype(np.int8)
    return {"X": X, "y01": y01, "ypm": (2 * y01 - 1).astype(np.int8), "columns": np.array([]),
            "preprocessing": np.array("public-bounds")}


def test_robust_attack_on_the_numeric_columns_checks_the_fits_own_attack():
    """attack: numeric moves only the columns that are neither one-hot nor the bias, and a fit
    trained against another attack is refused (its robustness would be measured against the
    wrong threat)."""
    from dperm.protocol.metric_hooks import attack_coordinates

    arrays = toy_arrays(n=200)
    arrays["columns"] = np.array(["bias", "sex=Female", "age", "race=Black", "hours"])
    assert attack_coordinates(arrays["columns"], "numeric") == (2, 4)
    assert attack_coordinates(["x0", "x1"], "numeric") is None  # every column: the plain attack
    metrics = {"robust": {"test_radii": [0, 0.1], "attack": "numeric"}}
    ok = run_cell(spec("adv", "2", hyper={"radius": 0.1, "attack_coordinates": [2, 4]}, experiment="adv",
                       metrics=metrics), arrays)
    np.testing.assert_array_equal(extra(ok, "robust_accuracy_0"), ok["accuracy"].to_numpy())
    assert (extra(ok, "robust_accuracy_0.1") <= extra(ok, "robust_accuracy_0")).all()
    with pytest.raises(ValueError, match="trained against the attack on columns"):  # trained on every column
        run_cell(spec("adv", "2", hyper={"radius": 0.1}, experiment="adv", metrics=metrics), arrays)
    with pytest.raises(ValueError, match="trained against the attack on columns"):  # measured on every column
        run_cell(spec("adv", "2", hyper={"radius": 0.1, "attack_coordinates": [2, 4]}, experiment="adv",
                      metrics={"robust": {"test_radii": [0, 0.1]}}), arrays)


def test_solver_speed_measures_the_black_box_fits_against_the_certified_optimum():
    """The hook reads the split's certified optimum, measures each black-box solver once per
    split (every ε cell of a job gets the same numbers) and leaves other fits alone."""
    from dperm.optimum import compute_optima
    from dperm.protocol.runner import run_job

    arrays = toy_arrays(n=200)
    metrics = {"solver_speed": {"sgd_budget": 2}}
    protocol = {"kind": "holdout", "test_fraction": 0.25, "repeats": 1, "draws": 2}
    cells = [spec("outpert-blackbox", e, hyper={"solver": "agd"}, metrics=metrics, experiment="compare",
                  protocol=protocol) for e in ("1", "10")]
    optima = compute_optima(cells[0], arrays)
    records = run_job(cells, arrays, optima)
    evals = extra(records, "grad_evals_to_alpha")
    assert len(set(evals)) == 1 and evals[0] <= extra(records, "certified_grad_evals")[0]
    assert set(extra(records, "reached_alpha")) == {True}
    exact = run_cell(spec("outpert-exact", "1", metrics=metrics, experiment="compare", protocol=protocol), arrays,
                     optima)
    assert "grad_evals_to_alpha" not in json.loads(exact["extra"].iloc[0])
    with pytest.raises(ValueError, match="certified optima"):
        run_cell(cells[0], arrays)
