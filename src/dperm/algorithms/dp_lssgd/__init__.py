"""DP-LSSGD (Wang, Gu, Boedihardjo, Barekat & Osher 2019): DP-SGD with Laplacian smoothing.

``dp-lssgd`` is ``dp-sgd`` (:mod:`.dp_sgd`) with σ_LS = ``smoothing`` > 0: each step's noisy
direction (Σ_{i∈B} clip_C(∇ℓ_i(w)) + N(0, σ²C²I))/(qn) is replaced by A_σ⁻¹ of it, per parameter
tensor, through the FFT (:mod:`dperm.algorithms.dp_lssgd.smoothing`), and w ← (1 − ηλ)w − η·A_σ⁻¹(direction).

Adjacency: add/remove one row. Sensitivity: the clipped sum moves by at most C (per-example
clipping, Poisson sampling at q = batch/n), exactly as DP-SGD. Accounting: the same function as
DP-SGD (:func:`.dp_sgd.calibrate_noise`: RDP of the Poisson-subsampled Gaussian for the steps
run, improved conversion). A_σ⁻¹ is a fixed linear map applied to the released noisy sum:
post-processing, no cost. It is registered as a variant of ``dp-sgd`` (same implementation,
every hyper-parameter and any accounting option of DP-SGD included, ``smoothing`` defaulting
to 1), so σ_LS = 0 gives DP-SGD bit for bit. Departures from the paper and its code:
docs/deviations.md#lssgd-code and #lssgd-calibration (the paper's bound's side conditions are
not recoverable, so the noise comes from dperm's accountant).

``dp-lssgd-reference`` reproduces the logistic-regression script of the DP-LSSGD authors' code
(docs/privacy.md#lssgd-clipping): batches of ``batch_size`` rows from a fresh permutation each
epoch; the **batch-mean** gradient of each parameter tensor rescaled to norm ≤ C (not per
example); N(0, ν²I) added to the mean with the code's ν² = 20·T_ν·α·C²/(μ·n²·ε), α =
ln(1/δ)/((1 − μ)ε) + 1, μ = 1/2, for T_ν = ``noise_fraction`` × the steps run (the code sizes the
noise for 10 epochs and trains 50: 0.2); then smoothing; weight decay λw added after smoothing.
One example can move the clipped mean by up to 2C, not 2C/b: not DP as implemented. The
code's step size 2/t (t the step count at the start of each epoch) is replaced by the constant
``learning_rate`` (docs/deviations.md#lssgd-code); it changes utility, not the privacy flaw.
"""

from __future__ import annotations

import math

import numpy as np

from ...privacy import calibration_faults as faults
from ...privacy.perturbation import private_target
from .. import dp_sgd  # noqa: F401  (the base must be registered first)
from ..audit_cases import AuditCase, canary_problems, projection_statistic
from ..audit_worst_case import PUSH_AT_CLIP, white_box_audit
from ..base import FitResult, Privacy, draw_rngs
from ..domains import NON_NEGATIVE, POSITIVE, POSITIVE_INT, UNIT, finite_epsilon, positive_delta
from ..registry import register_variant
from .smoothing import laplacian_smoother, parameter_blocks


def unsmoothed_projection(W, centres, sigma: float = 1.0):
    """The white-box statistic of a smoothed release: A_σ applied to the weights (one tensor of
    length p) undoes A_σ⁻¹, so the noise is isotropic again and :func:`projection_statistic` is the
    likelihood ratio (A_σ is public and invertible: post-processing both ways)."""
    from .smoothing import smoothing_matrix

    A = smoothing_matrix(np.shape(W)[1], sigma)
    return projection_statistic(np.asarray(W) @ A.T, tuple(A @ np.asarray(c) for c in centres))


# One full-batch step on two coordinates (the smoothing mixes them), the row pushing coordinate 1 at
# the full clip; read through A_σ (σ_LS = 1, the default).
# shift: ηC/n·‖A_σ⁻¹e₁‖ = (1/50)·√(0.4² + 0.6²) for σ_LS = 1 on two coordinates
AUDIT = white_box_audit("one full-batch step, smoothed, a row pushing at the full clip (white box)", "add-remove",
                        runs=400_000, shift=2 * math.hypot(0.4, 0.6) / 50, n=50, p=2, statistic=unsmoothed_projection,
                        hyper={"epochs": 1.0, "batch_size": 50, "clip": 1.0, "learning_rate": 1.0}, **PUSH_AT_CLIP)

register_variant("dp-lssgd", of="dp-sgd", variant="correct", switches={"name": "dp-lssgd"},
                 defaults={"smoothing": 1.0}, audit=AUDIT,
                 description="DP-LSSGD (Wang et al. 2019): DP-SGD with its noisy gradient smoothed by the "
                             "inverse periodic Laplacian A_sigma^-1 per parameter tensor; DP-SGD's accountant")


def reference_noise_std(epsilon: float, delta: float, clip: float, n: int, noise_steps: float) -> float:
    """The DP-LSSGD code's ν: ν² = 20·T·α·C²/(μ·n²·ε), α = ln(1/δ)/((1 − μ)ε) + 1, μ = 1/2."""
    mu = 0.5
    alpha = math.log(1.0 / delta) / ((1.0 - mu) * epsilon) + 1.0
    return math.sqrt(20.0 * noise_steps * alpha * clip**2 / (mu * n**2 * epsilon))


def fit_dp_lssgd_reference(problem, privacy: Privacy, rng, draws: int = 1, *, epochs: float = 50.0,
                           batch_size: int = 128, clip: float = 1.0, learning_rate: float = 0.5,
                           smoothing: float = 1.0, noise_fraction: float = 0.2):
    eps, delta = private_target(privacy, "dp-lssgd-reference")
    if delta <= 0:
        raise ValueError("dp-lssgd-reference needs delta > 0 (the code's bound has ln(1/delta))")
    n = problem.n
    dp_sgd.check_sgd_hyper(n, batch_size, clip, learning_rate, epochs)
    per_epoch = math.ceil(n / batch_size)
    steps = max(1, math.ceil(epochs * per_epoch))
    nu = reference_noise_std(eps, delta, clip, n, noise_fraction * steps)
    blocks = parameter_blocks(problem)
    smooth = laplacian_smoother(problem, smoothing) if smoothing > 0 else (lambda V: V)
    decay = 1.0 - learning_rate * problem.l2
    W = np.zeros((draws, problem.p))
    for d, child in enumerate(draw_rngs(rng, draws)):
        w = W[d]
        t = 0
        while t < steps:
            perm = child.permutation(n)
            for start in range(0, n, batch_size):
                if t >= steps:
                    break
                rows = perm[start:start + batch_size]
                g = problem.loss.grad(w, problem.X[rows], problem.y[rows])
                for b in blocks:  # the code's clipping: each tensor's batch MEAN to norm <= C
                    norm = float(np.linalg.norm(g[b]))
                    if norm > clip:
                        g[b] *= clip / norm
                g += faults.noise_scale(nu) * child.standard_normal(problem.p)
                step = smooth(g[None])[0]
                w *= decay
                w -= learning_rate * step
                t += 1
    return FitResult(weights=W, epsilon_spent=eps, delta_spent=delta, adjacency="add-remove",
                     grad_evals=steps * batch_size / n, iterations=steps,
                     accounting=f"the DP-LSSGD code's bound nu^2 = 20 T alpha C^2/(mu n^2 eps), mu = 1/2, "
                                f"T = {noise_fraction:g} x the steps run (taken on trust)",
                     extra={"noise_std": nu, "steps": steps, "noise_steps": noise_fraction * steps,
                            "smoothing": smoothing})


def _reference_audit() -> list[AuditCase]:
    """The flaw: a canary whose gradient is 100 times the clip joins a full batch of b = 40 rows
    (add/remove, the adjacency the variant's releases record; it lands in the first batch with
    probability 40/41). Clipping the batch mean lets it move the mean by C rather than C/b, while
    ν assumes the latter (ν here sized for the steps run: the clipping flaw alone); every other
    row has a zero gradient, so w_c is the canary's push alone."""
    d, d_prime, c = canary_problems("add-remove", n=40, p=3, norm=200.0)
    hyper = {"epochs": 1.0, "batch_size": 40, "clip": 1.0, "learning_rate": 1.0, "smoothing": 0.0,
             "noise_fraction": 1.0}
    return [AuditCase(name="canary with 100x the clip norm: batch-mean clipping", d=d, d_prime=d_prime,
                      privacy=Privacy(1.0, 1e-5), hyper=hyper, statistic=lambda W, c=c: np.asarray(W)[:, c],
                      runs=2000)]


register_variant("dp-lssgd-reference",
                 domains={"epochs": POSITIVE, "batch_size": POSITIVE_INT, "clip": POSITIVE, "learning_rate": POSITIVE,
                          "smoothing": NON_NEGATIVE, "noise_fraction": UNIT},
                 needs=(finite_epsilon, positive_delta),
                 size_bounds=("batch_size",),
                 of="dp-lssgd", impl=fit_dp_lssgd_reference, dp_as_implemented=False,
                 audit=_reference_audit,
                 caveat="clips the batch-mean gradient per tensor, not each example (one row moves the mean by "
                        "up to 2C), and sizes its noise for a fifth of the steps it runs "
                        "(docs/privacy.md#lssgd-clipping)",
                 description="the DP-LSSGD authors' logistic-regression script: batch-mean clipping, the code's nu")
