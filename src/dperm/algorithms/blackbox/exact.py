"""``outpert-exact``: Lowy & Razaviyayn's conceptual output perturbation (their eq. 2/3): the
minimiser w* of F(w) = (1/n) Σ ℓ_i(w) + (μ/2)‖w‖², plus noise.

Adjacency: replace-one (|D| = |D′| = n, one row differs). Rows are mapped into the public ball
‖x‖ ≤ R_x (``row_bound``), so L and β are the loss's constants at R_x (logistic: L = R_x,
β = R_x²/4); the regulariser cancels between neighbours (docs/privacy.md#outpert-regulariser).

Sensitivity: Proposition 2.2, Δ_F = 2L/(μn). "Exact" is certified, not assumed: the solver
(L-BFGS with Newton-CG polishing, :func:`dperm.algorithms.blackbox.theory.certified_minimiser`) stops at
‖∇F(w)‖ ≤ μρ, so ‖w − w*‖ ≤ ρ by strong convexity, with ρ = ``slack``·Δ_F/2 (default 10⁻⁶
relative); if it stalls above that, Nesterov's method runs the data-independent count that
certifies the same distance. Either way the released point moves by at most
Δ = Δ_F + 2ρ = Δ_F(1 + slack) between neighbours, and the noise is calibrated to that Δ.

Noise (their §2.2, Proposition 2.1): δ = 0 → density ∝ exp(−ε‖z‖/Δ) (Gamma-norm sampler:
‖z‖ ~ Gamma(p, Δ/ε), uniform direction), ε-DP; δ > 0 → N(0, σ²I) with Zhao et al.'s σ, valid for
every ε (``gaussian: analytic`` for the tight calibration). Accounting: one release at the
target (ε, δ). Excess risk (Corollary 2.2, smooth case): (β + μ)/2·E‖z‖², i.e.
O(κL²p²/(μn²ε²)) for ε-DP and O(κL²p ln(1/δ)/(μn²ε²)) for (ε, δ)-DP.

μ = 0 (``l2: 0``): the regularised extension of their §2.4 with the rate-optimal λ and a
projection onto B(0, ``radius``) (:mod:`dperm.algorithms.blackbox.theory`, docs/deviations.md#blackbox-solvers).

The solve does not depend on ε or δ (μ > 0), so the targets of a row share it (``fit_settings``)
and the draws share it; each release draws its own noise (draw d from child d + 1 of its
generator). ``seconds_per_draw`` is one standalone run: row clipping + solve + one noise draw.
"""

from __future__ import annotations

import time

from ..audit_worst_case import PUSH_HINGE, cases, recorded_sensitivity, white_box_audit
from ..base import Privacy
from ..domains import FRACTION, POSITIVE, finite_epsilon, one_of, optional
from ..registry import register
from . import theory as bb


def _solve(problem, *, L, beta_loss, mu, slack):
    """(w, evals, iterations, how, Δ_F, Δ used, extra) of the certified minimiser."""
    delta_f = bb.erm_sensitivity(L, mu, problem.n)
    rho = slack * delta_f / 2.0
    fallback = {"beta": beta_loss + mu, "mu": mu, "gap0": bb.initial_gap(problem.loss), "dist0": L / mu,
                "alpha": 0.5 * mu * rho * rho}
    w, evals, iters, gn, how = bb.certified_minimiser(problem, gtol=mu * rho, smooth_fallback=fallback)
    extra = {"solver": how, "grad_norm": gn, "dist_bound": gn / mu if how == "lbfgs" else rho,
             "sensitivity_erm": delta_f, "slack": slack, "lipschitz": L, "smoothness": beta_loss + mu, "mu": mu}
    return w, evals, iters, delta_f, delta_f + 2.0 * rho, extra


def fit_outpert_exact_settings(problem, privacies, rngs, draws: int = 1, *, row_bound: float = 1.0,
                               radius: float | None = None, gaussian: str = "zhao", slack: float = 1e-6):
    """One result per privacy target, sharing the certified solve when μ > 0."""
    t0 = time.perf_counter()
    gaussian = bb.check_gaussian(gaussian)
    if not 0 < float(slack) < 1:
        raise ValueError(f"slack must be in (0, 1); got slack={slack!r}")
    clipped, L, beta_loss, mu = bb.erm_setup(problem, "outpert-exact", row_bound)
    accounting = "one release: output perturbation of the certified minimiser (Lowy & Razaviyayn Prop. 2.1/2.2)"
    if mu > 0:
        w, evals, iters, _, used, extra = _solve(clipped, L=L, beta_loss=beta_loss, mu=mu, slack=float(slack))
        seconds = time.perf_counter() - t0
        return bb.results(clipped, privacies, rngs, draws, center=w, sensitivity_for=lambda e, d: used,
                          gaussian=gaussian, notes=[], extra=extra, grad_evals=evals, iterations=iters,
                          solve_seconds=seconds, accounting=accounting)
    out, prep = [], time.perf_counter() - t0
    for privacy, rng in zip(privacies, rngs):
        t1 = time.perf_counter()
        reg, lam, note = bb.regularised(clipped, privacy=privacy, gaussian=gaussian, L=L, beta=beta_loss,
                                        radius=radius, blackbox_factor=1.0 + float(slack), name="outpert-exact")
        w, evals, iters, _, used, extra = _solve(reg, L=L, beta_loss=beta_loss, mu=lam, slack=float(slack))
        seconds = prep + time.perf_counter() - t1
        out += bb.results(clipped, [privacy], [rng], draws, center=w, sensitivity_for=lambda e, d, u=used: u,
                          gaussian=gaussian, notes=[note], extra={**extra, "lambda": lam, "radius": float(radius)},
                          grad_evals=evals, iterations=iters, solve_seconds=seconds, accounting=accounting,
                          project=float(radius))
    return out


@register("outpert-exact", settings=fit_outpert_exact_settings,
          domains={"row_bound": POSITIVE, "radius": optional(POSITIVE), "gaussian": one_of(*bb.GAUSSIANS),
                   "slack": FRACTION},
          needs=(finite_epsilon,),
          # White box (dperm.algorithms.audit_worst_case): opposed rows in the Huberised hinge's
          # linear zone (L = 1), μ = 0.1, n = 50: the minimisers move by 2L/(μn) = Δ_F exactly;
          # Gamma-norm (p = 1: Laplace) and the analytic Gaussian.
          audit=cases(white_box_audit("minimisers 2L/(mu n) apart, epsilon-DP (white box)", "replace-one", delta=0.0,
                                      runs=100_000, shift=recorded_sensitivity, n=50, l2=0.1, **PUSH_HINGE),
                      white_box_audit("the same, analytic Gaussian (white box)", "replace-one", runs=400_000,
                                      shift=recorded_sensitivity, n=50, l2=0.1, hyper={"gaussian": "analytic"},
                                      **PUSH_HINGE)),
          description="Lowy & Razaviyayn's conceptual output perturbation: certified minimiser + noise for "
                      "2L/(mu n) (Gamma-norm for eps-DP, Zhao et al.'s Gaussian for (eps, delta))")
def fit_outpert_exact(problem, privacy: Privacy, rng, draws: int = 1, *, row_bound: float = 1.0,
                      radius: float | None = None, gaussian: str = "zhao", slack: float = 1e-6):
    """``row_bound`` R_x (enforced), ``radius`` R ≥ ‖w*‖ (μ = 0 only: regularised extension),
    ``gaussian`` ∈ {"zhao", "analytic"} (δ > 0), ``slack``: the certified solve's distance to w*
    as a fraction of Δ_F/2 (the noise is calibrated to Δ_F(1 + slack))."""
    return fit_outpert_exact_settings(problem, [privacy], [rng], draws, row_bound=row_bound, radius=radius,
                                      gaussian=gaussian, slack=slack)[0]
