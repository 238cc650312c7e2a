"""Non-private tuning: the grid is searched through run_cell and the best point is chosen."""

from __future__ import annotations

import numpy as np
import yaml

from dperm import experiments as ex
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

    from dperm.tuning import needed_profiles, runs_with

    paper = _paper(tmp_path)
    config = copy.deepcopy(paper)
    config["experiments"]["e2"] = {**copy.deepcopy(config["experiments"]["e"]), "datasets": ["bike"],
                                   "algorithms": ["nonprivate"]}
    config["tuning"]["experiments"].append("e2")
    assert runs_with(config, "dp-sgd", "wine", "lr") and not runs_with(config, "dp-sgd", "bike", "lr")
    data = _data()
    chosen, grid = tune(config, lambda dataset, profile: data, seed=1)
    assert "dp-sgd" in chosen["wine"]["default"]["lr"]["hyper"] and chosen["bike"]["default"]["lr"]["hyper"] == {}
    assert set(grid.loc[grid["dataset"] == "bike", "tuned"]) == {"l2"}
    assert needed_profiles(config, "e2", "bike", "lr") == {"default"}
