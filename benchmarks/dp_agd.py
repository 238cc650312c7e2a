"""Speed of DP-AGD: seconds per run (per draw) with lockstep draws, and the step-size search kernel.

Figures (one BLAS thread unless ``--threads``; the load average is printed with them, as other
processes share the cores):

* seconds per draw, wall and CPU, of ``dp-agd`` with ``draws = 10`` (one fit: the ten chains run
  in lockstep, sharing their matrix products) and with ``draws = 1`` (median of ``--repeat``
  fits with different seeds), on BANK and Adult (first 80% of the rows of the prepared files,
  about one 5-fold training fold), logistic regression and SVM (hinge), ε ∈ {0.1, 1.6},
  δ = 1e-8, λ = 0.001, full batch, with the NoisyMin calls per draw (the budget is worth about
  375–390 NoisyMin charges, docs/privacy.md#noisymin-sign);
  ``--reference`` adds ``dp-agd-reference``;
* one step-size search (21 candidate clipped-loss sums) on BANK at a realistic iterate: the
  float32 scores DP-AGD uses, the float64 scores and the naive evaluation with one loss pass per
  candidate (what the reference code does).

Usage::

    PYTHONPATH=src python benchmarks/dp_agd.py [--repeat 3] [--threads 1] [--reference]

The last line printed is one JSON object with all figures.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import bench_setup  # noqa: I001 (benchmarks/, on the path when a script runs)

ROOT = Path(__file__).resolve().parents[1]
DATASETS = {"bank": "bank-dpagd", "adult": "adult"}


def _args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="draws=1 fits per configuration (median)")
    ap.add_argument("--draws", type=int, default=10, help="draws of the lockstep fit")
    ap.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (default 1)")
    ap.add_argument("--fraction", type=float, default=0.8, help="leading fraction of the rows used")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    ap.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.6])
    ap.add_argument("--reference", action="store_true", help="also time dp-agd-reference")
    ap.add_argument("--prepared", default=str(ROOT / "resources/prepared"))
    return ap.parse_args()


ARGS = _args()
bench_setup.prepare(ARGS.threads)  # before numpy loads its BLAS

import numpy as np  # noqa: E402

from dperm.algorithms.base import Privacy  # noqa: E402
from dperm.algorithms.dp_agd.scores import CandidateScorer, candidate_grid, naive_candidate_scores  # noqa: E402
from dperm.algorithms.registry import get_algorithm  # noqa: E402
from dperm.losses import Hinge, Logistic  # noqa: E402
from dperm.problem import Problem  # noqa: E402


def load(name: str):
    """(X, y01): the first ``--fraction`` of the rows of the prepared file."""
    with np.load(Path(ARGS.prepared, DATASETS[name], "default.npz")) as npz:
        X, y = npz["X"], npz["y01"].astype(float)
    rows = int(ARGS.fraction * len(X))
    return np.ascontiguousarray(X[:rows]), y[:rows]


def timed_fit(problem, name, eps, seed, draws):
    """(wall s/draw, CPU s/draw, mean NoisyMin calls per draw) of one fit."""
    fit = get_algorithm(name).fit
    t0, c0 = time.perf_counter(), time.process_time()
    res = fit(problem, Privacy(eps, 1e-8), np.random.default_rng(seed), draws=draws)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return wall / draws, cpu / draws, float(np.mean(res.extra["noisy_min_calls"]))


def best_of(f, repeat=7, number=5):
    out = []
    for _ in range(repeat):
        t0 = time.process_time()
        for _ in range(number):
            f()
        out.append((time.process_time() - t0) / number)
    return min(out)


def search_times(problem, rng):
    """CPU ms of one search at a realistic iterate: float32, float64 and naive scores."""
    w = rng.normal(0.0, 0.5, problem.p)
    d = rng.normal(size=problem.p)
    d /= np.linalg.norm(d)
    z0, zd = problem.X @ w, problem.X @ d
    out = {}
    for label, dtype in (("float32", np.float32), ("float64", np.float64)):
        scorer = CandidateScorer(problem.loss, 3.0, 20, dtype=dtype)
        scorer.set_rows(problem.y)
        out[label] = 1e3 * best_of(lambda scorer=scorer: scorer.scores(z0, zd, 2.0))
    out["naive"] = 1e3 * best_of(lambda: naive_candidate_scores(problem, w, d, candidate_grid(2.0, 20), 3.0),
                                 repeat=3, number=2)
    return out


def main():
    load0 = os.getloadavg()
    print(f"BLAS threads {ARGS.threads}; load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} "
          f"on {os.cpu_count()} cores")
    figures = {"threads": ARGS.threads, "draws": ARGS.draws, "repeat": ARGS.repeat, "runs": {},
               "search_ms": {}, "load_average_start": load0}
    names = ["dp-agd"] + (["dp-agd-reference"] if ARGS.reference else [])
    for data in ARGS.datasets:
        X, y = load(data)
        print(f"{data}: {X.shape[0]} x {X.shape[1]}")
        models = {"lr": Problem(X, y, Logistic(), 1e-3), "svm": Problem(X, 2.0 * y - 1.0, Hinge(), 1e-3)}
        for model, problem in models.items():
            if data == "bank":
                ms = search_times(problem, np.random.default_rng(0))
                figures["search_ms"][model] = ms
                print(f"  {model}: one search (CPU) float32 {ms['float32']:.2f} ms, float64 "
                      f"{ms['float64']:.2f} ms, naive {ms['naive']:.1f} ms")
            for name in names:
                for eps in ARGS.epsilons:
                    wall, cpu, calls = timed_fit(problem, name, eps, 0, ARGS.draws)
                    single = np.array([timed_fit(problem, name, eps, seed, 1) for seed in range(ARGS.repeat)])
                    wall1, cpu1, calls1 = np.median(single, axis=0)
                    key = f"{data}/{model}/{name}/eps{eps}"
                    figures["runs"][key] = {
                        f"draws{ARGS.draws}": {"wall_s_per_draw": wall, "cpu_s_per_draw": cpu,
                                               "noisy_min_calls": calls},
                        "draws1": {"wall_s_per_draw": float(wall1), "cpu_s_per_draw": float(cpu1),
                                   "noisy_min_calls": float(calls1)},
                        "speedup_wall": float(wall1 / wall)}
                    print(f"  {model:3s} {name:16s} eps={eps:<4} draws={ARGS.draws}: {wall:.3f} s/draw "
                          f"(cpu {cpu:.3f})   draws=1: {wall1:.3f} s (cpu {cpu1:.3f})   "
                          f"x{wall1 / wall:.1f}   {calls:.0f} NoisyMin calls/draw", flush=True)
    figures["load_average_end"] = os.getloadavg()
    bank = [v[f"draws{ARGS.draws}"]["wall_s_per_draw"] for k, v in figures["runs"].items()
            if k.startswith("bank/") and "/dp-agd/" in k]
    if bank:
        figures["bank_max_wall_s_per_draw"] = max(bank)
        print(f"BANK, dp-agd, draws={ARGS.draws}: at most {max(bank):.3f} s per draw (target 0.5); "
              f"load average at the end {figures['load_average_end'][0]:.2f}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
