"""Shared by ObjPert and OutPert: the public, enforced row bound, input checks, noise draws.

Sensitivities of output and objective perturbation depend on the Lipschitz and smoothness
constants of the loss, which depend on a bound R on the row norms. That bound must be **public**:
the data's own max ‖x_i‖ (``Problem.radius``) is a function of the private data. So the
algorithms take a declared ``row_bound`` R and *enforce* it, mapping every row to
x_i·min(1, R/‖x_i‖). The map acts on each row alone, so neighbouring datasets stay neighbouring
(replace-one and add/remove alike) and the constants evaluated at R hold for every dataset.
Regression targets are assumed to lie in [0, 1] (docs/deviations.md#zhang-unknowns; the prepare
step scales them) and are clipped to [0, 1] by the same per-row argument. Nothing about how many
rows the clip changed is recorded: that count is data-dependent.
"""

from __future__ import annotations

import math

import numpy as np

from ..losses.arrays import read_only as _read_only
from ..problem import Problem
from . import calibration_faults as faults
from .gaussian import gaussian_sigma_analytic, gaussian_sigma_zhang, gaussian_sigma_zhao
from .laplace import l2_laplace_draw


def check_row_bound(row_bound) -> float:
    """R = ``row_bound`` after checking it is a finite number > 0."""
    R = float(row_bound)
    if not (math.isfinite(R) and R > 0):
        raise ValueError(f"row_bound must be a finite number > 0 (the public bound R on ‖x‖ that "
                         f"is enforced); got row_bound={row_bound!r}")
    return R


def enforce_row_bound(problem: Problem, row_bound: float) -> Problem:
    """``problem`` with rows scaled to ‖x_i‖ ≤ ``row_bound`` and real targets clipped to [0, 1].

    Returns ``problem`` itself when nothing changes (no copy of X). On read-only rows (the
    protocol's training folds) the scaled rows are made once per bound and kept, read-only,
    with a store of their own (:meth:`~dperm.problem.Problem.rows_cached`), so that what is
    derived from them (the sparse copy, the digest OutPert's path cache keys on) is made once
    too: a tuning grid scales the same fold for every candidate (on an Adult fold 9 ms of
    copying and 48 ms of hashing per fit before). The values are those of a fresh scaling, bit
    for bit. The copy kept lives as long as the fold, so it is kept only for folds of at most
    :data:`~dperm.problem.KEEP_PER_FOLD_BYTES`; larger rows are scaled on every call (a KDDCup99
    fold is 376 MB, and rows of norm 1 + 1 ulp make every fit on its unit-ball profile scale:
    ObjPert's job there, keeping a copy per fold, peaked 1.7 GB higher).
    """
    R = check_row_bound(row_bound)
    y = problem.y
    if problem.loss.labels == "real":
        y = np.clip(y, 0.0, 1.0)
    X, norms, shared = problem.rows_cached(("row_bound", R), lambda: _bounded_rows(problem, R),
                                           nbytes=lambda made: 0 if made[0] is None else made[0].nbytes)
    if X is None:
        if y is problem.y or np.array_equal(y, problem.y):
            return problem
        X = problem.X * 1.0  # a copy, as a fresh scaling by 1 makes
    return Problem(X, y, problem.loss, problem.l2, norms, shared)


def _bounded_rows(problem: Problem, R: float):
    """(X with rows scaled to ‖x_i‖ ≤ R, their norms, a store for them), read-only when
    ``problem``'s rows are; (None, the norms, None) when no row exceeds R."""
    norms = problem.row_norms
    scale = np.minimum(1.0, R / np.maximum(norms, np.finfo(float).tiny))
    if np.all(scale == 1.0):
        return None, norms, None
    X = problem.X * scale[:, None]
    if _read_only(problem.X):
        X.setflags(write=False)
    return X, norms * scale, {}


def smooth_surrogate(problem: Problem, huber_h: float | None) -> tuple[Problem, list[str]]:
    """The problem with a plain hinge replaced by the Huberised hinge of parameter h, and a note.

    Objective and output perturbation need a smooth loss (their theorems assume it), so an SVM
    is *trained* on the Huberised hinge (Chaudhuri et al. 2011 §3.4.2); the cell still reports
    the model's own loss. ``huber_h=None`` keeps the hinge (then the smoothness check refuses it).
    """
    from ..losses import Hinge, HuberHinge

    if huber_h is None or not isinstance(problem.loss, Hinge):
        return problem, []
    h = float(huber_h)
    if not (math.isfinite(h) and 0 < h <= 1):
        raise ValueError(f"huber_h must be in (0, 1]; got huber_h={huber_h!r}")
    surrogate = problem.with_loss(HuberHinge(h=h))
    return surrogate, [f"trained on the Huberised hinge (h = {h:g}); objective reported with the hinge"]


def private_target(privacy, algorithm: str) -> tuple[float, float]:
    """(ε, δ) of ``privacy`` after checking ε is finite and > 0 and δ ∈ [0, 1)."""
    eps, delta = float(privacy.epsilon), float(privacy.delta)
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"{algorithm} needs a finite epsilon > 0; got epsilon={privacy.epsilon!r}")
    if not (0.0 <= delta < 1.0):
        raise ValueError(f"{algorithm} needs delta in [0, 1); got delta={privacy.delta!r}")
    return eps, delta


def check_regulariser(problem: Problem, algorithm: str) -> float:
    """μ = ``problem.l2`` after checking it is finite and ≥ 0."""
    mu = float(problem.l2)
    if not (math.isfinite(mu) and mu >= 0):
        raise ValueError(f"{algorithm} needs a regularisation coefficient mu = l2 >= 0 "
                         f"(0: convex case, > 0: strongly convex case); got l2={problem.l2!r}")
    return mu


def smooth_glm_constants(problem: Problem, row_bound: float, algorithm: str) -> tuple[float, float]:
    """(L, β) of the *unregularised* per-example loss on {‖x‖ ≤ R}: Lipschitz and smoothness.

    Refuses losses the mechanisms' theorems do not cover, naming what is allowed: the loss must
    be a convex, smooth linear-model loss with a global Lipschitz constant (``logistic``,
    ``huber-hinge``, ``huber``). The plain ``hinge`` is not smooth (use ``huber-hinge``); the
    ``squared`` loss is Lipschitz only on a ball; the ``mlp`` is not convex.
    """
    loss = problem.loss
    name = getattr(loss, "name", type(loss).__name__)
    allowed = "allowed: 'logistic', 'huber-hinge' (SVM) or 'huber' (regression)"
    if not getattr(loss, "convex", False) or not hasattr(loss, "dphi"):
        raise ValueError(f"{algorithm} needs a convex linear-model loss; got loss {name!r}; {allowed}")
    if not getattr(loss, "smooth", False):
        raise ValueError(f"{algorithm} needs a smooth (twice differentiable almost everywhere, "
                         f"Lipschitz-gradient) loss; got loss {name!r}; use 'huber-hinge' for the "
                         f"SVM; {allowed}")
    try:
        L = float(loss.lipschitz(row_bound))
    except ValueError as err:
        raise ValueError(f"{algorithm} needs a globally Lipschitz loss; got loss {name!r} ({err}); "
                         f"{allowed}") from None
    return L, float(loss.smoothness(row_bound))


def draw_noise(kind: str, scale: float, p: int, rng: np.random.Generator) -> np.ndarray:
    """One noise vector of length p: ``kind`` "gamma-norm" has density ∝ exp(−‖z‖/scale)
    (norm ~ Gamma(p, scale), so E‖z‖ = p·scale); any other kind is N(0, scale²·I)."""
    if kind == "gamma-norm":
        return l2_laplace_draw(scale, rng, p)
    return rng.normal(0.0, faults.noise_scale(scale), size=p)  # the audit's noise factor: calibration_faults


GAUSSIANS = ("auto", "zhang", "zhao", "analytic")


def noise_calibration(sensitivity: float, epsilon: float, delta: float, gaussian: str):
    """(kind, scale, notes): "gamma-norm" with scale Δ/ε for δ = 0, else a Gaussian σ.

    ``gaussian``: "zhang" σ = Δ√(2 ln(2/δ))/ε (refused for ε > 1), "zhao" (all ε), "analytic"
    (Balle & Wang, tight), "auto" = "zhang" for ε ≤ 1 and "zhao" above, with a note.
    """
    if gaussian not in GAUSSIANS:
        raise ValueError(f"gaussian must be one of {GAUSSIANS}; got gaussian={gaussian!r}")
    if delta == 0:
        return "gamma-norm", faults.sensitivity(sensitivity) / epsilon, []
    notes = []
    if gaussian == "auto":
        gaussian = "zhang" if epsilon <= 1.0 else "zhao"
        if gaussian == "zhao":
            notes.append(f"epsilon={epsilon:g} > 1: the paper's Gaussian sigma = "
                         "Delta*sqrt(2 ln(2/delta))/epsilon is only valid for epsilon <= 1; used "
                         "the valid-for-all-epsilon Gaussian of Zhao et al. 2019 instead")
    calibrate = {"zhang": gaussian_sigma_zhang, "zhao": gaussian_sigma_zhao,
                 "analytic": gaussian_sigma_analytic}[gaussian]
    return f"gaussian-{gaussian}", calibrate(epsilon, delta, sensitivity), notes

