"""DP-SGD (Abadi et al. 2016, Algorithm 1; Wang's lecture notes (Lecture 15), Algorithm 4).

Each step draws a Poisson sample (every row independently with probability q = batch_size/n),
clips each per-example gradient to norm C, adds N(0, (σC)²I) to the sum and divides by the
expected lot size qn; the regulariser λw (data-independent) is added to the direction;
w ← w − η·direction, for T = ⌈epochs/q⌉ steps. Output: the last iterate.

Adjacency: add/remove one row (``adjacency="add-remove"``, the default). Sensitivity: the clipped
sum moves by at most C. With ``adjacency="replace-one"`` (to stand beside replace-one methods on
one ε axis, docs/privacy.md#adjacency) the noise is calibrated to the add/remove target
(ε/2, δ/(1 + e^{ε/2})), which implies (ε, δ) under replace-one by group privacy for two rows
(:func:`dperm.privacy.sgd_calibration.replace_one_as_add_remove`); the records then say
``replace-one`` and the accounting names the conversion. Accounting: the
Poisson-subsampled Gaussian with noise multiplier σ composed T times, by the ``accountant``
hyper-parameter: ``"rdp"`` (default) in Rényi DP (Mironov, Talwar & Zhang 2019) with the improved
conversion to (ε, δ) (:mod:`dperm.privacy.rdp`), or ``"pld"``, the privacy loss distribution of
dp-accounting (:mod:`dperm.privacy.pld`), the tighter of the two (docs/privacy.md#tight-accounting).
σ is the smallest multiplier meeting the target (ε, δ), unless ``noise_multiplier`` is given, in
which case ε is computed and reported as ``epsilon_spent`` (the SGD-MA way). The calibration is
one helper, :func:`calibrate_noise_multiplier` (and its inverse :func:`sampled_gaussian_epsilon`),
for every algorithm whose noise is a composition of sampled Gaussians.

``smoothing`` σ_LS > 0 turns DP-SGD into DP-LSSGD (Wang et al. 2019, :mod:`.dp_lssgd`): the
noisy direction (clipped sum + noise)/(qn) is replaced by A_σ⁻¹ of it, per parameter tensor,
before the step (post-processing: the accounting does not change). At σ_LS = 0 (the default) no
smoothing runs at all, so ``dp-sgd`` is exactly ``dp-lssgd`` at σ_LS = 0.

Noise calibration is :func:`calibrate_noise` (over :func:`calibrate_noise_multiplier`), the one
function every DP-SGD-shaped algorithm (``dp-sgd``, ``dp-lssgd``, PIDP-SGD's noisy steps) calls:
the ``accountant`` option reaches all of them.

The ``draws`` chains run in lockstep, each with its own Poisson batches and noise
(:func:`dperm.algorithms.dp_sgd.engine.run_noisy_sgd`, whose docstring explains why this changes nothing
privacy-wise). The same module's :func:`dperm.algorithms.dp_sgd.engine.poisson_batch` draws the Poisson
samples of DP-AGD and PrivGene: one sampler implementation serves every algorithm.
"""

from __future__ import annotations

import math

from ...privacy.sgd_calibration import ACCOUNTANTS, calibrate_noise
from ..audit_worst_case import PUSH_AT_CLIP, cases, white_box_audit
from ..base import FitResult, Privacy, draw_rngs
from ..domains import (
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    finite_epsilon,
    one_of,
    optional,
    positive_delta,
    unless_given,
)
from ..registry import register
from .engine import PoissonSampler, run_noisy_sgd


def check_sgd_hyper(n: int, batch_size, clip, learning_rate, epochs) -> None:
    if not 0 < batch_size <= n:
        raise ValueError(f"batch_size must be in [1, n={n}]; got batch_size={batch_size!r}")
    if clip <= 0 or learning_rate <= 0 or epochs <= 0:
        raise ValueError(f"clip, learning_rate and epochs must be > 0; got {clip!r}, {learning_rate!r}, {epochs!r}")


# White-box audit (dperm.algorithms.audit_worst_case): one full-batch step is a Gaussian mechanism
# on a row pushing at the full clip (η = 1, C = 1, n = 50: the release moves by ηC/n); ten
# Poisson steps at q = 0.2 exercise the sampler (each step moves it by ηC/(qn) when the row is in).
AUDIT = cases(
    white_box_audit("one full-batch step, a row pushing at the full clip (white box)", "add-remove", runs=400_000,
                    shift=2 * 1.0 / 50, n=50, hyper={"epochs": 1.0, "batch_size": 50, "clip": 1.0,
                                                     "learning_rate": 1.0}, **PUSH_AT_CLIP),
    white_box_audit("ten Poisson steps at q = 0.2, the same row (white box, last iterate)", "add-remove",
                    runs=50_000, shift=2 * 10 * 1.0 / 10, n=50,
                    hyper={"epochs": 2.0, "batch_size": 10, "clip": 1.0, "learning_rate": 1.0}, **PUSH_AT_CLIP))


@register("dp-sgd", switches={"name": "dp-sgd"}, audit=AUDIT,
          domains={"epochs": POSITIVE, "batch_size": POSITIVE_INT, "clip": POSITIVE, "learning_rate": POSITIVE,
                   "noise_multiplier": optional(POSITIVE), "accountant": one_of(*sorted(ACCOUNTANTS)),
                   "smoothing": NON_NEGATIVE, "adjacency": one_of("add-remove", "replace-one")},
          needs=(unless_given("noise_multiplier", finite_epsilon), positive_delta),
          size_bounds=("batch_size",),
          description="DP-SGD, Poisson sampling, per-example clipping, RDP or PLD accounting")
def fit_dp_sgd(problem, privacy: Privacy, rng, draws: int = 1, *, epochs: float = 5.0,
               batch_size: int = 256, clip: float = 1.0, learning_rate: float = 0.5,
               noise_multiplier: float | None = None, accountant: str = "rdp", smoothing: float = 0.0,
               adjacency: str = "add-remove", name: str = "dp-sgd"):
    """DP-SGD; ``smoothing`` σ_LS > 0 is DP-LSSGD (:mod:`.dp_lssgd`); ``name`` (fixed by the
    registration) is the key errors name."""
    n, n_public = problem.n, problem.n_public  # q and T from the public count (docs/privacy.md#public-n)
    check_sgd_hyper(n_public, batch_size, clip, learning_rate, epochs)
    if not (math.isfinite(smoothing) and smoothing >= 0):
        raise ValueError(f"smoothing (sigma_LS) must be a finite number >= 0; got smoothing={smoothing!r}")
    q = batch_size / n_public
    steps = max(1, math.ceil(epochs / q))
    cal = calibrate_noise(privacy, q, steps, noise_multiplier=noise_multiplier, algorithm=name, accountant=accountant,
                          adjacency=adjacency)
    smooth = None
    if smoothing > 0:
        from ..dp_lssgd.smoothing import laplacian_smoother

        smooth = laplacian_smoother(problem, smoothing)
    run = run_noisy_sgd(problem, draw_rngs(rng, draws), steps, PoissonSampler(n, q), clip=clip,
                        noise_std=cal.noise_multiplier * clip, learning_rate=learning_rate, divisor=q * n_public,
                        smooth=smooth)
    weights, evals = run.weights, run.grad_evals(n)
    extra = {"noise_multiplier": cal.noise_multiplier, "sampling_rate": q, "steps": steps}
    if smoothing > 0:
        extra["smoothing"] = smoothing
    return FitResult(weights=weights, epsilon_spent=cal.epsilon_spent, delta_spent=privacy.delta,
                     adjacency=adjacency, grad_evals=evals, iterations=steps, accounting=cal.accounting,
                     extra=extra)
