"""Paper configs: cells, specs, and clear errors for bad grids."""

from __future__ import annotations

import pytest
from conftest import REPO, load_config

from dperm import grid as ex
from dperm.config import ConfigError

BASE = {
    "paper": "p",
    "models": {"lr": {"loss": "logistic", "l2": 0.01}},
    "algorithms": {"nonprivate": {}, "dp-sgd": {"epochs": 2}, "dp-sgd-long": {"use": "dp-sgd", "epochs": 20}},
    "experiments": {"e": {"datasets": ["wine"], "models": ["lr"], "algorithms": ["nonprivate", "dp-sgd", "dp-sgd-long"],
                          "epsilons": [0.5, 1.0], "delta": 1e-6, "protocol": {"kind": "kfold"},
                          "per_dataset": {"wine": {"dp-sgd": {"epochs": 3}}}}},
}


_load = load_config


def test_cells_specs_and_precedence(tmp_path):
    paper = _load(tmp_path, BASE)
    cells = ex.cells(paper)
    assert [c.path for c in cells][:2] == ["results/runs/p/e/wine/lr/nonprivate/epsinf.csv",
                                           "results/runs/p/e/wine/lr/dp-sgd/eps0.5.csv"]
    assert len(cells) == 1 + 2 + 2
    spec = ex.cell_spec(paper, cells[1], seed=3)
    assert spec["hyper"] == {"epochs": 3}  # per-dataset wins over the paper section
    assert spec["protocol"]["folds"] == 5 and spec["model"]["l2"] == 0.01
    alias = ex.cell_spec(paper, cells[-1], seed=3)
    assert alias["algorithm"] == "dp-sgd" and alias["cell_algorithm"] == "dp-sgd-long"
    assert alias["hyper"] == {"epochs": 20}


def test_tuned_values_mark_only_the_tuned_cells_non_private(tmp_path):
    import copy

    config = copy.deepcopy(BASE)
    config["tuning"] = {"experiments": ["e"], "protocol": {"kind": "kfold"},
                        "l2": {"grid": [0.1, 0.5], "algorithms": ["dp-sgd"]},
                        "hyper": [{"algorithm": "dp-sgd", "grid": {"epochs": [1, 7]}, "epsilons": [1]}]}
    paper = _load(tmp_path, config)
    nonprivate, dp_sgd = ex.cells(paper)[:2]
    tuned = {"wine": {"default": {"lr": {"l2": 0.5, "hyper": {"dp-sgd": {"epochs": 7}}}}}}
    untuned = ex.cell_spec(paper, dp_sgd, seed=3)  # what the job receives: the config's values only
    assert untuned["tuning"] == "private"
    assert untuned["tuned"] == {"l2": True, "hyper": True, "key": "dp-sgd", "profile": "default"}
    spec = ex.apply_tuning(untuned, tuned)  # inside the job
    assert spec["model"]["l2"] == 0.5 and spec["hyper"]["epochs"] == 7 and spec["tuning"] == "non-private"
    assert "l2-0.5.csv" in ex.optimum_path(spec)
    assert untuned["model"]["l2"] == 0.01  # applying the choices does not change the job's spec
    untouched = ex.apply_tuning(ex.cell_spec(paper, nonprivate, seed=3), tuned)
    assert untouched["model"]["l2"] == 0.01 and untouched["tuning"] == "n/a"  # a non-private fit: no label
    with pytest.raises(ValueError, match="needs the paper's tuning choices"):
        ex.apply_tuning(untuned, None)


def test_a_key_tuned_as_another_runs_with_that_keys_choices(tmp_path):
    """``tuned_as``: a control runs with the hyper-parameters the tuning run chose for another key
    (and is not tuned itself); naming an untuned key, or giving the key a grid too, is refused."""
    import copy

    config = copy.deepcopy(BASE)
    config["algorithms"]["dp-sgd-long"]["tuned_as"] = "dp-sgd"
    config["tuning"] = {"experiments": ["e"], "protocol": {"kind": "kfold"},
                        "hyper": [{"algorithm": "dp-sgd", "grid": {"epochs": [1, 7]}, "epsilons": [1]}]}
    paper = _load(tmp_path, config)
    alias = ex.cell_spec(paper, ex.cells(paper)[-1], seed=3)
    assert alias["cell_algorithm"] == "dp-sgd-long" and "tuned_as" not in alias["hyper"]
    assert alias["tuned"] == {"l2": False, "hyper": True, "key": "dp-sgd", "profile": "default"}
    tuned = {"wine": {"default": {"lr": {"hyper": {"dp-sgd": {"epochs": 7}}}}}}
    spec = ex.apply_tuning(alias, tuned)
    assert spec["hyper"]["epochs"] == 7 and spec["tuning"] == "non-private"
    bad = copy.deepcopy(config)
    bad["algorithms"]["dp-sgd-long"]["tuned_as"] = "nonprivate"
    with pytest.raises(Exception, match="is not a key the tuning run tunes"):
        _load(tmp_path, bad)
    twice = copy.deepcopy(config)
    twice["tuning"]["hyper"].append({"algorithm": "dp-sgd-long", "grid": {"epochs": [2]}, "epsilons": [1]})
    with pytest.raises(Exception, match="has no grid of its own"):
        _load(tmp_path, twice)


def test_values_derived_from_the_data_mark_their_cells_non_private(tmp_path):
    import copy

    config = copy.deepcopy(BASE)
    config["experiments"]["e"]["data_derived"] = {"dp-sgd": ["clip"]}
    paper = _load(tmp_path, config)
    marked = {c.algorithm: ex.cell_spec(paper, c, seed=1)["tuning"] for c in ex.cells(paper)}
    assert marked == {"nonprivate": "n/a", "dp-sgd": "non-private", "dp-sgd-long": "private"}
    config["experiments"]["e"]["data_derived"] = {"dp-sgd": ["clipping"]}
    with pytest.raises(Exception, match=r"data_derived.dp-sgd: \['clipping'\] are not hyper-parameters"):
        _load(tmp_path, config)


def test_sweep_expands_into_one_cell_key_per_value(tmp_path):
    import copy

    config = copy.deepcopy(BASE)
    config["experiments"]["s"] = {"datasets": ["wine"], "models": ["lr"], "algorithms": ["dp-sgd"],
                                  "epsilons": [1], "delta": 1e-6, "protocol": {"kind": "full"},
                                  "sweep": {"param": "clip", "values": [0.5, 2]},
                                  "model_overrides": {"lr": {"l2": 0}}}
    paper = _load(tmp_path, config)
    cells = ex.cells(paper, ["s"])
    assert [c.algorithm for c in cells] == ["dp-sgd-clip0.5", "dp-sgd-clip2"]
    spec = ex.cell_spec(paper, cells[1], seed=1)
    assert spec["hyper"]["clip"] == 2 and spec["sweep"] == "clip=2" and spec["algorithm"] == "dp-sgd"
    assert spec["model"]["l2"] == 0


def test_a_swept_value_of_zero_is_its_own_cell_and_repeats_are_refused(tmp_path):
    import copy

    config = copy.deepcopy(BASE)
    config["experiments"]["s"] = {"datasets": ["wine"], "models": ["lr"], "algorithms": ["dp-sgd"],
                                  "epsilons": [1], "delta": 1e-6, "protocol": {"kind": "full"},
                                  "sweep": {"param": "smoothing", "values": [0, 0.5]}}
    paper = _load(tmp_path, config)
    assert [c.algorithm for c in ex.cells(paper, ["s"])] == ["dp-sgd-smoothing0", "dp-sgd-smoothing0.5"]
    config["experiments"]["s"]["sweep"]["values"] = [2, 2.0]
    with pytest.raises(ConfigError, match="same cell twice"):
        _load(tmp_path, config)


@pytest.mark.parametrize("change, message", [
    (lambda c: c["algorithms"].update({"dp-sdg": {}}), "unknown algorithm 'dp-sdg'; known algorithms:"),
    (lambda c: c["algorithms"]["dp-sgd"].update({"lr": 1}), r"unknown hyper-parameter\(s\) \['lr'\] for algorithm 'dp-sgd'; allowed: \['accountant', 'adjacency', 'batch_size'"),
    (lambda c: c["experiments"]["e"]["models"].append("svm"), r"experiments.e.models: \['svm'\] are not defined in the paper's 'models' section"),
    (lambda c: c["experiments"]["e"]["datasets"].append("mnist"), r"experiments.e.datasets\[1\]: 'mnist' is not allowed; allowed: \['adult'"),
    (lambda c: c["experiments"]["e"]["protocol"].update({"kind": "loo"}), "experiments.e.protocol.kind: 'loo' is not allowed; allowed: \\['kfold', 'holdout', 'full'\\]"),
])
def test_bad_grids_are_refused_with_the_allowed_values(tmp_path, change, message):
    import copy

    config = copy.deepcopy(BASE)
    change(config)
    with pytest.raises(Exception, match=message):
        _load(tmp_path, config)


def test_shipped_paper_configs_load_alone_and_with_their_ci_overlays():
    for path in sorted((REPO / "config" / "papers").glob("*.yaml")):
        paper = ex.load_paper(path)
        assert paper.key == path.stem and ex.cells(paper)
        overlay = REPO / ".test" / "config" / "papers" / path.name
        assert overlay.is_file(), f"every paper has a CI overlay: {overlay}"
        ci = ex.load_paper(path, overlay=overlay)
        assert ex.cells(ci) and ci != paper
        assert "with the overlay" in ci.source


def test_an_overlay_merges_key_by_key_and_null_removes(tmp_path):
    import copy

    import yaml

    base = tmp_path / "p.yaml"
    config = copy.deepcopy(BASE)
    config["experiments"]["other"] = copy.deepcopy(config["experiments"]["e"])
    base.write_text(yaml.safe_dump(config))
    overlay = tmp_path / "o.yaml"
    overlay.write_text(yaml.safe_dump({"experiments": {"other": None, "e": {"protocol": {"folds": 3}}}}))
    paper = ex.load_paper(base, overlay=overlay)
    assert list(paper.experiments) == ["e"]
    assert paper.experiments["e"].protocol["folds"] == 3
    assert paper.experiments["e"].protocol["kind"] == config["experiments"]["e"]["protocol"]["kind"]
    overlay.write_text(yaml.safe_dump({"paper": "another"}))
    with pytest.raises(ConfigError, match="overlays paper 'another'"):
        ex.load_paper(base, overlay=overlay)


def test_dataset_models_narrow_the_models_per_dataset(tmp_path):
    import copy

    config = copy.deepcopy(BASE)
    config["models"]["huber"] = {"loss": "huber"}
    exp = config["experiments"]["e"]
    exp.update(datasets=["wine", "bike"], models=["lr", "huber"], algorithms=["nonprivate"],
               per_dataset={}, dataset_models={"wine": ["lr"], "bike": ["huber"]})
    paper = _load(tmp_path, config)
    assert [(c.dataset, c.model) for c in ex.cells(paper)] == [("wine", "lr"), ("bike", "huber")]
    exp["dataset_models"] = {"wine": ["svm"]}
    with pytest.raises(ValueError, match="dataset_models"):
        _load(tmp_path, config)


def test_algorithm_models_narrow_the_models_per_algorithm(tmp_path):
    import copy

    config = copy.deepcopy(BASE)
    config["models"]["mlp"] = {"loss": "mlp"}
    exp = config["experiments"]["e"]
    exp.update(models=["lr", "mlp"], algorithms=["nonprivate", "dp-sgd"], per_dataset={},
               algorithm_models={"nonprivate": ["lr"]})
    paper = _load(tmp_path, config)
    assert {(j.model, j.algorithm) for j in ex.jobs(paper)} == {("lr", "nonprivate"), ("lr", "dp-sgd"),
                                                                 ("mlp", "dp-sgd")}
    exp["algorithm_models"] = {"nonprivate": ["svm"]}
    with pytest.raises(ValueError, match="algorithm_models"):
        _load(tmp_path, config)


def test_optima_are_solved_unless_the_paper_turns_them_off(tmp_path):
    import copy

    config = copy.deepcopy(BASE)
    config["models"]["mlp"] = {"loss": "mlp", "l2": 0.0}
    paper = _load(tmp_path, config)
    assert paper.optimum == ex.Optimum(solve=True, unregularised=True, multistart=0,
                                       multistart_iterations=200)  # schema defaults
    assert ex.solves_optimum(paper, "lr") and not ex.solves_optimum(paper, "mlp")
    config["optimum"] = {"multistart": 3, "multistart_iterations": 50}  # non-convex: multi-start solves
    multi = _load(tmp_path, config)
    assert ex.solves_optimum(multi, "mlp")
    spec = ex.optimum_spec(multi, "e", "wine", "mlp", "default", 0.0, 0)
    assert spec["multistart"] == {"starts": 3, "iterations": 50}
    assert "multistart" not in ex.optimum_spec(multi, "e", "wine", "lr", "default", 0.01, 0)
    config["optimum"] = {"solve": False}
    assert not ex.solves_optimum(_load(tmp_path, config), "lr")
    lee = ex.load_paper(REPO / "config" / "papers" / "lee2018.yaml")
    assert not ex.solves_optimum(lee, "lr") and not ex.solves_optimum(lee, "svm")
    config["optimum"] = {"solve": "no"}
    with pytest.raises(Exception, match="is not of type 'boolean'"):
        _load(tmp_path, config)


def test_what_does_not_touch_a_result_is_not_in_its_spec(tmp_path):
    """δ is no part of a non-private cell (changing it reruns only the private ones) and the number
    of draws no part of an optimum (changing it solves no optimum again)."""
    import copy

    paper = _load(tmp_path, BASE)
    other = copy.deepcopy(BASE)
    other["experiments"]["e"].update(delta=1e-8)
    changed = _load(tmp_path, other)
    for cell in ex.cells(paper):
        same = ex.cell_spec(paper, cell, 1) == ex.cell_spec(changed, cell, 1)
        assert same == (cell.algorithm == "nonprivate"), cell
    assert ex.cell_spec(paper, ex.cells(paper)[0], 1)["delta"] == 0.0
    other["experiments"]["e"]["protocol"]["draws"] = 7
    changed = _load(tmp_path, other)
    assert (ex.optimum_spec(paper, "e", "wine", "lr", "default", 0.01, 1)
            == ex.optimum_spec(changed, "e", "wine", "lr", "default", 0.01, 1))


def test_a_split_job_runs_its_settings_in_interleaved_parts_and_each_cell_once(tmp_path):
    import copy

    config = copy.deepcopy(BASE)
    config["experiments"]["e"]["epsilons"] = [0.1, 0.3, 1.0, 3.0, 10.0]
    config["experiments"]["e"]["parts"] = {"wine": {"dp-sgd": 2}}
    paper = _load(tmp_path, config)
    job = ex.find_job(paper, "e", "wine", "lr", "dp-sgd")
    assert ex.job_parts(paper, job) == [["0.1", "1", "10"], ["0.3", "3"]]
    whole = ex.job_specs(paper, job, seed=3)
    parts = [ex.job_specs(paper, job, seed=3, part=k) for k in (1, 2)]
    assert sorted(s["epsilon"] for p in parts for s in p) == sorted(s["epsilon"] for s in whole)
    assert all(s in whole for p in parts for s in p)  # a part's specs are the whole job's, unchanged
    cell = next(c for c in ex.cells(paper) if c.algorithm == "dp-sgd" and c.epsilon == "3")
    assert ex.cell_source(paper, cell) == "results/parts/p/e/wine/lr/dp-sgd/part2.csv"
    other = next(c for c in ex.cells(paper) if c.algorithm == "dp-sgd-long")
    assert ex.cell_source(paper, other) == other.job.path  # not split: the job's own file


@pytest.mark.parametrize("parts, message", [
    ({"adult": {"dp-sgd": 2}}, r"experiments.e.parts: 'adult' is not one of the experiment's datasets"),
    ({"wine": {"dp-sdg": 2}}, r"experiments.e.parts.wine: 'dp-sdg' is not one of the experiment's algorithms"),
    ({"wine": {"nonprivate": 2}}, r"experiments.e.parts.wine.nonprivate: only a private algorithm"),
    ({"wine": {"dp-sgd": 3}}, r"experiments.e.parts.wine.dp-sgd: 3 parts for 2 privacy settings: at most 2"),
    ({"wine": {"dp-sgd": 0}}, r"parts.wine.dp-sgd: 0: 0 is less than the minimum of 1"),
])
def test_bad_parts_are_refused(tmp_path, parts, message):
    import copy

    config = copy.deepcopy(BASE)
    config["experiments"]["e"]["parts"] = parts
    with pytest.raises(ConfigError, match=message):
        _load(tmp_path, config)


def test_a_split_optimum_is_read_as_its_parts(tmp_path):
    import copy

    config = copy.deepcopy(BASE)
    config["experiments"]["e"]["optimum_parts"] = {"wine": {"lr": 2}}
    paper = _load(tmp_path, config)
    spec = ex.cell_spec(paper, ex.cells(paper)[1], seed=3)
    assert ex.optimum_files(paper, spec) == ["results/optima/p/e/wine/lr/default/l2-0.01/part1.csv",
                                             "results/optima/p/e/wine/lr/default/l2-0.01/part2.csv"]
    assert ex.optimum_files(_load(tmp_path, BASE), spec) == [ex.optimum_path(spec)]


@pytest.mark.parametrize("change, message", [
    ({"optimum_parts": {"adult": {"lr": 2}}}, r"experiments.e.optimum_parts: 'adult' is not one of the experiment's"),
    ({"optimum_parts": {"wine": {"svm": 2}}}, r"optimum_parts.wine: 'svm' is not one of the models fitted on 'wine'"),
    ({"optimum_parts": {"wine": {"lr": 6}}}, r"optimum_parts.wine.lr: 6 parts for 5 splits: at most 5"),
    ({"optimum_parts": {"wine": {"lr": 2}}, "optimum": {"solve": False}},
     r"optimum_parts.wine.lr: the paper solves no optimum of 'lr'"),
])
def test_bad_optimum_parts_are_refused(tmp_path, change, message):
    import copy

    config = copy.deepcopy(BASE)
    config["experiments"]["e"]["optimum_parts"] = change["optimum_parts"]
    if "optimum" in change:
        config["optimum"] = change["optimum"]
    with pytest.raises(ConfigError, match=message):
        _load(tmp_path, config)
