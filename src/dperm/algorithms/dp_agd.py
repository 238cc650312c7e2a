"""DP-AGD: adaptive private gradient descent (Lee & Kifer, KDD 2018, Algorithm 2; spec §2.1).

Each iteration measures the clipped gradient sum g = Σ_i clip_{C_grad}(∇ℓ_i(w)) with Gaussian
noise of std Δ_g/√(2ρ_ng), moves along d = g̃/‖g̃‖ (+ λw, λ = ``problem.l2``, added after the
normalisation as the code does) and picks the step from the grid Φ = linspace(0, α_max, m + 1)
with NoisyMin on the clipped-loss sums s_k = Σ_i min(ℓ_i(w − Φ_k d), C_obj), s_0 scaled by
``exp_dec``. If the step 0 wins, the direction is deemed useless: ρ_ng ← (1 + γ)ρ_ng (for the
rest of the run) and the gradient is measured again with the difference and averaged in
(GradAvg, S-003 §4). The run ends when the budget cannot pay for the next primitive; the last
iterate is released. Every τ iterations α_max ← (1 + η)·max(last τ chosen Φ), capped at
``step_cap``.

Hyper-parameters (defaults = paper §6.2 and the code's run scripts): ``grad_clip`` C_grad = 3,
``obj_clip`` C_obj = 3, ``gamma`` γ = 0.1, ``splits`` = 60, ``exp_dec`` = 1, ``batch_size`` None
(full batch; KDDCup99 used 40,000), ``batch_sampling`` "poisson" ("fixed" for the reference),
``n_steps`` m = 20, ``step_max`` initial α_max = 2, ``step_window`` τ = 10, ``step_growth``
η = 0.1, ``step_cap`` 2.0, ``init`` None (w₀ = 0). λ is the model's ``problem.l2``.

Privacy (variant ``dp-agd``). Adjacency: add/remove one row. Budget: ρ = zcdp_from_dp(ε, δ),
kept by a :class:`~dperm.privacy.ZCDPFilter` that charges every primitive *before* it runs and
stops at the first charge that would exceed ρ — the total never exceeds it. Shares (S-003 §6.2):
ε_split = ε/(2·splits), ρ_nmax = ε_split²/2, ρ_ng = ε_split²/(4 ln(1.25/δ)). Sensitivities:
full batch or Poisson batch (rows kept independently with probability B/n, n public): the
clipped gradient sum moves by ≤ C_grad (Gaussian mechanism, Δ²/(2σ²)-zCDP; Bun & Steinke 2016,
Prop. 1.6) and every clipped-loss score by ≤ C_obj in the same direction (monotone), so NoisyMin
argmin_k(s_k − E_k), E_k ~ Exp(C_obj/ε_nmax), ε_nmax = √(2ρ_nmax), is ε_nmax-DP, hence
ρ_nmax-zCDP (Prop. 1.4). Fixed-size batches drawn without replacement (``batch_sampling=
"fixed"``) turn an added row into a replaced row within the batch: 2C_grad, and non-monotone
scores with E_k ~ Exp(2C_obj/ε_nmax) (spec §5 P3). No subsampling amplification is claimed.
With exp_dec > 1 the sensitivity of s_0 is exp_dec·C_obj, which the scale then uses. The shares
are chosen adaptively from earlier outputs; that a fixed total still holds is a filter theorem
(Feldman & Zrnic 2021; Whitehouse et al. 2023), not the plain composition S-003 Thm 4.1 cites
(spec §5 P12). ρ-zCDP ⇒ (ρ + 2√(ρ ln(1/δ)), δ)-DP = (ε, δ)-DP (Bun & Steinke, Prop. 1.3).

Where ``dp-agd`` departs from the paper or the code (spec §4):

* NoisyMin subtracts the exponential noise (the code adds it: not DP, P1/D5; the paper's
  Algorithm 1 writes Laplace noise, D18).
* The chosen candidate w_{k*} is applied (the code applies w_{k*−1}, D1); ρ_ng is charged once
  per measurement (the code charges it again after every accepted step, D2).
* GradAvg keeps the precision-weighted running estimate S ← (ρ_old S + (ρ_ng − ρ_old) g₂)/ρ_ng,
  whose variance is Δ_g²/(2ρ_ng) after any number of failures (the code averages with the first
  measurement, the paper passes the normalised direction, D3/D18).
* α_max follows the code's cap at 2.0 (``step_cap``; None gives the paper's uncapped rule, D4):
  the published figures come from the capped code, the cap keeps the variants comparable, and
  on BANK (LR, 4 draws) it was as good or better (mean objective 0.53 vs 0.67 at ε = 0.1, equal
  at ε = 0.4 and 1.6). It has no privacy effect (α_max depends on released choices only).
* Budget: filter semantics as above (the code subtracts and stops once the remainder is negative;
  it releases the same kind of iterate, but the filter's ledger never exceeds ρ).

Variant ``dp-agd-reference`` reproduces the code (commit f3309463, ``algo/agd_rho.py``) with all
of the above switched back (:data:`REFERENCE`) — argmin(s + E), w_{k*−1}, the double charge,
GradAvg with the first measurement, the code's stopping rule and, for mini-batches, fixed batches
with the add/remove sensitivities (P3). **It is not DP as implemented** (P1: one selection leaks
up to m·ε_nmax, not ε_nmax; the end-to-end audit in the tests shows it); its ``epsilon_spent`` is
the ε its accounting claims. At small ε it reaches lower objectives than ``dp-agd``: its
NoisyMin concentrates on the best step as if the noise were m times smaller — the leak it pays.

``init`` is a public starting point (default 0, as the paper); tests use it to build neighbouring
datasets on which the NoisyMin flaw shows in the released weights. Cost per NoisyMin: one
product X·S and O(n·m) cheap elementwise work (:mod:`.dp_agd_scores`); X·w is updated
along the accepted step rather than recomputed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg.blas import daxpy

from ..privacy import noisy_max_scale, report_noisy_min, report_noisy_min_reference, zcdp_from_dp
from .base import FitResult, Privacy, draw_rngs
from .dp_agd_primitives import CodeBudget, FilterBudget, clipped_grad_from_scores, grad_avg
from .dp_agd_scores import CandidateScorer, candidate_grid
from .dp_sgd import poisson_batch
from .registry import register

SAMPLINGS = ("poisson", "fixed")


@dataclass(frozen=True)
class Semantics:
    """The switches that separate the reference code from the corrected algorithm."""

    noise_added: bool  # P1/D5: NoisyMin as argmin(s + E) instead of argmin(s − E)
    accept_previous: bool  # D1: apply w_{k*−1} instead of w_{k*}
    double_charge: bool  # D2: charge ρ_ng again after every accepted step
    average_with_first: bool  # D3: GradAvg with the first measurement, not the running estimate
    code_budget: bool  # subtract-then-check accounting instead of the never-overspending filter
    code_sensitivities: bool  # P3: add/remove sensitivities even for fixed-size batches


CORRECT = Semantics(False, False, False, False, False, False)
REFERENCE = Semantics(True, True, True, True, True, True)


@dataclass
class RunTrace:
    """One release and its trace (tests read the ledger and the chosen indices)."""

    w: np.ndarray
    ledger: list
    rho_spent: float
    chosen: list = field(default_factory=list)
    applied: list = field(default_factory=list)
    noisy_min_calls: int = 0
    grad_avg_calls: int = 0
    gradients: float = 0.0  # Σ |batch|/n over gradient measurements
    loss_evals: float = 0.0  # Σ (m+1)·|batch|/n over NoisyMin calls
    alpha_max: float = 0.0
    rho_ng: float = 0.0
    settings: dict = field(default_factory=dict)


def run_once(problem, privacy: Privacy, rng, sem: Semantics, *, grad_clip, obj_clip, gamma, splits,
             exp_dec, batch_size, batch_sampling, n_steps, step_max, step_window, step_growth,
             step_cap, init, _data=None) -> RunTrace:
    """One DP-AGD run (one release) under the semantics ``sem``."""
    n, p, lam = problem.n, problem.p, problem.l2
    XF, scorer, limit = _data if _data is not None else _shared(problem, grad_clip, obj_clip, n_steps,
                                                                batch_size)
    rho_total = zcdp_from_dp(privacy.epsilon, privacy.delta)
    eps_split = privacy.epsilon / (2.0 * splits)
    rho_nmax = 0.5 * eps_split**2
    rho_ng = eps_split**2 / (4.0 * math.log(1.25 / privacy.delta))
    eps_nmax = math.sqrt(2.0 * rho_nmax)
    # P3: a fixed-size batch turns an added row into a replaced one: 2C_grad, non-monotone scores
    doubled = batch_size is not None and batch_sampling == "fixed" and not sem.code_sensitivities
    grad_sens = grad_clip * (2.0 if doubled else 1.0)
    obj_sens = obj_clip if sem.noise_added else obj_clip * max(1.0, exp_dec)  # s_0 is scaled by exp_dec
    scale = obj_clip / eps_nmax if sem.noise_added else noisy_max_scale(obj_sens, eps_nmax, monotone=not doubled)
    budget = CodeBudget(rho_total) if sem.code_budget else FilterBudget(rho_total)

    w = np.zeros(p) if init is None else np.array(init, dtype=float)
    trace = RunTrace(w=w, ledger=[], rho_spent=0.0, settings={
        "rho_budget": rho_total, "rho_nmax": rho_nmax, "rho_ng_initial": rho_ng,
        "grad_sensitivity": grad_sens, "noisy_min_scale": scale})
    alpha_max, recent = float(step_max), []
    full = batch_size is None
    X, y = problem.X, problem.y
    if full:  # X·w is kept up to date along the accepted steps: one mat-vec per search
        Xr, yr, lr, z0 = XF, y, limit, XF @ w
        scorer.set_rows(y)
    stop = False
    while not stop and budget.open():
        if not full:
            rows = draw_batch(rng, n, batch_size, batch_sampling)
            Xr, yr, lr = X[rows], y[rows], limit[:, rows]
            z0 = Xr @ w
            scorer.set_rows(yr)
        # The code subtracts this charge unchecked; its next check (after NoisyMin) stops the run.
        if not budget.pay(rho_ng, "noisy gradient", checked=not sem.code_budget):
            break
        g = clipped_grad_from_scores(problem.loss, z0, yr, lr, Xr)
        first = g + rng.normal(0.0, grad_sens / math.sqrt(2.0 * rho_ng), size=p)
        trace.gradients += z0.size / n
        estimate = first
        while True:
            norm = np.linalg.norm(estimate)
            direction = estimate / norm if norm > 0 else np.zeros(p)
            if lam > 0:  # the code adds the regulariser after normalising
                direction += lam * w
            zd = Xr @ direction
            phis = candidate_grid(alpha_max, n_steps)
            if not budget.pay(rho_nmax, "noisy min", checked=True):
                stop = True
                break
            scores = scorer.scores(z0, zd, alpha_max)
            scores[0] *= exp_dec
            if sem.noise_added:
                k = int(report_noisy_min_reference(scores, sensitivity=obj_clip, epsilon=eps_nmax, rng=rng))
            else:
                k = int(report_noisy_min(scores, sensitivity=obj_sens, epsilon=eps_nmax, rng=rng,
                                         monotone=not doubled))
            trace.noisy_min_calls += 1
            trace.loss_evals += (n_steps + 1) * z0.size / n
            if k > 0:
                step = phis[k - 1] if sem.accept_previous else phis[k]
                w = w - step * direction
                if full:
                    z0 = daxpy(zd, z0, a=-step)  # z0 ← z0 − Φ·X·d (= X·w), in place
                trace.chosen.append(k)
                trace.applied.append(step)
                if sem.double_charge:
                    budget.pay(rho_ng, "noisy gradient (charged again)", checked=False)
                break
            rho_old, rho_new = rho_ng, (1.0 + gamma) * rho_ng
            if not budget.pay(rho_new - rho_old, "gradient averaging", checked=not sem.code_budget):
                stop = True
                break
            estimate = grad_avg(first if sem.average_with_first else estimate, rho_old, rho_new, g,
                                grad_sens, rng)
            rho_ng = rho_new
            trace.grad_avg_calls += 1
        if stop:
            break
        recent.append(phis[k])
        if len(recent) == step_window:
            alpha_max = (1.0 + step_growth) * max(recent)
            if step_cap is not None:
                alpha_max = min(alpha_max, step_cap)
            recent = []
    trace.w, trace.ledger, trace.rho_spent = w, budget.ledger, budget.spent
    trace.alpha_max, trace.rho_ng = alpha_max, rho_ng
    return trace


def draw_batch(rng, n, size, sampling):
    """Sorted row indices of one mini-batch: Poisson (each row kept with probability size/n, n
    public) or a fixed-size sample without replacement (the code's ``np.random.choice``)."""
    if sampling == "poisson":
        return poisson_batch(rng, n, size / n)
    return np.sort(rng.choice(n, size=size, replace=False))


def _shared(problem, grad_clip, obj_clip, n_steps, batch_size):
    """Work shared by all draws: a column-major copy of X for full-batch mat-vecs (faster here
    than row-major), the score buffers and the clipping limits C_grad/‖x_i‖."""
    XF = np.asfortranarray(problem.X) if batch_size is None else None
    with np.errstate(divide="ignore"):
        bound = grad_clip / problem.row_norms
    limit = np.stack([-bound, bound])
    return XF, CandidateScorer(problem.loss, obj_clip, n_steps), limit


def _check(problem, privacy, grad_clip, obj_clip, gamma, splits, exp_dec, batch_size, batch_sampling,
           n_steps, step_max, step_window, step_growth, step_cap, init):
    if not privacy.is_private or not 0.0 < privacy.delta < 1.0:
        raise ValueError(f"DP-AGD needs a finite epsilon and 0 < delta < 1; got {privacy!r}")
    for name, value in (("grad_clip", grad_clip), ("obj_clip", obj_clip), ("gamma", gamma),
                        ("splits", splits), ("step_max", step_max)):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0; got {name}={value!r}")
    if not (math.isfinite(exp_dec) and exp_dec >= 0) or not (math.isfinite(step_growth) and step_growth >= 0):
        raise ValueError(f"exp_dec and step_growth must be finite and >= 0; got {exp_dec!r}, {step_growth!r}")
    if int(n_steps) != n_steps or n_steps < 1 or int(step_window) != step_window or step_window < 1:
        raise ValueError(f"n_steps and step_window must be integers >= 1; got {n_steps!r}, {step_window!r}")
    if step_cap is not None and not step_cap > 0:
        raise ValueError(f"step_cap must be None or > 0; got step_cap={step_cap!r}")
    if batch_sampling not in SAMPLINGS:
        raise ValueError(f"batch_sampling must be one of {SAMPLINGS}; got {batch_sampling!r}")
    if batch_size is not None and not (int(batch_size) == batch_size and 1 <= batch_size <= problem.n):
        raise ValueError(f"batch_size must be None (full batch) or an integer in [1, n={problem.n}]; "
                         f"got batch_size={batch_size!r}")
    if init is not None and np.shape(init) != (problem.p,):
        raise ValueError(f"init must have shape ({problem.p},); got {np.shape(init)}")


def _fit(sem: Semantics, problem, privacy, rng, draws, **hyper) -> FitResult:
    _check(problem, privacy, **hyper)
    if hyper["batch_size"] is not None:
        hyper["batch_size"] = int(hyper["batch_size"])
    hyper["n_steps"], hyper["step_window"] = int(hyper["n_steps"]), int(hyper["step_window"])
    data = _shared(problem, hyper["grad_clip"], hyper["obj_clip"], hyper["n_steps"], hyper["batch_size"])
    runs = [run_once(problem, privacy, child, sem, _data=data, **hyper) for child in draw_rngs(rng, draws)]

    def per_draw(attr, dtype=float):
        return np.array([getattr(run, attr) for run in runs], dtype=dtype)

    return FitResult(
        weights=np.array([run.w for run in runs]), epsilon_spent=privacy.epsilon,
        delta_spent=privacy.delta, adjacency="add-remove", grad_evals=per_draw("gradients"),
        iterations=np.array([len(run.applied) for run in runs]),
        notes=[] if sem == CORRECT else ["reference code semantics: not DP as implemented (spec §5 P1)"],
        extra={"noisy_min_calls": per_draw("noisy_min_calls", int),
               "grad_avg_calls": per_draw("grad_avg_calls", int), "rho_spent": per_draw("rho_spent"),
               "loss_evals": per_draw("loss_evals"), "alpha_max_final": per_draw("alpha_max"),
               "rho_ng_final": per_draw("rho_ng"), **runs[0].settings},
    )


_DOC = "DP-AGD (Lee & Kifer 2018): noisy normalised gradient, NoisyMin step size, adaptive ρ_ng"


@register("dp-agd", description=_DOC + "; corrected (zCDP filter, add/remove)")
def fit_dp_agd(problem, privacy: Privacy, rng, draws: int = 1, *, grad_clip: float = 3.0,
               obj_clip: float = 3.0, gamma: float = 0.1, splits: float = 60, exp_dec: float = 1.0,
               batch_size: int | None = None, batch_sampling: str = "poisson", n_steps: int = 20,
               step_max: float = 2.0, step_window: int = 10, step_growth: float = 0.1,
               step_cap: float | None = 2.0, init=None) -> FitResult:
    """DP-AGD, corrected; see the module docstring for the guarantee and every departure."""
    return _fit(CORRECT, problem, privacy, rng, draws, grad_clip=grad_clip, obj_clip=obj_clip,
                gamma=gamma, splits=splits, exp_dec=exp_dec, batch_size=batch_size,
                batch_sampling=batch_sampling, n_steps=n_steps, step_max=step_max,
                step_window=step_window, step_growth=step_growth, step_cap=step_cap, init=init)


@register("dp-agd-reference", variant="reference", dp_as_implemented=False,
          caveat="not DP as implemented: NoisyMin noise sign flipped (spec P1)",
          description=_DOC + "; reference-code semantics (D1–D3, P1)")
def fit_dp_agd_reference(problem, privacy: Privacy, rng, draws: int = 1, *, grad_clip: float = 3.0,
                         obj_clip: float = 3.0, gamma: float = 0.1, splits: float = 60,
                         exp_dec: float = 1.0, batch_size: int | None = None,
                         batch_sampling: str = "fixed", n_steps: int = 20, step_max: float = 2.0,
                         step_window: int = 10, step_growth: float = 0.1, step_cap: float | None = 2.0,
                         init=None) -> FitResult:
    """DP-AGD as the reference code runs it (not DP: spec §5 P1); see the module docstring."""
    return _fit(REFERENCE, problem, privacy, rng, draws, grad_clip=grad_clip, obj_clip=obj_clip,
                gamma=gamma, splits=splits, exp_dec=exp_dec, batch_size=batch_size,
                batch_sampling=batch_sampling, n_steps=n_steps, step_max=step_max,
                step_window=step_window, step_growth=step_growth, step_cap=step_cap, init=init)
