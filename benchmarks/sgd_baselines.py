"""Seconds per run of the Lee & Kifer / Zhang et al. baselines on BANK, against the reference code.

Runs (one fit, one draw, best of ``--repeat``): PrivGene at ε = 0.4 (LR and SVM), SGD-Adv at
ε = 1.6 (correct and reference), SGD-MA at T = 20,000 (correct and reference), Bassily et al.
noisy SGD with a 100,000-step cap (LR, ‖x‖ ≤ 1, δ = 1e-3 as in Zhang et al.). δ = 1e-8 elsewhere.
Reference timings quoted in the task for the DP-AGD code on BANK: PrivGene ≈ 0.75 s at ε = 0.4,
SGD-MA ≈ 9 s at T = 20,000.

Data: ``resources/prepared/bank-dpagd/default.npz`` when present — a random 80% training split
(36,169 × 33, the size of one 5-fold training set); otherwise synthetic data of that shape
(bias + 7 numeric [0, 1] columns + one-hot blocks). Usage::

    PYTHONPATH=src python benchmarks/sgd_baselines.py [--threads 1] [--repeat 3]

Lockstep draws (``--sections lockstep``): SGD-MA at T = 20,000 (correct and reference variants)
with draws = 10 in one fit (the draws run in lockstep, :mod:`dperm.algorithms.dp_sgd.engine`)
against 10 separate one-draw fits, on BANK and Adult (``resources/prepared/{bank-dpagd,adult}``,
the first 80% of rows: the size of a 5-fold training set), LR with {0,1} labels, λ = 0. Reported:
seconds of each (best of ``--repeat``; wall clock and CPU time of this process) and the speed-up
per draw = 10 × t(one draw) / t(10 draws). Target: ≥ 4× on BANK.

The last line printed is one JSON object (seconds per run and speed-ups).
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
    ap.add_argument("--repeat", type=int, default=3, help="repeats per run; the minimum is reported")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1]
                                          / "resources/prepared/bank-dpagd/default.npz"))
    ap.add_argument("--sections", default="baselines,lockstep",
                    help="comma-separated: baselines (one draw per algorithm), lockstep (draws = 10)")
    ap.add_argument("--steps", type=int, default=20_000, help="SGD-MA steps of the lockstep section")
    ap.add_argument("--draws", type=int, default=10, help="draws of the lockstep section")
    return ap.parse_args()


ARGS = _args()
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)

import numpy as np  # noqa: E402

try:
    import dperm  # noqa: F401,E402
except ImportError:  # run from a checkout without PYTHONPATH
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from dperm.algorithms import Privacy, get_algorithm  # noqa: E402
from dperm.losses import Hinge, Logistic  # noqa: E402
from dperm.problem import Problem  # noqa: E402

N_TRAIN = 36_169
REFERENCE_S = {"privgene_lr": 0.75, "sgd_ma_T20000": 9.0}
COMPARE = {"privgene_lr": "privgene_lr", "sgd_ma_T20000": "sgd_ma_T20000",
           "sgd_ma_reference_T20000": "sgd_ma_T20000"}


def bank(rng):
    """(X, y01, source): the prepared BANK matrix's 80% split, or synthetic data of its shape."""
    path = Path(ARGS.data)
    if path.is_file():
        data = np.load(path)
        rows = rng.permutation(data["X"].shape[0])[:N_TRAIN]
        return data["X"][rows], data["y01"][rows], str(path)
    numeric = rng.beta(2, 5, (N_TRAIN, 7))
    blocks = [np.eye(k)[rng.integers(k, size=N_TRAIN)] for k in (12, 3, 4, 2, 3)]
    X = np.column_stack([np.ones(N_TRAIN), numeric, *blocks])
    y = (rng.random(N_TRAIN) < 1 / (1 + np.exp(-(X - X.mean(0)) @ rng.normal(size=X.shape[1])))).astype(float)
    return X, y, "synthetic"


def seconds(name, problem, privacy, **hyper):
    fit = get_algorithm(name).fit
    times = []
    for r in range(ARGS.repeat):
        start = time.perf_counter()
        fit(problem, privacy, np.random.default_rng(ARGS.seed + r), **hyper)
        times.append(time.perf_counter() - start)
    return min(times)


def baselines():
    rng = np.random.default_rng(ARGS.seed)
    X, y, source = bank(rng)
    lr = Problem(X, y, Logistic())
    svm = Problem(X, 2 * y - 1, Hinge(), l2=1e-3)
    get_algorithm("privgene")  # import every algorithm module before timing
    t = {
        "privgene_lr": seconds("privgene", lr, Privacy(0.4, 1e-8)),
        "privgene_svm": seconds("privgene", svm, Privacy(0.4, 1e-8)),
        "sgd_adv_eps1.6": seconds("sgd-adv", lr, Privacy(1.6, 1e-8)),
        "sgd_adv_reference_eps1.6": seconds("sgd-adv-reference", lr, Privacy(1.6, 1e-8)),
        "sgd_ma_T20000": seconds("sgd-ma", lr, Privacy(1.0, 1e-8), steps=20_000),
        "sgd_ma_reference_T20000": seconds("sgd-ma-reference", lr, Privacy(1.0, 1e-8), steps=20_000),
        "bassily_100k_steps": seconds("bassily-sgd", lr, Privacy(1.0, 1e-3), max_steps=100_000),
    }
    print(f"data: {source}, {X.shape[0]} x {X.shape[1]}; BLAS threads = {ARGS.threads}; "
          f"best of {ARGS.repeat} runs, one draw each")
    for k, v in t.items():
        ref = REFERENCE_S.get(COMPARE.get(k, ""))
        extra = f"   reference ≈ {ref:.2f} s ({ref / v:.1f}x faster)" if ref else ""
        print(f"{k:26s} {v:8.3f} s{extra}")
    out = {k: round(v, 4) for k, v in t.items()}
    out.update({
        "speedup_privgene_lr": round(REFERENCE_S["privgene_lr"] / t["privgene_lr"], 2),
        "speedup_sgd_ma": round(REFERENCE_S["sgd_ma_T20000"] / t["sgd_ma_T20000"], 2),
        "speedup_sgd_ma_reference": round(REFERENCE_S["sgd_ma_T20000"] / t["sgd_ma_reference_T20000"], 2),
        "reference_s": REFERENCE_S, "n": int(X.shape[0]), "p": int(X.shape[1]),
        "data": "bank-dpagd" if source != "synthetic" else "synthetic",
    })
    return out


LOCKSTEP_DATA = {"bank": "resources/prepared/bank-dpagd/default.npz",
                 "adult": "resources/prepared/adult/default.npz"}


def _timed(fit, *args, **kwargs):
    wall, cpu = time.perf_counter(), time.process_time()
    fit(*args, **kwargs)
    return time.perf_counter() - wall, time.process_time() - cpu


def lockstep():
    """SGD-MA, ``--draws`` draws in one lockstep fit vs as many one-draw fits (module docstring)."""
    root = Path(__file__).resolve().parents[1]
    out = {"steps": ARGS.steps, "draws": ARGS.draws}
    privacy = Privacy(1.0, 1e-8)
    for name, rel in LOCKSTEP_DATA.items():
        path = root / rel
        if not path.is_file():
            print(f"lockstep: {path} missing, skipped")
            continue
        data = np.load(path)
        n = int(0.8 * data["X"].shape[0])
        problem = Problem(data["X"][:n], data["y01"][:n], Logistic())
        for algo in ("sgd-ma", "sgd-ma-reference"):
            fit = get_algorithm(algo).fit
            batched, single = [], []
            for r in range(ARGS.repeat):
                seed = ARGS.seed + 1000 * r
                batched.append(_timed(fit, problem, privacy, np.random.default_rng(seed), draws=ARGS.draws,
                                      steps=ARGS.steps))
                one = [_timed(fit, problem, privacy, np.random.default_rng(seed + 1 + d), draws=1,
                              steps=ARGS.steps) for d in range(ARGS.draws)]
                single.append(tuple(map(sum, zip(*one))))
            wall_b, cpu_b = min(w for w, _ in batched), min(c for _, c in batched)
            wall_s, cpu_s = min(w for w, _ in single), min(c for _, c in single)
            key = f"{name}_{algo.replace('-', '_')}"
            out[key] = {"n": n, "p": int(problem.p),
                        "batched_s": round(wall_b, 3), "separate_s": round(wall_s, 3),
                        "speedup_per_draw": round(wall_s / wall_b, 2),
                        "batched_cpu_s": round(cpu_b, 3), "separate_cpu_s": round(cpu_s, 3),
                        "speedup_per_draw_cpu": round(cpu_s / cpu_b, 2),
                        "us_per_step_and_draw": round(1e6 * wall_b / (ARGS.steps * ARGS.draws), 1)}
            print(f"{key:28s} {ARGS.draws} draws in lockstep {wall_b:7.2f} s; {ARGS.draws} one-draw fits "
                  f"{wall_s:7.2f} s; speed-up per draw {wall_s / wall_b:5.2f}x "
                  f"(CPU time {cpu_s / cpu_b:5.2f}x)")
    return out


def main():
    sections = {s.strip() for s in ARGS.sections.split(",") if s.strip()}
    unknown = sections - {"baselines", "lockstep"}
    if unknown:
        raise SystemExit(f"unknown sections {sorted(unknown)}; known: baselines, lockstep")
    out = {"threads": ARGS.threads, "repeat": ARGS.repeat}
    if "baselines" in sections:
        out.update(baselines())
    if "lockstep" in sections:
        out["lockstep"] = lockstep()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
