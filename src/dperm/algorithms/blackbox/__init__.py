"""``outpert-blackbox``: Lowy & Razaviyayn's black-box output perturbation (their Algorithm
"black box sc", §3.1; Proposition 3.1, Theorems 3.1–3.2, Corollaries 3.1–3.2): run a
non-private solver A until F(w_A) − F* ≤ α, release w_A + noise calibrated to
Δ_α = Δ_F + 2√(2α/μ).

F(w) = (1/n) Σ ℓ_i(w) + (μ/2)‖w‖² on rows mapped into ‖x‖ ≤ R_x (``row_bound``); adjacency
replace-one; Δ_F = 2L/(μn) (Proposition 2.2; L of the unregularised loss at R_x,
docs/privacy.md#outpert-regulariser). α = ``alpha_scale``·μΔ_F² (default 1/8, so Δ_α = 2Δ_F:
docs/deviations.md#blackbox-solvers). Noise as ``outpert-exact``: Gamma-norm (δ = 0, ε-DP) or
Zhao et al.'s Gaussian (δ > 0, every ε). Accounting: one release; see below for the stochastic
solvers. Counts and their sources are in :mod:`dperm.algorithms.blackbox.theory`.

``solver``:

* ``gd`` — gradient descent, step 1/β, for the certified, data-independent count
  T = ⌈ln(G₀/α)/(−ln(1 − μ/β))⌉ (β includes μ). Deterministic: F(w_T) − F* ≤ α on every run.
* ``agd`` (default) — Nesterov's method (Alg. 4), T = ⌈ln((G₀ + L²/(2μ))/α)/(−ln(1 − 1/√κ))⌉.
  Deterministic.
* ``sgd`` — projected stochastic gradient descent (Alg. 2) on ‖w‖ ≤ L/μ, steps 2/(μ(t + 2)),
  ``batch_size`` rows with replacement, the weighted average of the points the gradients were
  taken at; T = ⌈8L²/(μα)⌉ − 1 for E F − F* ≤ α, **in expectation only**. T is capped at
  ``max_steps``: the noise is then calibrated to the α that the T run certifies (still in
  expectation), 2G²/(μ(T + 1)) with G = 2L, and ``extra`` records the T the target α needs.
* ``agd-smoothed`` — for the non-smooth hinge (their Theorem 3.1, any Lipschitz loss): Nesterov's
  method on the Huberised hinge with h = 2α to α/2, which certifies F(w_T) − F* ≤ α for the
  hinge objective itself (hinge ≤ ℓ_h ≤ hinge + h/4; :mod:`dperm.algorithms.blackbox.theory`).
  Deterministic. The hinge also admits ``sgd``; ``gd``, ``agd`` and ``katyusha`` need a smooth loss.
* ``katyusha`` — Katyusha (Alg. 3, Allen-Zhu 2018; :func:`dperm.solvers.katyusha`, m = 2n,
  L_K = β of the loss, σ = μ) for the epochs its Theorem 2.1 needs (constant 4), **in
  expectation only**. With δ > 0 and ``high_probability`` (default) the Markov remedy makes the
  release (ε, δ)-DP: Katyusha runs to expected accuracy α·δ′, δ′ = ``failure_share``·δ, so
  P(F(w_A) − F* > α) ≤ δ′, and the noise gets (ε − ln(1/(1 − δ′)), δ − δ′).

Runs whose accuracy holds only in expectation (SGD always; Katyusha under ε-DP or with
``high_probability: false``) carry ``extra["guarantee"] = "expectation"`` and a note saying the
ε claim is not proven for a single run (docs/privacy.md#blackbox-expectation); the paper's
configs label them "(accuracy in expectation only)".

μ = 0: the regularised extension with the rate-optimal λ and projection onto B(0, ``radius``)
(:mod:`dperm.algorithms.blackbox.theory`). Deterministic solves are shared by the privacy targets of a row
(``fit_settings``) and by the draws; a stochastic solve is shared too (its randomness from the
first target's generator, child 0; each result has the law of a lone fit). Draw d's noise comes
from child d + 1 of its target's generator.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time

import numpy as np

from ... import solvers
from ..audit_cases import SENSITIVITY_QUARTERED
from ..base import Privacy
from ..domains import BOOLEAN, FRACTION, POSITIVE, POSITIVE_INT, finite_epsilon, one_of, optional
from ..registry import register
from . import theory as bb

EXPECTATION_NOTE = ("accuracy alpha holds in expectation only (docs/privacy.md#blackbox-expectation): the "
                    "sensitivity bound, hence the privacy claim, is not proven for a single run")


def _noise_budget(epsilon, delta, *, share):
    """(ε₀, δ₀) left for the noise once the Markov failure probability share·δ is charged."""
    return bb.markov_split(epsilon, delta, share)[:2]


def _solve(problem, solver, rng, *, L, beta_loss, mu, alpha, max_steps, batch_size, guarantee, row_bound):
    """Run ``solver`` on ``problem`` to accuracy ``alpha``; returns (w, grad evals, iterations,
    certified α, extra, notes, seconds)."""
    n = problem.n
    extra, notes = {"solver": solver, "alpha_target": alpha}, []
    t0 = time.perf_counter()
    if solver == "agd-smoothed":
        from ...losses import HuberHinge

        h, beta_h, steps = bb.smoothed_plan(alpha, mu, L, row_bound)
        w = solvers.nesterov(problem.with_loss(HuberHinge(h=h)), np.zeros(problem.p), n_iter=steps,
                             smoothness=beta_h, mu=mu).x
        extra.update(steps=steps, guarantee=guarantee, huber_h=h, smoothed_smoothness=beta_h)
        notes.append(f"hinge: Nesterov's method on the Huberised hinge (h = 2 alpha = {h:.3g}) to alpha/2, "
                     "which certifies alpha for the hinge objective (hinge <= huber <= hinge + h/4)")
        return w, float(steps), steps, alpha, extra, notes, time.perf_counter() - t0
    beta = None if beta_loss is None else beta_loss + mu  # the hinge (sgd only) has none
    gap0 = bb.initial_gap(problem.loss)
    if solver == "gd":
        steps = bb.gd_steps(alpha, mu, beta, gap0)
        w = solvers.gradient_descent(problem, np.zeros(problem.p), step=1.0 / beta, n_iter=steps).x
        evals, iters, certified = float(steps), steps, alpha
    elif solver == "agd":
        steps = bb.agd_steps(alpha, mu, beta, gap0, L / mu)
        w = solvers.nesterov(problem, np.zeros(problem.p), n_iter=steps, smoothness=beta, mu=mu).x
        evals, iters, certified = float(steps), steps, alpha
    elif solver == "sgd":
        G = 2.0 * L
        needed = bb.sgd_steps(alpha, mu, G)
        steps = needed if max_steps is None else min(needed, int(max_steps))
        certified = max(alpha, bb.sgd_alpha(steps, mu, G))
        w = solvers.sgd(problem, np.zeros(problem.p), rng=rng, step=lambda t: 2.0 / (mu * (t + 2)),
                        n_iter=steps, batch_size=batch_size, replace=True, average="evaluated", radius=L / mu).x
        evals, iters = steps * batch_size / n, steps
        extra.update(steps_for_target=needed, grad_evals_for_target=needed * batch_size / n, batch_size=batch_size)
        if steps < needed:
            notes.append(f"SGD capped at max_steps = {steps}: certifies alpha = {certified:.3g} in expectation "
                         f"(the target {alpha:.3g} needs {needed:.3g} steps); noise calibrated to the former")
    else:  # katyusha
        m = 2 * n
        epochs = bb.katyusha_epochs(alpha, mu, beta_loss, m, gap0)
        w = solvers.katyusha(problem, np.zeros(problem.p), rng=rng, n_epochs=epochs, smoothness=beta_loss,
                             mu=mu).x
        evals, iters, certified = epochs * (1.0 + m / n), epochs, alpha
        extra.update(epochs=epochs, inner_steps=m, katyusha_constant=bb.KATYUSHA_CONSTANT)
    extra.update(steps=iters, guarantee=guarantee)
    return w, evals, iters, certified, extra, notes, time.perf_counter() - t0


def fit_outpert_blackbox_settings(problem, privacies, rngs, draws: int = 1, *, solver: str = "agd",
                                  row_bound: float = 1.0, radius: float | None = None, gaussian: str = "zhao",
                                  alpha_scale: float = 0.125, max_steps: int | None = 100_000, batch_size: int = 1,
                                  high_probability: bool = True, failure_share: float = 0.5):
    """One result per privacy target (see the module docstring)."""
    t0 = time.perf_counter()
    if solver not in bb.SOLVERS:
        raise ValueError(f"solver must be one of {bb.SOLVERS}; got solver={solver!r}")
    gaussian = bb.check_gaussian(gaussian)
    if not (math.isfinite(float(alpha_scale)) and float(alpha_scale) > 0):
        raise ValueError(f"alpha_scale must be a finite number > 0; got alpha_scale={alpha_scale!r}")
    if max_steps is not None and int(max_steps) < 1:
        raise ValueError(f"max_steps must be >= 1 or null; got max_steps={max_steps!r}")
    clipped, L, beta_loss, mu = bb.blackbox_setup(problem, "outpert-blackbox", row_bound, solver)
    if not 1 <= int(batch_size) <= clipped.n:
        raise ValueError(f"batch_size must be in [1, n = {clipped.n}]; got batch_size={batch_size!r}")
    factor = 1.0 + 2.0 * math.sqrt(2.0 * float(alpha_scale))  # Δ_α/Δ_F for a certified solver
    prep = time.perf_counter() - t0
    groups: dict = {}  # what one solve serves: (δ,) for μ > 0 (Markov remedies depend on δ), else each target
    for i, privacy in enumerate(privacies):
        markov = solver == "katyusha" and high_probability and privacy.delta > 0
        key = (privacy.delta if markov else None) if mu > 0 else i
        groups.setdefault(key, []).append(i)
    out: list = [None] * len(privacies)
    for members in groups.values():
        first = privacies[members[0]]
        target, lam, notes, extra_common, project = clipped, mu, [], {}, None
        if mu == 0:
            target, lam, note = bb.regularised(clipped, privacy=first, gaussian=gaussian, L=L, beta=beta_loss,
                                               radius=radius, blackbox_factor=factor, name="outpert-blackbox")
            notes, project = [note], float(radius)
            extra_common = {"lambda": lam, "radius": float(radius)}
        delta_f = bb.erm_sensitivity(L, lam, target.n)
        alpha = float(alpha_scale) * lam * delta_f**2
        markov = solver == "katyusha" and high_probability and first.delta > 0
        budget_for, guarantee = None, "deterministic"
        if solver in bb.STOCHASTIC:
            guarantee = "expectation"
        run_alpha = alpha
        if markov:
            _, _, d_fail = bb.markov_split(first.epsilon, first.delta, failure_share)
            run_alpha = alpha * d_fail
            guarantee = f"high probability (Markov), failure probability {d_fail:.3g} charged to delta"
            budget_for = functools.partial(_noise_budget, share=failure_share)
        rng = bb.solver_rng(rngs[members[0]]) if solver in bb.STOCHASTIC else None
        w, evals, iters, certified, extra, solve_notes, seconds = _solve(
            target, solver, rng, L=L, beta_loss=beta_loss, mu=lam, alpha=run_alpha, max_steps=max_steps,
            batch_size=int(batch_size), guarantee=guarantee, row_bound=float(row_bound))
        if markov:
            certified = alpha  # with probability >= 1 - delta'
            extra["failure_probability"] = run_alpha / alpha
        if guarantee == "expectation":
            solve_notes.append(EXPECTATION_NOTE)
        used = delta_f + 2.0 * bb.distance_bound(certified, lam)
        extra.update(extra_common, alpha_certified=certified, sensitivity_erm=delta_f, lipschitz=L,
                     smoothness=None if beta_loss is None else beta_loss + lam, mu=lam)
        accounting = ("one release: black-box output perturbation (Lowy & Razaviyayn Prop. 3.1)"
                      + ("; solver accuracy in expectation only, claim unproven" if guarantee == "expectation" else "")
                      + ("; Markov failure probability charged to delta" if markov else ""))
        results = bb.results(clipped, [privacies[i] for i in members], [rngs[i] for i in members], draws,
                             center=w, sensitivity_for=lambda e, d, u=used: u, gaussian=gaussian,
                             notes=notes + solve_notes, extra=extra, grad_evals=evals, iterations=iters,
                             solve_seconds=prep + seconds, accounting=accounting, project=project,
                             budget_for=budget_for)
        for i, result in zip(members, results):
            out[i] = result
    return out


def _audit_cases():
    """White box (:mod:`dperm.algorithms.audit_worst_case`): opposed rows in the Huberised hinge's
    linear zone, μ = 0.1, so the minimisers move by Δ_F = 2L/(μn) exactly, half the Δ_α = 2Δ_F the
    noise is calibrated to (the other half is the solver's certified error). GD and AGD (n = 50,
    100,000 runs, the solve shared); SGD and Katyusha with a fresh solve per run (n = 10: one call
    per run, so the runs are independent and the solver's randomness, hence its failure
    probability, is part of every release); Katyusha with δ > 0, the Markov remedy's path."""
    from ..audit_worst_case import PUSH_HINGE, recorded_sensitivity, white_box_audit

    shared = [white_box_audit(f"minimisers 2L/(mu n) apart, solver {solver}, epsilon-DP (white box)", "replace-one",
                              delta=0.0, runs=100_000, shift=recorded_sensitivity, n=50, l2=0.1,
                              hyper={"solver": solver}, **PUSH_HINGE)() for solver in ("gd", "agd")]
    fresh = [white_box_audit(f"solver {solver}, a fresh solve per run, {what} (white box)", "replace-one",
                             delta=delta, runs=runs, shift=recorded_sensitivity, n=10, l2=0.1, draws_per_call=1,
                             hyper={"solver": solver, "max_steps": 20_000}, **PUSH_HINGE)()
             for solver, delta, runs, what in (("sgd", 0.0, 1000, "epsilon-DP"), ("katyusha", 0.0, 2000, "epsilon-DP"),
                                               ("katyusha", 1e-5, 2000, "delta > 0: the Markov remedy"))]
    # the stochastic cases audit the solvers' failure probability, which no calibration mutant changes
    fresh = [[dataclasses.replace(case, for_mutants=False) for case in group] for group in fresh]
    return [case for group in shared + fresh for case in group] + _hinge_canary()


def _hinge_canary():
    """``agd-smoothed`` certifies α for the (non-smooth) hinge objective: a replace-one canary on
    an unused coordinate of hinge rows (ε = 1, ε-DP)."""
    from ...losses import Hinge
    from ..audit_cases import AuditCase, canary_problems

    d, d_prime, c = canary_problems("replace-one", l2=0.1, loss=Hinge())
    return [AuditCase(name="canary on an unused coordinate, solver agd-smoothed (hinge)", d=d, d_prime=d_prime,
                      privacy=Privacy(1.0, 0.0), hyper={"solver": "agd-smoothed", "max_steps": 20_000},
                      statistic=lambda W, c=c: np.asarray(W)[:, c], runs=2000, for_mutants=False)]


_LIMIT = ("the noise covers Delta_alpha = Delta_F + 2 sqrt(2 alpha/mu) = 2 Delta_F; the second half is the solver's "
          "certified error, which GD and AGD from w = 0 do not realise (on the audit's opposed rows the releases move "
          "by Delta_F: measured ratio 0.50), so half the noise leaves them epsilon-DP there and no number of runs can "
          "catch it; the quartered sensitivity is caught on the same case")


@register("outpert-blackbox", settings=fit_outpert_blackbox_settings, audit=_audit_cases,
          domains={"solver": one_of(*bb.SOLVERS), "row_bound": POSITIVE, "radius": optional(POSITIVE),
                   "gaussian": one_of(*bb.GAUSSIANS), "alpha_scale": POSITIVE, "max_steps": optional(POSITIVE_INT),
                   "batch_size": POSITIVE_INT, "high_probability": BOOLEAN, "failure_share": FRACTION},
          needs=(finite_epsilon,),
          size_bounds=("batch_size",),
          mutants=lambda: [SENSITIVITY_QUARTERED], audit_limits={"half noise": _LIMIT, "sensitivity halved": _LIMIT},
          description="Lowy & Razaviyayn's black box: any solver to accuracy alpha, noise for "
                      "2L/(mu n) + 2 sqrt(2 alpha/mu); GD/AGD certified, SGD/Katyusha in expectation "
                      "(Katyusha with a Markov remedy charged to delta)")
def fit_outpert_blackbox(problem, privacy: Privacy, rng, draws: int = 1, *, solver: str = "agd",
                         row_bound: float = 1.0, radius: float | None = None, gaussian: str = "zhao",
                         alpha_scale: float = 0.125, max_steps: int | None = 100_000, batch_size: int = 1,
                         high_probability: bool = True, failure_share: float = 0.5):
    """``solver`` ∈ {"gd", "agd", "sgd", "katyusha", "agd-smoothed" (the hinge)}; ``row_bound`` R_x;
    ``radius`` R ≥ ‖w*‖ (μ = 0 only); ``gaussian`` ∈ {"zhao", "analytic"}; ``alpha_scale`` = α/(μΔ_F²);
    ``max_steps`` and ``batch_size``: SGD's step cap and batch; ``high_probability``, ``failure_share``: Katyusha's
    Markov remedy under (ε, δ)-DP (δ′ = failure_share·δ)."""
    return fit_outpert_blackbox_settings(
        problem, [privacy], [rng], draws, solver=solver, row_bound=row_bound, radius=radius, gaussian=gaussian,
        alpha_scale=alpha_scale, max_steps=max_steps, batch_size=batch_size, high_probability=high_probability,
        failure_share=failure_share)[0]
