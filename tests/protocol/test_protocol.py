"""The run protocol: setting tokens, seeds, splits, records and determinism."""

from __future__ import annotations

import io
import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

from dperm.protocol.columns import RECORD_COLUMNS
from dperm.protocol.runner import run_cell, run_job
from dperm.protocol.seeds import derive_seed, split_seed
from dperm.protocol.settings import format_epsilon, parse_setting
from dperm.protocol.splits import make_splits


@pytest.mark.parametrize("value, text", [(0.05, "0.05"), (1, "1"), (1.0, "1"), ("1.0", "1"),
                                         (1.6, "1.6"), (1e-3, "0.001"), (math.inf, "inf"),
                                         ("inf", "inf"), ("T100", "T100")])
def test_epsilon_has_one_spelling(value, text):
    assert format_epsilon(value) == text
    assert parse_setting(text)[0] == (math.inf if text.startswith(("inf", "T")) else float(text))


@pytest.mark.parametrize("bad", [0, -1, float("nan"), "T0", "x"])
def test_bad_epsilon_is_refused(bad):
    with pytest.raises(ValueError):
        format_epsilon(bad)


def test_seeds_do_not_depend_on_python_hash_randomisation():
    code = "from dperm.protocol.seeds import derive_seed; print(derive_seed(7, 'lee2018', 'fig2', 'adult', 3))"
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": h, "PYTHONPATH": str(REPO / "src")}).stdout
            for h in ("1", "2", "random")}
    assert len(outs) == 1 and int(outs.pop()) == derive_seed(7, "lee2018", "fig2", "adult", 3)
    assert derive_seed(7, "a", 1) != derive_seed(7, "a", 2) != derive_seed(8, "a", 2)


def test_kfold_splits_partition_the_rows_and_repeats_differ():
    splits = make_splits({"kind": "kfold", "folds": 5, "repeats": 2}, 103, seed=1)
    assert len(splits) == 10
    for repeat in (0, 1):
        tests = [s.test for s in splits if s.repeat == repeat]
        np.testing.assert_array_equal(np.sort(np.concatenate(tests)), np.arange(103))
        for s in splits:
            assert len(np.intersect1d(s.train, s.test)) == 0 and len(s.train) + len(s.test) == 103
    assert not np.array_equal(splits[0].test, splits[5].test)
    again = make_splits({"kind": "kfold", "folds": 5, "repeats": 2}, 103, seed=1)
    assert all(np.array_equal(a.test, b.test) for a, b in zip(splits, again))


def test_holdout_and_full_splits():
    (s,) = make_splits({"kind": "holdout", "test_fraction": 0.25}, 100, seed=0)
    assert len(s.test) == 25 and len(s.train) == 75
    (f,) = make_splits({"kind": "full"}, 10, seed=0)
    np.testing.assert_array_equal(f.train, f.test)
    with pytest.raises(ValueError, match="protocol kind 'loo'"):
        make_splits({"kind": "loo"}, 10, seed=0)


def _toy(n=400, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = np.hstack([np.ones((n, 1)), rng.uniform(size=(n, p - 1))])
    y01 = (X @ rng.normal(size=p) + 0.3 * rng.normal(size=n) > X @ np.full(p, 0.1)).astype(np.int8)
    return {"X": X, "y01": y01, "ypm": (2 * y01 - 1).astype(np.int8), "preprocessing": np.array("public-bounds")}


def _spec(algorithm="dp-sgd", epsilon="1", draws=3):
    return {"paper": "t", "experiment": "e", "dataset": "toy", "profile": "default",
            "model": {"name": "lr", "loss": "logistic", "l2": 1e-3}, "algorithm": algorithm,
            "hyper": {"epochs": 2, "batch_size": 50} if algorithm == "dp-sgd" else {},
            "epsilon": epsilon, "delta": 1e-6, "seed": 11,
            "protocol": {"kind": "kfold", "folds": 4, "repeats": 1, "draws": draws}}


def test_records_have_the_documented_columns_and_one_row_per_fit():
    records = run_cell(_spec(), _toy())
    assert list(records.columns) == RECORD_COLUMNS
    assert len(records) == 4 * 3
    assert set(records["draw"]) == {0, 1, 2} and set(records["fold"]) == {0, 1, 2, 3}
    assert records["epsilon_spent"].max() <= 1 + 1e-9 and (records["adjacency"] == "add-remove").all()
    design = {"paper", "experiment", "dataset", "model", "algorithm", "variant", "epsilon", "delta",
              "epsilon_spent", "fold", "repeat", "draw", "seed", "accuracy", "objective", "opt_gap",
              "fit_seconds", "grad_evals", "n_train", "p", "tuning", "dperm_version"}
    assert design <= set(records.columns)


def test_nonprivate_runs_once_per_fold_and_majority_scores_the_majority():
    data = _toy()
    nonprivate = run_cell(_spec("nonprivate", "inf"), data)
    assert len(nonprivate) == 4 and np.isinf(nonprivate["epsilon"]).all()
    spec = _spec("majority", "inf")
    majority = run_cell(spec, data)
    assert majority["objective"].isna().all()
    assert (majority["dp_as_implemented"] == "n/a").all() and (nonprivate["dp_as_implemented"] == "n/a").all()
    assert (run_cell(_spec(), data)["dp_as_implemented"] == True).all()  # noqa: E712  (a bool, not a string)
    for split in make_splits(spec["protocol"], 400, split_seed(spec)):
        train, test = data["y01"][split.train], data["y01"][split.test]
        label = int(train.mean() >= 0.5)
        fold_acc = majority.loc[majority["fold"] == split.fold, "accuracy"].item()
        assert fold_acc == pytest.approx(np.mean(test == label))


def test_opt_gap_uses_the_optimum_of_the_same_split():
    from dperm.optimum import compute_optima

    data, spec = _toy(), _spec("nonprivate", "inf")
    optima = compute_optima(spec, data)
    records = run_cell(spec, data, optima)
    np.testing.assert_allclose(records["excess_risk"], 0.0, atol=1e-8)  # NonPrivate is the optimum
    assert (records["opt_gap"] >= -1e-9).all() and (optima["certified"]).all()


def test_a_path_runs_every_step_count_in_one_run_and_the_longest_as_alone():
    from dperm.optimum import compute_optima

    data = _toy()
    spec = {**_spec("sgd-ma", "T40", draws=2), "hyper": {}}
    optima = compute_optima(spec, data)
    alone = run_cell(spec, data, optima)
    path = run_cell({**spec, "path": [1, 15]}, data, optima)
    assert list(path.columns) == RECORD_COLUMNS
    assert path.groupby("setting").size().to_dict() == {"T1": 8, "T15": 8, "T40": 8}
    longest = path[path["setting"] == "T40"].reset_index(drop=True)
    same = [c for c in RECORD_COLUMNS if c != "fit_seconds"]
    pd.testing.assert_frame_equal(longest[same], alone[same])
    by = path.groupby("setting")
    assert (by["iterations"].unique().map(list).to_dict() == {"T1": [1], "T15": [15], "T40": [40]})
    assert by["seed"].apply(list).map(tuple).nunique() == 1  # the same fits, cut at each step count
    eps = by["epsilon_spent"].mean()
    assert eps["T1"] < eps["T15"] < eps["T40"]
    assert path["excess_risk"].notna().all() and np.isinf(path["epsilon"]).all()
    with pytest.raises(ValueError, match=r"path=\[40\]"):
        run_cell({**spec, "path": [40]}, data)
    with pytest.raises(ValueError, match="a path needs a T<steps> setting"):
        run_cell({**_spec(), "path": [1]}, data)


def test_a_row_runs_each_cell_as_it_runs_alone_on_shared_read_only_folds():
    from dperm.protocol.runner import _train_problem, build_problem

    data = _toy()
    X_before = data["X"].copy()
    hinge = {"name": "svm", "loss": "hinge", "l2": 1e-3}
    specs = [_spec(epsilon=e) for e in ("0.5", "1", "2")] + [
        {**_spec("nonprivate", "inf"), "model": hinge}]  # another loss: ±1 labels on the same folds
    row = run_job(specs, data)
    alone = pd.concat([run_cell(s, data) for s in specs], ignore_index=True)
    same = [c for c in RECORD_COLUMNS if c != "fit_seconds"]
    pd.testing.assert_frame_equal(row[same], alone[same])
    assert row["setting"].tolist() == alone["setting"].tolist()
    assert row.groupby("setting").size().to_dict() == {"0.5": 12, "1": 12, "2": 12, "inf": 4}
    np.testing.assert_array_equal(data["X"], X_before)

    full = build_problem(specs[0], data)
    split = make_splits(specs[0]["protocol"], full.n, split_seed(specs[0]))[1]
    folds = {}
    first, second = (_train_problem(full, split, folds, "k") for _ in range(2))
    assert first.X is second.X and not first.X.flags.writeable  # cut once; no fit can change it
    np.testing.assert_array_equal(first.X, full.X[split.train])
    np.testing.assert_array_equal(first.row_norms, full.row_norms[split.train])
    with pytest.raises(ValueError, match="at least one cell spec"):
        run_job([], data)


def test_a_row_fits_the_epsilons_of_dp_agd_together_each_as_alone():
    data = _toy()
    specs = [{**_spec("dp-agd", e, draws=2), "hyper": {"splits": 10}} for e in ("0.5", "1", "2")]
    specs.append({**specs[0], "algorithm": "dp-agd-reference", "epsilon": "1"})  # another key: alone
    row = run_job(specs, data)
    alone = pd.concat([run_cell(s, data) for s in specs], ignore_index=True)
    numbers = ["accuracy", "objective", "regularised_objective", "grad_evals"]
    exact = [c for c in RECORD_COLUMNS if c not in numbers + ["fit_seconds"]]
    pd.testing.assert_frame_equal(row[exact], alone[exact])  # seeds, settings, ε spent, iterations
    np.testing.assert_allclose(row[numbers].to_numpy(float), alone[numbers].to_numpy(float), rtol=1e-9)
    shared = row[row["algorithm"] == "dp-agd"].groupby(["fold", "repeat"])["fit_seconds"].nunique()
    assert (shared == 1).all()  # a split's shared time, divided evenly among the three cells
    assert row.groupby("setting").size().to_dict() == {"0.5": 8, "1": 16, "2": 8}


def test_a_cell_is_cut_from_a_path_file_with_its_text_unchanged(tmp_path):
    from dperm.records import cut_cell

    data = _toy()
    spec = {**_spec("sgd-ma", "T30", draws=2), "hyper": {}, "path": [1, 10]}
    source = tmp_path / "path.csv"
    source.write_text(run_cell(spec, data).to_csv(index=False))
    lines = source.read_text().splitlines()
    out = tmp_path / "cell.csv"
    assert cut_cell(source, out, "T10") == 8
    cell = out.read_text().splitlines()
    assert cell[0] == lines[0] and cell[1:] == [line for line in lines[1:] if ",T10," in line]
    with pytest.raises(ValueError, match=r"no records at setting 'T5'; it has \['T1', 'T10', 'T30'\]"):
        cut_cell(source, tmp_path / "none.csv", "T5")
    assert not (tmp_path / "none.csv").exists()
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ValueError, match="is empty"):
        cut_cell(tmp_path / "empty.csv", out, "T1")
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="no 'setting' column"):
        cut_cell(tmp_path / "other.csv", out, "T1")
    cli = tmp_path / "cli.csv"  # the pipeline's command
    subprocess.run([sys.executable, "-m", "dperm", "cut-cell", "--setting", "T1", str(source), str(cli)],
                   check=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")}, capture_output=True)
    assert pd.read_csv(cli)["iterations"].eq(1).all() and len(pd.read_csv(cli)) == 8


def _deterministic_bytes(frame: pd.DataFrame) -> str:
    return frame.drop(columns=["fit_seconds"]).to_csv(index=False)


def test_same_seed_same_bytes_across_processes_and_thread_counts(tmp_path):
    """Each run in a fresh process, with BLAS pinned to 1 and to 2 threads."""
    import json

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(_spec()))
    data = tmp_path / "toy.npz"
    np.savez(data, **_toy())
    (tmp_path / "toy.json").write_text("{}")
    outs = []
    for threads in ("1", "2", "1"):
        out = tmp_path / f"cell{len(outs)}.csv"
        subprocess.run([sys.executable, "-m", "dperm", "--threads", threads, "run-job", "--spec",
                        f"@{spec}", "--data", str(data), "--out", str(out)], check=True,
                       env={**os.environ, "PYTHONPATH": str(REPO / "src")}, capture_output=True)
        outs.append(_deterministic_bytes(pd.read_csv(out)))
    assert outs[0] == outs[1] == outs[2]
    assert pd.read_csv(io.StringIO(outs[0]))["objective"].nunique() > 1  # draws really differ


def test_markdown_leaves_out_a_metric_no_cell_has():
    """opt_gap is NaN everywhere when a paper does not solve L* (optimum.unregularised: false)."""
    from dperm.report.tables import KEYS, markdown, summarise

    base = {k: "x" for k in KEYS}
    records = pd.DataFrame([{**base, "epsilon": 1.0, "accuracy": a, "test_loss": 0.31, "objective": 0.3,
                             "opt_gap": np.nan, "excess_risk": 0.01, "epsilon_spent": 1.0, "fit_seconds": 0.1, "grad_evals": 5}
                            for a in (0.8, 0.9)])
    text = markdown(summarise(records))
    header = next(line for line in text.splitlines() if line.startswith("| dataset"))
    assert "accuracy" in header and "objective" in header and "opt_gap" not in header
    records["opt_gap"] = 0.2
    assert "opt_gap" in markdown(summarise(records))


def test_accuracy_axis_says_training_accuracy_under_the_full_protocol():
    """Lee & Kifer's Figure 1 fits and evaluates on all rows: its axis must not say test accuracy."""
    from dperm.report.figures import metric_label

    assert metric_label("accuracy", {"kind": "full"}) == "training accuracy"
    assert metric_label("accuracy", {"kind": "kfold", "folds": 5}) == "test accuracy"
    assert metric_label("objective", {"kind": "full"}) == metric_label("objective")
