"""DP-GD with individual Rényi filters (Feldman & Zrnic 2021): noise spent unevenly, correctly.

Beyond Kang et al.: the differentially private way to do what PIDP-SGD is after (examples of
small influence train for longer). Full-batch noisy gradient descent: at step t every *active*
row i contributes its clipped gradient g_i = clip_C(∇ℓ_i(w_t)),

    w_{t+1} = (1 − ηλ)w_t − (η/n)(Σ_{i active at t} g_i + N(0, σ²C²I)),

for T = ``steps`` steps from w_0 = 0, n the public row count (``Problem.n_public``,
docs/privacy.md#public-n: under add/remove the true count differs between neighbours). Row i's
individual Rényi loss of step t at the filter's order α is α‖g_i‖²/(2σ²C²) (the Gaussian
mechanism with the sensitivity ‖g_i‖ of its own contribution): in units of a full-norm step,
cost_{i,t} = ‖g_i‖²/C² ≤ 1. Each row has a budget of B = ``budget_fraction`` × T full-norm
steps; a row whose next cost would take its ledger past B is dropped, for good, before that step
(so it is never charged past B). A row whose gradients are small pays little per step and trains
for all T steps; one with large gradients drops out after about B steps.

Adjacency: add/remove one row (``adjacency="add-remove"``, the default). Accounting (Feldman &
Zrnic 2021, the individual Rényi filter): the individual losses are chosen from past releases and
the row itself, so the run is (α, α·B/(2σ²))-RDP with respect to every row, converted to (ε, δ)
at α. σ and α are chosen before the run, from public quantities only: σ is the noise multiplier
of B full-batch Gaussian steps at the target (ε, δ) (:func:`dperm.privacy.noise_multiplier_for_epsilon`
with q = 1, the same accountant as DP-SGD) and α the order at which that curve meets it.
``epsilon_spent`` is the conversion at α (≤ the target). ``adjacency="replace-one"`` calibrates to
the add/remove target (ε/2, δ/(1 + e^{ε/2})), which implies (ε, δ) under replace-one by group
privacy for two rows (:func:`dperm.privacy.sgd_calibration.replace_one_as_add_remove`,
docs/privacy.md#adjacency); ``epsilon_spent`` is then twice the add/remove conversion.

Recorded per draw (``extra``): the fraction of rows dropped by the end, the mean and the largest
fraction of its budget a row used, and the steps after which a quarter and half of the rows had
been dropped (T when never); :func:`run_filter` also returns the whole per-row ledger.

Lockstep: the draws and, through :func:`fit_filter_settings`, the ε of a row run as chains of one
batched product per step (a GLM: X·Wᵀ; the MLP: its chunked backward pass over all chains, the
per-row decision made on each chunk from the norms of that pass, no second pass); each chain
draws its noise from its own generator.
"""

from __future__ import annotations

import math

import numpy as np

from ..losses import MLP, GLMLoss
from ..privacy import DEFAULT_RDP_ORDERS, noise_multiplier_for_epsilon, rdp_sampled_gaussian, rdp_to_epsilon
from ..privacy import calibration_faults as faults
from ..privacy.perturbation import private_target
from ..privacy.sgd_calibration import check_adjacency, replace_one_as_add_remove
from .audit_cases import AuditCase, Mutant, with_switches
from .audit_worst_case import PUSH_AT_CLIP, cases, white_box_audit
from .base import FitResult, Privacy, draw_rngs
from .domains import POSITIVE, POSITIVE_INT, UNIT, finite_epsilon, one_of, positive_delta
from .registry import register


def filter_calibration(epsilon: float, delta: float, budget_steps: float):
    """(σ, α, ε at α): the Gaussian of ``budget_steps`` full-batch steps at (ε, δ), its order."""
    sigma = noise_multiplier_for_epsilon(epsilon, delta, 1.0, budget_steps)
    orders = DEFAULT_RDP_ORDERS
    rdp = rdp_sampled_gaussian(1.0, sigma, orders, steps=budget_steps)
    eps, alpha = rdp_to_epsilon(rdp, orders, delta)
    return sigma, alpha, eps


def run_filter(problem, sigmas, rngs, *, steps, budget_steps, learning_rate, clip, drops=True, row_count="public"):
    """Chains k = len(rngs) (noise multiplier ``sigmas[k]``): (weights (k, p), ledger (k, n) in
    full-norm steps, active (k, n) at the end, dropped-at step (k, n), −1 when never).

    The step divides by the public row count (docs/privacy.md#public-n): under add/remove the
    true n differs between neighbours and would show in every release. ``drops=False`` (a row
    is never dropped) and ``row_count="true"`` (the true n) exist for the audit's mutants only."""
    n, p = problem.n, problem.p
    divisor = problem.n_public if row_count == "public" else n
    k = len(rngs)
    W = np.zeros((k, p))
    spent = np.zeros((k, n))
    active = np.ones((k, n), dtype=bool)
    dropped_at = np.full((k, n), -1, dtype=np.int64)
    sigmas = faults.noise_scale(np.asarray(sigmas, dtype=float))  # the audit's mutants (calibration_faults)
    decay = 1.0 - learning_rate * problem.l2
    norms_x = problem.row_norms
    mlp = isinstance(problem.loss, MLP)
    if not (mlp or isinstance(problem.loss, GLMLoss)):
        raise ValueError(f"dp-gd-filter supports GLM losses and the MLP; got {problem.loss!r}")
    for t in range(steps):
        def decide(sl, norm, t=t):
            cost = np.minimum(norm, clip) ** 2 / clip**2
            take = active[:, sl] & ((spent[:, sl] + cost <= budget_steps + 1e-12) | (not drops))
            newly = active[:, sl] & ~take
            dropped_at[:, sl][newly] = t
            active[:, sl] &= take
            spent[:, sl] += np.where(take, cost, 0.0)
            return take.astype(float)

        if mlp:
            G = problem.loss.clipped_grad_sum(W, problem.X, problem.y, clip, row_norms=norms_x, row_weights=decide)
        else:
            Z = problem.X @ W.T  # (n, k)
            d = problem.loss.dphi(Z, problem.y[:, None]).T  # (k, n)
            norm = np.abs(d) * norms_x
            d *= clip / np.maximum(norm, clip)
            d *= decide(slice(0, n), norm)
            G = d @ problem.X
        noise = np.stack([rng.standard_normal(p) for rng in rngs]) * (sigmas * clip)[:, None]
        W *= decay
        W -= (learning_rate / divisor) * (G + noise)
    return W, spent, active, dropped_at


def _summaries(spent, active, dropped_at, budget_steps, steps):
    n = spent.shape[1]
    dropped = ~active

    def when(share):
        out = []
        for row, dr in zip(dropped_at, dropped):
            times = np.sort(row[dr])
            need = int(math.ceil(share * n))
            out.append(int(times[need - 1]) if times.size >= need else steps)
        return np.array(out)

    return {"dropped_fraction": dropped.mean(axis=1), "mean_budget_used": spent.mean(axis=1) / budget_steps,
            "max_budget_used": spent.max(axis=1) / budget_steps, "step_quarter_dropped": when(0.25),
            "step_half_dropped": when(0.5)}


def _fits(problem, targets, rngs_per_target, draws, *, steps, budget_fraction, learning_rate, clip,
          adjacency="add-remove", drops=True, row_count="public"):
    if isinstance(steps, bool) or not (isinstance(steps, int) and steps >= 1):
        raise ValueError(f"steps must be a positive integer; got steps={steps!r}")
    if not 0 < budget_fraction <= 1:
        raise ValueError(f"budget_fraction must be in (0, 1]; got budget_fraction={budget_fraction!r}")
    for name, value in (("learning_rate", learning_rate), ("clip", clip)):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0; got {name}={value!r}")
    budget = max(1, int(round(budget_fraction * steps)))
    replace = check_adjacency(adjacency) == "replace-one"
    cals = []
    for target in targets:
        eps, delta = private_target(target, "dp-gd-filter")
        if delta <= 0:
            raise ValueError("dp-gd-filter needs delta > 0 (Gaussian noise, RDP conversion)")
        if replace:
            eps, delta = replace_one_as_add_remove(eps, delta)
        sigma, alpha, spent = filter_calibration(eps, delta, budget)
        cals.append((sigma, alpha, 2.0 * spent if replace else spent))
    chains = [(i, child) for i, rng in enumerate(rngs_per_target) for child in draw_rngs(rng, draws)]
    W, spent, active, dropped_at = run_filter(problem, [cals[i][0] for i, _ in chains], [c for _, c in chains],
                                              steps=steps, budget_steps=budget, learning_rate=learning_rate,
                                              clip=clip, drops=drops, row_count=row_count)
    out = []
    for i, target in enumerate(targets):
        rows = [j for j, (owner, _) in enumerate(chains) if owner == i]
        sigma, alpha, eps_spent = cals[i]
        extra = {"noise_multiplier": sigma, "rdp_order": alpha, "budget_steps": budget, "steps": steps,
                 **_summaries(spent[rows], active[rows], dropped_at[rows], budget, steps)}
        accounting = f"individual Renyi filter (Feldman & Zrnic 2021) at order {alpha:g}, improved conversion"
        if replace:
            accounting += (" at the add/remove target (eps/2, delta/(1 + e^(eps/2))); replace-one by group privacy "
                           "for two rows (docs/privacy.md#adjacency)")
        out.append(FitResult(weights=W[rows], epsilon_spent=eps_spent, delta_spent=target.delta,
                             adjacency=adjacency, grad_evals=float(steps), iterations=steps,
                             accounting=accounting, extra=extra))
    return out


def fit_filter_settings(problem, privacies, rngs, draws: int = 1, **hyper):
    """Every ε of a row at once (chains in lockstep); result i has the law of a lone fit."""
    return _fits(problem, list(privacies), list(rngs), draws, **hyper)


def row_count_audit() -> list[AuditCase]:
    """Neighbours whose row counts differ (add/remove): D has five rows, each pushing its own
    coordinate at the full clip (p = 20), D′ one more on a sixth. Dividing the step by the true n
    would shrink every coordinate of D′'s releases, noise included, by 5/6; the statistic −‖w‖
    sees it (docs/privacy.md#public-n). Both share the public count 5."""
    from ..losses import Huber
    from ..problem import Problem
    from .base import Privacy

    n, p = 5, 20
    X = np.zeros((n, p))
    X[np.arange(n), np.arange(n)] = 1.0
    added = np.zeros(p)
    added[-1] = 1.0
    d = Problem(X, np.full(n, 1e6), Huber(1.0), public_n=n)
    d_prime = Problem(np.vstack([X, added]), np.full(n + 1, 1e6), Huber(1.0), public_n=n)
    return [AuditCase("five rows push, a sixth joins: the row count shows if the step reads it", d, d_prime,
                      Privacy(1.0, 1e-5), {"steps": 10, "learning_rate": 1.0},
                      statistic=lambda W: -np.linalg.norm(np.asarray(W), axis=1), runs=20_000)]


# White box (dperm.algorithms.audit_worst_case): a pair whose row counts differ; a row pushing at
# the full clip (n = 50, η = 1) with B = 1 of T = 16 steps, which must stop after one step (a
# filter that never drops it pushes 16 times); and with the budget of every step (B = T = 2),
# where the last iterate is the Gaussian the filter is calibrated to. (Cheapest first: a mutant
# stops at the first case that catches it.)
AUDIT = cases(
    row_count_audit,
    white_box_audit("sixteen steps, a budget of one: the row must be dropped (white box)", "add-remove",
                    runs=50_000, shift=2 * 1 * 1.0 / 50, n=50,
                    hyper={"steps": 16, "budget_fraction": 1 / 16, "learning_rate": 1.0}, **PUSH_AT_CLIP),
    white_box_audit("two steps, every step in the budget, a row pushing at the full clip (white box)", "add-remove",
                    runs=300_000, shift=2 * 2 * 1.0 / 50, n=50,
                    hyper={"steps": 2, "budget_fraction": 1.0, "learning_rate": 1.0}, **PUSH_AT_CLIP))


def _mutants():
    """A filter that never drops a row (the canary keeps its full gradient past its budget) and
    one that divides by the true row count (neighbours differ in n under add/remove)."""
    return [Mutant("never drops a row", "rows are charged but never dropped: the budget is not enforced",
                   fit=with_switches("dp-gd-filter", drops=False)),
            Mutant("true row count", "the step divides by the true n, which differs between add/remove neighbours",
                   fit=with_switches("dp-gd-filter", row_count="true"))]


@register("dp-gd-filter", settings=fit_filter_settings, mutants=_mutants,
          domains={"steps": POSITIVE_INT, "budget_fraction": UNIT, "learning_rate": POSITIVE, "clip": POSITIVE,
                   "adjacency": one_of("add-remove", "replace-one")},
          needs=(finite_epsilon, positive_delta),
          switches={"drops": True, "row_count": "public"},
          audit=AUDIT,
          description="noisy full-batch GD with individual Renyi filters (Feldman & Zrnic 2021): rows "
                      "charged by their clipped gradient norm, dropped when their budget is spent")
def fit_dp_gd_filter(problem, privacy: Privacy, rng, draws: int = 1, *, steps: int = 100,
                     budget_fraction: float = 0.5, learning_rate: float = 1.0, clip: float = 1.0,
                     adjacency: str = "add-remove", drops: bool = True, row_count: str = "public"):
    """DP-GD with individual Rényi filters (module docstring); ``drops`` and ``row_count`` are
    fixed by the registration (the audit's mutants turn them)."""
    return _fits(problem, [privacy], [rng], draws, steps=steps, budget_fraction=budget_fraction,
                 learning_rate=learning_rate, clip=clip, adjacency=adjacency, drops=drops, row_count=row_count)[0]
