"""Non-private tuning: the grid is searched through run_cell and the best point is chosen."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from dperm import grid as ex
from dperm.config import ConfigError
from dperm.tuning import tune


def _paper(tmp_path):
    config = {
        "paper": "p",
        "models": {"lr": {"loss": "logistic", "l2": 0.01}},
        "algorithms": {"nonprivate": {}, "dp-sgd": {"batch_size": 50}},
        "experiments": {"e": {"datasets": ["wine"], "models": ["lr"], "algorithms": ["nonprivate", "dp-sgd"],
                              "epsilons": [1.0], "delta": 1e-6, "protocol": {"kind": "kfold", "folds": 3}}},
        "tuning": {"experiments": ["e"], "protocol": {"kind": "kfold", "folds": 3, "draws": 2},
                   "l2": {"grid": [1e-4, 10.0], "algorithms": ["dp-sgd"]},
                   "hyper": [{"algorithm": "dp-sgd", "grid": {"epochs": [0.01, 3]}, "epsilons": [2.0]}]},
    }
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(config))
    return ex.load_paper(path)


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = np.hstack([np.ones((n, 1)), rng.uniform(size=(n, 4))])
    y01 = (X[:, 1] + X[:, 2] > 1.0).astype(np.int8)
    return {"X": X, "y01": y01, "ypm": (2 * y01 - 1).astype(np.int8), "preprocessing": np.array("public-bounds")}


def test_tuning_picks_the_informative_lambda_and_enough_epochs(tmp_path):
    paper, data = _paper(tmp_path), _data()
    chosen, grid = tune(paper, lambda dataset, profile: data, seed=1)
    choice = chosen["wine"]["default"]["lr"]
    assert choice["l2"] == 1e-4  # λ = 10 flattens the separating direction
    assert choice["hyper"]["dp-sgd"] == {"epochs": 3}
    assert grid["chosen"].sum() == 2 and len(grid) == 4
    assert grid.loc[grid["chosen"], "mean_accuracy"].min() >= grid["mean_accuracy"].median()
    spec = ex.apply_tuning(ex.cell_spec(paper, ex.cells(paper)[1], seed=1), chosen)
    assert spec["tuning"] == "non-private" and spec["model"]["l2"] == 1e-4


def test_a_grid_runs_only_where_its_algorithm_does(tmp_path):
    import copy

    from dperm.tuning import as_spec, needed_profiles, runs_with

    config = copy.deepcopy(as_spec(_paper(tmp_path)))
    config["experiments"]["e2"] = {**copy.deepcopy(config["experiments"]["e"]), "datasets": ["bike"],
                                   "algorithms": ["nonprivate"]}
    config["tuning"]["experiments"].append("e2")
    assert runs_with(config, "dp-sgd", "wine", "lr") and not runs_with(config, "dp-sgd", "bike", "lr")
    data = _data()
    chosen, grid = tune(config, lambda dataset, profile: data, seed=1)
    assert "dp-sgd" in chosen["wine"]["default"]["lr"]["hyper"] and chosen["bike"]["default"]["lr"]["hyper"] == {}
    assert set(grid.loc[grid["dataset"] == "bike", "tuned"]) == {"l2"}
    assert needed_profiles(config, "e2", "bike", "lr") == {"default"}


def test_the_table_flags_choices_at_the_edge_of_their_grid(tmp_path):
    paper, data = _paper(tmp_path), _data()
    _, grid = tune(paper, lambda dataset, profile: data, seed=1)
    chosen = grid[grid["chosen"]].set_index("tuned")
    assert chosen.loc["l2", "at_edge"] == "l2=0.0001 (smallest)"
    assert chosen.loc["dp-sgd", "at_edge"] == "epochs=3 (largest)"
    assert (grid.loc[~grid["chosen"], "at_edge"] == "").all()
    assert np.isfinite(grid["mean_validation_loss"]).all()


def test_grid_edges_names_extreme_values_only_in_grids_of_two_or_more():
    from dperm.tuning import grid_edges

    grid = {"steps": [50, 10, 200], "learning_rate": [1.0], "solver": ["gd", "agd", "sgd"]}
    assert grid_edges(grid, {"steps": 50, "learning_rate": 1.0, "solver": "agd"}) == ""
    assert grid_edges(grid, {"steps": 10, "learning_rate": 1.0, "solver": "sgd"}) == \
        "steps=10 (smallest); solver=sgd (last)"
    assert grid_edges(grid, {"steps": 200, "learning_rate": 1.0, "solver": "gd"}) == \
        "steps=200 (largest); solver=gd (first)"


def _imbalanced(n=900, seed=3):
    """95% of labels 0, independent of the features: every sensible classifier predicts 0 on
    every row, so all λ tie in accuracy, but only a small λ learns the intercept."""
    rng = np.random.default_rng(seed)
    X = np.hstack([np.ones((n, 1)), rng.uniform(size=(n, 3))])
    y01 = (rng.uniform(size=n) < 0.05).astype(np.int8)
    return {"X": X, "y01": y01, "ypm": (2 * y01 - 1).astype(np.int8),
            "preprocessing": np.array("data-dependent")}


def test_validation_loss_separates_settings_that_tie_in_accuracy(tmp_path):
    from dperm.tuning import as_spec

    paper, data = as_spec(_paper(tmp_path)), _imbalanced()
    paper["tuning"] = {**paper["tuning"], "l2": {"grid": [1e-4, 10.0], "algorithms": []}, "hyper": []}
    by_loss, grid = tune(paper, lambda dataset, profile: data, seed=1)
    assert grid["mean_accuracy"].nunique() == 1  # an exact tie in accuracy
    assert by_loss["wine"]["default"]["lr"]["l2"] == 1e-4  # the model that learns the base rate
    losses = grid.set_index("setting")["mean_validation_loss"]
    assert losses["l2=0.0001"] < losses["l2=10.0"] - 0.1
    paper["tuning"]["criterion"] = "accuracy"
    by_accuracy, _ = tune(paper, lambda dataset, profile: data, seed=1)
    assert by_accuracy["wine"]["default"]["lr"]["l2"] == 10.0  # the tie goes to the larger λ


def test_a_diverged_grid_point_ranks_last():
    import pandas as pd

    from dperm.tuning import _score

    good = pd.DataFrame({"test_loss": [0.5, 0.7], "accuracy": [0.8, 0.8]})
    diverged = pd.DataFrame({"test_loss": [np.inf, 0.1], "accuracy": [0.9, 0.9]})
    assert _score([good], "validation-loss")[0] < _score([diverged], "validation-loss")[0] == np.inf
    assert _score([diverged], "accuracy")[0] < _score([good], "accuracy")[0]


def test_a_zero_at_the_bottom_of_a_non_negative_grid_is_flagged_as_the_natural_bound():
    from dperm.tuning import grid_edges

    assert grid_edges({"l2": [0.0, 1e-5, 1e-3]}, {"l2": 0.0}) == "l2=0.0 (smallest, 0: no smaller value exists)"
    assert grid_edges({"shift": [-1.0, 0.0, 1.0]}, {"shift": -1.0}) == "shift=-1.0 (smallest)"


def test_an_algorithm_with_two_grid_blocks_is_refused_at_load_time(tmp_path):
    """The second block's choice would silently replace the first's (the quick config once listed
    outpert-public twice)."""
    import pytest

    path = tmp_path / "p.yaml"
    _paper(tmp_path)
    config = yaml.safe_load(path.read_text())
    block = config["tuning"]["hyper"][0]
    config["tuning"]["hyper"].append({**block, "grid": {"epochs": [1, 2]}})
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=r"tuning.hyper.*\['dp-sgd'\] have more than one grid block"):
        ex.load_paper(path)


def test_a_per_epsilon_block_chooses_a_point_for_each_epsilon_and_a_cell_takes_its_own(tmp_path):
    """OutPert-like trade-off: more epochs help at a large ε and hurt at a small one, so one
    point for all ε cannot serve both; a per-ε block chooses each, the cells apply theirs."""
    import copy

    from dperm.config import ConfigError
    from dperm.tuning import as_spec

    spec = copy.deepcopy(as_spec(_paper(tmp_path)))
    spec["experiments"]["e"]["epsilons"] = [0.05, 8.0]
    spec["tuning"]["hyper"] = [{"algorithm": "dp-sgd", "grid": {"epochs": [0.05, 20]}, "epsilons": [0.05, 8.0],
                                "per_epsilon": True}]
    chosen, grid = tune(spec, lambda dataset, profile: _data(), seed=1)
    by_eps = chosen["wine"]["default"]["lr"]["hyper"]["dp-sgd"]["by_epsilon"]
    assert set(by_eps) == {"0.05", "8"}
    assert set(grid["tuned"]) >= {"dp-sgd (ε = 0.05)", "dp-sgd (ε = 8)"} and grid["chosen"].sum() == 3  # λ + 2
    paper = _paper(tmp_path)
    cell = next(c for c in ex.cells(paper) if c.algorithm == "dp-sgd")
    untuned = ex.cell_spec(paper, cell, seed=1)
    fake = {"wine": {"default": {"lr": {"l2": 0.01, "hyper": {"dp-sgd": {"by_epsilon": {cell.epsilon: {"epochs": 7}}}}}}}}
    assert ex.apply_tuning(untuned, fake)["hyper"]["epochs"] == 7
    fake["wine"]["default"]["lr"]["hyper"]["dp-sgd"]["by_epsilon"] = {"99": {"epochs": 7}}
    with pytest.raises(ValueError, match="no point at epsilon"):
        ex.apply_tuning(untuned, fake)
    # a per-ε block must cover every ε its algorithm runs at
    import yaml

    config = yaml.safe_load((tmp_path / "p.yaml").read_text())
    config["tuning"]["hyper"] = [{"algorithm": "dp-sgd", "grid": {"epochs": [1, 3]}, "epsilons": [7.0],
                                  "per_epsilon": True}]
    (tmp_path / "q.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match="per_epsilon chooses a point for each epsilon"):
        ex.load_paper(tmp_path / "q.yaml")


def test_tuning_reports_its_grid_points_done_out_of_those_planned(tmp_path):
    import copy

    from dperm.tuning import as_spec

    lines = []
    spec = copy.deepcopy(as_spec(_paper(tmp_path)))
    spec["experiments"]["e"]["epsilons"] = [0.5, 8.0]
    spec["tuning"]["hyper"] = [{"algorithm": "dp-sgd", "grid": {"epochs": [0.05, 2], "batch_size": [50, 100]},
                                "epsilons": [0.5, 8.0], "per_epsilon": True}]
    import logging

    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logger = logging.getLogger("dperm.progress")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        _, grid = tune(spec, lambda dataset, profile: _data(), seed=1)
    finally:
        logger.removeHandler(handler)
    planned = 2 + 2 * 2 * 2  # the lambda grid, then 2 x 2 points for each of the two epsilons
    assert len(grid) == planned
    assert lines and lines[-1].startswith(f"p/tuning/every dataset: {planned}/{planned} grid points (100%)")


def _two_models_two_profiles(tmp_path):
    """The tuning spec of a dataset tuned for two models and, by a second experiment, on a second
    profile: three parts."""
    import copy

    from dperm.tuning import as_spec

    spec = copy.deepcopy(as_spec(_paper(tmp_path)))
    spec["models"]["svm"] = {"loss": "hinge", "l2": 0.01}
    spec["experiments"]["e"]["models"] = ["lr", "svm"]
    spec["experiments"]["pub"] = {**copy.deepcopy(spec["experiments"]["e"]), "models": ["lr"], "profile": "public"}
    spec["experiments"]["e"]["profile"] = "default"
    spec["tuning"]["experiments"].append("pub")
    spec["dataset"] = "wine"
    return spec


def _by_profile(dataset, profile):
    return _data(seed={"default": 0, "public": 5}[profile])


def test_a_dataset_s_tuning_parts_joined_are_one_run_over_the_dataset(tmp_path):
    """Each (model, tuning profile) part reads none of another's runs: run one by one and merged,
    the parts give the choices and the grid (every score) of one run, in its order."""
    from dperm.tuning import merge, tuning_parts

    spec = _two_models_two_profiles(tmp_path)
    parts = tuning_parts(spec, "wine")
    assert parts == [("lr", "default"), ("svm", "default"), ("lr", "public")]
    whole, whole_grid = tune(spec, _by_profile, seed=1, datasets=["wine"])
    runs = [tune(spec, _by_profile, seed=1, datasets=["wine"], parts=[part]) for part in parts]
    assert [list(grid[["model", "profile"]].drop_duplicates().itertuples(index=False, name=None))
            for _, grid in runs] == [[part] for part in parts]
    chosen, grid = merge(runs)
    assert chosen == whole and list(chosen["wine"]) == list(whole["wine"])
    assert grid.to_csv(index=False) == whole_grid.to_csv(index=False)
    with pytest.raises(ValueError, match="two tuning parts choose for wine/default/lr"):
        merge([runs[0], runs[0]])


def test_an_unknown_tuning_part_is_named_with_the_parts_there_are(tmp_path):
    spec = _two_models_two_profiles(tmp_path)
    with pytest.raises(ValueError, match=r"no tuning part svm/public: the parts of wine are "
                                         r"lr/default, lr/public, svm/default \(model/profile\)"):
        tune(spec, _by_profile, seed=1, datasets=["wine"], parts=[("svm", "public")])


def test_the_tuning_table_verb_rejoins_the_parts_files_as_one_run_writes_them(tmp_path):
    """dperm tuning-table reads the parts' files back (text columns, an empty at_edge, the order of
    the choices) and writes what one run over the dataset writes, byte for byte."""
    import json
    import subprocess
    import sys

    from dperm.tuning import tuning_parts

    spec = _two_models_two_profiles(tmp_path)
    whole, whole_grid = tune(spec, _by_profile, seed=1, datasets=["wine"])
    files = []
    for model, profile in tuning_parts(spec, "wine"):
        chosen, grid = tune(spec, _by_profile, seed=1, datasets=["wine"], parts=[(model, profile)])
        stem = tmp_path / f"{model}-{profile}"
        stem.with_suffix(".csv").write_text(grid.to_csv(index=False))
        stem.with_suffix(".json").write_text(json.dumps(chosen, indent=1))
        files.append(str(stem.with_suffix(".json")))
    out = tmp_path / "wine"
    run = subprocess.run([sys.executable, "-m", "dperm", "tuning-table", "--parts", *files, "--json", f"{out}.json",
                          "--csv", f"{out}.csv", "--html", f"{out}.html"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "wine.csv").read_text() == whole_grid.to_csv(index=False)
    from dperm.files import write_json_atomic

    write_json_atomic(tmp_path / "one-run.json", whole)
    assert (tmp_path / "wine.json").read_text() == (tmp_path / "one-run.json").read_text()
    assert (tmp_path / "wine.html").read_text().count("<tr>") == len(whole_grid) + 1
    bad = subprocess.run([sys.executable, "-m", "dperm", "tuning-table", "--parts", files[0].removesuffix(".json")
                          + ".csv", "--json", f"{out}.json", "--csv", f"{out}.csv"], capture_output=True, text=True)
    assert bad.returncode != 0 and "give each part's choices file (.json" in bad.stderr and "Traceback" not in bad.stderr
