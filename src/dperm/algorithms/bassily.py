"""Noisy mini-batch SGD of Bassily, Smith & Thakurta 2014 (BST14, Alg. 1), the baseline of Zhang
et al. 2017's Table 3 (our choices for it: docs/deviations.md#zhang-unknowns).

Objective: F(w) = (1/n) Σ ℓ_i(w) + (μ/2)‖w‖², μ = ``problem.l2`` (BST14 minimise the *sum*;
the mean form below is the same algorithm rescaled). Each step draws m = 50 row indices uniformly
**with replacement**, and updates

    w ← Π_D(w − η_t·[(1/m)(Σ_{j≤m} clip_L(∇ℓ_{i_j}(w)) + N(0, σ²I)) + μw]),

Π_D = projection onto {‖w‖ ≤ D} (``radius``; None: no projection), w₀ = 0, output the last
iterate. T = ⌈n²/m⌉ steps as in BST14 (n² single-example steps, m per step), **capped at
``max_steps``** (None: uncapped); the noise is calibrated for the T actually run and ``extra``
records the cap.

Lipschitz constant: rows are mapped to x·min(1, R/‖x‖) with the public ``row_bound`` R (default
1; never the data's own max norm), so L = the loss's Lipschitz constant at R (on ‖w‖ ≤ D where it
matters) is true; per-example gradients are also clipped to L (a no-op then; it makes ``clip=``
overrides, e.g. for losses without a constant, safe). The regulariser is data-independent and
stays outside the noise (docs/privacy.md#outpert-regulariser).

Privacy (adjacency: replace-one; a replaced row moves each of its copies' clipped gradient by
≤ 2L). Calibration (our derivation of the "amplification and advanced composition" choice of
docs/deviations.md#zhang-unknowns):

1. advanced composition split: (ε_s, δ_s) = (ε/(2√(2T ln(2/δ))), δ/(2T)) composes to ≤ (ε, δ);
2. with replacement, the replaced row appears K ~ Binomial(m, 1/n) times. Coupling the two
   datasets' index draws, both outputs are mixtures over K with the same weights π_k, equal for
   K = 0. Advanced joint convexity (Balle, Barthe & Gaboardi 2018, Thm 2) with
   q = P(K ≥ 1) = 1 − (1 − 1/n)^m (≤ m/n) and ε_s = ln(1 + q(e^{ε₀} − 1)), followed by joint
   convexity over K and the other draws, gives per step
       δ_step(σ) = Σ_{k≥1} π_k · δ_G(ε₀; σ, 2Lk) ≤ δ_s,
   δ_G the exact Gaussian profile (Balle & Wang 2018) at sensitivity 2Lk (k copies); i.e.
   ε₀ = ln(1 + (e^{ε_s} − 1)/q), valid for every ε₀ (no ε ≤ 1 condition);
3. σ: ``gaussian="zhao"`` (default, docs/deviations.md#zhang-unknowns) takes Zhao et al.'s
   valid-for-all-ε closed form at (ε₀, δ_s/q, 2L) — which covers the K = 1 term — and raises it,
   if needed, to the smallest σ with δ_step(σ) ≤ δ_s (duplicates, K ≥ 2); ``"analytic"`` takes
   that smallest σ directly.

Step sizes (BST14, adapted): their sum-form steps act on n∇ℓ + b, so in mean form η_t is n times
theirs. Convex (μ = 0): η_t = ‖C‖/(√t·G) with ‖C‖ = 2D the diameter of the ball and
G² = (L + μD)² + p(σ/m)² a bound on E‖stochastic gradient‖² (BST14's n²L² + pσ² over n²);
strongly convex (μ > 0): η_t = 1/(μt). ``step_size`` forces one or the other.

Runtime: every draw runs its own T steps (nothing shared between draws but the set-up). On a
linear model the draws but the last run as one lockstep state (:func:`_lockstep_glm`: the same
streams, the same arithmetic batched) and the last runs alone, timed; each record's seconds are
that lone run's loop plus its share of the set-up, the honest cost of one run.
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np

from ..losses import GLMLoss
from ..losses.glm import clipped_sum
from ..privacy import (
    advanced_composition,
    advanced_composition_split,
    amplify_subsampling_inverse,
    gaussian_delta,
    gaussian_sigma_zhao,
)
from ..privacy import calibration_faults as faults
from ..privacy.perturbation import enforce_row_bound
from ..privacy.validation import check_real
from .audit_worst_case import white_box_audit
from .base import FitResult, Privacy, draw_rngs
from .domains import POSITIVE, POSITIVE_INT, finite_epsilon, one_of, optional, positive_delta
from .registry import register

GAUSSIANS = ("zhao", "analytic")
STEP_SIZES = ("auto", "convex", "strongly-convex")


def with_replacement_delta(eps_base: float, sigma: float, lipschitz: float, n: int, batch_size: int) -> float:
    """δ_step(σ) = Σ_{k≥1} π_k δ_G(ε₀; σ, 2Lk), π = Binomial(m, 1/n) (module docstring, step 2)."""
    from scipy.stats import binom  # here: scipy.stats costs ~0.5 s to import, in every run-cell job

    k = np.arange(1, batch_size + 1)
    weights = binom.pmf(k, batch_size, 1.0 / n)
    keep = weights > 0
    return float(np.dot(weights[keep], gaussian_delta(eps_base, sigma, 2.0 * lipschitz * k[keep])))


def smallest_sigma(eps_base: float, target_delta: float, lipschitz: float, n: int, batch_size: int,
                   rtol: float = 1e-10) -> float:
    """Smallest σ (to ``rtol``) with :func:`with_replacement_delta` ≤ ``target_delta``."""
    def ok(s):
        return with_replacement_delta(eps_base, s, lipschitz, n, batch_size) <= target_delta

    lo = hi = 2.0 * lipschitz
    while not ok(hi):
        lo, hi = hi, 2.0 * hi
    while ok(lo):
        lo /= 2.0
        if lo < 1e-12 * lipschitz:
            return hi
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def noisy_sgd_calibration(epsilon: float, delta: float, n: int, batch_size: int, steps: int,
                          lipschitz: float, *, gaussian: str = "zhao") -> dict:
    """σ (std of the noise on the clipped *sum* of a with-replacement batch) for (ε, δ)-DP under
    replace-one over ``steps`` steps, with every intermediate quantity (module docstring)."""
    if gaussian not in GAUSSIANS:
        raise ValueError(f"gaussian must be one of {GAUSSIANS}; got gaussian={gaussian!r}")
    eps_s, delta_s = advanced_composition_split(epsilon, delta, steps)
    q = -math.expm1(batch_size * math.log1p(-1.0 / n)) if n > 1 else 1.0  # P(K ≥ 1)
    if q < 1.0:
        eps0, delta0 = amplify_subsampling_inverse(eps_s, delta_s, q)
    else:
        eps0, delta0 = eps_s, delta_s
    sigma = smallest_sigma(eps0, delta_s, lipschitz, n, batch_size)
    sigma_zhao = gaussian_sigma_zhao(eps0, delta0, 2.0 * lipschitz)
    if gaussian == "zhao":
        sigma = max(sigma, sigma_zhao)
    delta_step = with_replacement_delta(eps0, sigma, lipschitz, n, batch_size)
    composed = advanced_composition(math.log1p(q * math.expm1(eps0)), delta_step, steps, delta / 2.0)
    return {"epsilon_step": eps_s, "delta_step_budget": delta_s, "hit_rate": q, "epsilon_base": eps0,
            "delta_base": delta0, "sigma": sigma, "sigma_zhao": sigma_zhao, "delta_step": delta_step,
            "composed_epsilon": composed[0], "composed_delta": composed[1], "gaussian": gaussian}


def lipschitz_bound(problem, row_bound: float, radius: float | None, clip: float | None, name: str) -> float:
    """L: ``clip`` if given, else the loss's Lipschitz constant at the enforced row bound."""
    if clip is not None:
        return float(check_real(clip, "clip", low=0.0))
    try:
        return float(problem.loss.lipschitz(row_bound, radius))
    except (NotImplementedError, ValueError) as err:
        raise ValueError(f"{name}: the loss {problem.loss!r} has no usable Lipschitz constant ({err}); "
                         "pass clip=L to clip per-example gradients to L") from None


def batch_gradient(problem, L: float):
    """g(w, rows) = Σ_{i∈rows} clip_L(∇ℓ_i(w)) for one batch (with repeats).

    Linear models take a short path to the arithmetic of
    :meth:`dperm.losses.glm.GLMLoss.clipped_grad_sum` (:func:`~dperm.losses.glm.clipped_sum`,
    bit-identical results): the generic call spends most of a 50-row step on per-call overhead,
    and BST14 at the theorem's T = n²/m runs tens of millions of steps (the runtime target).
    """
    loss, X, y, norms = problem.loss, problem.X, problem.y, problem.row_norms
    if not isinstance(loss, GLMLoss):
        return lambda w, rows: problem.clipped_grad_sum(w, L, rows)

    def grad(w, rows):
        Xb = X[rows]
        d = loss.dphi_overwrite(np.matmul(w, Xb.T), y[rows])
        return clipped_sum(d, Xb, norms[rows], L, np.empty_like(d))

    return grad


def _lone_draw(batch_grad, child, w, *, n, T, chunk, batch_size, sigma, mu, eta, radius) -> None:
    """One draw's T steps from ``w`` (updated in place), its batches and noise drawn from ``child``
    ``chunk`` steps at a time."""
    for t in range(T):
        if t % chunk == 0:
            size = min(chunk, T - t)
            batches = child.integers(n, size=(size, batch_size))
            noise = child.normal(0.0, faults.noise_scale(sigma), size=(size, w.size))
        g = batch_grad(w, batches[t % chunk])
        g += noise[t % chunk]
        g /= batch_size
        if mu:
            g += mu * w
        w -= eta(t) * g
        _project(w, radius)


def _lockstep_glm(problem, L, children, T, chunk, batch_size, sigma, mu, eta, radius):
    """The draws of a linear model's run as one lockstep state: every step updates all draws'
    weights (draws, p) with one gather of their batches and two batched products, instead of a
    Python step per draw. Each draw keeps its own generator and draws its batches and noise in the
    same chunks and order as a lone run, so its stream is unchanged; the sums are
    :func:`clipped_sum`'s, batched (equal to the lone run's up to rounding). No
    ``children``: an empty (0, p) result."""
    if not children:
        return np.zeros((0, problem.p))
    X, y, norms, loss, n = problem.X, problem.y, problem.row_norms, problem.loss, problem.n
    draws, p = len(children), problem.p
    W = np.zeros((draws, p))
    scratch = np.empty((draws, 1, batch_size))
    Xb = np.empty((draws, batch_size, p))  # the step's rows, gathered into one reused buffer
    for t in range(T):
        if t % chunk == 0:
            size = min(chunk, T - t)
            batches, noise = [], []
            for child in children:  # per draw: its batches, then its noise, as a lone run draws them
                batches.append(child.integers(n, size=(size, batch_size)))
                noise.append(child.normal(0.0, faults.noise_scale(sigma), size=(size, p)))
            batches, noise = np.stack(batches, axis=1), np.stack(noise, axis=1)  # (size, draws, ·)
        rows = batches[t % chunk]
        np.take(X, rows, axis=0, out=Xb)  # (draws, batch, p)
        d = loss.dphi_overwrite(np.matmul(Xb, W[:, :, None])[:, :, 0], y[rows])
        # each draw's batch as a (1, batch) row against its (batch, p) rows: one clipped sum per draw
        g = clipped_sum(d[:, None, :], Xb, norms[rows][:, None, :], L, scratch)[:, 0, :]
        g += noise[t % chunk]
        g /= batch_size
        if mu:
            g += mu * W
        W -= eta(t) * g
        if radius is not None:
            norm = np.sqrt(np.einsum("dp,dp->d", W, W))
            over = norm > radius
            if over.any():
                W[over] *= (radius / norm[over])[:, None]
    return W


def _project(w: np.ndarray, radius: float | None) -> None:
    if radius is not None:
        norm = math.sqrt(float(w @ w))
        if norm > radius:
            w *= radius / norm


_LIMIT = ("advanced composition (T = 1 costs a factor 2 sqrt(2 ln(2/delta)) ~ 10 at delta = 1e-5) and the "
          "with-replacement amplification leave one step far below its claim: with half the noise one copy of the row "
          "is 0.09-DP at delta = 1e-5 (its exact Gaussian profile), so no number of runs can catch it")


# White box: one step of a 50-row batch drawn with replacement from 50 rows; the differing row is
# Huber regression in its linear zone (delta_H = 0.1, target 1, |w| < 0.9), gradient norm L = 0.1.
_AUDIT = white_box_audit("one step, a row pushing at the Lipschitz bound (white box)", "replace-one", runs=20_000,
                         n=50, hyper={"max_steps": 1, "batch_size": 50}, loss="huber", norm=1.0, target=1.0,
                         huber_delta=0.1)


@register("bassily-sgd", audit=_AUDIT,
          domains={"batch_size": POSITIVE_INT, "max_steps": optional(POSITIVE_INT), "row_bound": POSITIVE,
                   "radius": optional(POSITIVE), "clip": optional(POSITIVE), "step_size": one_of(*STEP_SIZES),
                   "gaussian": one_of(*GAUSSIANS), "chunk": POSITIVE_INT},
          needs=(finite_epsilon, positive_delta),
          size_bounds=("batch_size",),
          audit_limits={"half noise": _LIMIT, "sensitivity halved": _LIMIT},
          description="BST14 noisy mini-batch SGD (m = 50 with replacement), "
                                     "amplification + advanced composition, step cap")
def fit_bassily_sgd(problem, privacy: Privacy, rng, draws: int = 1, *, batch_size: int = 50,
                    max_steps: int | None = 100_000, row_bound: float = 1.0, radius: float | None = 1.0,
                    clip: float | None = None, step_size: str = "auto", gaussian: str = "zhao",
                    chunk: int = 512):
    t_start = time.perf_counter()
    if not privacy.is_private or not privacy.delta > 0:
        raise ValueError(f"bassily-sgd needs a finite epsilon and delta > 0; got epsilon={privacy.epsilon!r}, "
                         f"delta={privacy.delta!r}")
    n, p, mu = problem.n, problem.p, problem.l2
    if not (isinstance(batch_size, (int, np.integer)) and 1 <= batch_size):
        raise ValueError(f"batch_size must be a positive integer; got batch_size={batch_size!r}")
    if max_steps is not None and not (isinstance(max_steps, (int, np.integer)) and max_steps >= 1):
        raise ValueError(f"max_steps must be a positive integer or None (uncapped); got max_steps={max_steps!r}")
    if radius is not None:
        check_real(radius, "radius", low=0.0)
    if step_size not in STEP_SIZES:
        raise ValueError(f"step_size must be one of {STEP_SIZES}; got step_size={step_size!r}")
    mode = ("strongly-convex" if mu > 0 else "convex") if step_size == "auto" else step_size
    if mode == "strongly-convex" and not mu > 0:
        raise ValueError(f"step_size='strongly-convex' needs l2 > 0; got l2={mu!r}")
    if mode == "convex" and radius is None:
        raise ValueError("step_size='convex' needs radius=D (the step size is 2D/(G·sqrt(t))); got radius=None")
    bounded = enforce_row_bound(problem, row_bound)
    L = lipschitz_bound(bounded, row_bound, radius, clip, "bassily-sgd")

    steps_uncapped = math.ceil(n * n / batch_size)
    T = steps_uncapped if max_steps is None else min(steps_uncapped, int(max_steps))
    cal = noisy_sgd_calibration(float(privacy.epsilon), float(privacy.delta), n, batch_size, T, L,
                                gaussian=gaussian)
    sigma = cal["sigma"]
    G = math.sqrt((L + mu * (radius or 0.0)) ** 2 + p * (sigma / batch_size) ** 2)

    def eta(t):
        return 1.0 / (mu * (t + 1)) if mode == "strongly-convex" else 2.0 * radius / (G * math.sqrt(t + 1))

    children, seconds_per_draw = draw_rngs(rng, draws), None
    weights = np.zeros((draws, p))
    lone = functools.partial(_lone_draw, batch_gradient(bounded, L), n=n, T=T, chunk=chunk, batch_size=batch_size,
                             sigma=sigma, mu=mu, eta=eta, radius=radius)
    if isinstance(bounded.loss, GLMLoss) and draws > 1:
        # all draws but the last as one lockstep state; the last alone, as a lone run does it, and
        # timed: a record's seconds are one draw's loop by itself plus its share of the set-up, as
        # when every draw ran alone, not a share of the lockstep's, so runtime tables (Zhang's
        # Table 3 scales them to T = n²/m) compare run with run
        prep = time.perf_counter() - t_start
        weights[:-1] = _lockstep_glm(bounded, L, children[:-1], T, chunk, batch_size, sigma, mu, eta, radius)
        t0 = time.perf_counter()
        lone(children[-1], weights[-1])
        seconds_per_draw = prep / draws + (time.perf_counter() - t0)
    else:
        for child, w in zip(children, weights):
            lone(child, w)
    return FitResult(
        weights=weights, epsilon_spent=float(privacy.epsilon), delta_spent=float(privacy.delta),
        adjacency="replace-one", grad_evals=T * batch_size / n, iterations=T, seconds_per_draw=seconds_per_draw,
        accounting="advanced composition, amplification by sampling with replacement, Gaussian valid for every "
                   "epsilon",
        notes=[f"steps capped at max_steps={T} (BST14: n^2/m = {steps_uncapped})"] if T < steps_uncapped else [],
        extra=dict(cal, steps=T, steps_uncapped=steps_uncapped, capped=T < steps_uncapped,
                   max_steps=max_steps, batch_size=batch_size, lipschitz=L, row_bound=float(row_bound),
                   radius=radius, step_size=mode, gradient_bound=G, noise_std_mean=sigma / batch_size))
