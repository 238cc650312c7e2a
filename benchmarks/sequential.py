"""The sequential loops: the lecture notes' one-example DP-SGD and Katyusha, per step and per job.

* ``dp-sgd-lecture`` (Wang's notes, Lemma 15.5 or RDP), a row of the ``accuracy`` experiment on
  one training fold: ε ∈ {0.05, 0.1, 0.2}, δ = 1e-8, two draws, T the smallest the notes'
  condition allows (T grows as ε²), averaged iterate, radius 10. CPU seconds of the row
  (``fit_settings``) with the step-by-step loop (every chain of the row in one lockstep state,
  what the pipeline ran before) and with each chain in blocks of steps (what it runs now), the CPU
  microseconds per chain-step of each, and how far apart their weights are.
* ``outpert-blackbox`` with ``solver: katyusha`` (Lowy & Razaviyayn): CPU microseconds per inner
  step of one solve (μ = 0.01, ε-DP and (ε, 1e-10)-DP with the Markov remedy), and how many solves
  a row of five ε makes (the row's targets share one solve whenever their accuracy α is the
  same, which it is for μ > 0).

One BLAS thread; CPU time of this process (``time.process_time``), the load average printed with
every figure. Data: the first 80% of ``resources/prepared/<dataset>/default.npz`` (BANK by
default: about one 5-fold training fold), rows scaled into the unit ball for Katyusha. Usage::

    PYTHONPATH=src python benchmarks/sequential.py [--dataset bank-dpagd] [--repeat 2]

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import bench_setup  # noqa: I001 (benchmarks/, on the path when a script runs)

ROOT = Path(__file__).resolve().parents[1]


def _args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="bank-dpagd")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--fraction", type=float, default=0.8)
    ap.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (default 1)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["lecture", "katyusha"])
    return ap.parse_args()


ARGS = _args()
bench_setup.prepare(ARGS.threads)  # before numpy loads its BLAS

import time  # noqa: E402

import numpy as np  # noqa: E402

from dperm import solvers  # noqa: E402
from dperm.algorithms import Privacy, get_algorithm  # noqa: E402
from dperm.losses import Logistic  # noqa: E402
from dperm.problem import Problem  # noqa: E402

LECTURE_EPSILONS = (0.05, 0.1, 0.2)
LECTURE_HYPER = {"accountant": "notes", "steps_rule": "condition", "radius": 10.0, "output": "average"}
KATYUSHA_EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)


def load(unit_ball: bool = False):
    with np.load(ROOT / "resources/prepared" / ARGS.dataset / "default.npz") as z:
        X, y = z["X"], z["y01"].astype(float)
    rows = int(ARGS.fraction * len(X))
    X, y = np.array(X[:rows]), y[:rows]
    if unit_ball:
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    return X, y


def lecture():
    from dperm.algorithms.lecture import dp_sgd, theory

    def loop(*args, **kwargs):  # the step-by-step lockstep loop, whatever the draws
        return theory.run_projected(*args, **{**kwargs, "blocked": False})

    X, y = load()
    problem = Problem(X, y, Logistic(), 1e-3)
    spec = get_algorithm("dp-sgd-lecture")
    targets = [Privacy(eps, 1e-8) for eps in LECTURE_EPSILONS]
    rows = []
    for rep in range(ARGS.repeat):
        timed = {}
        for form, runner in (("loop", loop), ("blocks", theory.run_projected)):
            dp_sgd.run_projected = runner
            try:
                rngs = [np.random.default_rng([rep, i]) for i in range(len(targets))]
                t0 = time.process_time()
                fits = spec.fit_settings(problem, targets, rngs, draws=2, **LECTURE_HYPER)
                timed[form] = (time.process_time() - t0, np.concatenate([f.weights for f in fits]))
            finally:
                dp_sgd.run_projected = theory.run_projected
        steps = [int(f.iterations) for f in fits]
        chain_steps = 2 * sum(steps)
        (cpu_loop, w_loop), (cpu_blocks, w_blocks) = timed["loop"], timed["blocks"]
        rel = float(np.abs(w_blocks - w_loop).max() / np.abs(w_loop).max())
        rows.append((cpu_loop, cpu_blocks, steps, rel))
        print(f"  lecture DP-SGD row {LECTURE_EPSILONS} (T = {steps}, 2 draws): step-by-step lockstep loop "
              f"{cpu_loop:.1f} CPU-s ({1e6 * cpu_loop / chain_steps:.1f} us per chain-step), each chain in blocks "
              f"{cpu_blocks:.1f} CPU-s ({1e6 * cpu_blocks / chain_steps:.1f} us per chain-step); weights within "
              f"{rel:.1e} relative; load {os.getloadavg()[0]:.2f}", flush=True)
    loop, blocks = (float(np.median([r[i] for r in rows])) for i in (0, 1))
    steps = rows[0][2]
    return {"steps": steps, "cpu_loop": loop, "cpu_blocks": blocks,
            "us_per_chain_step_loop": 1e6 * loop / (2 * sum(steps)),
            "us_per_chain_step_blocks": 1e6 * blocks / (2 * sum(steps)),
            "max_relative_difference": max(r[3] for r in rows)}


def katyusha():
    X, y = load(unit_ball=True)
    problem = Problem(X, y, Logistic(), 0.01)
    spec = get_algorithm("outpert-blackbox")
    calls = []
    original = solvers.katyusha

    def counted(*args, **kwargs):
        t0 = time.process_time()
        out = original(*args, **kwargs)
        calls.append((kwargs["n_epochs"], time.process_time() - t0))
        return out

    solvers.katyusha = counted
    out = {}
    try:
        for delta in (0.0, 1e-10):
            calls.clear()
            rngs = [np.random.default_rng(i) for i in range(len(KATYUSHA_EPSILONS))]
            spec.fit_settings(problem, [Privacy(e, delta) for e in KATYUSHA_EPSILONS], rngs, draws=10,
                              solver="katyusha")
            epochs, cpu = calls[0]
            steps = epochs * 2 * problem.n
            out[f"delta={delta:g}"] = {"solves_per_row": len(calls), "epochs": epochs, "inner_steps": steps,
                                       "cpu_s": cpu, "us_per_step": 1e6 * cpu / steps}
            print(f"  Katyusha, delta = {delta:g}: {len(calls)} solve(s) for the row of {len(KATYUSHA_EPSILONS)} "
                  f"epsilons; {epochs} epochs x {2 * problem.n} steps in {cpu:.1f} CPU-s = "
                  f"{1e6 * cpu / steps:.2f} us per inner step; load {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        solvers.katyusha = original
    return out


def main():
    print(f"{ARGS.dataset}, first {ARGS.fraction:.0%} of the rows; one BLAS thread; load average "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    figures = {"dataset": ARGS.dataset}
    if "lecture" not in ARGS.skip:
        figures["lecture"] = lecture()
    if "katyusha" not in ARGS.skip:
        figures["katyusha"] = katyusha()
    figures["load_average_end"] = os.getloadavg()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
