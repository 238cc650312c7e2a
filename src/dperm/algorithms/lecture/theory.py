"""Shared pieces of the DP-GD and DP-SGD of Wang's lecture notes (Lecture 15, Algorithms 2 and 3):
their noise calibrations (the notes' bounds, RDP and the tight PLD) and the projected noisy
(S)GD loop, ``draws`` chains in lockstep.

Notation: n rows, T steps, per-example gradients clipped to L (the notes' Lipschitz constant),
C = {‖w‖ ≤ R} the constraint set (``radius``; None: no projection), ‖C‖ = 2R its diameter.
Adjacency: replace-one throughout (the notes'). The regulariser λw of ``problem.l2`` is the same
on both neighbours and is added outside the noise (docs/privacy.md#outpert-regulariser).
"""

from __future__ import annotations

import math

import numpy as np

from ...privacy import advanced_composition, advanced_composition_split, gaussian_sigma_classical, smallest_noise
from ...privacy import calibration_faults as faults
from ...privacy.pld import epsilon_sampled_gaussian_wor
from ...privacy.sgd_calibration import calibrate_noise_multiplier

STEP_SIZES = ("constant", "convex", "strongly-convex")
OUTPUTS = ("last", "average")


def gd_sigma_notes(epsilon: float, delta: float, steps: int, n: int, lipschitz: float) -> dict:
    """Lemma 15.1: σ² = 64 L² T ln(2/δ) ln(2.5T/δ)/(n²ε²), i.e. advanced composition's split
    (ε/(2√(2T ln(2/δ))), δ/(2T)) (Lemma 15.2) and the classical Gaussian (Lemma 15.3) at the
    replace-one sensitivity 2L/n of the mean gradient. Refused where the Gaussian's ε_step < 1 or
    the split's composition fails (:func:`advanced_composition_split` checks the total)."""
    eps_step, delta_step = advanced_composition_split(epsilon, delta, steps)
    sens = 2.0 * lipschitz / n
    sigma = gaussian_sigma_classical(eps_step, delta_step, sens)
    return {"sigma": sigma, "epsilon_step": eps_step, "delta_step": delta_step, "sensitivity": sens}


def sgd_min_steps(epsilon: float, delta: float, n: int) -> int:
    """Smallest T with n·ε_step < 1, ε_step = ε/(2√(2T ln(2/δ))): the notes' DP-SGD needs it (the
    base Gaussian of Lemma 15.4 runs at ε_b = n·ε_step, and Lemma 15.3 holds for ε_b < 1)."""
    return math.floor((n * epsilon) ** 2 / (8.0 * math.log(2.0 / delta))) + 1


def sgd_sigma_notes(epsilon: float, delta: float, steps: int, n: int, lipschitz: float) -> dict:
    """Lemma 15.5: σ² = 64 L² T ln(2/δ) ln(2.5T/(δn))/(n²ε²): the per-step split of Lemma 15.2,
    amplified linearly by sampling one row of n (ε_b = n·ε_step, δ_b = n·δ_step, Lemma 15.4 with
    ln(1 + (e^ε − 1)/n) ≈ ε/n), and the classical Gaussian at sensitivity 2L.

    Refused, with the smallest T that works, where the notes' own condition fails: ε_b ≥ 1
    (Lemma 15.3 is proven for ε < 1). The linear amplification is an approximation from below
    (ln(1 + (e^{ε_b} − 1)/n) > ε_b/n), so the valid chain is also run forwards on the σ: the
    exact amplification of the classical Gaussian's ε_b and advanced composition with the actual
    per-step ε (``certified_epsilon``); a σ the valid chain does not certify is refused too."""
    eps_step, delta_step = advanced_composition_split(epsilon, delta, steps)
    eps_base, delta_base = n * eps_step, n * delta_step
    if eps_base >= 1.0:
        raise ValueError(
            f"the notes' DP-SGD calibration needs the base Gaussian's epsilon n*epsilon_step < 1 (Lemma 15.3 "
            f"holds for epsilon < 1); with n = {n}, T = {steps}, epsilon = {epsilon:g}, delta = {delta:g} it is "
            f"{eps_base:.4g}: use at least T = {sgd_min_steps(epsilon, delta, n)} steps or the rdp accountant "
            "(docs/privacy.md#gaussian-range)")
    if delta_base >= 1.0:
        raise ValueError(f"the notes' DP-SGD calibration needs n*delta_step < 1; got {delta_base:.3g}")
    sens = 2.0 * lipschitz
    sigma = gaussian_sigma_classical(eps_base, delta_base, sens)
    actual = math.log1p(math.expm1(eps_base) / n)  # exact amplification of the base Gaussian's ε_b
    total, total_delta = advanced_composition(actual, delta_step, steps, delta / 2.0)
    if total > epsilon * (1 + 1e-9):
        raise ValueError(f"the notes' DP-SGD sigma is not certified by the exact amplification: the valid chain "
                         f"gives epsilon = {total:.4g} > {epsilon:g}; use a smaller epsilon or the rdp accountant")
    return {"sigma": sigma, "epsilon_step": eps_step, "delta_step": delta_step, "epsilon_base": eps_base,
            "delta_base": delta_base, "sensitivity": sens, "certified_epsilon": total,
            "certified_delta": total_delta}


def gd_sigma_accountant(epsilon: float, delta: float, steps: int, n: int, lipschitz: float,
                        accountant: str) -> dict:
    """σ of DP-GD by an accountant: the T-fold Gaussian mechanism (sampling rate 1) at the
    replace-one sensitivity 2L/n, noise multiplier z = σ/(2L/n) from
    :func:`.dp_sgd.calibrate_noise_multiplier` (``"rdp"``, or ``"pld"``: exact up to its grid)."""
    sens = 2.0 * lipschitz / n
    z = calibrate_noise_multiplier(float(epsilon), float(delta), 1.0, int(steps), accountant)
    return {"sigma": z * sens, "noise_multiplier": z, "sensitivity": sens}


def sgd_sigma_rdp(epsilon: float, delta: float, steps: int, n: int, lipschitz: float) -> dict:
    """σ of the notes' DP-SGD by RDP: one row of n drawn uniformly per step under replace-one
    (Wang, Balle & Kasiviswanathan 2019, as dp-accounting implements it), sensitivity 2L of the
    sampled gradient, z = σ/(2L) the smallest multiplier meeting (ε, δ) (to 10⁻⁴ relative)."""
    sens = 2.0 * lipschitz
    z = smallest_noise(lambda z: epsilon_sampled_gaussian_wor(n, 1, z, steps, delta), epsilon,
                       lo=math.log(0.05), hi=math.log(0.5), step=1.0, xtol=1e-4)
    return {"sigma": z * sens, "noise_multiplier": z, "sensitivity": sens}


def step_size(mode: str, t: int, *, learning_rate: float, radius: float | None, gradient_bound: float,
              alpha: float) -> float:
    """η_t for step t ≥ 1: ``constant``; ``convex`` η_t = ‖C‖/(G√t) (Lemma 15.6, G² a bound on the
    second moment of the noisy gradient, eq. 15.5); ``strongly-convex`` η_t = 1/(αt) (Lemma 15.7)."""
    if mode == "constant":
        return learning_rate
    if mode == "convex":
        return 2.0 * radius / (gradient_bound * math.sqrt(t))
    return 1.0 / (alpha * t)


def check_schedule(mode: str, output: str, radius, l2: float, learning_rate: float) -> None:
    if mode not in STEP_SIZES:
        raise ValueError(f"step_size must be one of {STEP_SIZES}; got step_size={mode!r}")
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {OUTPUTS}; got output={output!r}")
    if radius is not None and not radius > 0:
        raise ValueError(f"radius must be > 0 or None; got radius={radius!r}")
    if mode == "convex" and radius is None:
        raise ValueError("step_size='convex' needs radius=R (the step is 2R/(G*sqrt(t))); got radius=None")
    if mode == "strongly-convex" and not l2 > 0:
        raise ValueError(f"step_size='strongly-convex' needs l2 > 0 (alpha = l2); got l2={l2!r}")
    if mode == "constant" and not learning_rate > 0:
        raise ValueError(f"learning_rate must be > 0; got learning_rate={learning_rate!r}")


def _project(W: np.ndarray, radius: float | None) -> None:
    if radius is not None:
        norms = np.sqrt(np.einsum("ij,ij->i", W, W))
        scale = np.minimum(1.0, radius / np.maximum(norms, 1e-300))
        W *= scale[:, None]


def run_projected(problem, rngs, steps, *, batch: str, sigma, clip: float, mode: str,
                  learning_rate: float, radius: float | None, output: str, chunk: int = 1024) -> np.ndarray:
    """``len(rngs)`` independent chains of θ_t = Π_C(θ_{t−1} − η_t(g_t + λθ_{t−1} + N(0, σ²I))),
    θ_0 = 0, in lockstep; g_t the clipped mean gradient (``batch="full"``, DP-GD) or the clipped
    gradient of one row drawn uniformly from each chain's own generator (``batch="one"``, DP-SGD).
    Returns the last iterates θ_T or the averages (1/T) Σ_{t<T} θ_t, shape (draws, p).

    ``steps`` and ``sigma`` may be one value per chain (the privacy targets of a row run together:
    each chain keeps its own T, σ and, for ``mode="convex"``, its own step sizes η_t = ‖C‖/(G√t)
    with G from its σ). Each chain draws from its own generator only, per block of ``chunk`` of
    its own steps (its rows, then its noise) until its own T, so a chain's output is that of a run
    alone, to the bit: every elementwise operation on its row is the one a lone run makes (the
    lockstep argument of :mod:`dperm.algorithms.dp_sgd.engine`); the interpreter's cost of a
    step is shared by every chain still running. GLM losses only: clipping ∇ℓ_i = φ'(z_i)x_i to
    norm L is clipping φ' to ±L/‖x_i‖."""
    from ...losses import GLMLoss

    if not isinstance(problem.loss, GLMLoss):
        raise ValueError(f"the projected noisy (S)GD of the notes runs GLM losses only; got {problem.loss!r}")
    sigma = faults.noise_scale(np.asarray(sigma, dtype=float))  # the audit's mutants only (privacy.calibration_faults)
    n, p, lam, loss = problem.n, problem.p, problem.l2, problem.loss
    X, y = problem.X, problem.y
    with np.errstate(divide="ignore"):
        limit = clip / problem.row_norms  # inf where x_i = 0 (its gradient is 0)
    draws = len(rngs)
    T = np.broadcast_to(np.asarray(steps, dtype=np.int64), (draws,))
    sigmas = np.broadcast_to(np.asarray(sigma, dtype=float), (draws,))
    # chains in order of decreasing T: the chains still running at step t are a prefix
    order = np.argsort(-T, kind="stable")
    rngs = [rngs[i] for i in order]
    T, sigmas = T[order], sigmas[order]
    W = np.zeros((draws, p))
    total = np.zeros((draws, p)) if output == "average" else None
    # E‖noisy gradient‖² ≤ G² (15.5), per chain
    G = np.sqrt((clip + lam * (radius or 0.0)) ** 2 + p * sigmas ** 2)
    scale = sigmas[:, None]
    longest = int(T[0]) if draws else 0
    for t0 in range(0, longest, chunk):
        counts = np.clip(T - t0, 0, chunk)  # steps of this block, per chain
        live = int(np.count_nonzero(counts))
        k = int(counts[0])
        rows = np.zeros((k, live), dtype=np.int64)
        noise = np.zeros((k, live, p))  # past a shorter chain's T its rows stay 0 (unused)
        for d in range(live):  # this chain's rows, then its noise
            kd = int(counts[d])
            if batch == "one":
                rows[:kd, d] = rngs[d].integers(0, n, size=kd)
            noise[:kd, d] = rngs[d].standard_normal((kd, p))
        noise *= scale[:live]
        if batch == "one":
            Xc, yc, lc = X[rows], y[rows], limit[rows]  # (k, live, p), (k, live), (k, live)
        a = live
        for j in range(k):
            t = t0 + j + 1
            while a and T[a - 1] < t:  # the chains whose T is reached drop out
                a -= 1
            Wa = W[:a]
            if total is not None:
                total[:a] += Wa
            if batch == "full":
                dz = loss.dphi_overwrite(X @ Wa.T, y[:, None])  # (n, chains)
                np.clip(dz, -limit[:, None], limit[:, None], out=dz)
                g = (dz.T @ X) / n
            else:
                dz = loss.dphi_overwrite(np.einsum("dp,dp->d", Xc[j, :a], Wa), yc[j, :a])
                np.clip(dz, -lc[j, :a], lc[j, :a], out=dz)
                g = dz[:, None] * Xc[j, :a]
            if lam:
                g += lam * Wa
            g += noise[j, :a]
            if mode == "convex":
                g *= (2.0 * radius / (G[:a] * math.sqrt(t)))[:, None]
            else:
                g *= step_size(mode, t, learning_rate=learning_rate, radius=radius, gradient_bound=0.0, alpha=lam)
            Wa -= g
            _project(Wa, radius)
    out = np.empty_like(W)
    out[order] = total / T[:, None] if total is not None else W
    return out
