"""DP-SGD with one example per step, as taught in Wang's lecture notes (Lecture 15, Algorithm 3).

θ_t = Π_C(θ_{t−1} − η_t(∇ℓ(θ_{t−1}; x_i) + λθ_{t−1} + N(0, σ²I))), i uniform on {1..n} afresh at
every step, θ_0 = 0, t = 1..T, C = {‖θ‖ ≤ R}; output θ_T or the average (``output``); per-example
gradients clipped to L (``clip``), λ = ``problem.l2`` outside the noise. T = n² by default (the
notes' choice for their rates); ``steps`` sets T, or ``steps_rule="condition"`` takes the smallest T
that the notes' condition allows (below), at least one pass (n steps). Step sizes as
:mod:`.dp_gd_lecture` (``convex``: η_t = ‖C‖/(G√t), Lemma 15.6; ``strongly-convex``: η_t = 1/(λt),
Lemma 15.7).

**Theorem (Lemma 15.5).** If ℓ(·, x, y) is L-Lipschitz, Algorithm 3 is (ε, δ)-DP for
σ² = 64 L² T ln(2/δ) ln(2.5T/(δn))/(n²ε²). Adjacency: replace-one; the sampled gradient moves by at
most 2L. Proof: the per-step budget (ε', δ') = (ε/(2√(2T ln(2/δ))), δ/(2T)) of advanced composition
(Lemma 15.2), reached by amplification by sampling one row of n (Lemma 15.4, read linearly:
ε' = ε_b/n, δ' = δ_b/n) from a classical Gaussian at (ε_b, δ_b) (Lemma 15.3). Utility: with T = n²,
Õ(√d/(nε)) (convex) and Õ(d/(n²ε²)) (strongly convex).

**Where the notes' argument needs care** (docs/privacy.md#gaussian-range): Lemma 15.3 holds for
ε_b = n·ε' < 1 only, i.e. T > n²ε²/(8 ln(2/δ)); a fit outside it is refused with the smallest T that
works. The linear reading of Lemma 15.4 is an approximation from below (ln(1 + (e^{ε_b} − 1)/n) is
larger than ε_b/n by up to a factor e − 1 at ε_b = 1); the fit runs the valid chain forwards on
its σ (exact amplification, advanced composition with the actual per-step ε) and refuses a σ it
does not certify; ``extra["certified_epsilon"]`` records that chain's ε (the split's slack absorbs
the factor on every practical grid).

Accounting (``accountant``): ``"notes"`` (default) as above; ``"rdp"``: the same sampler's RDP under
replace-one (Wang, Balle & Kasiviswanathan 2019, dp-accounting), needing no ε_b < 1 condition.
No PLD is offered: dp-accounting has none for sampling without replacement under replace-one,
and its replace-one Poisson pair does not bound this sampler (docs/privacy.md#tight-accounting).
"""

from __future__ import annotations

from ..audit_worst_case import PUSH_AT_CLIP, white_box_audit
from ..base import FitResult, Privacy, draw_rngs
from ..domains import POSITIVE, POSITIVE_INT, finite_epsilon, one_of, optional, positive_delta
from ..registry import register
from .theory import (
    ONE_CHAINS,
    OUTPUTS,
    STEP_SIZES,
    check_schedule,
    run_projected,
    sgd_min_steps,
    sgd_sigma_notes,
    sgd_sigma_rdp,
)

ACCOUNTING = {
    "notes": "advanced composition + amplification by sampling + classical Gaussian (Lemma 15.5 of the notes)",
    "rdp": "RDP of one row sampled without replacement, replace-one (dp-accounting), improved conversion",
}
STEPS_RULES = ("n2", "condition")


def dp_sgd_lecture_steps(epsilon: float, delta: float, n: int, steps: int | None, steps_rule: str) -> int:
    """T: ``steps`` if given, else n² (``"n2"``) or max(n, the smallest T the notes' condition allows)."""
    if steps is not None:
        if not (isinstance(steps, int) and steps >= 1):
            raise ValueError(f"steps must be a positive integer or None; got steps={steps!r}")
        return steps
    if steps_rule not in STEPS_RULES:
        raise ValueError(f"steps_rule must be one of {STEPS_RULES}; got steps_rule={steps_rule!r}")
    return n * n if steps_rule == "n2" else max(n, sgd_min_steps(epsilon, delta, n))


def dp_sgd_lecture_sigma(epsilon: float, delta: float, steps: int, n: int, lipschitz: float, accountant: str) -> dict:
    """σ of the notes' DP-SGD (noise std on the sampled gradient) by ``accountant``, with its inputs."""
    if accountant not in ACCOUNTING:
        raise ValueError(f"accountant must be one of {sorted(ACCOUNTING)} (no PLD for this sampler, see the module "
                         f"docstring); got accountant={accountant!r}")
    if accountant == "notes":
        return sgd_sigma_notes(epsilon, delta, steps, n, lipschitz)
    return sgd_sigma_rdp(epsilon, delta, steps, n, lipschitz)


def fit_dp_sgd_lecture_settings(problem, privacies, rngs, draws: int = 1, *, steps: int | None = None,
                                steps_rule: str = "n2", learning_rate: float = 0.1, clip: float = 1.0,
                                radius: float | None = 1.0, step_size: str = "convex", output: str = "last",
                                accountant: str = "notes") -> list[FitResult]:
    """Every privacy target of a row at once: ``draws`` chains per target (target i's from
    ``rngs[i]``), each with its own T and σ (:func:`.theory.run_projected`): result i is, bit for
    bit, the fit of target i alone. Up to :data:`.theory.ONE_CHAINS` draws per target, each chain
    runs alone in blocks of steps; more, every chain of the row in one lockstep state, whose
    interpreter cost per step they share. The choice follows ``draws``, the same alone or in a row."""
    for privacy in privacies:
        if not privacy.is_private or not privacy.delta > 0:
            raise ValueError(f"dp-sgd-lecture needs a finite epsilon and delta > 0; got epsilon={privacy.epsilon!r}, "
                             f"delta={privacy.delta!r}")
    if not clip > 0:
        raise ValueError(f"clip must be > 0; got clip={clip!r}")
    if len(rngs) != len(privacies):
        raise ValueError(f"need one generator per privacy target: {len(rngs)} for {len(privacies)}")
    check_schedule(step_size, output, radius, problem.l2, learning_rate)
    targets, chains, chain_steps, chain_sigma = [], [], [], []
    for privacy, rng in zip(privacies, rngs):
        eps, delta, n = float(privacy.epsilon), float(privacy.delta), problem.n
        T = dp_sgd_lecture_steps(eps, delta, n, steps, steps_rule)
        cal = dp_sgd_lecture_sigma(eps, delta, T, n, float(clip), accountant)
        targets.append((eps, delta, T, cal))
        chains += draw_rngs(rng, draws)
        chain_steps += [T] * draws
        chain_sigma += [cal["sigma"]] * draws
    weights = run_projected(problem, chains, chain_steps, batch="one", sigma=chain_sigma, clip=clip, mode=step_size,
                            learning_rate=learning_rate, radius=radius, output=output, blocked=draws <= ONE_CHAINS)
    return [FitResult(weights=weights[i * draws:(i + 1) * draws], epsilon_spent=eps, delta_spent=delta,
                      adjacency="replace-one", grad_evals=T / problem.n, iterations=T,
                      accounting=ACCOUNTING[accountant], extra=dict(cal, steps=T, accountant=accountant))
            for i, (eps, delta, T, cal) in enumerate(targets)]


@register("dp-sgd-lecture", settings=fit_dp_sgd_lecture_settings,
          domains={"steps": optional(POSITIVE_INT), "steps_rule": one_of(*STEPS_RULES), "learning_rate": POSITIVE,
                   "clip": POSITIVE, "radius": optional(POSITIVE), "step_size": one_of(*STEP_SIZES),
                   "output": one_of(*OUTPUTS), "accountant": one_of(*sorted(ACCOUNTING))},
          needs=(finite_epsilon, positive_delta),
          description="projected noisy one-example SGD of Wang's notes (Lemma 15.5), "
                                        "replace-one; notes or RDP calibration",
          # White box: one step on one row (n = 1: the sampled row is the differing one), RDP
          # calibration; the row pushes at the full clip (replace-one: 2L per step, η = 0.5).
          audit=white_box_audit("one step on one row, RDP calibration, pushing at the full clip (white box)",
                                "replace-one", runs=300_000, shift=2 * 1.0 * 0.5, n=1, **PUSH_AT_CLIP,
                                hyper={"steps": 1, "learning_rate": 0.5, "accountant": "rdp", "radius": None,
                                       "step_size": "constant"}))
def fit_dp_sgd_lecture(problem, privacy: Privacy, rng, draws: int = 1, *, steps: int | None = None,
                       steps_rule: str = "n2", learning_rate: float = 0.1, clip: float = 1.0,
                       radius: float | None = 1.0, step_size: str = "convex", output: str = "last",
                       accountant: str = "notes"):
    """One privacy target: :func:`fit_dp_sgd_lecture_settings` with it alone (module docstring)."""
    return fit_dp_sgd_lecture_settings(problem, [privacy], [rng], draws, steps=steps, steps_rule=steps_rule,
                                       learning_rate=learning_rate, clip=clip, radius=radius, step_size=step_size,
                                       output=output, accountant=accountant)[0]
