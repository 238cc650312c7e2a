"""One-run audits of DP-SGD and DP-GD at a paper's scale (Lowy & Razaviyayn's runs of both on
Adult), where thousands of training runs per case would be too expensive, and the calibration
of the one-run estimators on Gaussian scores (:mod:`dperm.privacy.one_run_audit`).

**The canaries.** m = ``CANARIES`` Dirac canaries, each a row e_j·10 on its own coordinate j
(Huber regression with target 1000: its gradient is clipped to exactly C at every step it is
sampled, the worst case of the Nasr et al. 2023 gradient canary), each in the data with
probability 1/2 (add/remove: the coin is a neighbour step, as the one-run theorem needs). The
other rows are zero vectors, so nothing but a canary and the noise moves its coordinate: what
real rows would add is gradient on other coordinates, which per-example clipping keeps off the
canaries'. Their number brings the training set to the paper's size (``ROWS``, Adult's 80%
training split), which is the public n the sampling rate and step count are computed from; the
algorithm is the registered one with the paper's hyper-parameters (lowy2021.yaml: DP-SGD 5 epochs,
batch 256, η = 0.5, C = 1; DP-GD the same at full batch, 20 epochs, η = 2). The score of canary j
is the released w_j (white box: the last iterate, a sum of its pushes and the noise).

Each setting runs ``REPEATS`` times (independent coins and noise); the table gives every run's
ε_LB from both estimators at the paper's δ, for the correct algorithm and its half-noise mutant.
"""

from __future__ import annotations

import numpy as np

from .privacy import calibration_faults as faults
from .privacy.one_run_audit import gaussian_calibration, one_run_epsilon

CANARIES = 1000
ROWS = 36_177  # Adult (45,222 rows) in Lowy & Razaviyayn's 80/20 split
REPEATS = 3
DELTA = 1e-10  # lowy2021.yaml
SETTINGS = {
    "dp-sgd (5 epochs, batch 256, as Lowy & Razaviyayn)":
        {"epochs": 5.0, "batch_size": 256, "learning_rate": 0.5, "clip": 1.0},
    "dp-gd (dp-sgd at full batch, 20 epochs, as Lowy & Razaviyayn)":
        {"epochs": 20.0, "batch_size": ROWS, "learning_rate": 2.0, "clip": 1.0},
}
EPSILONS = (1.0, 3.0)
#: the calibration grid: μ for ε = 1, 2, 4 and 8 at δ = 1e-5 (about), m from 1,000 to 100,000
CALIBRATION_MUS = (0.27, 0.5, 0.9, 1.6)
CALIBRATION_CANARIES = (1000, 10_000, 100_000)


def canary_problem(rng, canaries: int = CANARIES, rows: int = ROWS):
    """(Problem, coins): the canaries whose coin came up in, on their own coordinates, and
    ``rows`` − m/2 zero rows (about ``rows`` in all; ``rows`` is the public n)."""
    from .losses import Huber
    from .problem import Problem

    coins = rng.random(canaries) < 0.5
    inside = np.flatnonzero(coins)
    X = np.zeros((inside.size + rows - canaries // 2, canaries))  # about ``rows`` rows in all
    X[np.arange(inside.size), inside] = 10.0
    y = np.zeros(X.shape[0])
    y[:inside.size] = 1000.0
    return Problem(X, y, Huber(1.0), 0.0, public_n=rows), coins


def run(seed: int = 0, repeats: int = REPEATS) -> list[dict]:
    """One row per (setting, ε, subject, repeat): the one-run ε_LB of both estimators."""
    from .algorithms import get_algorithm
    from .algorithms.base import Privacy

    spec = get_algorithm("dp-sgd")
    out = []
    for s, (name, hyper) in enumerate(SETTINGS.items()):
        for e, epsilon in enumerate(EPSILONS):
            for subject, noise in (("dp-sgd", 1.0), ("mutant: dp-sgd, half noise", 0.5)):
                for r in range(repeats):
                    rng = np.random.default_rng(np.random.SeedSequence([seed, s, e, r]))
                    problem, coins = canary_problem(rng)
                    with faults.injected(noise=noise):
                        result = spec.fit(problem, Privacy(epsilon, DELTA), rng, 1, **hyper)
                    scores = result.weights[0]
                    row = {"setting": name, "subject": subject, "epsilon": epsilon, "delta": DELTA, "repeat": r,
                           "canaries": CANARIES, "rows": ROWS, "steps": result.extra["steps"],
                           "sampling_rate": result.extra["sampling_rate"],
                           "noise_multiplier": result.extra["noise_multiplier"] * noise}
                    for method in ("steinke", "gdp"):
                        res = one_run_epsilon(scores, coins, delta=DELTA, method=method)
                        row[f"epsilon_lower_{method}"] = res.epsilon_lower
                        row[f"guesses_{method}"], row[f"correct_{method}"] = res.guesses, res.correct
                    out.append(row)
    return out


def calibration(seed: int = 0) -> list[dict]:
    """The estimators on Gaussian scores of known privacy (module docstring of
    :mod:`dperm.privacy.one_run_audit`), at δ = 1e-5."""
    return gaussian_calibration(CALIBRATION_MUS, CALIBRATION_CANARIES, delta=1e-5, seed=seed)
