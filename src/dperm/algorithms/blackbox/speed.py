"""Measured convergence of the black box's solvers: how many iterations each needs, on the actual
training rows, to reach F(w) − F* ≤ α, beside the certified, data-independent counts the black
box runs (:mod:`.theory`). The measurement is a diagnostic, never part of a release: it reads the
certified optimum F* of the training rows (:mod:`dperm.optimum`), which the private runs may not.

Each solver is run exactly as the black box runs it (from w₀ = 0, the same steps, the same
smoothness and strong-convexity constants) and stopped at the first iterate whose gap is at most
α, or at its budget:

* gradient descent and Nesterov's method: the gap of every iterate x_t (deterministic; the
  same trajectory as the release's);
* Katyusha: the gap of every epoch's snapshot x̃_s, from one seeded run (the release's run uses
  its own seed: a measurement of the same law);
* stochastic subgradient descent: the gap of the weighted average of the evaluated points after
  t steps, x̄_t = 2/(t(t + 1))·Σ_{s<t}(s + 1)x_s (the point a t-step run returns), at t on a
  geometric grid (ratio ``CHECK_RATIO``), up to ``sgd_budget`` full-gradient equivalents.

Every count is returned with its cost in full-gradient equivalents (one pass over the rows = 1)
and whether α was reached within the budget (``reached``); unreached counts are lower bounds.
"""

from __future__ import annotations

import math

import numpy as np

from ... import solvers
from . import theory as bb

#: the solvers whose speed is measured (the smooth losses' four)
MEASURED = ("gd", "agd", "sgd", "katyusha")
#: SGD's checkpoints: t_{k+1} = ⌈CHECK_RATIO·t_k⌉, so a count is known to within 5%
CHECK_RATIO = 1.05


def _result(iterations, evals, reached, gap, alpha, budget):
    return {"iterations_to_alpha": float(iterations), "grad_evals_to_alpha": float(evals), "reached_alpha": reached,
            "gap_at_stop": float(gap), "alpha_measured": float(alpha), "budget_evals": float(budget)}


def gd(problem, *, alpha, f_star, beta, max_steps):
    """Gradient descent with step 1/β from 0 (:func:`dperm.solvers.gradient_descent`)."""
    w = np.zeros(problem.p)
    for t in range(max_steps + 1):
        f, g = problem.value_and_grad(w)
        if f - f_star <= alpha or t == max_steps:
            return _result(t, t, f - f_star <= alpha, f - f_star, alpha, max_steps)
        w -= g / beta


def agd(problem, *, alpha, f_star, beta, mu, max_steps, radius=None):
    """Nesterov's method as :func:`dperm.solvers.nesterov` (μ > 0), the gap of each iterate x_t."""
    q = (math.sqrt(beta / mu) - 1.0) / (math.sqrt(beta / mu) + 1.0)
    x = np.zeros(problem.p)
    x_prev = x.copy()
    for t in range(max_steps + 1):
        gap = problem.value(x) - f_star
        if gap <= alpha or t == max_steps:
            return _result(t, t, gap <= alpha, gap, alpha, max_steps)
        y = x + q * (x - x_prev)
        x_prev = x
        x = y - problem.grad(y) / beta
        if radius is not None:
            norm = np.linalg.norm(x)
            if norm > radius:
                x *= radius / norm


def katyusha(problem, *, alpha, f_star, smoothness, mu, max_epochs, rng):
    """Katyusha (:func:`dperm.solvers.katyusha`, m = 2n), the gap of each epoch's snapshot."""
    gaps = []

    def check(xt):
        gaps.append(problem.value(xt) - f_star)
        return gaps[-1] <= alpha

    gap0 = problem.value(np.zeros(problem.p)) - f_star
    per_epoch = 1.0 + 2.0  # one snapshot gradient and m = 2n component gradients
    if gap0 <= alpha:
        return _result(0, 0.0, True, gap0, alpha, max_epochs * per_epoch)
    solvers.katyusha(problem, np.zeros(problem.p), rng=rng, n_epochs=max_epochs, smoothness=smoothness, mu=mu,
                     callback=check)
    epochs = len(gaps)
    return _result(epochs, epochs * per_epoch, gaps[-1] <= alpha, gaps[-1], alpha, max_epochs * per_epoch)


def sgd(problem, *, alpha, f_star, mu, lipschitz, max_steps, rng, batch_size=1):
    """Stochastic subgradient descent as the black box runs it (steps 2/(μ(t + 2)), rows with
    replacement, projection onto ‖w‖ ≤ L/μ), the gap of the t-step average at checkpoints."""
    n, radius = problem.n, lipschitz / mu
    x = np.zeros(problem.p)
    weighted = np.zeros(problem.p)  # Σ_{s<t} (s + 1)·x_s
    check, gap = 1, math.inf
    if batch_size == 1 and solvers.glm_sgd_applies(problem):
        # one row per step on a GLM: the steps between checkpoints as one blocked run (the same rows)
        steps = 0
        while steps < max_steps:
            stop = min(check, max_steps)
            t = np.arange(steps, stop)
            x, part = solvers.glm_sgd_steps(problem, x, rng, 2.0 / (mu * (t + 2)), radius=radius, before=t + 1.0)
            weighted += part
            steps = stop
            gap = problem.value(weighted * (2.0 / (steps * (steps + 1)))) - f_star
            if gap <= alpha:
                return _result(steps, steps / n, True, gap, alpha, max_steps / n)
            check = max(check + 1, math.ceil(check * CHECK_RATIO))
        return _result(max_steps, max_steps / n, False, gap, alpha, max_steps / n)
    for t in range(max_steps):
        weighted += (t + 1) * x
        rows = rng.integers(n, size=batch_size)
        x -= 2.0 / (mu * (t + 2)) * problem.batch_grad(x, rows)
        norm = np.linalg.norm(x)
        if norm > radius:
            x *= radius / norm
        steps = t + 1
        if steps == check or steps == max_steps:
            gap = problem.value(weighted * (2.0 / (steps * (steps + 1)))) - f_star
            if gap <= alpha:
                return _result(steps, steps * batch_size / n, True, gap, alpha, max_steps * batch_size / n)
            check = max(check + 1, math.ceil(check * CHECK_RATIO))
    return _result(max_steps, max_steps * batch_size / n, False, gap, alpha, max_steps * batch_size / n)


def measure(problem, extra: dict, hyper: dict, *, f_star: float, rng, sgd_budget: float) -> dict:
    """The measured count of the black-box solver a fit ran (its ``extra`` and resolved
    ``hyper``), on ``problem`` (its training rows, rows already in the public ball), to the
    target α = ``alpha_scale``·μΔ_F² (the accuracy its sensitivity needs, whatever its solver ran
    to), beside the certified count; {} for a fit that is not a black box with μ > 0."""
    solver, mu = extra.get("solver"), float(extra.get("mu", 0.0) or 0.0)
    if solver not in MEASURED or not mu > 0 or "sensitivity_erm" not in extra or "lambda" in extra:
        return {}
    clipped = bb.erm_setup(problem, "measure", float(hyper.get("row_bound", 1.0)))[0]
    L, beta_loss = float(extra["lipschitz"]), float(extra["smoothness"]) - mu
    alpha = float(hyper.get("alpha_scale", 0.125)) * mu * float(extra["sensitivity_erm"]) ** 2
    gap0 = bb.initial_gap(clipped.loss)
    beta = beta_loss + mu
    if solver == "gd":
        certified = bb.gd_steps(alpha, mu, beta, gap0)
        out = gd(clipped, alpha=alpha, f_star=f_star, beta=beta, max_steps=certified)
        certified_evals = float(certified)
    elif solver == "agd":
        certified = bb.agd_steps(alpha, mu, beta, gap0, L / mu)
        out = agd(clipped, alpha=alpha, f_star=f_star, beta=beta, mu=mu, max_steps=certified)
        certified_evals = float(certified)
    elif solver == "katyusha":
        m = 2 * clipped.n
        certified = bb.katyusha_epochs(alpha, mu, beta_loss, m, gap0)
        out = katyusha(clipped, alpha=alpha, f_star=f_star, smoothness=beta_loss, mu=mu, max_epochs=certified,
                       rng=rng)
        certified_evals = certified * 3.0
    else:
        batch = int(hyper.get("batch_size", 1))
        certified = bb.sgd_steps(alpha, mu, 2.0 * L)
        budget = max(1, min(certified, int(sgd_budget * clipped.n / batch)))
        out = sgd(clipped, alpha=alpha, f_star=f_star, mu=mu, lipschitz=L, max_steps=budget, rng=rng,
                  batch_size=batch)
        certified_evals = certified * batch / clipped.n
    return {**out, "certified_iterations": float(certified), "certified_grad_evals": certified_evals,
            "measured_solver": solver}
