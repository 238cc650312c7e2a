"""DP-AGD per chain-round against its floor: CPU time of a Figure 2 row (six ε × ten draws in one
lockstep group) divided by its chain-rounds, interleaved in one process with the floor.

A *chain-round* is one chain's gradient measurement and step-size search. Its **floor** is the
work no implementation of this design avoids, run on the same data and shapes (one buffer row per
chain, so that the floor's rows go through the caches as the run's do):

* the two block products of a round, per chain: the clipped sums R·X (float64, the gradient's
  sensitivity argument is the float64 one) and the search products D·Xᵀ (float32, logistic
  scores);
* the gradient weights from the margins m: e^m, 1 + ·, its reciprocal, the clip (four float64
  passes over the n rows);
* the scores: e^a and e^β once per row (float32), then per candidate (m + 1 = 21) one
  multiplication e ← e·r, one addition 1 + e and one chunked product (three float32 passes);
* the margin update along an accepted step (one float64 pass).

Ours is ``dp-agd``'s ``fit_settings`` on the six ε of a Figure 2 row with ten draws each (what the
pipeline runs for one fold), CPU seconds (``time.process_time``, one BLAS thread) over the
chain-rounds it made (NoisyMin calls). The floor runs as many rounds as ours for the 60 chains.
Each repeat times ours and the floor back to back; medians over the repeats, with the load
average, are printed (the ratio is robust to other processes; the absolute times are not).

Data: the first ``--fraction`` of the rows of ``resources/prepared/<dataset>/default.npz``
(Adult by default: 36,177 × 105), logistic regression (the float32 score pass; the hinge's is
O(n)), λ = 0.001, δ = 1e-8. Usage::

    PYTHONPATH=src python benchmarks/dp_agd_round.py [--dataset adult] [--repeat 3]

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
    ap.add_argument("--dataset", default="adult")
    ap.add_argument("--repeat", type=int, default=3, help="repeats of (ours, floor); medians reported")
    ap.add_argument("--draws", type=int, default=10)
    ap.add_argument("--fraction", type=float, default=0.8, help="leading fraction of the rows used")
    ap.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (default 1)")
    ap.add_argument("--prepared", default=str(ROOT / "resources/prepared"))
    return ap.parse_args()


ARGS = _args()
bench_setup.prepare(ARGS.threads)  # before numpy loads its BLAS

import time  # noqa: E402

import numpy as np  # noqa: E402

from dperm.algorithms.base import Privacy  # noqa: E402
from dperm.algorithms.registry import get_algorithm  # noqa: E402
from dperm.losses import Logistic  # noqa: E402
from dperm.problem import Problem  # noqa: E402

EPSILONS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)


def load():
    with np.load(Path(ARGS.prepared, ARGS.dataset, "default.npz")) as npz:
        X, y = npz["X"], npz["y01"].astype(float)
    rows = int(ARGS.fraction * len(X))
    X, y = np.ascontiguousarray(X[:rows]), y[:rows]
    return Problem(X, y, Logistic(), 1e-3)


def ours(problem, seed):
    """(CPU seconds, chain-rounds) of one Figure 2 row."""
    spec = get_algorithm("dp-agd")
    rngs = [np.random.default_rng([seed, i]) for i in range(len(EPSILONS))]
    t0 = time.process_time()
    results = spec.fit_settings(problem, [Privacy(e, 1e-8) for e in EPSILONS], rngs, draws=ARGS.draws)
    cpu = time.process_time() - t0
    return cpu, int(sum(r.extra["noisy_min_calls"].sum() for r in results))


class Floor:
    """The floor's buffers: one row per chain, as the engine's."""

    def __init__(self, problem, chains, rng):
        n, p = problem.X.shape
        self.n, self.chains, self.k, self.c = n, chains, 21, 29  # C_obj = 3: 88 // 3 factors per product
        sign = 2.0 * problem.y - 1.0
        self.XT = np.ascontiguousarray((problem.X * sign[:, None]).T)
        self.XT32 = self.XT.astype(np.float32)
        w = rng.normal(0.0, 0.3, (chains, p))
        self.M = w @ self.XT  # margins of realistic iterates
        self.U = (-self.M).astype(np.float32)  # u = −m for the scores
        self.R, self.GT = np.empty((chains, n)), np.empty((p, chains))
        self.D = (rng.normal(0.0, 1.0, (chains, p)) * 0.1 / np.sqrt(p)).astype(np.float32)
        self.B = np.empty((chains, n), np.float32)
        self.bound = 3.0 / np.maximum(problem.row_norms, 1e-300)
        m = -(-n // self.c) * self.c
        self.e, self.r, self.t = (np.zeros(m, np.float32), np.ones(m, np.float32), np.empty(m, np.float32))
        self.prod = np.empty((self.k, m // self.c), np.float32)
        self.step = np.full(n, 1e-3)

    def round(self):
        M, R, B, n, e, r, t, prod, c = self.M, self.R, self.B, self.n, self.e, self.r, self.t, self.prod, self.c
        with np.errstate(over="ignore", under="ignore"):
            for i in range(self.chains):  # gradient weights
                np.exp(M[i], out=R[i])
                R[i] += 1.0
                np.reciprocal(R[i], out=R[i])
                np.minimum(R[i], self.bound, out=R[i])
            np.matmul(self.XT, R.T, out=self.GT)  # the faster of the two layouts of R·X here
            np.matmul(self.D, self.XT32, out=B)
            for i in range(self.chains):  # scores, then the margin update
                np.exp(self.U[i], out=e[:n])
                np.exp(B[i], out=r[:n])
                for j in range(self.k):
                    if j:
                        e *= r
                    np.add(e, np.float32(1.0), out=t)
                    np.multiply.reduce(t.reshape(c, -1), axis=0, out=prod[j])
                M[i] -= self.step

    def timed(self, rounds):
        t0 = time.process_time()
        for _ in range(rounds):
            self.round()
        return time.process_time() - t0


def main():
    problem = load()
    chains = len(EPSILONS) * ARGS.draws
    floor = Floor(problem, chains, np.random.default_rng(0))
    print(f"{ARGS.dataset} ({problem.n} x {problem.p}), logistic regression, {chains} chains; one BLAS thread; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    rows = []
    for rep in range(ARGS.repeat):
        cpu, chain_rounds = ours(problem, rep)
        rounds = max(1, chain_rounds // chains)
        floor_cpu = floor.timed(rounds) / (rounds * chains)
        per = cpu / chain_rounds
        rows.append((per, floor_cpu))
        print(f"  repeat {rep}: ours {1e3 * per:.3f} ms per chain-round ({chain_rounds} chain-rounds, "
              f"{cpu:.1f} CPU-s), floor {1e3 * floor_cpu:.3f} ms: {per / floor_cpu:.2f}x; "
              f"load {os.getloadavg()[0]:.2f}", flush=True)
    ours_ms, floor_ms = (1e3 * float(np.median([r[i] for r in rows])) for i in (0, 1))
    ratio = float(np.median([a / b for a, b in rows]))
    print(f"median: ours {ours_ms:.3f} ms per chain-round, floor {floor_ms:.3f} ms, ratio {ratio:.2f} "
          f"(target <= 1.3); load average at the end {os.getloadavg()[0]:.2f}")
    print(json.dumps({"dataset": ARGS.dataset, "model": "lr", "chains": chains, "ours_ms": ours_ms,
                      "floor_ms": floor_ms, "ratio": ratio, "load_average_end": os.getloadavg()}))


if __name__ == "__main__":
    main()
