"""Do two versions of dperm release the same DP-AGD runs? Paired and distributional comparison.

A change that reorganises floating-point arithmetic (DP-AGD's float32 score pass, its margins)
can flip a NoisyMin selection where two noisy scores tie to within rounding, after which a run
takes another path. This script runs ``dp-agd`` with the code of two source trees on the same
BANK fold and reports:

* **paired** (the same seeds for both): the share of chains whose releases agree to 1e-9, 1e-6
  and 1e-3 (largest coordinate difference over the largest coordinate) and whose NoisyMin call
  counts agree;
* **distributional** (independent seeds: ``--chains`` chains per ε for each version, seed sets
  disjoint): a two-sample Kolmogorov–Smirnov test and the means of the training objective and
  the test accuracy of the releases, per ε and model.

Each version runs in its own subprocess (``PYTHONPATH=<src>``), one BLAS thread. Usage::

    python benchmarks/compare_releases.py --old /path/to/old/src [--new src] [--chains 60]

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EPSILONS = (0.1, 0.4, 1.6)
MODELS = ("lr", "svm")

WORKER = r"""
import os, sys
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"
import numpy as np
from dperm.algorithms import Privacy, get_algorithm
from dperm.losses import Hinge, Logistic
from dperm.problem import Problem

data, out, chains, seed_base = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
epsilons = [float(e) for e in sys.argv[5].split(",")]
with np.load(data) as z:
    X, y = z["X"], z["y01"].astype(float)
rows = int(0.8 * len(X))
train, test = slice(0, rows), slice(rows, None)
result = {}
for model in ("lr", "svm"):
    loss = Logistic() if model == "lr" else Hinge()
    labels = y if model == "lr" else 2.0 * y - 1.0
    problem = Problem(np.ascontiguousarray(X[train]), labels[train], loss, 1e-3)
    fits = get_algorithm("dp-agd").fit_settings(problem, [Privacy(e, 1e-8) for e in epsilons],
                                               [np.random.default_rng([seed_base, i]) for i in range(len(epsilons))],
                                               draws=chains)
    for eps, fit in zip(epsilons, fits):
        W = fit.weights
        result[f"{model}/{eps}/w"] = W
        result[f"{model}/{eps}/calls"] = fit.extra["noisy_min_calls"]
        result[f"{model}/{eps}/objective"] = loss.value(W, problem.X, problem.y)
        result[f"{model}/{eps}/accuracy"] = loss.accuracy(W, X[test], labels[test])
np.savez(out, **result)
"""


def _args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="the old version's src directory")
    ap.add_argument("--new", default=str(ROOT / "src"), help="the new version's src directory")
    ap.add_argument("--chains", type=int, default=60, help="chains per epsilon and version")
    ap.add_argument("--data", default=str(ROOT / "resources/prepared/bank-dpagd/default.npz"))
    return ap.parse_args()


def run(src, out, chains, seed_base):
    env = {**os.environ, "PYTHONPATH": src}
    subprocess.run([sys.executable, "-c", WORKER, ARGS.data, out, str(chains), str(seed_base),
                    ",".join(map(str, EPSILONS))], check=True, env=env)


ARGS = _args()


def main():
    import numpy as np
    from scipy.stats import ks_2samp

    print(f"load average {os.getloadavg()[0]:.2f}; old {ARGS.old}, new {ARGS.new}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        paths = {name: str(Path(tmp, f"{name}.npz")) for name in ("old", "new", "new_other")}
        run(ARGS.old, paths["old"], ARGS.chains, 1)
        run(ARGS.new, paths["new"], ARGS.chains, 1)  # paired: the old run's seeds
        run(ARGS.new, paths["new_other"], ARGS.chains, 2)  # independent seeds
        old, new, other = (dict(np.load(p)) for p in (paths["old"], paths["new"], paths["new_other"]))
    out = {}
    for model in MODELS:
        for eps in EPSILONS:
            key = f"{model}/{eps}"
            wo, wn = old[f"{key}/w"], new[f"{key}/w"]
            gap = np.abs(wo - wn).max(axis=1) / np.maximum(np.abs(wo).max(axis=1), 1e-300)
            calls = old[f"{key}/calls"] == new[f"{key}/calls"]
            row = {f"paired_within_{tol:g}": float(np.mean(gap <= tol)) for tol in (1e-9, 1e-6, 1e-3)}
            row.update(paired_same_calls=float(calls.mean()), paired_median_gap=float(np.median(gap)))
            for metric in ("objective", "accuracy"):
                a, b = old[f"{key}/{metric}"], other[f"{key}/{metric}"]
                row[metric] = {"old_mean": float(a.mean()), "new_mean": float(b.mean()),
                               "ks_pvalue": float(ks_2samp(a, b).pvalue)}
            out[key] = row
            print(f"{model} eps={eps}: paired releases within 1e-9 / 1e-6 / 1e-3 (relative): "
                  f"{row['paired_within_1e-09']:.0%} / {row['paired_within_1e-06']:.0%} / "
                  f"{row['paired_within_0.001']:.0%} (median {np.median(gap):.1e}), NoisyMin counts equal "
                  f"{calls.mean():.0%}; independent seeds: objective {row['objective']['old_mean']:.4f} "
                  f"vs {row['objective']['new_mean']:.4f} (KS p = {row['objective']['ks_pvalue']:.2f}), accuracy "
                  f"{row['accuracy']['old_mean']:.4f} vs {row['accuracy']['new_mean']:.4f} "
                  f"(KS p = {row['accuracy']['ks_pvalue']:.2f})", flush=True)
    out["load_average_end"] = os.getloadavg()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
