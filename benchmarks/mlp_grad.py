"""The MLP's full-batch gradients against their floor, interleaved in one process.

Two figures on Kang et al.'s largest panel (KDDCup99, profile kang: 56,000 training rows, d = 114,
a tanh hidden layer as wide as the input, P = 13,225 parameters), one BLAS thread:

* the clipped gradient sum of 8 chains at once with a per-row decision hook (what DP-GD with
  individual filters runs for the eight ε of a row, ``MLP.clipped_grad_sum(..., row_weights=)``);
* the mean loss and gradient of one draw (``MLP.value_and_grad``: every L-BFGS step of the
  multi-start optimum and of PIDP-SGD's start).

The **floor** of each is the work no numpy implementation of backpropagation avoids, on the same
row chunks as ours (so that the floor's activations go through the caches as ours do): the
forward product X·W₁ᵀ of every draw's hidden layer, tanh over the (rows, draws, h) activations,
the backward product δaᵀ·X (accumulated over the chunks by BLAS, as ours), and the passes over
the activations that numpy cannot fuse into those: one read for the outputs o = s·w₂ (δo needs
them), one write producing the backward operand δa (BLAS needs it in memory), one read for
∂w₂ = Σ δo·s (after δo is known) and, for the clipped sum, one read for the per-example gradient
norms. Everything else — the second write that scales δa, the biases, the norms' other sums —
counts against ours. X is read-only, as the protocol's training folds are.

Ours and the floor are timed back to back in each repeat (CPU seconds, ``time.process_time``);
medians over the repeats are printed with the load average. The ratio is robust to other
processes; the absolute times are not. Data: ``resources/prepared/kddcup99/kang.npz`` (the first
56,000 rows), else synthetic rows of the same shape. Usage::

    PYTHONPATH=src python benchmarks/mlp_grad.py [--repeat 5]

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
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rows", type=int, default=56_000)
    ap.add_argument("--chains", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (default 1)")
    return ap.parse_args()


ARGS = _args()
bench_setup.prepare(ARGS.threads)  # before numpy loads its BLAS

import time  # noqa: E402

import numpy as np  # noqa: E402
from scipy.linalg.blas import dgemm  # noqa: E402

from dperm.losses import MLP  # noqa: E402


def data():
    path = ROOT / "resources/prepared/kddcup99/kang.npz"
    if path.exists():
        with np.load(path) as z:
            return np.array(z["X"][:ARGS.rows]), z["y01"][:ARGS.rows].astype(float), str(path)
    rng = np.random.default_rng(0)
    X = rng.random((ARGS.rows, 114))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, (rng.random(ARGS.rows) < 0.2).astype(float), "synthetic"


def floor(loss, theta, X, clipped: bool) -> float:
    """CPU seconds of the floor (module docstring) on ``loss``'s row chunks."""
    k = theta.shape[0]
    n, d = X.shape
    h = loss.width(d)
    W1 = theta[:, : h * d].reshape(k * h, d)
    chunks = loss._chunks(n, k * h)
    rows = chunks[0].stop - chunks[0].start
    S, T, G = np.empty((rows, k, h)), np.empty((rows, k, h)), np.zeros((k * h, d))
    w2, c = theta[:, h * d + h: h * d + 2 * h], np.full((k, rows), 0.1)
    t0 = time.process_time()
    for sl in chunks:
        Xc = X[sl]
        m = Xc.shape[0]
        s, t = S[:m], T[:m]
        np.matmul(Xc, W1.T, out=s.reshape(m, k * h))
        np.tanh(s, out=s)
        st = s.transpose(1, 0, 2)
        np.matmul(st, w2[:, :, None])  # outputs
        np.multiply(s, s, out=t)  # the backward operand from s
        if clipped:
            np.einsum("nkh,nkh->kn", t, t)  # per-example norms
        np.matmul(c[:, None, :m], st)  # ∂w₂
        dgemm(1.0, Xc.T, t.reshape(m, k * h).T, beta=1.0, c=G.T, trans_b=1, overwrite_c=1)  # G += tᵀ X
    return time.process_time() - t0


def main():
    X, y, source = data()
    X.setflags(write=False)  # as the protocol's folds
    loss = MLP()
    rng = np.random.default_rng(1)
    theta8 = loss.init(rng, X.shape[1], draws=ARGS.chains)
    theta1 = loss.init(rng, X.shape[1])
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))

    def decide(rows, norm):
        return (norm < 5.0).astype(float)  # a per-row decision, as the filter's

    def ours_clipped():
        t0 = time.process_time()
        loss.clipped_grad_sum(theta8, X, y, 1.0, row_norms=norms, row_weights=decide)
        return time.process_time() - t0

    def ours_value_grad():
        t0 = time.process_time()
        loss.value_and_grad(theta1, X, y)
        return time.process_time() - t0

    print(f"{source}: {X.shape[0]} x {X.shape[1]}, MLP P = {loss.n_params(X.shape[1])}; one BLAS thread; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    cases = {"clipped": (ours_clipped, lambda: floor(loss, theta8, X, True)),
             "value_and_grad": (ours_value_grad, lambda: floor(loss, theta1[None], X, False))}
    times = {name: [] for name in cases}
    for rep in range(ARGS.repeat):
        for name, (ours, flo) in cases.items():
            times[name].append((ours(), flo()))
        print(f"  repeat {rep}: " + "; ".join(f"{name} ours {1e3 * t[-1][0]:.0f} ms, floor {1e3 * t[-1][1]:.0f} ms"
                                               for name, t in times.items()) + f"; load {os.getloadavg()[0]:.2f}",
              flush=True)
    out = {"source": source, "rows": X.shape[0], "chains": ARGS.chains, "load_average_end": os.getloadavg()}
    for name, t in times.items():
        ours_ms, floor_ms = (1e3 * float(np.median([r[i] for r in t])) for i in (0, 1))
        ratio = float(np.median([a / b for a, b in t]))
        label = f"clipped gradient sum, {ARGS.chains} chains" if name == "clipped" else "value and gradient, one draw"
        print(f"{label}: ours {ours_ms:.0f} ms, floor {floor_ms:.0f} ms, ratio {ratio:.2f} (target <= 1.3)")
        out[name] = {"ours_ms": ours_ms, "floor_ms": floor_ms, "ratio": ratio}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
