"""A job split into parts (experiments.<e>.parts) runs as processes of its own whose cells are
those of the whole job: a real Snakemake run of a tiny paper, whole and then split."""

from __future__ import annotations

import copy
import subprocess
import sys

import pandas as pd
import pytest
from conftest import copy_workflow, snakemake_env
from test_reruns import CONFIG, write

pytestmark = pytest.mark.slow

EPSILONS = [0.2, 0.8, 3.2]
PAPER = {
    "paper": "demo", "title": "parts probe",
    "models": {"lr": {"loss": "logistic", "l2": 0.001}},
    "algorithms": {"dp-agd": {}, "dp-sgd": {"epochs": 1, "batch_size": 256}},
    "experiments": {"demo": {"title": "probe", "datasets": ["bank-dpagd"], "models": ["lr"],
                             "algorithms": ["dp-agd", "dp-sgd"], "epsilons": EPSILONS, "delta": 1e-8,
                             "protocol": {"kind": "kfold", "folds": 2, "repeats": 1, "draws": 2}}},
    "optimum": {"solve": False},
    "figures": {"demo": {"kind": "epsilon", "experiment": "demo", "model": "lr", "title": "probe"}},
}
SPLIT = copy.deepcopy(PAPER)
SPLIT["experiments"]["demo"]["parts"] = {"bank-dpagd": {"dp-agd": 2, "dp-sgd": 3}}


def snakemake(root, env, *args):
    return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *args, "--configfile", "test.yaml"],
                          cwd=root, env=env, capture_output=True, text=True)


def cells(root) -> dict[str, pd.DataFrame]:
    out = {}
    for algorithm in ("dp-agd", "dp-sgd"):
        for eps in ("0.2", "0.8", "3.2"):
            frame = pd.read_csv(root / "results" / "runs" / "demo" / "demo" / "bank-dpagd" / "lr" / algorithm
                                / f"eps{eps}.csv")
            out[f"{algorithm}/{eps}"] = frame.drop(columns=["fit_seconds"])
    return out


def test_a_split_job_s_cells_equal_the_whole_job_s(tmp_path, mirror):
    root = tmp_path / "workflow"
    root.mkdir()
    copy_workflow(root)
    (root / "papers").mkdir()
    env = snakemake_env(mirror)
    write(root, PAPER, CONFIG)
    run = snakemake(root, env, "demo")
    assert run.returncode == 0, run.stderr[-3000:]
    whole = cells(root)

    write(root, SPLIT, CONFIG)
    plan = snakemake(root, env, "-n", "demo")
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "run_part" in plan.stdout and "run_job " not in plan.stdout.split("Job stats:")[1].split("Reasons")[0]
    refused = snakemake(root, env, "-n", "results/jobs/demo/demo/bank-dpagd/lr/dp-agd.csv")
    assert refused.returncode != 0
    assert "splits this job into 2 parts" in refused.stderr + refused.stdout
    run = snakemake(root, env, "demo")
    assert run.returncode == 0, run.stderr[-3000:]
    parts = sorted(p.relative_to(root / "results" / "parts").as_posix()
                   for p in (root / "results" / "parts").rglob("part*.csv"))
    assert parts == ["demo/demo/bank-dpagd/lr/dp-agd/part1.csv", "demo/demo/bank-dpagd/lr/dp-agd/part2.csv",
                     "demo/demo/bank-dpagd/lr/dp-sgd/part1.csv", "demo/demo/bank-dpagd/lr/dp-sgd/part2.csv",
                     "demo/demo/bank-dpagd/lr/dp-sgd/part3.csv"]
    split = cells(root)
    for key, frame in whole.items():
        assert len(frame) == 2 * 2  # 2 folds x 2 draws
        # The same chains with the same draws. Their float32 products (DP-AGD's margins, the noisy
        # SGD kernel's sums) may round differently when fewer chains share a BLAS call: bit for
        # bit on some CPUs, within 1e-7 relative on others (an AMD EPYC's OpenBLAS). Everything
        # but the real numbers exactly; those to float32 (an accuracy moves by 1/n, far more).
        reals = [c for c in frame.columns if frame[c].dtype.kind == "f"]
        pd.testing.assert_frame_equal(split[key].drop(columns=reals), frame.drop(columns=reals), check_exact=True,
                                      obj=key)
        pd.testing.assert_frame_equal(split[key][reals], frame[reals], check_exact=False, rtol=1e-6, atol=1e-12,
                                      obj=key)


MLP_PAPER = {
    "paper": "demo", "title": "optimum parts probe",
    "models": {"mlp": {"loss": "mlp", "loss_params": {"hidden": 4}}},
    "algorithms": {"dp-sgd": {"epochs": 1, "batch_size": 256}},
    "experiments": {"demo": {"title": "probe", "datasets": ["bank-dpagd"], "models": ["mlp"],
                             "algorithms": ["dp-sgd"], "epsilons": [0.8], "delta": 1e-8,
                             "protocol": {"kind": "kfold", "folds": 3, "repeats": 1, "draws": 1}}},
    "optimum": {"multistart": 2, "multistart_iterations": 5},
    "figures": {"demo": {"kind": "epsilon", "experiment": "demo", "model": "mlp", "title": "probe"}},
}
MLP_SPLIT = copy.deepcopy(MLP_PAPER)
MLP_SPLIT["experiments"]["demo"]["optimum_parts"] = {"bank-dpagd": {"mlp": 2}}


def test_a_split_optimum_s_parts_are_the_whole_optimum_and_its_cells_are_the_same(tmp_path, mirror):
    """experiments.<e>.optimum_parts: the multi-start optimum of the three splits solved in two
    processes (splits 1 and 3, then 2); the job reads both files; its cells (opt_gap included) and
    the optima are the whole run's bit for bit."""
    root = tmp_path / "workflow"
    root.mkdir()
    copy_workflow(root)
    (root / "papers").mkdir()
    env = snakemake_env(mirror)
    optima = root / "results" / "optima" / "demo" / "demo" / "bank-dpagd" / "mlp" / "default"
    cell = root / "results" / "runs" / "demo" / "demo" / "bank-dpagd" / "mlp" / "dp-sgd" / "eps0.8.csv"
    write(root, MLP_PAPER, CONFIG)
    run = snakemake(root, env, "demo")
    assert run.returncode == 0, run.stderr[-3000:]
    whole_optimum = pd.read_csv(optima / "l2-0.csv")
    whole_cell = pd.read_csv(cell).drop(columns=["fit_seconds"])
    assert whole_cell["opt_gap"].notna().all()

    write(root, MLP_SPLIT, CONFIG)
    refused = snakemake(root, env, "-n", str((optima / "l2-0" / "part3.csv").relative_to(root)))
    assert refused.returncode != 0
    assert "the experiment solves it in 2 part(s)" in refused.stderr + refused.stdout
    run = snakemake(root, env, "demo")
    assert run.returncode == 0, run.stderr[-3000:]
    parts = [pd.read_csv(optima / "l2-0" / f"part{k}.csv") for k in (1, 2)]
    assert [len(p) for p in parts] == [2, 1]
    joined = pd.concat(parts).sort_values(["repeat", "fold"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(joined, whole_optimum.sort_values(["repeat", "fold"]).reset_index(drop=True),
                                  check_exact=True)
    pd.testing.assert_frame_equal(pd.read_csv(cell).drop(columns=["fit_seconds"]), whole_cell, check_exact=True)
