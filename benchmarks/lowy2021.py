"""Speed of Lowy & Razaviyayn's black box: gradient evaluations and seconds per solver against the
non-private L-BFGS solve of the same problem.

For each problem (Adult, unit-ball profile, first 80% of rows: 36,178 x 105; the 20,000-row
synthetic set's first 16,000 rows, d = 20; logistic regression, mu in {1e-3, 1e-2}): the
non-private L-BFGS solve (``nonprivate``), the certified minimiser (``outpert-exact``) and the black
box with each solver at its target accuracy alpha = mu Delta^2/8 (eps = 1, eps-DP, one draw):
gradient evaluations (full-gradient equivalents: one pass over the rows = 1), CPU seconds
(process time: other load on the machine does not inflate it, one BLAS thread), and both over
L-BFGS's. SGD is capped at 100,000 steps (its target alpha needs the number in the last column);
Katyusha's (eps, delta) run adds the Markov remedy's epochs (column ``katyusha, (eps, 1e-10)``).

Usage: python benchmarks/lowy2021.py [--repeats 1] [--data resources/prepared]
The prepared files come from the pipeline (``snakemake resources/prepared/adult/unit-ball.npz
resources/prepared/synthetic-logistic-n20000-d20/unit-clip.npz``). The last line printed is one
JSON object with every figure.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dperm.algorithms import Privacy, get_algorithm  # noqa: E402
from dperm.losses import Logistic  # noqa: E402
from dperm.problem import Problem  # noqa: E402

PROBLEMS = [("adult", "unit-ball"), ("synthetic-logistic-n20000-d20", "unit-clip")]
RUNS = [  # (label, algorithm, hyper, privacy)
    ("nonprivate (L-BFGS)", "nonprivate", {}, Privacy(float("inf"))),
    ("outpert-exact", "outpert-exact", {}, Privacy(1.0)),
    ("black box + GD", "outpert-blackbox", {"solver": "gd"}, Privacy(1.0)),
    ("black box + AGD", "outpert-blackbox", {"solver": "agd"}, Privacy(1.0)),
    ("black box + SGD (capped)", "outpert-blackbox", {"solver": "sgd"}, Privacy(1.0)),
    ("black box + Katyusha", "outpert-blackbox", {"solver": "katyusha"}, Privacy(1.0)),
    ("black box + Katyusha, (eps, 1e-10)", "outpert-blackbox", {"solver": "katyusha"}, Privacy(1.0, 1e-10)),
]


def problem(data: Path, dataset: str, profile: str, mu: float) -> Problem:
    with np.load(data / dataset / f"{profile}.npz") as arrays:
        X, y = arrays["X"], arrays["y01"].astype(float)
    n = int(0.8 * len(X))
    return Problem(X[:n], y[:n], Logistic(), mu)


def measure(prob, algorithm, hyper, privacy, repeats):
    algo = get_algorithm(algorithm)
    seconds = []
    for r in range(repeats):
        start = time.process_time()
        result = algo.fit(prob, privacy, np.random.default_rng(r), **hyper)
        seconds.append(time.process_time() - start)
    return result, float(np.median(seconds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--data", default=str(ROOT / "resources" / "prepared"))
    args = parser.parse_args()
    out = {}
    for dataset, profile in PROBLEMS:
        for mu in (1e-3, 1e-2):
            prob = problem(Path(args.data), dataset, profile, mu)
            key = f"{dataset} mu={mu:g} (n={prob.n}, p={prob.p})"
            rows = {}
            print(f"\n{key}")
            print(f"  {'run':38s} {'grad evals':>11s} {'x L-BFGS':>9s} {'CPU s':>8s} {'x L-BFGS':>9s}  "
                  f"{'evals for target alpha':>22s}")
            base = None
            for label, algorithm, hyper, privacy in RUNS:
                result, seconds = measure(prob, algorithm, hyper, privacy, args.repeats)
                evals = float(np.mean(result.grad_evals))
                if base is None:
                    base = (evals, seconds)
                target = result.extra.get("grad_evals_for_target", evals if "solver" in result.extra else np.nan)
                rows[label] = {"grad_evals": evals, "seconds": seconds, "grad_evals_vs_lbfgs": evals / base[0],
                               "seconds_vs_lbfgs": seconds / base[1], "grad_evals_for_target": float(target),
                               "guarantee": result.extra.get("guarantee", "")}
                print(f"  {label:38s} {evals:11.4g} {evals / base[0]:9.3g} {seconds:8.3f} {seconds / base[1]:9.3g}  "
                      f"{float(target):22.4g}")
            out[key] = rows
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
