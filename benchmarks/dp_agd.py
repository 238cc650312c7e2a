"""Speed of DP-AGD on BANK-sized data: seconds per run and the step-size search kernel.

Figures (one BLAS thread; median over ``--repeat`` runs with different seeds):
* seconds per DP-AGD run (wall and CPU), correct (``dp-agd``) and reference variants,
  logistic regression and SVM (hinge), ε ∈ {0.1, 1.6}, δ = 1e-8, λ = 0.001, full batch, with the
  number of NoisyMin calls (the spec's ≈ 370);
* one step-size search (21 candidate clipped-loss sums): this implementation (one mat-vec X·d +
  :class:`~dperm.algorithms.dp_agd_scores.CandidateScorer`) against the naive evaluation with one
  loss pass per candidate (what the reference code does), and the run time the naive search
  would give (measured run + searches × the per-search difference).

Data: the prepared BANK file (``resources/prepared/bank-dpagd/default.npz``) if it is present
and sane, else BANK.dat from the shared mirror encoded as spec §1.1 (min–max, bias), else
synthetic data of the same shape in [0, 1] with a bias column; 36,169 rows (one 5-fold training
fold), like the issue's reference timing. Usage::

    PYTHONPATH=src python benchmarks/dp_agd.py [--repeat 5] [--threads 1]

The last line printed is one JSON object with all figures.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per configuration (median reported)")
    ap.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (default 1)")
    ap.add_argument("--rows", type=int, default=36_169)
    ap.add_argument("--data", default=str(ROOT / "resources/prepared/bank-dpagd/default.npz"))
    ap.add_argument("--mirror", default=os.environ.get("DPERM_DATA_MIRROR", str(ROOT.parent / "shared/data")))
    return ap.parse_args()


ARGS = _args()
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)  # before numpy loads its BLAS

import numpy as np  # noqa: E402

try:
    import dperm  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT / "src"))
from dperm.algorithms.base import Privacy  # noqa: E402
from dperm.algorithms.dp_agd_scores import CandidateScorer, candidate_grid, naive_candidate_scores  # noqa: E402
from dperm.algorithms.registry import get_algorithm  # noqa: E402
from dperm.losses import Hinge, Logistic  # noqa: E402
from dperm.problem import Problem  # noqa: E402


def load_data(rows: int, rng: np.random.Generator):
    """(X, y01, source): prepared BANK, else the mirror's BANK.dat, else synthetic."""
    path = Path(ARGS.data)
    if path.is_file():
        with np.load(path) as npz:
            X, y = npz["X"], npz["y01"].astype(float)
        # A sane encoding has many distinct rows; a constant matrix means a broken prepare step.
        if len(np.unique(X[:2000], axis=0)) > 100:
            return *_subset(X, y, rows, rng), str(path)
        print(f"note: {path} has (almost) identical rows; not used", file=sys.stderr)
    raw = Path(ARGS.mirror, "dpagd", "BANK.dat.gz")
    if raw.is_file():
        data = np.loadtxt(gzip.open(raw))
        X, y = data[:, :-1], data[:, -1]
        lo, hi = X.min(axis=0), X.max(axis=0)
        X = (X - lo) / np.where(hi > lo, hi - lo, 1.0)  # spec §1.1: min–max on the whole file
        return *_subset(np.column_stack([np.ones(len(X)), X]), y, rows, rng), str(raw) + " (min-max + bias)"
    X = np.column_stack([np.ones(rows), rng.random((rows, 32))])
    y = (rng.random(rows) < 1.0 / (1.0 + np.exp(-(X[:, 1:] - 0.5) @ rng.normal(size=32)))).astype(float)
    return X, y, "synthetic"


def _subset(X, y, rows, rng):
    idx = rng.permutation(len(X))[:rows]
    return np.ascontiguousarray(X[idx]), y[idx]


def time_runs(problem, name, eps):
    """Median wall and CPU seconds of ``--repeat`` runs (seeds 0, 1, …) and their NoisyMin calls."""
    fit = get_algorithm(name).fit
    wall, cpu, searches = [], [], []
    for seed in range(ARGS.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        res = fit(problem, Privacy(eps, 1e-8), np.random.default_rng(seed))
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        searches.append(int(res.extra["noisy_min_calls"][0]))
    return float(np.median(wall)), float(np.median(cpu)), int(np.median(searches))


def best_of(f, repeat=7, number=5):
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            f()
        out.append((time.perf_counter() - t0) / number)
    return min(out)


def search_times(problem, rng):
    """(fast, naive) seconds for one search at a realistic iterate."""
    w = rng.normal(0.0, 0.5, problem.p)
    d = rng.normal(size=problem.p)
    d /= np.linalg.norm(d)
    XF = np.asfortranarray(problem.X)
    z0 = XF @ w
    scorer = CandidateScorer(problem.loss, 3.0, 20)
    scorer.set_rows(problem.y)
    fast = best_of(lambda: scorer.scores(z0, XF @ d, 2.0))
    naive = best_of(lambda: naive_candidate_scores(problem, w, d, candidate_grid(2.0, 20), 3.0), repeat=3, number=2)
    return fast, naive


def main():
    rng = np.random.default_rng(0)
    X, y, source = load_data(ARGS.rows, rng)
    print(f"data: {source}, {X.shape[0]} x {X.shape[1]}, BLAS threads {ARGS.threads}")
    models = {"lr": Problem(X, y, Logistic(), 1e-3), "svm": Problem(X, 2.0 * y - 1.0, Hinge(), 1e-3)}
    figures = {"data": source, "n": int(X.shape[0]), "p": int(X.shape[1]), "threads": ARGS.threads,
               "repeat": ARGS.repeat, "runs": {}, "search": {}}
    for model, problem in models.items():
        fast, naive = search_times(problem, rng)
        figures["search"][model] = {"fast_ms": 1e3 * fast, "naive_ms": 1e3 * naive, "speedup": naive / fast}
        print(f"{model}: one search {1e3 * fast:.2f} ms (naive {1e3 * naive:.1f} ms, {naive / fast:.0f}x)")
        for name in ("dp-agd", "dp-agd-reference"):
            for eps in (0.1, 1.6):
                sec, cpu, searches = time_runs(problem, name, eps)
                est_naive = sec + searches * (naive - fast)
                figures["runs"][f"{model}/{name}/eps{eps}"] = {
                    "seconds": sec, "cpu_seconds": cpu, "noisy_min_calls": searches,
                    "naive_search_seconds": est_naive, "speedup_vs_naive_search": est_naive / sec}
                print(f"{model:4s} {name:17s} eps={eps:<4} {sec:6.3f} s/run (cpu {cpu:.3f})  {searches:4d} "
                      f"NoisyMin calls  (naive search: ~{est_naive:.1f} s, {est_naive / sec:.0f}x)")
    figures["load_average"] = os.getloadavg()[0]
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
