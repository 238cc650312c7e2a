"""One non-private start (θ̃) per training split for every job that starts from it
(dperm.optimum.compute_starts, rule starts): the jobs that read the start file release what they
would have released solving θ̃ themselves, and solve nothing the file holds."""

from __future__ import annotations

import pandas as pd
import pytest
from test_protocol import _toy

from dperm.algorithms.pidp_sgd import chains
from dperm.optimum import compute_starts, needs_start, read_starts, write_starts
from dperm.protocol.columns import RECORD_COLUMNS
from dperm.protocol.runner import run_job


def _spec(algorithm, model, epsilon="1"):
    return {"paper": "t", "experiment": "e", "dataset": "toy", "profile": "default", "model": model,
            "algorithm": algorithm, "epsilon": epsilon, "delta": 1e-6, "seed": 11,
            "hyper": {"steps": 300, "learning_rate": 0.05, "start": "nonprivate", "start_iterations": 20,
                      "radius": "start-norm"},
            "protocol": {"kind": "kfold", "folds": 3, "repeats": 1, "draws": 2}}


@pytest.mark.parametrize("model", [{"name": "lr", "loss": "logistic", "l2": 0.0},
                                   {"name": "mlp", "loss": "mlp", "l2": 0.0}])
def test_jobs_reading_a_start_file_release_what_they_would_alone(tmp_path, monkeypatch, model):
    data = _toy(n=300)
    jobs = [[_spec(name, model, e) for e in ("0.5", "2")] for name in ("pidp-sgd-reference", "dp-sgd-batch1")]
    assert all(needs_start(job[0]) for job in jobs)
    monkeypatch.setattr(chains, "_SHARED", {})
    chains._STARTS.clear()
    alone = [run_job(job, data) for job in jobs]

    starts = compute_starts([job[0] for job in jobs], data)
    assert len(starts) == 3  # one per split: both jobs start from the same θ̃
    write_starts(tmp_path / "starts.npz", starts)
    chains._STARTS.clear()
    chains.share_starts(read_starts(tmp_path / "starts.npz"))
    solved = []
    real = chains.solvers.lbfgs if model["name"] == "mlp" else chains.solvers.newton
    monkeypatch.setattr(chains.solvers, real.__name__, lambda *a, **k: solved.append(1) or real(*a, **k))
    shared = [run_job(job, data) for job in jobs]
    assert solved == []  # every start came from the file
    same = [c for c in RECORD_COLUMNS if c != "fit_seconds"]
    for a, b in zip(alone, shared):
        pd.testing.assert_frame_equal(a[same], b[same], check_exact=True)


def test_only_the_cells_that_start_from_a_non_private_solve_need_a_start():
    lr = {"name": "lr", "loss": "logistic", "l2": 0.0}
    assert not needs_start({**_spec("pidp-sgd-reference", lr), "hyper": {"start": "zero"}})
    assert not needs_start(_spec("dp-sgd", lr))


def test_only_the_jobs_that_start_from_theta_tilde_read_the_shared_start_file():
    """Kang et al.'s figure: the jobs that start from θ̃ share one file per (dataset, model);
    a job of the same cell that does not (OutPert-SGD, the non-private fit) neither waits for it
    nor reruns when it changes."""
    from conftest import REPO

    from dperm import grid

    paper = grid.load_paper(REPO / "config" / "papers" / "kang.yaml")
    reading, not_reading, asked = {}, [], []

    def kept(*cell):  # what the workflow passes: its own cache of start_specs
        asked.append(cell)
        return grid.start_specs(paper, *cell, 0)

    for job in grid.jobs(paper, ["fig"]):
        path = grid.start_file(paper, job, seed=0)
        spec = grid.job_specs(paper, job, seed=0)[0]
        assert grid.start_file(paper, job, 0, spec=spec, starters=kept) == path, job
        if needs_start(spec):
            assert path == f"results/starts/kang/fig/{job.dataset}/{job.model}/kang.npz", job
            reading.setdefault((job.dataset, job.model), []).append(job.algorithm)
        else:
            assert path is None, job
            not_reading.append(job.algorithm)
    assert {"outpert-sgd", "nonprivate"} <= set(not_reading)
    assert all(len(algs) >= 2 for algs in reading.values())  # else the job would solve θ̃ alone
    assert len(reading) == 6  # three datasets x (LR, MLP)
    assert len(asked) == sum(map(len, reading.values()))  # only the jobs that start from θ̃ ask
