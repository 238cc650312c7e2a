"""Cost of the Kang et al. comparison's algorithms on KDDCup99 (the largest panel), per run.

Figures (one BLAS thread by default), for logistic regression and the MLP (one tanh hidden layer
as wide as the input):
* seconds per run (one draw, one ε = 1, δ = 1e-5) of ``dp-sgd`` (3 epochs, batch 256),
  ``dp-lssgd`` (the same, σ_LS = 1), ``outpert-sgd`` (LR only: 5 passes, batch 50),
  ``pidp-sgd-reference`` (5,000 steps, 5 rounds; its θ̃ solve timed apart) and ``dp-gd-filter``
  (50 full-batch steps);
* the eight ε of a row run together (``fit_settings``, chains in lockstep) against one ε alone,
  for the two algorithms that offer it;
* PIDP-SGD's influence cost: seconds per round for the Hessian (LR: formed and inverted; MLP:
  the output-layer block) and microseconds per step for the influence c = H⁻¹g/n and its test.

Times are CPU seconds of this process (``time.process_time``; one BLAS thread, so about the wall
time on an idle core, and robust to a machine shared with other jobs).

Data: ``resources/prepared/kddcup99/kang.npz`` (profile kang), first 56,000 rows (one 80%
training split), else synthetic rows of the same shape. Usage::

    PYTHONPATH=src python benchmarks/kang.py [--threads 1]

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def _args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (default 1)")
    ap.add_argument("--rows", type=int, default=56_000)
    return ap.parse_args()


ARGS = _args()
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np  # noqa: E402

from dperm.algorithms import Privacy, get_algorithm, pidp_sgd  # noqa: E402
from dperm.losses import MLP, Logistic  # noqa: E402
from dperm.problem import Problem  # noqa: E402

EPSILONS = [0.01, 0.03, 0.1, 0.3, 0.5, 1.0, 2.0, 3.0]


def data():
    path = Path(__file__).resolve().parents[1] / "resources/prepared/kddcup99/kang.npz"
    if path.exists():
        z = np.load(path)
        return z["X"][: ARGS.rows], z["y01"][: ARGS.rows].astype(float), str(path)
    rng = np.random.default_rng(0)
    X = rng.random((ARGS.rows, 114))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, (rng.random(ARGS.rows) < 0.2).astype(float), "synthetic"


def main():
    X, y, source = data()
    out = {"data": source, "rows": int(X.shape[0]), "threads": ARGS.threads, "per_run": {}, "lockstep": {},
           "pidp_influence": {}}
    privacy = Privacy(1.0, 1e-5)
    runs = {"dp-sgd": {"epochs": 3.0}, "dp-lssgd": {"epochs": 3.0}, "outpert-sgd": {"passes": 5},
            "pidp-sgd-reference": {"steps": 5000}, "dp-gd-filter": {"steps": 50}}
    for model, loss in (("lr", Logistic()), ("mlp", MLP())):
        prob = Problem(X, y, loss, 0.0)
        t0 = time.process_time()  # θ̃ once (cached per process), timed apart from the runs
        pidp_sgd.start_point(prob, start="nonprivate", shift=0.0, start_iterations=100)
        out["pidp_influence"][f"{model}_start_seconds"] = time.process_time() - t0
        for name, hyper in runs.items():
            if name == "outpert-sgd" and model == "mlp":
                continue
            t0 = time.process_time()
            get_algorithm(name).fit(prob, privacy, np.random.default_rng(0), **hyper)
            seconds = time.process_time() - t0
            out["per_run"][f"{name}/{model}"] = seconds
            print(f"{name:20s} {model:4s} {seconds:8.2f} CPU-s per run {hyper}", flush=True)
        for name in ("pidp-sgd-reference", "dp-gd-filter"):
            spec = get_algorithm(name)
            t0 = time.process_time()
            spec.fit_settings(prob, [Privacy(e, 1e-5) for e in EPSILONS],
                              [np.random.default_rng(i) for i in range(len(EPSILONS))], **runs[name])
            seconds = time.process_time() - t0
            out["lockstep"][f"{name}/{model}"] = {"eight_eps_together": seconds,
                                                  "one_eps_alone": out["per_run"][f"{name}/{model}"]}
            print(f"{name:20s} {model:4s} {seconds:8.2f} CPU-s for the 8 epsilons together (lockstep)", flush=True)
        engine = pidp_sgd._MLPModel(prob, 1e-3) if model == "mlp" else pidp_sgd._GLMModel(prob, 1e-3)
        theta = np.zeros((1, prob.p)) if model == "lr" else prob.loss.init(np.random.default_rng(0), X.shape[1])[None]
        t0 = time.process_time()
        hinv = np.linalg.inv(engine.hessian(theta[0]))[None]
        round_s = time.process_time() - t0
        idx = np.random.default_rng(1).integers(0, prob.n, size=(2000, 1))
        t0 = time.process_time()
        for i in idx:
            np.einsum("kij,kj->ki", hinv, engine.covered_grads(theta, i, 1.0)) / prob.n
        step_s = time.process_time() - t0
        out["pidp_influence"][model] = {"round_seconds": round_s, "influence_us_per_step": 1e6 * step_s / len(idx)}
        print(f"pidp influence       {model:4s} {round_s:8.3f} CPU-s per round (Hessian), "
              f"{1e6 * step_s / len(idx):8.1f} us per step", flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
