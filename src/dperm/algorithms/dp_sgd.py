"""DP-SGD (Abadi et al. 2016, Algorithm 1; Wang's lecture notes (Lecture 15), Algorithm 4).

Each step draws a Poisson sample (every row independently with probability q = batch_size/n),
clips each per-example gradient to norm C, adds N(0, (σC)²I) to the sum and divides by the
expected lot size qn; the regulariser λw (data-independent) is added to the direction;
w ← w − η·direction, for T = ⌈epochs/q⌉ steps. Output: the last iterate.

Adjacency: add/remove one row. Sensitivity: the clipped sum moves by at most C. Accounting: the
Poisson-subsampled Gaussian with noise multiplier σ composed T times, in Rényi DP (Mironov,
Talwar & Zhang 2019), converted to (ε, δ) (:mod:`dperm.privacy.rdp`). σ is the smallest
multiplier meeting the target (ε, δ), unless ``noise_multiplier`` is given, in which case ε is
computed and reported as ``epsilon_spent`` (the SGD-MA way).

The ``draws`` chains run in lockstep, each with its own Poisson batches and noise
(:func:`._batched_sgd.run_noisy_sgd`, whose docstring explains why this changes nothing
privacy-wise). The same module's :func:`~._batched_sgd.poisson_batch` draws the Poisson
samples of DP-AGD and PrivGene: one sampler implementation serves every algorithm.
"""

from __future__ import annotations

import math

from ..privacy import epsilon_sampled_gaussian, noise_multiplier_for_epsilon
from ._batched_sgd import PoissonSampler, run_noisy_sgd
from .audit_cases import canary_audit
from .base import FitResult, Privacy, draw_rngs
from .registry import register


@register("dp-sgd", audit=canary_audit("add-remove", epsilon=1.0, delta=1e-5, runs=4000,
                                        hyper={"epochs": 2.0, "batch_size": 25}),
          description="DP-SGD, Poisson sampling, per-example clipping, RDP accounting")
def fit_dp_sgd(problem, privacy: Privacy, rng, draws: int = 1, *, epochs: float = 5.0,
               batch_size: int = 256, clip: float = 1.0, learning_rate: float = 0.5,
               noise_multiplier: float | None = None):
    n, n_public = problem.n, problem.n_public  # q and T from the public count (docs/privacy.md#public-n)
    if not 0 < batch_size <= n_public:
        raise ValueError(f"batch_size must be in [1, n={n_public}]; got batch_size={batch_size!r}")
    if clip <= 0 or learning_rate <= 0 or epochs <= 0:
        raise ValueError(f"clip, learning_rate and epochs must be > 0; got {clip!r}, {learning_rate!r}, {epochs!r}")
    q = batch_size / n_public
    steps = max(1, math.ceil(epochs / q))
    if noise_multiplier is None:
        if not privacy.is_private or privacy.delta <= 0:
            raise ValueError("dp-sgd needs a finite epsilon and delta > 0, or an explicit noise_multiplier")
        sigma = noise_multiplier_for_epsilon(privacy.epsilon, privacy.delta, q, steps)
    else:
        sigma = float(noise_multiplier)
    spent = epsilon_sampled_gaussian(q, sigma, steps, privacy.delta)
    run = run_noisy_sgd(problem, draw_rngs(rng, draws), steps, PoissonSampler(n, q), clip=clip,
                        noise_std=sigma * clip, learning_rate=learning_rate, divisor=q * n_public)
    weights, evals = run.weights, run.grad_evals(n)
    return FitResult(weights=weights, epsilon_spent=spent, delta_spent=privacy.delta,
                     adjacency="add-remove", grad_evals=evals, iterations=steps,
                     accounting="RDP of the Poisson-subsampled Gaussian, improved conversion",
                     extra={"noise_multiplier": sigma, "sampling_rate": q, "steps": steps})
