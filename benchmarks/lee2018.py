"""Speed of the Lee & Kifer 2018 reproduction: seconds per run of every algorithm, and the cost
of the whole `snakemake lee2018` target.

1. CPU seconds per run on BANK (the authors' encoding, first 80% of rows: 36,169 x 33, logistic
   regression unless stated), one BLAS thread, median of repeated runs (process time, so other
   load on the machine does not inflate it), against the reference
   implementation's timings measured on this machine (DP-AGD ~5 s, PrivGene at eps = 0.4
   ~0.75 s, SGD-MA at T = 20,000 ~9 s).
2. SGD-MA's T grid as five runs and as one run with snapshots (what the pipeline does).
3. If the pipeline has run (Snakemake benchmark files under benchmarks/out/), the CPU seconds
   each algorithm took in the lee2018 target, and the total (lower bounds, see below).

Usage: OPENBLAS_NUM_THREADS=1 python benchmarks/lee2018.py [--repeats 3]
The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dperm.algorithms import Privacy, get_algorithm  # noqa: E402
from dperm.losses import get_loss  # noqa: E402
from dperm.problem import Problem  # noqa: E402

REFERENCE = {"dp-agd": 5.0, "privgene": 0.75, "sgd-ma": 9.0}
ROW = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)  # the target ε of a Figure 2-3 row
CASES = [  # (label, algorithm, epsilon or ROW, hyper, loss[, draws run together; seconds are per run])
    ("dp-agd", "dp-agd", 0.4, {}, "logistic"),
    ("dp-agd, 10 in lockstep", "dp-agd", 0.4, {}, "logistic", 10),  # one cell's draws
    ("dp-agd, row of 6 x 10", "dp-agd", ROW, {}, "logistic", 10),  # as the pipeline's rows run it
    ("dp-agd-reference", "dp-agd-reference", 0.4, {}, "logistic"),
    ("dp-agd svm", "dp-agd", 0.4, {}, "hinge"),
    ("objpert", "objpert", 0.4, {}, "logistic"),
    ("outpert", "outpert", 0.4, {}, "logistic"),
    ("privgene", "privgene", 0.4, {}, "logistic"),
    ("sgd-adv", "sgd-adv", 1.6, {}, "logistic"),
    ("sgd-ma", "sgd-ma", float("inf"), {"steps": 20_000}, "logistic"),
    ("sgd-ma-reference", "sgd-ma-reference", float("inf"), {"steps": 20_000}, "logistic"),
    ("nonprivate", "nonprivate", float("inf"), {}, "logistic"),
]


def bank_problem(loss_name):
    with np.load(ROOT / "resources/prepared/bank-dpagd/default.npz") as data:
        X, y01, ypm = data["X"], data["y01"], data["ypm"]
    n = int(0.8 * len(X))
    loss = get_loss(loss_name)
    y = (y01 if loss.labels == "01" else ypm)[:n].astype(float)
    return Problem(X[:n], y, loss, l2=1e-3)


def per_run_seconds(repeats: int) -> dict:
    out = {}
    for label, name, eps, hyper, loss, *together in CASES:
        draws = together[0] if together else 1
        problem = bank_problem(loss)
        algo = get_algorithm(name)
        times = []
        for r in range(repeats):
            start = time.process_time()  # CPU of this single-threaded process: robust to other load
            if isinstance(eps, tuple):  # every ε of a row at once (fit_settings)
                rngs = [np.random.default_rng([r, i]) for i in range(len(eps))]
                algo.fit_settings(problem, [Privacy(e, 1e-8) for e in eps], rngs, draws=draws, **hyper)
            else:
                algo.fit(problem, Privacy(eps, 1e-8), np.random.default_rng(r), draws=draws, **hyper)
            times.append((time.process_time() - start) / draws / (len(eps) if isinstance(eps, tuple) else 1))
        out[label] = float(np.median(times))
        ref = REFERENCE.get(label, REFERENCE.get(name) if draws > 1 else None)
        note = f"   reference {ref:.2f} s -> {ref / out[label]:.1f}x faster" if ref else ""
        print(f"{label:24s} {out[label]:8.3f} CPU s/run{note}")
    return out


T_GRID = (1, 100, 1000, 10_000, 20_000)


def t_grid_seconds(repeats: int) -> dict:
    """SGD-MA's T grid on BANK: five separate runs against one run with snapshots (the pipeline's
    path), CPU seconds per draw, median of ``repeats``."""
    problem, fit = bank_problem("logistic"), get_algorithm("sgd-ma").fit
    separate, path = [], []
    for r in range(repeats):
        start = time.process_time()
        for steps in T_GRID:
            fit(problem, Privacy(float("inf"), 1e-8), np.random.default_rng(r), steps=steps)
        separate.append(time.process_time() - start)
        start = time.process_time()
        fit(problem, Privacy(float("inf"), 1e-8), np.random.default_rng(r), steps=T_GRID[-1],
            snapshots=T_GRID[:-1])
        path.append(time.process_time() - start)
    out = {"separate": float(np.median(separate)), "path": float(np.median(path))}
    print(f"{'sgd-ma T grid, 5 runs':24s} {out['separate']:8.3f} CPU s\n"
          f"{'sgd-ma T grid, one path':24s} {out['path']:8.3f} CPU s   ({out['separate'] / out['path']:.2f}x less)")
    return out


def pipeline_seconds() -> dict:
    """CPU seconds per algorithm, and in total, from Snakemake's benchmark files (cpu_time).
    Snakemake samples a job's CPU time every 0.5 s for its first 15 s, then every 30 s, so a
    long job's figure can miss up to 30 s: the sums are lower bounds; the target's wall and CPU
    time measured around the whole ``snakemake`` command are the authoritative totals."""
    rows = []
    # Cells run alone (runs: .../<algorithm>/eps<ε>.tsv), rows (every target ε of one algorithm
    # in one job) and paths (SGD-MA's T grid in one job): rows/ and paths/ are .../<algorithm>.tsv.
    for sub in ("runs", "rows", "paths"):
        root = ROOT / "benchmarks/out" / sub / "lee2018"
        for path in root.rglob("*.tsv"):
            stats = pd.read_csv(path, sep="\t")
            rows.append({"algorithm": path.parent.name if sub == "runs" else path.stem,
                         "experiment": path.relative_to(root).parts[0],
                         "seconds": float(stats["cpu_time"].iloc[-1])})
    extra = [pd.read_csv(p, sep="\t")["cpu_time"].iloc[-1] for sub in ("tune/lee2018", "optimum/lee2018")
             for p in (ROOT / "benchmarks/out" / sub).rglob("*.tsv")]
    if not rows:
        return {}
    frame = pd.DataFrame(rows)
    by_algorithm = frame.groupby("algorithm")["seconds"].sum().sort_values(ascending=False)
    print("\nlee2018 pipeline, CPU seconds per algorithm (sum over its jobs):")
    for name, seconds in by_algorithm.items():
        print(f"  {name:22s} {seconds:9.1f} s")
    total = float(frame["seconds"].sum() + sum(extra))
    print(f"  {'tuning + optima':22s} {sum(extra):9.1f} s\n  {'total (CPU seconds)':22s} {total:9.1f} s"
          f" = {total / 2 / 60:.1f} min on 2 cores if perfectly packed")
    return {"cpu_seconds_by_algorithm": by_algorithm.round(1).to_dict(), "cpu_seconds_total": round(total, 1),
            "jobs": len(frame)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"BANK 36,169 x 33, one BLAS thread, median of {args.repeats} runs")
    result = {"seconds_per_run": per_run_seconds(args.repeats)}
    result["speedup_vs_reference"] = {k: round(REFERENCE[k] / result["seconds_per_run"][k], 2) for k in REFERENCE}
    result["sgd_ma_t_grid"] = t_grid_seconds(args.repeats)
    result.update(pipeline_seconds())
    print(json.dumps(result))


if __name__ == "__main__":
    main()
