"""OutPert-SGD: Wu et al. 2017's "bolt-on" output perturbation of permutation SGD.

k passes (``passes``) over the training rows; each pass draws a fresh uniform permutation and cuts
it into m = ⌊n/b⌋ mini-batches of b = ``batch_size`` rows (the n − mb rows left over sit that pass
out); each step w ← Π_R(w − η_t(ḡ_B(w) + λw)), ḡ_B the batch mean of ∇ℓ_i, Π_R the projection
onto ‖w‖ ≤ ``radius`` (none when null); release w_T + z. Rows are mapped into the public ball
‖x‖ ≤ ``row_bound`` first (:mod:`dperm.privacy.perturbation`), so L and β of ℓ hold. Lockstep: the draws are
independent runs, each with its own permutations and noise, advanced together (one batched
product per step, :class:`dperm.algorithms.dp_sgd.engine.LockstepGLM` without clipping).

Adjacency: replace-one (|D| = |D′| = n, row k differs). Sensitivity (our derivation after Wu et
al. 2017 and Hardt, Recht & Singer 2016, docs/privacy.md#outpert-sgd-sensitivity): the per-
example regularised losses f_i = ℓ_i + (λ/2)‖·‖² are β-smooth (β = β_ℓ + λ) and γ-strongly
convex (γ = λ). Coupling the two runs on the same permutations, the step of a batch without row
k is (1 − η_tγ)-contractive for η_t ≤ 1/β (non-expansive for γ = 0 and η ≤ 2/β), the projection
is non-expansive, and the step of the one batch per pass that holds row k adds at most
η_t·‖∇ℓ_k − ∇ℓ′_k‖/b ≤ 2Lη_t/b (the regulariser cancels; L is ℓ's Lipschitz constant,
docs/privacy.md#outpert-regulariser). Hence δ_T ≤ Σ_passes max_{s in the pass}
(2Lη_s/b)·Π_{t>s}(1 − η_tγ), the worst position in each pass (positions are data-independent).

* ``schedule: convex`` — constant η ≤ 2/β (a larger η is clamped, with a note): Δ = 2kLη/b.
* ``schedule: strongly-convex`` (λ > 0) — η_t = min(1/β, 1/(γt)), t = 1..km: Δ is the sum above,
  computed exactly from the schedule; with η_t = 1/(γt) throughout it equals 2L/(γmb) ≈ 2L/(γn)
  (Wu et al.'s 2L/(γn) for b = 1, and **not** divided by b again: the 1/b of the one batch that
  holds row k is cancelled by the b-fold fewer steps, so mini-batching does not shrink Δ).
* ``schedule: auto`` — strongly convex when λ > 0, else convex.

Noise: δ = 0 → density ∝ exp(−ε‖z‖/Δ) (Gamma-norm, ε-DP); δ > 0 → Gaussian valid for every ε
(``gaussian``: analytic (Balle & Wang 2018, default) or zhao; :mod:`dperm.algorithms.outpert.theory`).
Accounting: one release. Convex losses only (logistic, huber-hinge, huber): the MLP has no
sensitivity bound and is refused.

``outpert-sgd-reference`` uses the strongly convex mini-batch sensitivity 2L/(γnb) of
TensorFlow Privacy's BoltOn optimizer (its ``get_noise`` divides 2L/(γn) by the batch size once
more): b times too small for b > 1, so not DP as implemented; otherwise identical
(docs/privacy.md#outpert-sgd-sensitivity).
"""

from __future__ import annotations

import math

import numpy as np

from ..privacy.perturbation import (
    check_regulariser,
    check_row_bound,
    draw_noise,
    enforce_row_bound,
    noise_calibration,
    private_target,
    smooth_glm_constants,
    smooth_surrogate,
)
from .audit_cases import canary_audit
from .audit_worst_case import PUSH_HINGE, cases, recorded_sensitivity, white_box_audit
from .base import FitResult, Privacy, draw_rngs
from .domains import POSITIVE, POSITIVE_INT, UNIT, finite_epsilon, one_of, optional
from .dp_sgd.engine import LockstepGLM
from .registry import register, register_variant

SCHEDULES = ("auto", "convex", "strongly-convex")


def step_sizes(schedule: str, steps: int, *, beta: float, gamma: float, learning_rate: float) -> np.ndarray:
    """η_1..η_T: constant ``learning_rate`` (convex) or min(1/β, 1/(γt)) (strongly convex)."""
    if schedule == "convex":
        return np.full(steps, float(learning_rate))
    t = np.arange(1, steps + 1, dtype=float)
    return np.minimum(1.0 / beta, 1.0 / (gamma * t))


def worst_case_divergence(etas: np.ndarray, *, gamma: float, L: float, batch_size: int, per_pass: int) -> float:
    """Σ over passes of max over a pass's positions s of (2Lη_s/b)·Π_{t>s}(1 − η_tγ): the bound
    on ‖w_T − w′_T‖ of the module docstring (γ = 0: Σ_passes max_s 2Lη_s/b)."""
    etas = np.asarray(etas, dtype=float)
    factors = 1.0 - etas * gamma
    suffix = np.ones_like(etas)  # Π_{t>s}(1 − η_tγ)
    if etas.size > 1:
        suffix[:-1] = np.cumprod(factors[::-1])[::-1][1:]
    contributions = 2.0 * L * etas / batch_size * suffix
    return float(contributions.reshape(-1, per_pass).max(axis=1).sum())


def bolton_reference_sensitivity(*, L: float, gamma: float, n: int, batch_size: int) -> float:
    """TensorFlow Privacy's BoltOn form 2L/(γ·n·b): b times too small for mini-batches."""
    return 2.0 * L / (gamma * n * batch_size)


def _fit_outpert_sgd(problem, privacy: Privacy, rng, draws: int = 1, *, passes: int = 5, batch_size: int = 50,
                     learning_rate: float = 0.1, schedule: str = "auto", radius: float | None = None,
                     row_bound: float = 1.0, gaussian: str = "analytic", huber_h: float | None = 0.5,
                     sensitivity_form: str = "derived"):
    name = "outpert-sgd" if sensitivity_form == "derived" else "outpert-sgd-reference"
    eps, delta = private_target(privacy, name)
    problem, notes = smooth_surrogate(problem, huber_h)
    mu = check_regulariser(problem, name)
    R = check_row_bound(row_bound)
    L, beta_loss = smooth_glm_constants(problem, R, name)
    beta, n = beta_loss + mu, problem.n
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}; got schedule={schedule!r}")
    if schedule == "auto":
        schedule = "strongly-convex" if mu > 0 else "convex"
    if schedule == "strongly-convex" and mu <= 0:
        raise ValueError("schedule='strongly-convex' needs l2 > 0 (gamma = l2)")
    if isinstance(passes, bool) or not (isinstance(passes, int) and passes >= 1):
        raise ValueError(f"passes must be a positive integer; got passes={passes!r}")
    if isinstance(batch_size, bool) or not (isinstance(batch_size, int) and 1 <= batch_size <= n):
        raise ValueError(f"batch_size must be an integer in [1, n={n}]; got batch_size={batch_size!r}")
    if radius is not None and not (math.isfinite(radius) and radius > 0):
        raise ValueError(f"radius must be a finite number > 0 or null; got radius={radius!r}")
    eta = float(learning_rate)
    if schedule == "convex":
        if not (math.isfinite(eta) and eta > 0):
            raise ValueError(f"learning_rate must be a finite number > 0; got learning_rate={learning_rate!r}")
        if eta > 2.0 / beta:
            notes.append(f"learning_rate={eta:g} exceeds 2/beta = {2.0 / beta:.6g} (beta={beta:.6g}); clamped")
            eta = 2.0 / beta
    per_pass = n // batch_size
    steps = passes * per_pass
    etas = step_sizes(schedule, steps, beta=beta, gamma=mu, learning_rate=eta)
    if sensitivity_form == "derived":
        sensitivity = worst_case_divergence(etas, gamma=mu if schedule == "strongly-convex" else 0.0, L=L,
                                            batch_size=batch_size, per_pass=per_pass)
        used = "2kL*eta/b" if schedule == "convex" else "sum over passes of the worst position (<= 2L/(gamma m b))"
    else:
        if schedule != "strongly-convex":
            raise ValueError("outpert-sgd-reference reproduces the strongly convex BoltOn form: it needs l2 > 0 "
                             "(schedule auto or strongly-convex)")
        sensitivity = bolton_reference_sensitivity(L=L, gamma=mu, n=n, batch_size=batch_size)
        used = "2L/(gamma n b) (TensorFlow Privacy BoltOn)"
    kind, scale, noise_notes = noise_calibration(sensitivity, eps, delta, gaussian)
    notes += noise_notes
    clipped = enforce_row_bound(problem, R)
    kernel = LockstepGLM(clipped, math.inf)
    rngs = draw_rngs(rng, draws)
    W = np.zeros((draws, clipped.p))
    for _ in range(passes):
        perms = np.stack([child.permutation(n)[: per_pass * batch_size] for child in rngs])
        batches = perms.reshape(draws, per_pass, batch_size)
        for j in range(per_pass):
            t = _ * per_pass + j
            G = kernel.sums(W, batches[:, j, :])
            W *= 1.0 - etas[t] * mu
            W -= (etas[t] / batch_size) * G
            if radius is not None:
                norms = np.linalg.norm(W, axis=1, keepdims=True)
                np.multiply(W, np.minimum(1.0, radius / np.maximum(norms, 1e-300)), out=W)
    noise = np.stack([draw_noise(kind, scale, clipped.p, child) for child in rngs])
    return FitResult(
        weights=W + noise, epsilon_spent=eps, delta_spent=delta, adjacency="replace-one",
        grad_evals=passes * per_pass * batch_size / n, iterations=steps, notes=notes,
        accounting=f"one release: output perturbation of permutation SGD ({used}), {kind} noise",
        extra={"schedule": schedule, "steps": steps, "sensitivity": sensitivity, "noise": kind,
               "noise_scale": scale, "lipschitz": L, "smoothness": beta, "mu": mu})


# White box (dperm.algorithms.audit_worst_case): the differing row in the Huberised hinge's linear
# zone (L = 1), μ = 0 (constant step: Δ = 2kLη/b, realised exactly: every other row is zero, so
# nothing contracts), n = 50 in batches of 5, two passes; ε-DP (Gamma-norm, p = 1: Laplace) and
# (ε, δ) with the analytic Gaussian.
_AUDIT = cases(
    white_box_audit("the differing row at the Lipschitz bound in every pass, epsilon-DP (white box)", "replace-one",
                    delta=0.0, runs=100_000, shift=recorded_sensitivity, n=50, l2=0.0,
                    hyper={"passes": 2, "batch_size": 5}, **PUSH_HINGE),
    white_box_audit("the same, analytic Gaussian (white box)", "replace-one", runs=400_000,
                    shift=recorded_sensitivity, n=50, l2=0.0, hyper={"passes": 2, "batch_size": 5}, **PUSH_HINGE))


@register("outpert-sgd",
          domains={"passes": POSITIVE_INT, "batch_size": POSITIVE_INT, "learning_rate": POSITIVE,
                   "schedule": one_of(*SCHEDULES), "radius": optional(POSITIVE), "row_bound": POSITIVE,
                   "gaussian": one_of("analytic", "zhao"), "huber_h": optional(UNIT)},
          needs=(finite_epsilon,),
          size_bounds=("batch_size",),
          switches={"sensitivity_form": "derived"}, audit=_AUDIT,
          description="Wu et al. 2017 bolt-on: permutation SGD (k passes, batch b), output perturbation; "
                      "convex 2kL*eta/b or strongly convex eta_t = min(1/beta, 1/(gamma t))")
def fit_outpert_sgd(problem, privacy: Privacy, rng, draws: int = 1, *, passes: int = 5, batch_size: int = 50,
                    learning_rate: float = 0.1, schedule: str = "auto", radius: float | None = None,
                    row_bound: float = 1.0, gaussian: str = "analytic", huber_h: float | None = 0.5,
                    sensitivity_form: str = "derived"):
    """Bolt-on OutPert-SGD (module docstring); ``sensitivity_form`` is fixed by the registration."""
    return _fit_outpert_sgd(problem, privacy, rng, draws, passes=passes, batch_size=batch_size,
                            learning_rate=learning_rate, schedule=schedule, radius=radius, row_bound=row_bound,
                            gaussian=gaussian, huber_h=huber_h, sensitivity_form=sensitivity_form)


register_variant("outpert-sgd-reference", of="outpert-sgd", switches={"sensitivity_form": "bolton-b"},
                 dp_as_implemented=False,
                 audit=canary_audit("replace-one", epsilon=1.0, delta=1e-5, l2=0.1, n=500,
                                    name="canary in batches of 25: the b-fold too small sensitivity",
                                    hyper={"passes": 1, "batch_size": 25}),
                 caveat="strongly convex mini-batch sensitivity 2L/(gamma n b) as TensorFlow Privacy's BoltOn "
                        "optimizer: b times too small (docs/privacy.md#outpert-sgd-sensitivity)",
                 description="bolt-on SGD with TensorFlow Privacy's strongly convex mini-batch sensitivity")
