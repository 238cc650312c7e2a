"""Cost of OutPert / OutPert-GD / ObjPert on BANK, and what the shared descent path saves.

Figures (one BLAS thread by default):
* seconds per run (one draw, best of ``--repeat``) of ``outpert`` (T = 50, η = 1, λ = 1e-4,
  ε = 0.8, δ = 1e-8), ``outpert-gd`` with μ = 0 (Theorem 3) and μ = 0.1 (Theorem 2) at ε = 1,
  δ = 1e-3, D = 1, and ``objpert`` (λ = 1e-3, ε = 0.8, δ = 1e-8);
* for ``--draws`` draws: total seconds of one call with ``draws`` (OutPert shares the GD path;
  ObjPert solves once per draw) against ``draws`` independent one-draw calls.

Data: the first 36,169 rows (one 5-fold training fold) of the prepared BANK matrix
``resources/prepared/bank-dpagd/default.npz`` if present, else synthetic 36,169 × 33 rows of the
same shape (bias + [0, 1] features). Usage::

    PYTHONPATH=src python benchmarks/outpert.py [--threads 1] [--draws 100]

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def _args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (default 1)")
    ap.add_argument("--draws", type=int, default=100, help="draws for the shared-path comparison")
    ap.add_argument("--repeat", type=int, default=3, help="repeats of the one-run timing (min kept)")
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args()


ARGS = _args()
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)

import time  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
try:
    import dperm  # noqa: F401,E402
except ImportError:  # run from a checkout without PYTHONPATH
    sys.path.insert(0, str(ROOT / "src"))
from dperm.algorithms import Privacy, get_algorithm  # noqa: E402
from dperm.losses import Logistic  # noqa: E402
from dperm.problem import Problem  # noqa: E402

N_TRAIN = 36_169
BANK = ROOT / "resources" / "prepared" / "bank-dpagd" / "default.npz"


def load(rng):
    if BANK.is_file():
        data = np.load(BANK)
        return "bank-dpagd", data["X"][:N_TRAIN], data["y01"][:N_TRAIN].astype(float)
    X = np.column_stack([np.ones(N_TRAIN), rng.random((N_TRAIN, 32)) ** 3])
    y = (rng.random(N_TRAIN) < 1 / (1 + np.exp(-(X - X.mean(0)) @ rng.normal(size=33)))).astype(float)
    return "synthetic", X, y


def main():
    rng = np.random.default_rng(ARGS.seed)
    source, X, y = load(rng)
    cases = {
        "outpert": ("outpert", 1e-4, Privacy(0.8, 1e-8), {}),
        "outpert-gd(mu=0)": ("outpert-gd", 0.0, Privacy(1.0, 1e-3), {"solution_bound": 1.0}),
        "outpert-gd(mu=0.1)": ("outpert-gd", 0.1, Privacy(1.0, 1e-3), {"solution_bound": 1.0}),
        "objpert": ("objpert", 1e-3, Privacy(0.8, 1e-8), {}),
    }
    per_run, reported, shared, independent, steps = {}, {}, {}, {}, {}
    for label, (name, l2, privacy, hyper) in cases.items():
        fit = get_algorithm(name).fit
        problem = Problem(X, y, Logistic(), l2)
        fit(problem, privacy, np.random.default_rng(0), **hyper)  # warm-up (row norms, imports)
        times = []
        for r in range(ARGS.repeat):
            t0 = time.perf_counter()
            res = fit(problem, privacy, np.random.default_rng(r), **hyper)
            times.append(time.perf_counter() - t0)
        per_run[label] = min(times)
        reported[label] = res.seconds_per_draw
        steps[label] = int(res.extra.get("steps", np.max(res.iterations)))
        t0 = time.perf_counter()
        fit(problem, privacy, np.random.default_rng(1), draws=ARGS.draws, **hyper)
        shared[label] = time.perf_counter() - t0
        t0 = time.perf_counter()
        for d in range(ARGS.draws):
            fit(problem, privacy, np.random.default_rng(100 + d), **hyper)
        independent[label] = time.perf_counter() - t0
        spd = "-" if reported[label] is None else f"{reported[label]:.4f}"
        print(f"{label:20s} T/iters={steps[label]:4d}  one run {per_run[label]:.4f} s "
              f"(seconds_per_draw {spd})  {ARGS.draws} draws: shared {shared[label]:.3f} s vs "
              f"{ARGS.draws} runs {independent[label]:.3f} s (x{independent[label] / shared[label]:.1f})")
    summary = {
        "data": source, "n": int(X.shape[0]), "p": int(X.shape[1]), "threads": ARGS.threads,
        "draws": ARGS.draws, "steps_or_iterations": steps,
        "seconds_per_run": {k: round(v, 5) for k, v in per_run.items()},
        "seconds_per_draw_reported": {k: v if v is None else round(v, 5) for k, v in reported.items()},
        "shared_total_seconds": {k: round(v, 4) for k, v in shared.items()},
        "independent_total_seconds": {k: round(v, 4) for k, v in independent.items()},
        "speedup": {k: round(independent[k] / shared[k], 2) for k in shared},
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
