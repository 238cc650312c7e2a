"""DP gradient descent as taught in Wang's lecture notes (Lecture 15, Algorithm 2).

θ_t = Π_C(θ_{t−1} − η_t(∇L(θ_{t−1}; D) + λθ_{t−1} + N(0, σ²I))), θ_0 = 0, t = 1..T, C = {‖θ‖ ≤ R}
(``radius``; None: unconstrained); output the last iterate θ_T or the average (1/T) Σ_{t<T} θ_t
(``output``). ∇L is the mean of the per-example gradients, each clipped to norm L (``clip``; the
notes assume an L-Lipschitz loss, clipping makes the bound hold on any data). λ = ``problem.l2``
is data-independent and added outside the noise. Step sizes (``step_size``): ``constant`` η,
``convex`` η_t = ‖C‖/(G√t) and ``strongly-convex`` η_t = 1/(λt) (:mod:`dperm.algorithms.lecture.theory`).

**Theorem (Lemma 15.1).** If ℓ(·, x, y) is L-Lipschitz, Algorithm 2 is (ε, δ)-DP for
σ² ≥ 64 L² T ln(2/δ) ln(2.5T/δ)/(n²ε²). Adjacency: replace-one; the mean gradient moves by at
most Δ = 2L/n. Proof: each step is the Gaussian mechanism (Lemma 15.3: σ = Δ√(2 ln(1.25/δ'))/ε',
ε' < 1) at the advanced-composition split ε' = ε/(2√(2T ln(2/δ))), δ' = δ/(2T) (Lemma 15.2); the
adaptively chosen queries θ_t compose by advanced composition.

Accounting (``accountant``): ``"notes"`` (default) is Lemma 15.1 exactly (the project's
:func:`advanced_composition_split`, which also checks that the split composes to ε, and the
classical Gaussian, refused for ε' ≥ 1; the notes state Lemma 15.2 for ε < 1, the check makes
larger ε valid where it passes). ``"rdp"`` and ``"pld"`` calibrate the same T-fold Gaussian
mechanism (sampling rate 1, noise multiplier σ/Δ) by Rényi DP or by dp-accounting's privacy loss
distribution (:func:`.dp_sgd.calibrate_noise_multiplier`; docs/privacy.md#tight-accounting): for
full-batch steps the PLD is the exact composition (the Gaussian's T-fold composition is a Gaussian
of multiplier σ/(Δ√T)), so it needs the least noise. The notes' typos: docs/deviations.md#lecture-typos.
"""

from __future__ import annotations

from ..audit_worst_case import PUSH_AT_CLIP, cases, white_box_audit
from ..base import FitResult, Privacy, draw_rngs
from ..domains import POSITIVE, POSITIVE_INT, finite_epsilon, one_of, optional, positive_delta
from ..registry import register
from .theory import OUTPUTS, STEP_SIZES, check_schedule, gd_sigma_accountant, gd_sigma_notes, run_projected

ACCOUNTING = {
    "notes": "advanced composition + classical Gaussian (Lemma 15.1 of the notes)",
    "rdp": "RDP of the T-fold Gaussian mechanism, improved conversion",
    "pld": "PLD of the T-fold Gaussian mechanism (dp-accounting)",
}


def dp_gd_sigma(epsilon: float, delta: float, steps: int, n: int, lipschitz: float, accountant: str) -> dict:
    """σ of the notes' DP-GD (noise std on the mean gradient) by ``accountant``, with its inputs."""
    if accountant not in ACCOUNTING:
        raise ValueError(f"accountant must be one of {sorted(ACCOUNTING)}; got accountant={accountant!r}")
    if accountant == "notes":
        return gd_sigma_notes(epsilon, delta, steps, n, lipschitz)
    return gd_sigma_accountant(epsilon, delta, steps, n, lipschitz, accountant)


# White box (dperm.algorithms.audit_worst_case): the differing row pushes at the full clip L = 1,
# replace-one, n = 50, η = 1, so each step moves the release by 2L/n. One step calibrated by the
# PLD (exact for a Gaussian: the case that shows the calibration), five by the notes' own bound.
AUDIT = cases(
    white_box_audit("one step, PLD calibration, a row pushing at the full clip (white box)", "replace-one",
                    runs=400_000, shift=2 * 1.0 / 50, n=50,
                    hyper={"steps": 1, "learning_rate": 1.0, "accountant": "pld"},
                    **PUSH_AT_CLIP),
    white_box_audit("five steps, the notes' calibration (Lemma 15.1), the same row (white box)", "replace-one",
                    runs=50_000, shift=5 * 2 * 1.0 / 50, n=50, hyper={"steps": 5, "learning_rate": 1.0},
                    **PUSH_AT_CLIP))


@register("dp-gd-lecture", description="projected noisy full-batch GD of Wang's notes (Lemma 15.1), "
                                       "replace-one; notes, RDP or PLD calibration", audit=AUDIT,
          domains={"steps": POSITIVE_INT, "learning_rate": POSITIVE, "clip": POSITIVE, "radius": optional(POSITIVE),
                   "step_size": one_of(*STEP_SIZES), "output": one_of(*OUTPUTS),
                   "accountant": one_of(*sorted(ACCOUNTING))},
          needs=(finite_epsilon, positive_delta))
def fit_dp_gd_lecture(problem, privacy: Privacy, rng, draws: int = 1, *, steps: int = 100,
                      learning_rate: float = 1.0, clip: float = 1.0, radius: float | None = None,
                      step_size: str = "constant", output: str = "last", accountant: str = "notes"):
    if not privacy.is_private or not privacy.delta > 0:
        raise ValueError(f"dp-gd-lecture needs a finite epsilon and delta > 0; got epsilon={privacy.epsilon!r}, "
                         f"delta={privacy.delta!r}")
    if not (isinstance(steps, int) and steps >= 1):
        raise ValueError(f"steps must be a positive integer; got steps={steps!r}")
    if not clip > 0:
        raise ValueError(f"clip must be > 0; got clip={clip!r}")
    check_schedule(step_size, output, radius, problem.l2, learning_rate)
    cal = dp_gd_sigma(float(privacy.epsilon), float(privacy.delta), steps, problem.n, float(clip), accountant)
    weights = run_projected(problem, draw_rngs(rng, draws), steps, batch="full", sigma=cal["sigma"], clip=clip,
                            mode=step_size, learning_rate=learning_rate, radius=radius, output=output)
    return FitResult(weights=weights, epsilon_spent=float(privacy.epsilon), delta_spent=float(privacy.delta),
                     adjacency="replace-one", grad_evals=float(steps), iterations=steps,
                     accounting=ACCOUNTING[accountant], extra=dict(cal, steps=steps, accountant=accountant))
