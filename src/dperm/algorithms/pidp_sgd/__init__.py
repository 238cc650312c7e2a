"""PIDP-SGD as published (Kang et al., Algorithm 1 and Theorem 5): a reference variant only; and
its batch-1 DP-SGD control.

**Not differentially private as described** (docs/privacy.md#pidp-sgd): a step that passes the
noisy "contribution" test is taken without noise, releasing a deterministic function of the
sampled example. There is no correct base: this is registered as ``pidp-sgd-reference`` with
``dp_as_implemented = False`` and is labelled so in every record, table and figure.

Algorithm (batch 1), T = ``steps`` split into R = ``rounds`` global rounds of T_local = ⌈T/R⌉
(the chains: :mod:`.chains`; the test: :mod:`.noise_test`):

1. θ̃: a (near-)optimal model from a **non-private** solve (``start: nonprivate``: L-BFGS on
   F + (``start_shift``/2)‖θ‖², by default F itself; the MLP from a public Glorot
   initialisation), projected onto ‖θ‖ ≤ r (``start: zero`` starts from 0 instead; the audit
   uses it to isolate the noise-free branch). r = ``radius``, a number, or ``"start-norm"``:
   r = ‖θ̃‖ of the training fold before projection (the smallest ball that holds the model the
   non-private solve reaches: a data-dependent, non-private choice, docs/deviations.md#pidp-unknowns).
2. Each round: H = ∇²F(θ^(g)_r) + ζ₀I (ζ₀ = ``hessian_shift``; F includes λ), inverted once.
3. Each local step: z_t uniform; influence c = H⁻¹·clip_G(∇ℓ(θ^(g)_r; z_t))/n at the round's
   global iterate; c^(o) = c + E·sign(c), E = (2βG + C_H·G²/ζ)/(ζ²n²) (Theorem 4,
   β = ``smoothness``, C_H = ``hessian_lipschitz``); c_t = 2c^(o) + N(0, σ_c²I),
   σ_c = 2√2·√(ln(1.25R/δ₂))·G·R/(nζε₂) (the proof's c' = 2√2). ζ (``zeta``): ``"proof"``,
   λ + ζ₀, a lower bound on λ_min(H) as the proof needs; ``"printed"``, ‖H(θ̃) + ζ₀I‖₂ as the
   paper prints its assumption ‖H‖₂ ≥ ζ (:mod:`.noise_test`).
4. Lines 10–11 (the jump "to line 10" read as line 11, docs/deviations.md#pidp-inconsistencies):
   with A = 2r·e^{ε₁}δ₁, no noise iff every |c_t,i| < A/(e^{ε₁} − 1) and
   ln(A/(A − (e^{ε₁} − 1)|c_t,i|)) ≤ 2ε₁ (together: max_i |c_t,i| ≤ 2rδ₁(1 + e^{−ε₁})).
5. Step: θ ← Π_r(θ − α(clip_G(∇ℓ(θ; z_t)) + b)), b = 0 on a noise-free step, else
   b ~ N(0, σ²G²I) with σ calibrated for the adjacency the paper declares, **replace-one**: T
   steps on one uniformly drawn row, the clipped gradient moving by 2G between neighbours, at
   (ε₁, δ₁) (:func:`dperm.privacy.sgd_calibration.calibrate_uniform_noise`; the paper's
   asymptotic constant is unspecified, docs/deviations.md#pidp-unknowns).

ε₁ = (1 − ``test_share``)·ε = 3ε/4, ε₂ = ε/4, δ₁ = δ₂ = δ/2. Adjacency as claimed: replace-one
(Remark 6). Accounting as claimed: (ε₁ + ε₂, δ₁ + δ₂) by Theorem 5, which does not hold.
``extra``: ``noise_free_fraction`` (the fraction of the T steps taken without noise, per draw),
``noise_free_probability`` (the exact probability that a first-round step is noise-free,
:func:`.noise_test.noise_free_probability`), ζ, σ_c, σ, the threshold, E and r.

MLP: the full Hessian (≈(d + 1)² parameters) is too large to invert per round; c is computed on
the **output layer** (w₂, b₂) only, from that block of the Hessian (exact for that block: the
model is a GLM in the hidden features), and taken as 0 on the hidden layer (the last-layer
practice of influence functions, Koh & Liang 2017). The noise b^(c) still covers every
coordinate: on the zero block the test is the event that m′ iid N(0, σ_c²) all fall under the
threshold, drawn as one Bernoulli of probability (2Φ(thr/σ_c) − 1)^{m′} (the same law as drawing
them; c_t is never released). docs/deviations.md#pidp-unknowns and
tests/algorithms/test_kang_family.py compare it with the exact solve.

**The control** ``dp-sgd-batch1`` (correct; Kang et al.'s Section 4 "traditional" DP-SGD): the
same chains with no test, every step noisy, σ calibrated for T uniform single-row steps at the
whole (ε, δ) under replace-one; the same T, step size, radius and start options. With
``start: nonprivate`` it starts from PIDP-SGD's θ̃ (a non-private solve: the records say so, and
the config marks it ``tuning: non-private``), so that beside PIDP-SGD only the influence test and
its ε/4 differ.

Lockstep: the draws and, through the ``settings`` functions, the ε of a row run as chains
advanced together; each chain draws its examples and noise from its own generator, so a chain's
output is the same as alone.
"""

from __future__ import annotations

import math

import numpy as np

from ...privacy import calibration_faults as faults
from ...privacy.perturbation import private_target
from ...privacy.sgd_calibration import calibrate_uniform_noise
from ..audit_cases import AuditCase, canary_problems
from ..audit_worst_case import PUSH_AT_CLIP, white_box_audit
from ..base import FitResult, Privacy, draw_rngs
from ..domains import ANY, FRACTION, NON_NEGATIVE, POSITIVE, POSITIVE_INT, finite_epsilon, one_of, positive_delta
from ..registry import register
from .chains import (
    GLMModel,
    InfluenceTest,
    MLPModel,
    make_model,
    project,
    run_chains,
    share_starts,
    start_key,
    start_point,
)
from .noise_test import (
    ZETA_READINGS,
    contribution_noise,
    error_bound,
    noise_free_probability,
    noise_free_test,
    noise_free_threshold,
    zeta_value,
)

# the names the tests and the Kang plugin use
_GLMModel, _MLPModel = GLMModel, MLPModel
__all__ = ["ZETA_READINGS", "contribution_noise", "error_bound", "fit_pidp_sgd_reference", "noise_free_probability",
           "noise_free_test", "noise_free_threshold", "share_starts", "start_key", "start_point", "zeta_value"]


def _check(steps, rounds, learning_rate, clip, radius, hessian_shift, test_share, zeta):
    for name, value in (("steps", steps), ("rounds", rounds)):
        if isinstance(value, bool) or not (isinstance(value, int) and value >= 1):
            raise ValueError(f"{name} must be a positive integer; got {name}={value!r}")
    for name, value in (("learning_rate", learning_rate), ("clip", clip)):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0; got {name}={value!r}")
    if radius != "start-norm" and not (isinstance(radius, (int, float)) and math.isfinite(radius) and radius > 0):
        raise ValueError(f"radius must be a finite number > 0 or 'start-norm'; got radius={radius!r}")
    if not hessian_shift > 0:
        raise ValueError(f"hessian_shift must be > 0; got {hessian_shift!r}")
    if not 0 <= test_share < 1:
        raise ValueError(f"test_share must be in [0, 1); got {test_share!r}")
    if zeta not in ZETA_READINGS:
        raise ValueError(f"zeta must be one of {ZETA_READINGS}; got zeta={zeta!r}")


def _start(problem, model, hyper):
    """(θ̃ projected, r): the start of every chain and the radius (module docstring, step 1)."""
    theta = start_point(problem, start=hyper["start"], shift=hyper["start_shift"],
                        start_iterations=hyper["start_iterations"])
    radius = hyper["radius"]
    if radius == "start-norm":
        radius = float(np.linalg.norm(theta))
        if not radius > 0:
            raise ValueError("radius='start-norm' needs a non-zero start (start: nonprivate)")
    return project(theta[None], radius)[0], float(radius)


def _fits(problem, targets, rngs_per_target, draws, hyper, *, influence_test: bool, name: str):
    """Result per target (lockstep chains): PIDP-SGD (``influence_test``) or its control."""
    _check(hyper["steps"], hyper["rounds"], hyper["learning_rate"], hyper["clip"], hyper["radius"],
           hyper["hessian_shift"], hyper["test_share"], hyper["zeta"])
    if influence_test and not hyper["test_share"] > 0:
        raise ValueError("pidp-sgd-reference needs test_share in (0, 1): its test spends that share of epsilon")
    for target in targets:
        private_target(target, name)
        if target.delta <= 0:
            raise ValueError(f"{name} needs delta > 0 (an (epsilon, delta) guarantee)")
    n, steps = problem.n, hyper["steps"]
    model = make_model(problem, hyper["hessian_shift"])
    theta0, radius = _start(problem, model, hyper)
    share = hyper["test_share"] if influence_test else 0.0
    train = [Privacy((1.0 - share) * t.epsilon, t.delta / 2.0 if influence_test else t.delta) for t in targets]
    cals = [calibrate_uniform_noise(t, n, steps, algorithm=name) for t in train]
    chains = [(i, child) for i, rng in enumerate(rngs_per_target) for child in draw_rngs(rng, draws)]
    owners = [i for i, _ in chains]
    test = None
    if influence_test:
        zeta = zeta_value(hyper["zeta"], l2=problem.l2, shift=hyper["hessian_shift"],
                          hessian=model.hessian(theta0) if hyper["zeta"] == "printed" else None)
        error = error_bound(smoothness=hyper["smoothness"], hessian_lipschitz=hyper["hessian_lipschitz"],
                            clip=hyper["clip"], zeta=zeta, n=n)
        eps1 = np.array([train[i].epsilon for i in owners])
        delta1 = np.array([train[i].delta for i in owners])
        sigma_c = np.array([contribution_noise(epsilon2=share * targets[i].epsilon, delta2=targets[i].delta / 2.0,
                                               rounds=hyper["rounds"], clip=hyper["clip"], n=n, zeta=zeta)
                            for i in owners])
        threshold = np.array([noise_free_threshold(e1, d1, radius) for e1, d1 in zip(eps1, delta1)])
        # audit mutants only (privacy.calibration_faults): the test's noise scaled as the training noise is
        test = InfluenceTest(eps1, delta1, faults.noise_scale(sigma_c), threshold, error, radius)
    sigma = faults.noise_scale(np.array([cals[i].noise_multiplier for i in owners]))
    W, free, first = run_chains(problem, model, [c for _, c in chains], theta0, sigma=sigma, test=test, steps=steps,
                                rounds=hyper["rounds"], learning_rate=hyper["learning_rate"], clip=hyper["clip"],
                                radius=radius)
    out = []
    for i, target in enumerate(targets):
        rows = [j for j, owner in enumerate(owners) if owner == i]
        extra = {"noise_multiplier": cals[i].noise_multiplier, "radius": radius, "steps": steps,
                 "start_norm": float(np.linalg.norm(theta0))}
        if influence_test:
            extra.update({"noise_free_fraction": free[rows] / steps, "noise_free_probability": float(first[rows[0]]),
                          "sigma_c": float(test.sigma_c[rows[0]]), "threshold": float(test.threshold[rows[0]]),
                          "error_bound": float(test.error), "zeta": float(zeta), "zeta_reading": hyper["zeta"],
                          "rounds": hyper["rounds"]})
            out.append(FitResult(
                weights=W[rows], epsilon_spent=target.epsilon, delta_spent=target.delta, adjacency="replace-one",
                grad_evals=steps / n, iterations=steps,
                notes=["not DP as described (docs/privacy.md#pidp-sgd): noise-free steps after a data-dependent test"],
                accounting="claimed by the paper's Theorem 5: (3eps/4 + eps/4, delta/2 + delta/2); does not hold. "
                           f"Its noisy steps: {cals[i].accounting}",
                extra=extra))
        else:
            notes = []
            if hyper["start"] == "nonprivate":
                notes.append("starts from theta~, a non-private solve (as PIDP-SGD), so that only PIDP-SGD's test "
                             "differs: not DP as run; the start is a data-dependent choice "
                             "(docs/deviations.md#pidp-unknowns)")
            out.append(FitResult(weights=W[rows], epsilon_spent=cals[i].epsilon_spent, delta_spent=target.delta,
                                 adjacency="replace-one", grad_evals=steps / n, iterations=steps, notes=notes,
                                 accounting=cals[i].accounting, extra=extra))
    return out


def fit_pidp_settings(problem, privacies, rngs, draws: int = 1, **hyper):
    """Every ε of a row at once (chains in lockstep); result i has the law of a lone fit."""
    return _fits(problem, list(privacies), list(rngs), draws, hyper, influence_test=True, name="pidp-sgd-reference")


def fit_control_settings(problem, privacies, rngs, draws: int = 1, **hyper):
    """Every ε of a row of the control at once (chains in lockstep)."""
    return _fits(problem, list(privacies), list(rngs), draws, {**_CONTROL_FIXED, **hyper}, influence_test=False,
                 name="dp-sgd-batch1")


def _audit() -> list[AuditCase]:
    """Two cases, both replace-one at a claimed (1, 10⁻⁵):

    * every row of D is zero but the first coordinate (so its gradient is 0 on the canary
      coordinate c), D′ swaps a row for the unit canary on c. With a public start at 0 and a
      threshold far above σ_c (large r, small G), steps are noise-free: on D, w_c stays exactly 0;
      on D′ it moves whenever the canary is sampled (probability 1 − (1 − 1/n)^T ≈ 0.64 for T = n);
    * the setting where the branch fires on real data (docs/deviations.md#pidp-unknowns):
      r = 10⁴, ζ read as printed, R = 1, G = 1 and the default ζ₀. Rows of D are e₀ (a bias
      column, ‖H‖₂ ≈ 1/4), n = 5,000: σ_c ≈ 0.03 against a threshold of 0.15, so D's steps are
      noise-free but for a few percent of runs, and w_c stays 0; on D′ the canary's own step
      fails the test (its coordinate has curvature ζ₀ only, so its influence is large) and adds
      noise to every coordinate: w_c ≠ 0 whenever it is sampled. The test's decision itself
      leaks the row.
    """
    d, d_prime, c = canary_problems("replace-one", n=20, p=3)
    hyper = {"steps": 20, "rounds": 1, "learning_rate": 1.0, "clip": 1e-3, "radius": 1000.0, "hessian_shift": 1.0,
             "start": "zero"}

    def statistic(W, c=c):
        return np.abs(np.asarray(W)[:, c])

    d2, d2_prime, c2 = canary_problems("replace-one", n=5000, p=3, background=1.0)
    fires = {"steps": 5000, "rounds": 1, "learning_rate": 1.0, "radius": 1e4, "zeta": "printed", "start": "zero"}
    return [AuditCase(name="noise-free steps reveal the canary (w_c != 0)", d=d, d_prime=d_prime,
                      privacy=Privacy(1.0, 1e-5), hyper=hyper, statistic=statistic, runs=2000),
            AuditCase(name="r = 1e4, zeta as printed, R = 1: the test's decision reveals the canary (w_c != 0)",
                      d=d2, d_prime=d2_prime, privacy=Privacy(1.0, 1e-5), hyper=fires,
                      statistic=(lambda W, c=c2: np.abs(np.asarray(W)[:, c])), runs=2000)]


@register("pidp-sgd-reference", variant="reference", dp_as_implemented=False, settings=fit_pidp_settings,
          audit=_audit,
          domains={"steps": POSITIVE_INT, "rounds": POSITIVE_INT, "learning_rate": POSITIVE, "clip": POSITIVE,
                   "radius": ANY, "hessian_shift": POSITIVE, "test_share": FRACTION, "smoothness": POSITIVE,
                   "hessian_lipschitz": NON_NEGATIVE, "zeta": one_of("proof", "printed"), "start": ANY,
                   "start_shift": NON_NEGATIVE, "start_iterations": POSITIVE_INT},
          needs=(finite_epsilon, positive_delta),
          caveat="not DP as described: steps that pass a noisy influence test are taken without noise "
                 "(docs/privacy.md#pidp-sgd); no correct variant exists",
          description="Kang et al. Algorithm 1 (PIDP-SGD) as published, batch 1, influence-function test")
def fit_pidp_sgd_reference(problem, privacy: Privacy, rng, draws: int = 1, *, steps: int = 10_000, rounds: int = 5,
                           learning_rate: float = 0.1, clip: float = 1.0, radius: float | str = 1.0,
                           hessian_shift: float = 1e-3, test_share: float = 0.25, smoothness: float = 0.25,
                           hessian_lipschitz: float = 0.1, zeta: str = "proof", start: str = "nonprivate",
                           start_shift: float = 0.0, start_iterations: int = 200):
    """Kang et al.'s Algorithm 1 (module docstring)."""
    hyper = dict(steps=steps, rounds=rounds, learning_rate=learning_rate, clip=clip, radius=radius,
                 hessian_shift=hessian_shift, test_share=test_share, smoothness=smoothness,
                 hessian_lipschitz=hessian_lipschitz, zeta=zeta, start=start, start_shift=start_shift,
                 start_iterations=start_iterations)
    return fit_pidp_settings(problem, [privacy], [rng], draws, **hyper)[0]


# what the control does not use (no test): fixed, so its records carry no hyper-parameter it ignores
_CONTROL_FIXED = {"rounds": 1, "hessian_shift": 1e-3, "test_share": 0.0, "smoothness": 0.25,
                  "hessian_lipschitz": 0.1, "zeta": "proof"}


# White box (dperm.algorithms.audit_worst_case): two rows, replace-one, the differing row pushing
# at the full clip (η = 1, C = 1), two steps that each sample it with probability 1/2.
_BATCH1_LIMIT = ("the noise is sized by Wang, Balle & Kasiviswanathan's without-replacement bound, which is "
                 "loose on the smallest pairs the calibration accepts (one row of two sampled per step: at ten "
                 "steps it finds no sigma for epsilon = 1 at all); on two steps the correct release reaches 0.08 of "
                 "its claim and half the noise 0.21, so no number of runs can catch it there; the sensitivity has no "
                 "calibration of its own (the noise is a multiplier of the clip)")


@register("dp-sgd-batch1", settings=fit_control_settings,
          audit=white_box_audit("two rows, the differing one pushing at the full clip, two steps (white box)",
                                "replace-one", runs=100_000, shift=2 * 2 * 1.0, n=2,
                                hyper={"steps": 2, "learning_rate": 1.0, "radius": 1e6, "start": "zero"},
                                **PUSH_AT_CLIP),
          domains={"steps": POSITIVE_INT, "learning_rate": POSITIVE, "clip": POSITIVE, "radius": ANY, "start": ANY,
                   "start_shift": NON_NEGATIVE, "start_iterations": POSITIVE_INT},
          needs=(finite_epsilon, positive_delta),
          audit_limits={"half noise": _BATCH1_LIMIT},
          description="batch-1 DP-SGD (one uniform row per step, replace-one, projection onto ||theta|| <= r): "
                      "PIDP-SGD without its influence test, the control of the Kang et al. comparison")
def fit_dp_sgd_batch1(problem, privacy: Privacy, rng, draws: int = 1, *, steps: int = 10_000,
                      learning_rate: float = 0.1, clip: float = 1.0, radius: float | str = 1.0,
                      start: str = "zero", start_shift: float = 0.0, start_iterations: int = 200):
    """Batch-1 DP-SGD, the control of PIDP-SGD (module docstring)."""
    hyper = dict(steps=steps, learning_rate=learning_rate, clip=clip, radius=radius, start=start,
                 start_shift=start_shift, start_iterations=start_iterations)
    return fit_control_settings(problem, [privacy], [rng], draws, **hyper)[0]
