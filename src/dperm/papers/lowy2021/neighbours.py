"""The tilted-ERM sensitivity put to data: replace-one neighbouring datasets built to move the TERM
minimiser as far as possible, solved at every tilt of the ``term`` experiment, and the largest
observed distance ‖w(D) − w(D′)‖ against our bound Δ_t = (2L/μ)·e^{tM}/(e^{tM} + n − 1)
(docs/privacy.md#tilted-sensitivity). A bound that is too small shows as a ratio above 1; how far
below 1 the largest ratio stays says how tight it is on these pairs.

The rows are a seeded sample of a real dataset's prepared rows (rows in the unit ball); μ, the
ball radius R and the sample size are the analysis's ``neighbours`` settings (chosen so that Δ_t
stays below the ball's diameter 2R over most of the tilt grid: above it the bound says nothing a
ball does not). Pairs, each D and D′ differing in one row k:

* ``mirror``: row k replaced by its mirror image −x_k/‖x_k‖ with the other label, for the row of
  largest loss under w(D) (the one the tilt up-weights most) and for random rows;
* ``extremes``: row k is (ŵ, 1) in D and (−ŵ, 1) in D′, ŵ = w(D)/‖w(D)‖ — a row of the smallest
  loss on the ball swapped for one of the largest (the case the bound's e^{tM} describes);
* ``designed``: the construction of tests/algorithms/test_blackbox.py: n − 1 rows the model fits
  well and one of them swapped for its opposite.

Each D is solved by ``term-nonprivate`` (the constrained minimiser to accuracy 10⁻¹², certified
count) and by ``term`` with negligible noise (the black box's point, whose sensitivity is
Δ_t + 2√(2α/μ) = 2Δ_t); both distances are reported.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

COLUMNS = ["tilt", "pairs", "largest_distance", "largest_pair", "bound", "ratio", "ball_diameter",
           "largest_release_distance", "release_bound", "release_ratio", "erm_bound", "n", "mu", "radius"]


def _minimiser(X, y, mu, tilt, radius):
    from ...algorithms import Privacy, get_algorithm
    from ...losses import Logistic
    from ...problem import Problem

    exact = get_algorithm("term-nonprivate")
    return exact.fit(Problem(X, y, Logistic(), mu), Privacy(math.inf), None, tilt=tilt, radius=radius).weights[0]


def _release(X, y, mu, tilt, radius):
    """(the black box's point, with noise of scale ~10⁻¹⁵, and the sensitivity it was calibrated to)."""
    from ...algorithms import Privacy, get_algorithm
    from ...losses import Logistic
    from ...problem import Problem

    fit = get_algorithm("term").fit(Problem(X, y, Logistic(), mu), Privacy(1e15, 0.0), np.random.default_rng(0),
                                    tilt=tilt, radius=radius)
    return fit.weights[0], float(fit.extra["sensitivity"])


def _replace(X, y, k, x_new, y_new):
    X2, y2 = X.copy(), y.copy()
    X2[k], y2[k] = x_new, y_new
    return X2, y2


def pairs(X, y, w, rng, random_rows: int, mu: float, tilt: float):
    """(kind, D, D′) pairs of replace-one neighbours (module docstring) for rows X, y (0/1 labels)
    with TERM minimiser ``w`` of D = (X, y)."""
    from ...losses import Logistic

    losses = Logistic().per_example_value(w, X, y)
    rows = [int(np.argmax(losses))] + [int(k) for k in rng.choice(len(y), size=random_rows, replace=False)]
    out = []
    for k in dict.fromkeys(rows):
        mirror = -X[k] / max(float(np.linalg.norm(X[k])), 1e-12)
        out.append(("mirror", (X, y), _replace(X, y, k, mirror, 1.0 - y[k])))
    unit = w / max(float(np.linalg.norm(w)), 1e-12)
    k = rows[-1]
    out.append(("extremes", _replace(X, y, k, unit, 1.0), _replace(X, y, k, -unit, 1.0)))
    return out


def designed(n: int, p: int):
    """The designed pair: n − 1 rows along e₀ (spread along e₁) with label 1, and row 0 swapped for
    −e₀ (the same label): the swapped row has the largest loss the ball allows."""
    X = np.zeros((n, p))
    X[:, 0], X[:, 1] = 1.0, np.linspace(-0.3, 0.3, n)
    X /= np.linalg.norm(X, axis=1)[:, None]
    y = np.ones(n)
    X2 = X.copy()
    X2[0] = 0.0
    X2[0, 0] = -1.0
    return ("designed", (X, y), (X2, y))


def check(X, y, *, tilts, mu: float, radius: float, random_rows: int, seed: int) -> pd.DataFrame:
    """One row per tilt: the largest distance of the minimisers (and of the black box's points)
    over the pairs, the bound, their ratio, the ERM bound and the ball's diameter."""
    from ...algorithms.blackbox import theory as bb
    from ...losses import Logistic, loss_range

    n = len(y)
    M = loss_range(Logistic(), 1.0, radius)
    rows = []
    for tilt in tilts:
        tilt = float(tilt)
        rng = np.random.default_rng(seed)
        w = _minimiser(X, y, mu, tilt, radius)
        candidates = pairs(X, y, w, rng, random_rows, mu, tilt) + [designed(n, X.shape[1])]
        bound = bb.tilted_sensitivity(1.0, mu, n, tilt, M)
        best, best_kind, best_release, release_bound = 0.0, "", 0.0, math.nan
        for kind, (XA, yA), (XB, yB) in candidates:
            gap = float(np.linalg.norm(_minimiser(XA, yA, mu, tilt, radius) - _minimiser(XB, yB, mu, tilt, radius)))
            if gap > best:
                best, best_kind = gap, kind
            (wa, release_bound), (wb, _) = _release(XA, yA, mu, tilt, radius), _release(XB, yB, mu, tilt, radius)
            best_release = max(best_release, float(np.linalg.norm(wa - wb)))
        rows.append({"tilt": tilt, "pairs": len(candidates), "largest_distance": best, "largest_pair": best_kind,
                     "bound": bound, "ratio": best / bound, "ball_diameter": 2.0 * radius,
                     "largest_release_distance": best_release, "release_bound": release_bound,
                     "release_ratio": best_release / release_bound, "erm_bound": bb.erm_sensitivity(1.0, mu, n),
                     "n": n, "mu": mu, "radius": radius})
    return pd.DataFrame(rows, columns=COLUMNS)


def sample(arrays: dict, rows: int, seed: int):
    """A seeded sample of ``rows`` prepared rows (X, 0/1 labels)."""
    rng = np.random.default_rng(seed)
    index = np.sort(rng.choice(len(arrays["y01"]), size=rows, replace=False))
    return np.ascontiguousarray(arrays["X"][index], dtype=float), np.asarray(arrays["y01"][index], dtype=float)


def figure(table: pd.DataFrame, *, title: str, caption: str):
    import matplotlib.pyplot as plt

    from ...report.figures import legend_and_caption

    fig, axes = plt.subplots(1, 1, figsize=(6.4, 3.8), squeeze=False)
    ax = axes[0, 0]
    t = table["tilt"].to_numpy(float)
    ax.plot(t, table["bound"], ls=":", color="grey", marker="s", ms=4,
            label="bound Δ_t = (2L/μ)e^{tM}/(e^{tM} + n − 1)")
    ax.plot(t, table["largest_distance"], color="tab:red", marker="o", ms=5,
            label="largest observed ‖w(D) − w(D′)‖ (minimisers)")
    ax.plot(t, table["largest_release_distance"], color="tab:blue", marker="^", ms=4, ls="--",
            label="largest observed distance of the black box's points")
    ax.axhline(float(table["ball_diameter"].iloc[0]), color="black", lw=0.8, ls="-.",
               label="diameter 2R of the ball")
    ax.set_yscale("log")
    ax.set_xlabel("tilt t")
    ax.set_ylabel("distance between neighbours' solutions")
    ax.grid(alpha=0.3, which="both", lw=0.5)
    legend_and_caption(fig, axes, title, caption, ncol=2)
    return fig
