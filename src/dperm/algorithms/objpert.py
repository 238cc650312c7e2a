"""ObjPert: objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011; Kifer, Smith & Thakurta
2012, Algorithm 1), the baseline of Lee & Kifer 2018.

Release the exact minimiser of the perturbed objective

    J(w) = (1/n)Σ ℓ_i(w) + (λ/2)‖w‖² + (Δ/(2n))‖w‖² + (1/n)⟨b, w⟩,   Δ = 2λ_H/ε,

λ = ``problem.l2``, the Δ-term on every coordinate (bias included), on the training rows mapped
into the public ball ‖x‖ ≤ R (:mod:`dperm.privacy.perturbation`). Conditions (Kifer et al. Thm 2, recalled, not
checked against the paper text): ℓ convex, twice differentiable, ‖∇ℓ_i‖ ≤ ζ, Hessian of every ℓ_i
of rank ≤ 1 with eigenvalue ≤ λ_H (true for linear models ℓ_i = φ(⟨w, x_i⟩): ∇²ℓ_i = φ''·x_i x_iᵀ),
regulariser convex, minimisation **exact** (docs/privacy.md#objpert-assumptions). The constants
come from the loss at the enforced R, never from the data: logistic ζ = R, λ_H = R²/4;
huber-hinge ζ = R, λ_H = R²/(2h); Huber regression ζ = δ_H·R, λ_H = R². The plain hinge is
refused (not differentiable); the SVM uses ``huber-hinge`` whose h comes from the model config —
Chaudhuri et al.'s experiments used h = 0.5 (recalled), so set it there (the loss class defaults
to dpml's 0.1). The Huber hinge's φ'' jumps at two margins; Chaudhuri et al. (Huber SVM) and
Kifer et al.'s limit theorem cover this.

Noise (Kifer et al.'s constants, as in DP-AGD's ``obj_pert``): with s the ℓ2 sensitivity of the
gradient sum, δ = 0: b has density ∝ exp(−ε‖b‖/(2s)) (Gamma-norm, E‖b‖ = 2ps/ε); δ > 0:
b ~ N(0, σ_b²I), σ_b² = (s/ε)²(8 ln(2/δ) + 4ε).

Privacy argument checked here (our derivation; Kifer et al. is not among our source texts).
Writing the optimality condition in sum form, b = −∇(Σℓ_i + nλ‖·‖²/2 + Δ‖·‖²/2)(w) is a bijection
of w, so p_D(w) = ν(b_D(w))·det H_D(w), H_D = Σ∇²ℓ_i + (nλ + Δ)I. (i) Jacobian: neighbours differ
by one PSD rank-one term of norm ≤ λ_H above a common part ≥ ΔI, so det H_D/det H_D' ≤ 1 + λ_H/Δ
= 1 + ε/2 ≤ e^{ε/2} — for add/remove *and* replace-one (the removed term only enlarges the
denominator). Any λ ≥ 0 works on top; Δ is added in full as Kifer et al. do (Chaudhuri et al.
instead shrink Δ when nλ already supplies the curvature). (ii) Noise: ‖b_D(w) − b_D'(w)‖ is ζ for
add/remove but 2ζ for replace-one; the density ratio exp(ε·‖·‖/(2s)) is ≤ e^{ε/2} iff s bounds it.
For the Gaussian, the privacy loss exceeds ε/2 only on the event Z > √(2 ln(2/δ) + ε) − ε/(4√(…)),
whose probability is ≤ δ/2 for every ε > 0 (so no ε ≤ 1 restriction). Kifer et al.'s constants
(s = ζ) are therefore ε- or (ε, δ)-DP under add/remove-one adjacency *when λ = 0*; with λ > 0
the row count enters the regulariser nλ of the sum form, so b_D(w) − b_D′(w) = ∇ℓ_x(w) + λw for
an added row x: unbounded in w, and the release is not ε-DP as written (the density ratio grows
without bound along w; docs/privacy.md#objpert-add-remove-n, an exact test shows it). The
default is therefore **replace-one** (n is fixed and public; s = 2ζ, so the noise is twice Kifer
et al.'s), and ``adjacency="add-remove"`` (s = ζ, Lee & Kifer's model, §3.1) is refused unless
λ = 0.

Draws: the noise enters the objective, so every draw is its own solve from w = 0, certified to
‖∇J‖ ≤ ``gtol`` (``extra["grad_norm"]`` is the largest reached, ``extra["dist_bound"]`` the
implied ‖w − w*‖ ≤ ‖∇J‖/(λ + Δ/n)). Linear models of moderate dimension are solved by damped
Newton with explicit Hessians (:func:`dperm.solvers.glm_newton`; ∇²J = ∇²F + (Δ/n)I, formed in
single precision: the Hessian only steers the steps, the float64 gradient certifies): a few p² passes
instead of the hundreds of L-BFGS iterations these ill-conditioned objectives need (on Adult,
measured under load: logistic fits 1.2–2.4× faster; Huberised-hinge fits from 1.5× slower at
ε = 0.05 to 1.5× faster at ε = 1.6); L-BFGS finishes if Newton stalls, and is the solver for everything else. The
draws of a small problem (n·p ≤ :data:`dperm.solvers.NEWTON_DRAWS_MAX`: the audit's 100,000 draws
of n = 50, p = 1) take their Newton steps together, each draw by the same rule with the exact Hessian
(:func:`dperm.solvers.newton_draws`), so that the interpreter's cost of a step is shared; each is
certified on its own all the same. The solver does not enter the privacy argument, which is about
the exact minimiser.

``objpert-reference`` reproduces DP-AGD's ``obj_pert`` exactly
(docs/deviations.md#objpert-objective, docs/privacy.md#objpert-assumptions): no row bound,
ζ = λ_H = 1 regardless of ‖x‖ (√2 after unit-norm + bias), any loss (plain hinge for the SVM), the
objective J + (1/n)‖w̄‖² with the Δ-term on w̄ (w with the bias coordinate zeroed), and scipy
L-BFGS-B with ``maxiter=300`` from 0. Not DP as implemented.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import OptimizeResult, minimize

from .. import solvers
from ..privacy import calibration_faults as faults
from ..privacy.perturbation import (
    check_regulariser,
    check_row_bound,
    draw_noise,
    enforce_row_bound,
    private_target,
    smooth_glm_constants,
    smooth_surrogate,
)
from ..privacy.selection import RdpStatement
from .audit_cases import canary_audit
from .audit_worst_case import white_box_audit
from .base import FitResult, Privacy, draw_rngs
from .domains import NON_NEGATIVE_INT, POSITIVE, POSITIVE_INT, UNIT, finite_epsilon, one_of, optional
from .registry import register, register_variant

ADJACENCIES = ("add-remove", "replace-one")
# draws solved together at most this many n·p entries at a time: the lockstep solve's (draws, n, p)
# temporaries stay near 32 MB (the audit's 100,000 draws of n = 50, p = 1: two groups)
_LOCKSTEP_ENTRIES = 1 << 22


def noise_calibration(zeta: float, epsilon: float, delta: float, adjacency: str = "add-remove"):
    """(kind, scale) of b: "gamma-norm" with scale 2s/ε (δ = 0) or "gaussian" with
    σ_b = s·√(8 ln(2/δ) + 4ε)/ε, s = ζ (add/remove) or 2ζ (replace-one)."""
    if adjacency not in ADJACENCIES:
        raise ValueError(f"adjacency must be one of {ADJACENCIES}; got adjacency={adjacency!r}")
    s = faults.sensitivity(zeta if adjacency == "add-remove" else 2.0 * zeta)  # audit mutants: calibration_faults
    if delta == 0:
        return "gamma-norm", 2.0 * s / epsilon
    return "gaussian", s * math.sqrt(8.0 * math.log(2.0 / delta) + 4.0 * epsilon) / epsilon


def perturbed_objective(problem, b, Delta):
    """(value_and_grad, hessp) of J(w) = F(w) + (Δ/(2n))‖w‖² + ⟨b, w⟩/n, F = ``problem``'s
    regularised objective."""
    n, c = problem.n, Delta / problem.n

    def value_and_grad(w):
        f, g = problem.value_and_grad(w)
        return f + 0.5 * c * (w @ w) + (b @ w) / n, g + c * w + b / n

    def hessp(w, v):
        return problem.hvp(w, v) + c * v

    return value_and_grad, hessp


def perturbed_objectives(problem, B, Delta):
    """(value_and_grad, hessian) of the draws' objectives J_d (:func:`perturbed_objective`, one
    noise vector per row of B) for :func:`dperm.solvers.newton_draws`: both take the weights of
    draws ``rows`` as the rows of W."""
    n, c = problem.n, Delta / problem.n

    def value_and_grad(W, rows):
        f, G = problem.value_and_grad(W)
        return (f + 0.5 * c * np.einsum("ij,ij->i", W, W) + np.einsum("ij,ij->i", B[rows], W) / n,
                G + c * W + B[rows] / n)

    def hessian(W, rows):
        return solvers.glm_hessians(problem, W, shift=c)

    return value_and_grad, hessian


def _draw_result(solved, i, gtol):
    """Draw i of :func:`dperm.solvers.newton_draws`' answer as :func:`dperm.solvers.newton`
    reports one: certified where its ‖∇J‖ ≤ gtol."""
    X, F, G, steps, evals = solved
    grad_norm = float(np.linalg.norm(G[i]))
    return OptimizeResult(x=X[i], fun=float(F[i]), jac=G[i], grad_norm=grad_norm, nit=int(steps[i]),
                          n_grad_evals=float(evals[i]), success=grad_norm <= gtol)


def reference_objective(problem, b, Delta, bias_column: int | None = 0):
    """DP-AGD's ``perturbed_objfunc``: F(w) + (1/n)‖w̄‖² + (Δ/(2n))‖w̄‖² + ⟨b, w⟩/n, with w̄ = w
    whose ``bias_column`` is zeroed (None: no bias column)."""
    n, c = problem.n, Delta / problem.n

    def value_and_grad(w):
        f, g = problem.value_and_grad(w)
        wbar = w.copy()
        if bias_column is not None:
            wbar[bias_column] = 0.0
        sq = wbar @ wbar
        return f + sq / n + 0.5 * c * sq + (b @ w) / n, g + (2.0 / n + c) * wbar + b / n

    return value_and_grad


def selection_trial(problem, epsilon: float, delta: float, hyper: dict):
    """One ``objpert`` fit as a trial of private selection (docs/privacy.md#private-selection): it
    runs with δ = 0 (Gamma-norm noise), pure ε-DP for the exact minimiser (module docstring),
    whatever ``delta`` the cell has — the Gaussian branch is (ε, δ)-DP only, which gives no RDP
    curve, so a trial never uses it."""
    if hyper.get("adjacency", "replace-one") == "add-remove" and problem.l2 > 0:
        raise ValueError("objpert under add/remove needs l2 = 0 (docs/privacy.md#objpert-add-remove-n)")
    return Privacy(epsilon, 0.0), RdpStatement(epsilon=epsilon, adjacency=hyper.get("adjacency", "replace-one"))


def curvature_onset_statistic(W, centres, onset: float = 0.75):
    """−|w − onset|: large where the released w (one coordinate) sits where D′'s differing row
    enters the Huberised hinge's curved zone (margin 1 − h = 0.75 for h = 0.25, R = 1). There the
    density ratio of the two releases has both its parts: the noise's ε/2 (the row's gradient
    still at full norm) and the Jacobian's ln(1 + λ_H/Δ) = ln(1 + ε/2) (the row's curvature
    switched on in D′ only); elsewhere only the first (module docstring's argument)."""
    return -np.abs(np.asarray(W)[:, 0] - onset)


# White box (dperm.algorithms.audit_worst_case): opposed rows (replace-one) in the Huberised hinge,
# h = 0.25, n = 50, μ = 0.01, p = 1. Δ = R²/(hε) = 4 puts the onset of D′'s curved zone inside the
# region where the gradient term already gives ε/2, so the release there carries about ε/2 +
# ln(1 + ε/2) ≈ 0.9ε of privacy loss.
AUDIT = white_box_audit("opposed rows, the release where the differing row's curvature starts (white box)",
                        "replace-one", delta=0.0, runs=100_000, n=50, l2=0.01, loss="huber-hinge", hinge_h=0.25,
                        statistic=curvature_onset_statistic)


@register("objpert", audit=AUDIT,
          domains={"row_bound": POSITIVE, "adjacency": one_of("replace-one", "add-remove"), "gtol": POSITIVE,
                   "max_iter": POSITIVE_INT, "huber_h": optional(UNIT)},
          needs=(finite_epsilon,),
          rdp=selection_trial,
          description="objective perturbation (Kifer et al. 2012), constants from the "
          "loss at an enforced public row bound, certified L-BFGS solve")
def fit_objpert(problem, privacy: Privacy, rng, draws: int = 1, *, row_bound: float = 1.0,
                adjacency: str = "replace-one", gtol: float = 1e-9, max_iter: int = 20_000,
                huber_h: float | None = 0.5):
    """ObjPert with true constants: ``row_bound`` R (enforced), ``adjacency`` "replace-one"
    (gradient sensitivity 2ζ) or "add-remove" (Kifer et al.'s ζ; only with λ = 0), L-BFGS to
    ‖∇J‖ ≤ gtol; a plain-hinge SVM is trained on the Huberised hinge with ``huber_h``."""
    problem, surrogate_notes = smooth_surrogate(problem, huber_h)
    eps, delta = private_target(privacy, "objpert")
    lam = check_regulariser(problem, "objpert")
    if adjacency == "add-remove" and lam > 0:
        raise ValueError(f"objpert under add/remove needs l2 = 0 (got l2={lam!r}): with a regulariser the row "
                         "count enters the objective and the release is not DP as written "
                         "(docs/privacy.md#objpert-add-remove-n); use adjacency='replace-one'")
    R = check_row_bound(row_bound)
    zeta, hessian_bound = smooth_glm_constants(problem, R, "objpert")
    if not (math.isfinite(gtol) and gtol > 0):
        raise ValueError(f"gtol must be a finite number > 0; got gtol={gtol!r}")
    Delta = 2.0 * hessian_bound / eps
    kind, scale = noise_calibration(zeta, eps, delta, adjacency)
    clipped = enforce_row_bound(problem, R)
    mu_J = lam + Delta / problem.n
    weights, grad_norms, iters, evals = [], [], [], []
    newton = solvers.newton_applies(problem)
    noises = [draw_noise(kind, scale, problem.p, child) for child in draw_rngs(rng, draws)]
    together = newton and draws > 1 and problem.n * problem.p <= solvers.NEWTON_DRAWS_MAX
    if together:  # small problems: the draws' Newton solves in lockstep, the interpreter's cost shared
        group = _LOCKSTEP_ENTRIES // (problem.n * problem.p)
        solved = solvers.newton_draws(*perturbed_objectives(clipped, np.array(noises), Delta),
                                      np.zeros((draws, problem.p)), gtol, group=group)
    for i, b in enumerate(noises):
        fun, hessp = perturbed_objective(clipped, b, Delta)
        x0, res, spent = np.zeros(problem.p), None, (0, 0.0)
        if together:
            res = _draw_result(solved, i, gtol)
            x0, spent = res.x, (res.nit, res.n_grad_evals)
        elif newton:
            res = solvers.glm_newton(clipped, x0, gtol, value_and_grad=fun, shift=Delta / problem.n)
            x0, spent = res.x, (res.nit, res.n_grad_evals)
        if res is None or not res.success:
            res = solvers.lbfgs(fun, x0, jac=True, hessp=hessp, mu=mu_J, gtol=gtol, max_iter=max_iter)
            res.nit, res.n_grad_evals = res.nit + spent[0], res.n_grad_evals + spent[1]
        weights.append(res.x)
        grad_norms.append(float(res.grad_norm))
        iters.append(int(res.nit))
        evals.append(float(res.n_grad_evals))
    worst = max(grad_norms)
    notes = list(surrogate_notes)
    if worst > gtol:
        missed = sum(g > gtol for g in grad_norms)
        notes.append(f"L-BFGS stopped above gtol={gtol:g} in {missed} of {draws} draws "
                     f"(max |grad J| = {worst:.3g}); the privacy theorem assumes the exact minimiser")
    return FitResult(
        weights=np.array(weights), epsilon_spent=eps, delta_spent=delta, adjacency=adjacency,
        grad_evals=float(np.mean(evals)), iterations=np.array(iters), notes=notes,
        accounting=f"one release: objective perturbation (Kifer et al. 2012), {kind} noise",
        extra={"zeta": zeta, "hessian_bound": hessian_bound, "Delta": Delta, "noise": kind,
               "noise_scale": scale, "row_bound": R, "gtol": gtol, "grad_norm": worst,
               "dist_bound": worst / mu_J})


def fit_objpert_reference(problem, privacy: Privacy, rng, draws: int = 1, *, zeta: float = 1.0,
                          hessian_bound: float = 1.0, max_iter: int = 300,
                          bias_column: int | None = 0):
    """DP-AGD's ``obj_pert``: Kifer et al.'s noise with ζ, λ_H taken on trust, the reference
    objective (:func:`reference_objective`), scipy L-BFGS-B defaults with ``maxiter=300``."""
    eps, delta = private_target(privacy, "objpert-reference")
    for value, name in ((zeta, "zeta"), (hessian_bound, "hessian_bound")):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0; got {name}={value!r}")
    Delta = 2.0 * hessian_bound / eps
    kind, scale = noise_calibration(zeta, eps, delta, "add-remove")
    weights, unconverged, iters, evals = [], 0, [], []
    for child in draw_rngs(rng, draws):
        b = draw_noise(kind, scale, problem.p, child)
        fun = reference_objective(problem, b, Delta, bias_column)
        res = minimize(fun, np.zeros(problem.p), jac=True, method="L-BFGS-B",
                       options={"maxiter": int(max_iter)})
        weights.append(res.x)
        unconverged += int(res.status != 0)
        iters.append(int(res.nit))
        evals.append(float(res.nfev))
    notes = [f"L-BFGS-B stopped without converging (maxiter={max_iter}) in {unconverged} of "
             f"{draws} draws"] if unconverged else []
    return FitResult(
        weights=np.array(weights), epsilon_spent=eps, delta_spent=delta, adjacency="add-remove",
        grad_evals=float(np.mean(evals)), iterations=np.array(iters), notes=notes,
        accounting=f"one release: objective perturbation with the DP-AGD code's constants, {kind} noise",
        extra={"zeta": zeta, "hessian_bound": hessian_bound, "Delta": Delta, "noise": kind,
               "noise_scale": scale})


register_variant("objpert-reference",
                 domains={"zeta": POSITIVE, "hessian_bound": POSITIVE, "max_iter": POSITIVE_INT,
                          "bias_column": optional(NON_NEGATIVE_INT)},
                 of="objpert", impl=fit_objpert_reference, dp_as_implemented=False,
                 audit=canary_audit("add-remove", epsilon=1.0, delta=0.0, l2=0.01, norm=10.0, runs=2000,
                                    name="a canary row longer than the norm the constants assume"),
                 caveat="zeta = lambda_H = 1 whatever the row norms, hinge allowed, bias excluded from "
                        "the Delta-term, L-BFGS-B capped at 300 iterations, add/remove with the row count in "
                        "the regulariser (docs/deviations.md#objpert-objective, "
                        "docs/privacy.md#objpert-assumptions, docs/privacy.md#objpert-add-remove-n)",
                 description="DP-AGD's obj_pert exactly")
