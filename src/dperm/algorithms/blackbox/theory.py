"""Lowy & Razaviyayn's output perturbation: the theory (sensitivities, accuracies, certified
iteration counts, the regularised extension, the tilted objective) and the engine shared by
``outpert-exact``, ``outpert-blackbox``, ``term`` and ``adv``.

Notation. F(w) = (1/n) Σ ℓ_i(w) + (μ/2)‖w‖² on rows mapped into the public ball ‖x‖ ≤ R_x
(:func:`dperm.privacy.perturbation.enforce_row_bound`); L and β are the Lipschitz and smoothness constants of the
unregularised ℓ at R_x (the regulariser cancels between neighbours,
docs/privacy.md#outpert-regulariser); κ = (β + μ)/μ. Adjacency: replace-one (|D| = |D′| = n,
one row differs; Lowy & Razaviyayn §1).

**Sensitivity** (Proposition 2.2, via their Lemma B.2): the minimisers of F on D and D′ are at
most Δ_F = 2L/(μn) apart; the bound holds for minimisers over any closed convex set (Lemma B.2 is
stated for constrained domains).

**Black box** (their Algorithm "black box sc" and Proposition 3.1): any solver whose output w_A
has F(w_A) − F* ≤ α surely is within √(2α/μ) of w* (strong convexity), so w_A has sensitivity
Δ_α = Δ_F + 2√(2α/μ). Default α = μΔ_F²/8, hence Δ_α = 2Δ_F
(docs/deviations.md#blackbox-solvers: the paper's prescribed α are lost in our copy).

**Certified iteration counts** from w₀ = 0, data-independent. With G₀ ≥ F(0) − F* (G₀ = max_y
φ(0, y) for a non-negative loss: ln 2 for the logistic, whatever the data) and ‖w*‖ ≤ L/μ
(μw* = −mean ∇ℓ_i(w*)):

* gradient descent, step 1/(β + μ): F(w_T) − F* ≤ (1 − 1/κ)^T·G₀ (the descent lemma with the
  Polyak–Łojasiewicz inequality ‖∇F‖² ≥ 2μ(F − F*) of a μ-strongly convex F), so
  T = ⌈ln(G₀/α)/(−ln(1 − 1/κ))⌉;
* Nesterov's method (Lowy & Razaviyayn, Alg. 4): F(w_T) − F* ≤ (1 − 1/√κ)^T·(G₀ + μ‖w*‖²/2), so
  T = ⌈ln((G₀ + L²/(2μ))/α)/(−ln(1 − 1/√κ))⌉ (with a constraint ‖w‖ ≤ R, R replaces L/μ when
  smaller);
* stochastic subgradient descent (Alg. 2; Bubeck 2015, Thm 6.2) on the ball ‖w‖ ≤ L/μ, steps
  2/(μ(t + 2)), the gradient-point average: E F(w̄_T) − F* ≤ 2G²/(μ(T + 1)), G = L + μ·L/μ = 2L
  bounding every stochastic gradient there; T = ⌈2G²/(μα)⌉ − 1, **in expectation only**;
* Katyusha (Alg. 3, Allen-Zhu 2018, Thm 2.1): E F(x̃_S) − F* ≤ C·θ^{−S}·G₀ with θ = 1.5 per epoch
  when mμ/L_K > 3/4 and (1 + √(μ/(3L_K m)))^m otherwise, m = 2n inner steps, L_K = β; the
  theorem writes O(·); we take C = 4 (our reading of its proof); **in expectation only**.

**Non-smooth Lipschitz losses** (the hinge; their Theorem 3.1 covers any L-Lipschitz loss): the
black box needs a point with F(w) − F* ≤ α surely, which no gradient method certifies without a
smoothness constant. ``agd-smoothed`` uses the Huberised hinge ℓ_h
(:class:`dperm.losses.HuberHinge`), which satisfies hinge ≤ ℓ_h ≤ hinge + h/4 pointwise, so
F ≤ F_h ≤ F + h/4 and F* ≥ F_h* − h/4; hence F(w) − F* ≤ (F_h(w) − F_h*) + h/4. With h = 2α and
Nesterov's method run on F_h (β_h = R_x²/(2h) + μ, G₀ = 1 = ℓ_h(0)) for the certified count to
α/2, every run ends at F(w_T) − F* ≤ α: deterministic, so the sensitivity Δ_F + 2√(2α/μ) holds
on every run (Δ_F = 2L/(μn), L = R_x for the hinge). The price is κ_h ≈ 1/(4αμ) = n²/(2L²): about
n/√2·ln(·) steps, so it is run on small n. ``sgd`` (the paper's Corollary 3.1) needs only L too.

**Expectation only** (docs/privacy.md#blackbox-expectation): for SGD and Katyusha the accuracy,
hence the sensitivity bound, holds in expectation, which proves nothing about a single run. The
remedy implemented here (``high_probability``): Markov's inequality. Run to expected accuracy
α·δ′; then P(F(w_A) − F* > α) ≤ δ′. On the complement the sensitivity is Δ_α, so for every set S,
P[M(D) ∈ S] ≤ e^{ε₀}/(1 − δ′)·P[M(D′) ∈ S] + δ₀ + δ′ where (ε₀, δ₀) is the noise's guarantee
at Δ_α (condition both runs on their good events, whose probabilities are ≥ 1 − δ′). So the noise
is calibrated to ε₀ = ε − ln(1/(1 − δ′)), δ₀ = δ − δ′ with δ′ = ``failure_share``·δ: an
(ε, δ)-DP release. It needs δ > 0, so under pure DP the stochastic solvers stay labelled
"in expectation only"; for SGD it costs 1/δ′ times the steps (10¹⁰ at δ = 10⁻¹⁰) and is not
offered.

**Convex, not strongly convex losses** (μ = 0; the regularised extension, Lowy & Razaviyayn §2.4,
Alg. 7): add (λ/2)‖w‖², run the above on F_λ (λ-strongly convex, Δ = 2L/(λn) with our
regulariser-cancels argument; the paper writes 2(L + λR)/(λn)), project the release onto
B(0, R), R a public bound on ‖w*‖ (post-processing). λ minimises the excess-risk bound
B(λ) = λR²/2 + (noise term), with Δ_used = c_bb·2L/(λn) (c_bb = Δ_used/Δ_F: 2 for the default
black box, 1 for the exact minimiser):

* smooth losses (their Prop. 2.8): B(λ) = λR²/2 + (β/2)·E‖z‖², E‖z‖² = c₂Δ_used², so
  λ* = (8β·c₂·c_bb²·L²/(R²n²))^{1/3};
* Lipschitz losses (their Prop. 2.7): B(λ) = λR²/2 + L·E‖z‖, E‖z‖ = c₁Δ_used, so
  λ* = (2L/R)·√(c₁·c_bb/n);

with c₁ = p/ε, c₂ = p(p + 1)/ε² for the Gamma-norm noise (E‖z‖ = pΔ/ε, E‖z‖² = p(p+1)Δ²/ε²)
and c₁ = √p·s, c₂ = p·s² for the Gaussian of σ = s·Δ. They give the paper's rates:
O(β^{1/3}L^{2/3}R^{4/3}(p/(nε))^{2/3}) and O(LR√(p/(nε))) for ε-DP.

**Tilted ERM** (§5.1): F_t(w) = (μ/2)‖w‖² + (1/t) log((1/n)Σ e^{tℓ_i(w)}) minimised over B(0, R)
(:class:`dperm.losses.Tilted`; the regulariser common to every f_i = ℓ_i + (μ/2)‖·‖² factors out
of the tilt). Sensitivity, our derivation: F_t is μ-strongly convex, so Lemma B.2 bounds the
distance of the constrained minimisers by sup_w ‖∇T(w; D) − ∇T(w; D′)‖/μ with T the tilted
part. ∇T = Σ p_i∇ℓ_i, p_i ∝ e^{tℓ_i}; when row k is replaced, the other rows' weights all move
the same way and by |p_k − p′_k| in total, so the difference is at most L(|p_k − p′_k| + p_k +
p′_k) = 2L·max(p_k, p′_k). If ℓ_j(w) − ℓ_i(w) ≤ M on the ball (M = R·R_x for the logistic),
p_k ≤ e^{tM}/(e^{tM} + n − 1), so

    Δ_t = (2L/μ)·e^{tM}/(e^{tM} + n − 1):

2L/(μn) at t = 0, growing like e^{tM} while e^{tM} ≪ n, never above 2L/μ. It is below the bound
2L·e^{tM}/(μn) one gets from the tμ-strong convexity of (1/n)Σ e^{t f_i}. Smoothness β + tL² + μ
(:meth:`dperm.losses.Tilted.smoothness`); solved by projected Nesterov with the certified count,
G₀ = ln 2 and ‖w*‖ ≤ min(R, L/μ).
"""

from __future__ import annotations

import math
import time

import numpy as np

from ... import solvers
from ...privacy.perturbation import draw_noise, noise_calibration
from ..base import FitResult, draw_rngs

SOLVERS = ("gd", "agd", "sgd", "katyusha", "agd-smoothed")
STOCHASTIC = ("sgd", "katyusha")
#: the solvers a non-smooth Lipschitz loss (the hinge) admits: neither needs a gradient's
#: Lipschitz constant of the loss itself
NONSMOOTH_SOLVERS = ("agd-smoothed", "sgd")
KATYUSHA_CONSTANT = 4.0
GAUSSIANS = ("zhao", "analytic")


# -- theory ----------------------------------------------------------------------------------------

def erm_sensitivity(L: float, mu: float, n: int) -> float:
    """Δ_F = 2L/(μn): the minimisers of neighbouring μ-strongly convex ERM objectives (Prop. 2.2)."""
    return 2.0 * L / (mu * n)


def distance_bound(alpha: float, mu: float) -> float:
    """√(2α/μ) ≥ ‖w − w*‖ whenever F(w) − F* ≤ α and F is μ-strongly convex."""
    return math.sqrt(2.0 * alpha / mu)


def initial_gap(loss) -> float:
    """G₀ ≥ F(0) − F* for a non-negative loss: max over labels of φ(0, y) (the scores of w = 0
    are 0 on every row, the regulariser is 0 there and F* ≥ 0). Logistic: ln 2."""
    labels = {"01": (0.0, 1.0), "pm1": (-1.0, 1.0), "real": (0.0, 1.0)}[loss.labels]
    return float(max(loss.phi(np.zeros(1), np.array([y]))[0] for y in labels))


def gd_steps(alpha: float, mu: float, beta: float, gap0: float) -> int:
    """T with (1 − μ/β)^T·G₀ ≤ α: gradient descent with step 1/β on a μ-strongly convex, β-smooth F
    (β includes μ)."""
    if gap0 <= alpha:
        return 0
    return math.ceil(math.log(gap0 / alpha) / -math.log1p(-mu / beta))


def agd_steps(alpha: float, mu: float, beta: float, gap0: float, dist0: float) -> int:
    """T with (1 − 1/√κ)^T·(G₀ + μ·dist0²/2) ≤ α, κ = β/μ (β includes μ): Nesterov's method."""
    start = gap0 + 0.5 * mu * dist0**2
    if start <= alpha:
        return 0
    return math.ceil(math.log(start / alpha) / -math.log1p(-1.0 / math.sqrt(beta / mu)))


def sgd_steps(alpha: float, mu: float, G: float) -> int:
    """Smallest T with 2G²/(μ(T + 1)) ≤ α (Bubeck 2015, Thm 6.2; in expectation)."""
    return max(1, math.ceil(2.0 * G * G / (mu * alpha)) - 1)


def sgd_alpha(steps: int, mu: float, G: float) -> float:
    """The expected accuracy 2G²/(μ(T + 1)) that T steps certify."""
    return 2.0 * G * G / (mu * (steps + 1))


def katyusha_rate(mu: float, L_K: float, m: int) -> float:
    """θ, the factor per epoch of Allen-Zhu's Theorem 2.1 bound."""
    if m * mu / L_K > 0.75:
        return 1.5
    return (1.0 + math.sqrt(mu / (3.0 * L_K * m))) ** m


def katyusha_epochs(alpha: float, mu: float, L_K: float, m: int, gap0: float) -> int:
    """S with C·θ^{−S}·G₀ ≤ α (in expectation), C = ``KATYUSHA_CONSTANT``."""
    ratio = KATYUSHA_CONSTANT * gap0 / alpha
    if ratio <= 1.0:
        return 1
    return max(1, math.ceil(math.log(ratio) / math.log(katyusha_rate(mu, L_K, m))))


def tilted_sensitivity(L: float, mu: float, n: int, tilt: float, M: float) -> float:
    """Δ_t = (2L/μ)·e^{tM}/(e^{tM} + n − 1) (module docstring), computed without overflow."""
    a = tilt * M
    if a > 700.0:  # e^{tM} ≫ n: the fraction is 1 to double precision
        return 2.0 * L / mu
    e = math.exp(a)
    return 2.0 * L / mu * e / (e + n - 1.0)


def noise_factors(kind: str, scale: float, sensitivity: float, p: int, epsilon: float) -> tuple[float, float]:
    """(c₁, c₂) with E‖z‖ = c₁Δ and E‖z‖² = c₂Δ² (c₁ for the Gaussian is √p·s ≥ E‖z‖/Δ)."""
    if kind == "gamma-norm":
        return p / epsilon, p * (p + 1) / epsilon**2
    s = scale / sensitivity
    return math.sqrt(p) * s, p * s * s


def rate_optimal_lambda(*, smooth: bool, L: float, beta: float, R: float, n: int, c1: float, c2: float,
                        blackbox_factor: float) -> float:
    """λ* of the regularised extension (module docstring): (8βc₂c_bb²L²/(R²n²))^{1/3} for smooth
    losses, (2L/R)·√(c₁c_bb/n) for Lipschitz ones."""
    if smooth:
        return (8.0 * beta * c2 * blackbox_factor**2 * L * L / (R * R * n * n)) ** (1.0 / 3.0)
    return 2.0 * L / R * math.sqrt(c1 * blackbox_factor / n)


def markov_split(epsilon: float, delta: float, share: float) -> tuple[float, float, float]:
    """(ε₀, δ₀, δ′): the noise's budget when a failure probability δ′ = share·δ is charged."""
    if not 0.0 < share < 1.0:
        raise ValueError(f"failure_share must be in (0, 1); got {share!r}")
    d_fail = share * delta
    eps0 = epsilon - math.log(1.0 / (1.0 - d_fail))
    if eps0 <= 0:
        raise ValueError(f"epsilon={epsilon!r} is too small to charge a failure probability {d_fail:g}")
    return eps0, delta - d_fail, d_fail


# -- the engine ------------------------------------------------------------------------------------

def release(center, kind: str, scale: float, rng, draws: int, *, first: int = 1, project: float | None = None):
    """``draws`` copies of ``center`` + independent noise; draw d uses child ``first + d`` of
    ``rng``'s children (child 0 is the solver's), so a draw's noise does not depend on ``draws``.
    ``project``: radius of the ball the releases are projected onto (post-processing)."""
    children = draw_rngs(rng, first + draws)[first:]
    weights = np.stack([center + draw_noise(kind, scale, center.size, child) for child in children])
    if project is not None:
        norms = np.linalg.norm(weights, axis=1, keepdims=True)
        weights *= np.minimum(1.0, project / np.maximum(norms, np.finfo(float).tiny))
    return weights


def solver_rng(rng):
    """Child 0 of ``rng``: the randomness of a stochastic solver (noise draws use children 1..)."""
    return draw_rngs(rng, 1)[0]


def certified_minimiser(problem, *, gtol: float, smooth_fallback: dict | None, hessp=None):
    """A point w with ‖∇F(w)‖ ≤ ``gtol`` (so ‖w − w*‖ ≤ gtol/μ), from L-BFGS with Newton-CG
    polishing; if that stalls above gtol and ``smooth_fallback`` = {beta, mu, gap0, dist0, alpha}
    is given, Nesterov's method for the certified count from 0 (which guarantees the same
    distance). Returns (w, evals, iterations, grad_norm, how)."""
    res = solvers.lbfgs(problem, np.zeros(problem.p), gtol=gtol, hessp=hessp)
    gn = float(res.grad_norm)
    if gn <= gtol:
        return res.x, float(res.n_grad_evals), int(res.nit), gn, "lbfgs"
    if smooth_fallback is None:
        raise RuntimeError(f"the certified solve stopped at ||grad F|| = {gn:.3g} > {gtol:.3g}; "
                           "refusing to release an uncertified point")
    f = smooth_fallback
    steps = agd_steps(f["alpha"], f["mu"], f["beta"], f["gap0"], f["dist0"])
    out = solvers.nesterov(problem, np.zeros(problem.p), n_iter=steps, smoothness=f["beta"], mu=f["mu"])
    return out.x, float(res.n_grad_evals + steps), int(res.nit + steps), float(out.grad_norm), "agd-fallback"


def results(problem, privacies, rngs, draws: int, *, center, sensitivity_for, gaussian: str, notes, extra: dict,
            grad_evals: float, iterations: int, solve_seconds: float, accounting: str, project=None,
            budget_for=None) -> list[FitResult]:
    """One :class:`FitResult` per privacy target: ``center`` + noise calibrated to
    ``sensitivity_for(ε, δ)`` (a number; a function only because the black box with the Markov
    remedy charges part of δ). ``budget_for(ε, δ)`` gives the noise's (ε₀, δ₀) (default: all)."""
    out = []
    for privacy, rng in zip(privacies, rngs):
        t0 = time.perf_counter()
        eps, delta = float(privacy.epsilon), float(privacy.delta)
        eps0, delta0 = budget_for(eps, delta) if budget_for is not None else (eps, delta)
        sensitivity = sensitivity_for(eps, delta)
        kind, scale, noise_notes = noise_calibration(sensitivity, eps0, delta0, gaussian)
        weights = release(center, kind, scale, rng, draws, project=project)
        noise_seconds = time.perf_counter() - t0
        c1, c2 = noise_factors(kind, scale, sensitivity, problem.p, eps0)
        out.append(FitResult(
            weights=weights, epsilon_spent=eps, delta_spent=delta, adjacency="replace-one",
            grad_evals=grad_evals, iterations=iterations, seconds_per_draw=solve_seconds + noise_seconds / draws,
            notes=list(notes) + list(noise_notes), accounting=accounting,
            extra={**extra, "sensitivity": sensitivity, "noise": kind, "noise_scale": scale,
                   "noise_epsilon": eps0, "noise_delta": delta0, "expected_noise_norm": c1 * sensitivity,
                   "expected_noise_norm_sq": c2 * sensitivity**2}))
    return out


def erm_setup(problem, name: str, row_bound):
    """(rows in the public ball, L, β of the unregularised loss at R_x, μ): the ERM problem every
    algorithm here starts from (smooth convex GLM losses only: logistic, huber-hinge, huber)."""
    from ...privacy.perturbation import check_regulariser, check_row_bound, enforce_row_bound, smooth_glm_constants

    R_x = check_row_bound(row_bound)
    L, beta_loss = smooth_glm_constants(problem, R_x, name)
    mu = check_regulariser(problem, name)
    return enforce_row_bound(problem, R_x), L, beta_loss, mu


def blackbox_setup(problem, name: str, row_bound, solver: str):
    """(rows in the public ball, L, β of the loss (None for a non-smooth one), μ) for the black
    box with ``solver``: smooth losses as :func:`erm_setup` (every solver but ``agd-smoothed``);
    the plain hinge, Lipschitz but not smooth, with the solvers of :data:`NONSMOOTH_SOLVERS`."""
    from ...losses import Hinge
    from ...privacy.perturbation import check_regulariser, check_row_bound, enforce_row_bound

    if isinstance(problem.loss, Hinge):
        if solver not in NONSMOOTH_SOLVERS:
            raise ValueError(f"{name}: the hinge is not smooth, so solver {solver!r} has no certified count; use one "
                             f"of {NONSMOOTH_SOLVERS}")
        R_x = check_row_bound(row_bound)
        return enforce_row_bound(problem, R_x), float(problem.loss.lipschitz(R_x)), None, \
            check_regulariser(problem, name)
    if solver == "agd-smoothed":
        raise ValueError(f"{name}: solver 'agd-smoothed' smooths the non-smooth hinge; for the smooth loss "
                         f"{getattr(problem.loss, 'name', problem.loss)!r} use 'agd'")
    return erm_setup(problem, name, row_bound)


def smoothed_plan(alpha: float, mu: float, L: float, row_bound: float) -> tuple[float, float, int]:
    """(h, β_h, T) of ``agd-smoothed`` (module docstring): h = 2α, β_h = R_x²/(2h) + μ and the
    certified Nesterov count to α/2 on F_h from 0 (G₀ = 1, ‖w_h*‖ ≤ L/μ)."""
    h = 2.0 * alpha
    beta_h = float(row_bound) ** 2 / (2.0 * h) + mu
    return h, beta_h, agd_steps(alpha / 2.0, mu, beta_h, 1.0, L / mu)


def check_gaussian(gaussian: str) -> str:
    if gaussian not in GAUSSIANS:
        raise ValueError(f"gaussian must be one of {GAUSSIANS} (valid for every epsilon; Lowy & Razaviyayn use "
                         f"Zhao et al.'s); got gaussian={gaussian!r}")
    return gaussian


def regularised(problem, *, privacy, gaussian: str, L: float, beta: float, radius, blackbox_factor: float,
                name: str):
    """The μ = 0 case: (F_λ as a Problem on the same rows, λ, note) with the rate-optimal λ of
    :func:`rate_optimal_lambda` for this privacy target; ``radius`` R ≥ ‖w*‖ is required."""
    from ...problem import Problem

    if radius is None or not (math.isfinite(float(radius)) and float(radius) > 0):
        raise ValueError(f"{name} with l2 = 0 (convex, not strongly convex) needs radius R > 0, a public bound on "
                         f"||w*||: the regularised extension projects onto B(0, R); got radius={radius!r}")
    eps, delta = float(privacy.epsilon), float(privacy.delta)
    kind, scale, _ = noise_calibration(1.0, eps, delta, gaussian)
    c1, c2 = noise_factors(kind, scale, 1.0, problem.p, eps)
    smooth = bool(getattr(problem.loss, "smooth", False))
    lam = rate_optimal_lambda(smooth=smooth, L=L, beta=beta, R=float(radius), n=problem.n, c1=c1, c2=c2,
                              blackbox_factor=blackbox_factor)
    form = "(8 beta c2 c_bb^2 L^2/(R^2 n^2))^(1/3)" if smooth else "(2L/R) sqrt(c1 c_bb/n)"
    note = (f"l2 = 0: regularised extension, lambda = {form} = {lam:.4g} (rate-optimal for this epsilon), "
            f"release projected onto ||w|| <= R = {float(radius):g}")
    return Problem(problem.X, problem.y, problem.loss, lam, problem.row_norms, problem.shared), lam, note
