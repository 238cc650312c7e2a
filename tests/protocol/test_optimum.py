"""The certified optima (dperm.optimum): the explicit-Hessian Newton path agrees with L-BFGS and
with the optimality conditions, including the hard cases (λ = 0, a singular Hessian)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dperm import optimum, solvers
from dperm.losses import Huber, HuberHinge, Logistic
from dperm.problem import Problem


def _data(n=600, p=8, seed=0, separable=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    w = rng.normal(size=p)
    margin = X @ w
    y = np.sign(margin) if separable else np.where(rng.random(n) < 1 / (1 + np.exp(-3 * margin)), 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("loss, l2", [(Logistic(), 1e-3), (Logistic(), 1e-6), (HuberHinge(0.5), 1e-3),
                                      (Huber(1.0), 1e-2)])
def test_newton_reaches_the_lbfgs_optimum_and_a_tighter_gradient(loss, l2):
    X, y = _data()
    if loss.labels == "real":
        y = X @ np.linspace(-1, 1, X.shape[1]) + 0.1 * np.random.default_rng(1).normal(size=len(y))
    elif loss.labels == "01":
        y = (y > 0).astype(float)
    problem = Problem(X, y, loss, l2)
    F, gap, gn, w = optimum._solve(problem, 1e-9)
    ref = solvers.lbfgs(problem, np.zeros(problem.p), gtol=1e-9)
    assert gn <= 1e-9
    assert gap <= gn ** 2 / (2 * l2) * (1 + 1e-12)  # the strong-convexity certificate
    assert F <= ref.fun + 1e-13 and F == pytest.approx(ref.fun, abs=1e-10)
    np.testing.assert_allclose(problem.grad(w), 0.0, atol=1e-9)


def test_unregularised_solve_on_separable_data_keeps_descending_and_reports_its_gradient():
    """λ = 0 on separable data: no minimiser exists; the solve must not crash, the loss must be
    far below its start, and the gradient norm it reports must be the true one at its answer."""
    X, y = _data(separable=True)
    problem = Problem(X, (y > 0).astype(float) if Logistic().labels == "01" else y, Logistic(), 0.0)
    F, gap, gn, w = optimum._solve(problem, 1e-9)
    assert F < 0.05 * np.log(2)
    assert gn == pytest.approx(float(np.linalg.norm(problem.grad(w))), rel=1e-12)
    assert not np.isfinite(gap)  # nothing is certified without strong convexity


def test_singular_hessian_falls_back_to_least_squares():
    """Huber with every residual beyond δ at the start: φ'' = 0 everywhere, H = 0 at λ = 0."""
    X, _ = _data(n=200, p=4)
    y = 10.0 + X @ np.ones(4)
    problem = Problem(X, y, Huber(0.1), 0.0)
    F, _, gn, w = optimum._solve(problem, 1e-9)
    assert np.isfinite(F) and F < problem.value(np.zeros(4))


def test_compute_optima_certifies_every_fold_and_L_star_is_below_F_star():
    from dperm.optimum import compute_optima

    X, y = _data(n=500, p=6, seed=3)
    arrays = {"X": X, "ypm": y, "y01": (y > 0).astype(float)}
    spec = {"model": {"loss": "logistic", "l2": 1e-3}, "protocol": {"kind": "kfold", "folds": 3, "repeats": 1},
            "paper": "t", "experiment": "t", "dataset": "t", "seed": 5}
    table = compute_optima(spec, arrays)
    assert len(table) == 3 and table["certified"].all()
    assert (table["L_star"] <= table["F_star"]).all()  # dropping the (λ/2)‖w‖² term cannot raise the minimum
    assert (table["F_grad_norm"] <= 1e-9).all()


def test_unregularised_optimum_is_skipped_when_the_paper_turns_it_off():
    """Papers without opt_gap set optimum.unregularised: false; F* is unchanged, L* is NaN, and
    the spec (hence Snakemake's params) changes only for those papers."""
    from dperm import grid as experiments
    from dperm.optimum import compute_optima

    X, y = _data(n=400, p=5, seed=4)
    arrays = {"X": X, "ypm": y, "y01": (y > 0).astype(float)}
    spec = {"model": {"loss": "logistic", "l2": 1e-3}, "protocol": {"kind": "kfold", "folds": 2, "repeats": 1},
            "paper": "t", "experiment": "t", "dataset": "t", "seed": 5}
    both = compute_optima(spec, arrays)
    only_f = compute_optima({**spec, "unregularised": False}, arrays)
    assert np.array_equal(both["F_star"], only_f["F_star"]) and only_f["certified"].all()
    assert only_f["L_star"].isna().all() and both["L_star"].notna().all()

    paper = experiments.load_paper("config/papers/lee2018.yaml")
    assert experiments.optimum_spec(paper, "fig2", "adult", "lr", "default", 1e-4, 0)["unregularised"] is False
    zhang = experiments.load_paper("config/papers/zhang2017.yaml")
    assert "unregularised" not in experiments.optimum_spec(zhang, "table3", "adult", "lr-mu0", "default", 0.0, 0)


def test_multistart_optimum_of_a_non_convex_model_is_the_best_of_its_starts():
    """The MLP has no certified optimum; with ``multistart`` the reference point is the best of
    k seeded L-BFGS solves per split, never certified, reproducible, and no worse with more starts."""
    from dperm.optimum import compute_optima

    X, y = _data(n=200, p=4, seed=6)
    arrays = {"X": X, "ypm": y, "y01": (y > 0).astype(float)}
    spec = {"model": {"loss": "mlp", "loss_params": {"hidden": 3}, "l2": 0.0},
            "protocol": {"kind": "holdout", "test_fraction": 0.2, "repeats": 2}, "paper": "t", "experiment": "t",
            "dataset": "t", "seed": 5}
    with pytest.raises(ValueError, match="multistart"):
        compute_optima(spec, arrays)
    one = compute_optima({**spec, "multistart": {"starts": 1, "iterations": 30}}, arrays)
    three = compute_optima({**spec, "multistart": {"starts": 3, "iterations": 30}}, arrays)
    again = compute_optima({**spec, "multistart": {"starts": 3, "iterations": 30}}, arrays)
    assert len(three) == 2 and not three["certified"].any()
    assert (three["L_star"] <= one["L_star"] + 1e-12).all()  # start 0 is the same solve
    assert three.equals(again)


def test_an_optimum_solved_in_parts_has_the_whole_s_rows():
    """Part k of n solves every n-th split from the k-th (an experiment's ``optimum_parts``): the
    parts' rows together are the whole optimum's, bit for bit, for a certified optimum and for a
    multi-start one; a part outside 1..n or more parts than splits is refused."""
    from dperm.optimum import compute_optima

    X, y = _data(n=300, p=4, seed=2)
    arrays = {"X": X, "ypm": y, "y01": (y > 0).astype(float)}
    lr = {"model": {"loss": "logistic", "l2": 1e-3}, "protocol": {"kind": "kfold", "folds": 3, "repeats": 2},
          "paper": "t", "experiment": "t", "dataset": "t", "seed": 4}
    mlp = {**lr, "model": {"loss": "mlp", "loss_params": {"hidden": 3}, "l2": 0.0},
           "protocol": {"kind": "holdout", "test_fraction": 0.2, "repeats": 3},
           "multistart": {"starts": 2, "iterations": 15}}
    for spec, n in ((lr, 4), (mlp, 2)):
        whole = compute_optima(spec, arrays)
        parts = [compute_optima(spec, arrays, part=(k, n)) for k in range(1, n + 1)]
        assert all(len(p) for p in parts) and sum(map(len, parts)) == len(whole)
        joined = pd.concat(parts).sort_values(["repeat", "fold"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(joined, whole.sort_values(["repeat", "fold"]).reset_index(drop=True),
                                      check_exact=True)
    with pytest.raises(ValueError, match="part 3 of 2"):
        compute_optima(lr, arrays, part=(3, 2))
    with pytest.raises(ValueError, match="7 parts: the protocol has 6 splits"):
        compute_optima(lr, arrays, part=(1, 7))


def test_a_job_reads_a_split_optimum_s_parts_each_split_once(tmp_path):
    from dperm.cli import _read_optima

    a, b = tmp_path / "part1.csv", tmp_path / "part2.csv"
    a.write_text("fold,repeat,F_star\n0,0,1.0\n0,2,1.5\n")
    b.write_text("fold,repeat,F_star\n0,1,2.0\n")
    assert sorted(_read_optima([str(a), str(b)])["repeat"]) == [0, 1, 2]
    with pytest.raises(ValueError, match=r"split \(fold 0, repeat 0\) is given twice"):
        _read_optima([str(a), str(a)])
