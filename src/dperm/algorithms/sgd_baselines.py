"""SGD-Adv and SGD-MA, the noisy-SGD baselines of Lee & Kifer 2018.

Both run w ← w − η·(G/b + λw) from w₀ = 0 with G = Σ_{i∈batch} clip_C(∇ℓ_i(w)) + N(0, σ²I),
λ = ``problem.l2`` added outside the noise (data-independent), output the last iterate, and
b = int(√n + 10) (code; the paper says √n, docs/deviations.md#batch-size).

**SGD-Adv** (DP-AGD `dpsgd_adv`; Bassily, Smith & Thakurta 2014 style). Adjacency: replace-one;
batches of b rows drawn uniformly without replacement, so one replaced row moves G by ≤ 2C.
T = max(round(n·ε/500), 1) (Python 2 rounding), C = 3, η = 0.1. Correct calibration:

1. advanced composition split (ε_step, δ_step) = (ε/(2√(2T ln(2/δ))), δ/(2T)) — composes to
   ≤ (ε, δ) with slack δ' = δ/2 (Dwork & Roth Thm 3.20; :func:`advanced_composition_split`);
2. amplification by subsampling without replacement under replace-one (Balle, Barthe & Gaboardi
   2018; Wang's lecture notes (Lecture 15), Lemma 15.4): a base mechanism that is (ε_b, δ_b)-DP on
   the batch is (ln(1 + q(e^{ε_b} − 1)), q·δ_b)-DP on the data, q = b/n, valid for every ε_b.
   Inverted: ε_b = ln(1 + (e^{ε_step} − 1)/q), and **δ_b = δ_step/q** — the base Gaussian may spend
   δ_step/q because only a q-fraction of its failure mass reaches the full-data guarantee;
3. a Gaussian valid for every ε at (ε_b, δ_b) with sensitivity 2C: Zhao et al. 2019 (default,
   closed form) or the exact analytic Gaussian (Balle & Wang 2018, ``gaussian="analytic"``).

``sgd-adv-reference`` reproduces the code: ε_b = ε_step/(2q) (the (2qε, qδ) lemma, needs ε_b ≤ 1),
δ_step kept unscaled for the Gaussian (conservative) and σ = 2C√(2 ln(1.25/δ_step))/ε_b (classical
Gaussian, proven only for ε_b < 1) even when ε_b > 1 — e.g. ε_b ≈ 1.09 at ε = 1.6 on Adult-sized
data (docs/privacy.md#gaussian-range): its own privacy argument is invalid there.
``extra["exact_check"]`` runs the valid chain forwards on the σ it produces (exact Gaussian
profile at δ_step/q, ln(1 + q(e^ε − 1)), advanced composition): on the Lee–Kifer grid (ε ≤ 1.6,
δ = 1e-8, n ≈ 36–40k) the σ happens to be certified (ε ≈ 0.45 at target 1.6, because the
classical formula is loose at small δ), but not in general (ε = 12.8 certifies ≈ 14). It is
therefore registered as a reference variant that is DP as implemented on that grid
(``dp_as_implemented=True``), with the caveat stated in every record.

**SGD-MA** (DP-AGD `dpsgd_ma`; Abadi et al. 2016). ε is computed, not targeted: noise multiplier
σ = 4 (std σC on G), C = 4, T ∈ {1, 100, 1000, 10000, 20000} (``steps``), η = 0.05, q = b/n.
Adjacency: add/remove. Correct variant: Poisson sampling at rate q (each row independently; G is
divided by the expected lot size qn = b), for which the sampled-Gaussian RDP analysis is exact;
ε from the ``accountant`` hyper-parameter: ``"rdp"`` (default; :func:`epsilon_sampled_gaussian`,
orders up to 1024, improved conversion) or ``"pld"`` (dp-accounting's privacy loss distribution,
tighter; :func:`.dp_sgd.sampled_gaussian_epsilon`, docs/privacy.md#tight-accounting).
``sgd-ma-reference`` samples b rows without replacement as the code does and reports
the moments-accountant ε with orders 1..32 evaluated at order 32 only
(docs/deviations.md#moments-order-32). Its ε is not a proven bound for that sampling: with a fixed
batch size, an added row displaces another, so G moves by up to 2C, not the C of the Poisson
analysis (docs/privacy.md#moments-accountant). Both variants report both numbers in ``extra``
(``epsilon_rdp``, ``epsilon_moments_ref``), and ``epsilon_pld`` with ``accountant="pld"``.

Execution: the ``draws`` chains run in lockstep through :func:`dperm.algorithms.dp_sgd.engine.run_noisy_sgd`
(one vectorised step for all draws, each draw with its own batches and noise from its own
generator; its docstring explains why this changes nothing privacy-wise). ``snapshots``
(SGD-MA) keeps the iterates after fewer steps of the same run, each released in ``path`` with
the ε of its own step count (the protocol runs a T grid this way). Samplers:
:class:`dperm.algorithms.dp_sgd.engine.PoissonSampler` (correct SGD-MA) and
:class:`dperm.algorithms.dp_sgd.engine.FixedSizeSampler` (SGD-Adv, ``sgd-ma-reference``). Cost:
O(b·p) per step and draw (GLM clipped sums never form per-example gradients).
"""

from __future__ import annotations

import math

import numpy as np

from ..privacy import (
    advanced_composition,
    advanced_composition_split,
    amplify_linear_inverse,
    amplify_subsampling_inverse,
    epsilon_sampled_gaussian,
    gaussian_delta,
    gaussian_sigma_analytic,
    gaussian_sigma_zhao,
    moments_accountant_epsilon,
)
from ..privacy.budget_steps import steps_for_budget
from ..privacy.sgd_calibration import ACCOUNTANTS, sampled_gaussian_epsilon
from ..privacy.validation import check_real
from .audit_cases import displaced_row_audit
from .audit_worst_case import PUSH_AT_CLIP, white_box_audit
from .base import FitResult, Privacy, draw_rngs
from .domains import POSITIVE, POSITIVE_INT, finite_epsilon, one_of, optional, positive_delta, sequence_of
from .dp_sgd.engine import FixedSizeSampler, PoissonSampler, run_noisy_sgd
from .registry import register, register_variant

GAUSSIANS = ("zhao", "analytic")


def default_batch_size(n: int) -> int:
    """b = int(√n + 10) (DP-AGD code; the paper's √n, docs/deviations.md#batch-size), at most n."""
    return min(int(math.sqrt(n) + 10), n)


def sgd_adv_steps(n: int, epsilon: float, c: float = 500.0) -> int:
    """T = max(round(n·ε/c), 1), c = 500 (DP-AGD `run_sgdadv_*`)."""
    return steps_for_budget(n, epsilon, c)


def sgd_adv_calibration(epsilon: float, delta: float, n: int, steps: int, batch_size: int, clip: float,
                        *, gaussian: str = "zhao", reference: bool = False) -> dict:
    """Per-step budget and noise std σ (on the clipped sum, sensitivity 2C) of SGD-Adv.

    ``reference=False``: the valid chain of the module docstring; ``True``: the code's chain.
    Returns ε_step, δ_step, ε_base, δ_base (what the base Gaussian is calibrated at) and σ.
    """
    eps_step, delta_step = advanced_composition_split(epsilon, delta, steps)
    q = batch_size / n
    sens = 2.0 * clip
    if reference:
        eps_base = amplify_linear_inverse(eps_step, q, strict=False)
        delta_base = delta_step
        sigma = sens * math.sqrt(2.0 * math.log(1.25 / delta_base)) / eps_base  # classical, any ε
    else:
        if gaussian not in GAUSSIANS:
            raise ValueError(f"gaussian must be one of {GAUSSIANS}; got gaussian={gaussian!r}")
        eps_base, delta_base = amplify_subsampling_inverse(eps_step, delta_step, q)
        calibrate = gaussian_sigma_zhao if gaussian == "zhao" else gaussian_sigma_analytic
        sigma = calibrate(eps_base, delta_base, sens)
    return {"epsilon_step": eps_step, "delta_step": delta_step, "sampling_rate": q,
            "epsilon_base": eps_base, "delta_base": delta_base, "sigma": sigma, "sensitivity": sens}


def gaussian_epsilon_at(delta: float, sigma: float, sensitivity: float) -> float:
    """Smallest ε with gaussian_delta(ε, σ, Δ) ≤ δ (exact Gaussian profile; bisection)."""
    if gaussian_delta(0.0, sigma, sensitivity) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while gaussian_delta(hi, sigma, sensitivity) > delta:
        lo, hi = hi, 2.0 * hi
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if gaussian_delta(mid, sigma, sensitivity) > delta else (lo, mid)
    return hi


def certified_sgd_adv(cal: dict, steps: int, delta: float) -> dict:
    """(ε, δ) that the *valid* lemmas certify for a calibration's σ: the base Gaussian spends
    δ_step/q at the smallest ε its exact profile allows, amplified by ln(1 + q(e^ε − 1)) and
    composed over T steps with slack δ/2 (the correct chain run forwards)."""
    q = cal["sampling_rate"]
    eps_base = gaussian_epsilon_at(min(cal["delta_step"] / q, 0.5), cal["sigma"], cal["sensitivity"])
    eps_step = math.log1p(q * math.expm1(eps_base)) if eps_base > 0 else 0.0
    delta_step = q * min(cal["delta_step"] / q, 0.5)
    eps, dlt = advanced_composition(max(eps_step, 1e-300), delta_step, steps, delta / 2.0)
    return {"epsilon_base": eps_base, "epsilon": eps, "delta": dlt}


def _check_common(problem, batch_size, clip, learning_rate):
    n = problem.n_public  # the default batch from the public count (docs/privacy.md#public-n)
    b = default_batch_size(n) if batch_size is None else batch_size
    if not (isinstance(b, (int, np.integer)) and 0 < b <= n):
        raise ValueError(f"batch_size must be None or an integer in [1, n={n}]; got batch_size={batch_size!r}")
    check_real(clip, "clip", low=0.0)
    check_real(learning_rate, "learning_rate", low=0.0)
    return int(b)


def _noisy_sgd(problem, rng, draws, steps, sampler, clip, noise_std, learning_rate, divisor):
    """Run ``draws`` independent noisy-SGD chains in lockstep (:mod:`dperm.algorithms.dp_sgd.engine`); returns the
    last iterates and the per-example gradients per draw in full-gradient equivalents."""
    run = run_noisy_sgd(problem, draw_rngs(rng, draws), steps, sampler, clip=clip, noise_std=noise_std,
                        learning_rate=learning_rate, divisor=divisor)
    return run.weights, run.grad_evals(problem.n)


def _fit_sgd_adv(problem, privacy: Privacy, rng, draws, *, steps, c, batch_size, clip, learning_rate,
                 gaussian, reference):
    if not privacy.is_private or not privacy.delta > 0:
        raise ValueError(f"sgd-adv needs a finite epsilon and delta > 0; got epsilon={privacy.epsilon!r}, "
                         f"delta={privacy.delta!r}")
    n = problem.n
    b = _check_common(problem, batch_size, clip, learning_rate)
    if steps is None:
        check_real(c, "c", low=0.0)
        T = sgd_adv_steps(n, privacy.epsilon, c)
    elif isinstance(steps, (int, np.integer)) and steps >= 1:
        T = int(steps)
    else:
        raise ValueError(f"steps must be a positive integer or None; got steps={steps!r}")
    cal = sgd_adv_calibration(privacy.epsilon, privacy.delta, n, T, b, clip, gaussian=gaussian,
                              reference=reference)
    weights, evals = _noisy_sgd(problem, rng, draws, T, FixedSizeSampler(n, b), clip, cal["sigma"],
                                learning_rate, b)
    notes = []
    extra = dict(cal, steps=T, batch_size=b, clip=clip, learning_rate=learning_rate,
                 gaussian="classical (reference)" if reference else gaussian)
    if reference:
        check = certified_sgd_adv(cal, T, privacy.delta)
        check["certified"] = bool(check["epsilon"] <= privacy.epsilon * (1 + 1e-9)
                                  and check["delta"] <= privacy.delta * (1 + 1e-9))
        extra["exact_check"] = check
        if cal["epsilon_base"] >= 1.0:
            verdict = ("the resulting sigma is still certified by the valid lemmas" if check["certified"]
                       else "the resulting sigma is NOT certified by the valid lemmas")
            notes.append(f"epsilon_base = {cal['epsilon_base']:.4g} >= 1: the classical Gaussian and the "
                         f"2q-epsilon amplification are applied outside their proven range "
                         f"(docs/privacy.md#gaussian-range); "
                         f"{verdict} (exact_check: epsilon = {check['epsilon']:.4g})")
    accounting = ("advanced composition, the 2q-epsilon amplification lemma, classical Gaussian (the DP-AGD code)"
                  if reference else
                  "advanced composition, amplification by subsampling, Gaussian valid for every epsilon")
    return FitResult(weights=weights, epsilon_spent=float(privacy.epsilon), delta_spent=float(privacy.delta),
                     adjacency="replace-one", grad_evals=evals, iterations=T, notes=notes, extra=extra,
                     accounting=accounting)


# White box: one step on the whole batch (b = n = 50, so no sampling: the base Gaussian itself),
# a row pushing at the full clip C = 1 (replace-one: the batch sum moves by 2C).
_ADV_AUDIT = white_box_audit("one full-batch step, a row pushing at the full clip (white box)", "replace-one",
                             runs=100_000, shift=2 * 1.0 / 50, n=50, hyper={"steps": 1, "batch_size": 50, "clip": 1.0,
                                                                           "learning_rate": 1.0}, **PUSH_AT_CLIP)
_ADV_LIMIT = ("advanced composition at T = 1 and the amplification lemma leave the base Gaussian at epsilon_step = "
              "epsilon/(2 sqrt(2 ln(2/delta))) ~ 0.1 epsilon: with half the noise the step is still 0.14-DP at "
              "delta = 1e-5 on any neighbours (its exact Gaussian profile), so no number of runs can catch it")


@register("sgd-adv", switches={"reference": False}, audit=_ADV_AUDIT,
          domains={"steps": optional(POSITIVE_INT), "c": POSITIVE, "batch_size": optional(POSITIVE_INT),
                   "clip": POSITIVE, "learning_rate": POSITIVE, "gaussian": one_of(*GAUSSIANS)},
          needs=(finite_epsilon, positive_delta),
          size_bounds=("batch_size",),
          audit_limits={"half noise": _ADV_LIMIT, "sensitivity halved": _ADV_LIMIT},
          description="noisy mini-batch SGD, advanced composition + subsampling amplification, "
                      "Gaussian valid for every epsilon")
def fit_sgd_adv(problem, privacy: Privacy, rng, draws: int = 1, *, steps: int | None = None,
                c: float = 500.0, batch_size: int | None = None, clip: float = 3.0,
                learning_rate: float = 0.1, gaussian: str = "zhao", reference: bool = False):
    """SGD-Adv; ``reference`` (fixed by the registration) switches to the code's calibration."""
    return _fit_sgd_adv(problem, privacy, rng, draws, steps=steps, c=c, batch_size=batch_size, clip=clip,
                        learning_rate=learning_rate, gaussian=gaussian, reference=reference)


register_variant(
    "sgd-adv-reference", of="sgd-adv", switches={"reference": True}, drop=("gaussian",),
    dp_as_implemented=True,
    caveat="private on the Lee-Kifer grid but not by its own argument: epsilon_base = epsilon_step/(2q) with the "
           "classical Gaussian even when epsilon_base > 1 (about 1.09 at epsilon = 1.6): both lemmas applied "
           "outside their proven range (docs/privacy.md#gaussian-range); the sigma it yields is certified by the valid "
           "lemmas on the Lee-Kifer grid (epsilon <= 1.6) but not in general (fails at epsilon = 12.8); see "
           "extra['exact_check']",
    description="SGD-Adv as in the DP-AGD code")


def sgd_ma_epsilons(q: float, noise_multiplier: float, steps: int, delta: float) -> dict:
    """ε of T sampled-Gaussian steps from the RDP accountant and from DP-AGD's moments accountant."""
    return {"epsilon_rdp": epsilon_sampled_gaussian(q, noise_multiplier, steps, delta),
            "epsilon_moments_ref": moments_accountant_epsilon(q, noise_multiplier, steps, delta,
                                                              max_order=32, reference=True)}


def _fit_sgd_ma(problem, privacy: Privacy, rng, draws, *, steps, noise_multiplier, batch_size, clip,
                learning_rate, reference, snapshots=(), accountant="rdp"):
    delta = float(privacy.delta)
    if not delta > 0:
        raise ValueError(f"sgd-ma needs delta > 0 to report an epsilon; got delta={privacy.delta!r}")
    if not (isinstance(steps, (int, np.integer)) and steps >= 1):
        raise ValueError(f"steps must be a positive integer; got steps={steps!r}")
    check_real(noise_multiplier, "noise_multiplier", low=0.0)
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {sorted(ACCOUNTANTS)}; got accountant={accountant!r}")
    n = problem.n
    b = _check_common(problem, batch_size, clip, learning_rate)
    q = b / problem.n_public
    sample = FixedSizeSampler(n, b) if reference else PoissonSampler(n, q)
    run = run_noisy_sgd(problem, draw_rngs(rng, draws), int(steps), sample, clip=clip,
                        noise_std=noise_multiplier * clip, learning_rate=learning_rate, divisor=b,
                        snapshots=snapshots)

    def release(t, part, seconds_per_draw=None):
        eps = sgd_ma_epsilons(q, noise_multiplier, t, delta)
        if accountant == "pld":
            eps["epsilon_pld"] = sampled_gaussian_epsilon(noise_multiplier, delta, q, t, "pld")
        spent = eps["epsilon_moments_ref"] if reference else eps[f"epsilon_{accountant}"]
        accounting = ("moments accountant, orders 1..32 read at order 32 (the DP-AGD code)" if reference
                      else ACCOUNTANTS[accountant])
        return FitResult(weights=part.weights, epsilon_spent=spent, delta_spent=delta, adjacency="add-remove",
                         accounting=accounting,
                         grad_evals=part.grad_evals(n), iterations=t, seconds_per_draw=seconds_per_draw,
                         extra=dict(eps, steps=t, batch_size=b, sampling_rate=q, clip=clip,
                                    noise_multiplier=noise_multiplier, learning_rate=learning_rate,
                                    sampling="fixed size, without replacement" if reference else "poisson"))

    result = release(int(steps), run)
    # Each snapshot is the first t steps of these chains: a t-step run, accounted for t steps.
    result.path = {t: release(t, part, part.seconds / draws) for t, part in run.snapshots.items()}
    return result


@register("sgd-ma", switches={"reference": False}, depends_on_epsilon=False,
          domains={"steps": POSITIVE_INT, "noise_multiplier": POSITIVE, "batch_size": optional(POSITIVE_INT),
                   "clip": POSITIVE, "learning_rate": POSITIVE, "snapshots": sequence_of(POSITIVE_INT),
                   "accountant": one_of(*sorted(ACCOUNTANTS))},
          needs=(positive_delta,),
          size_bounds=("batch_size",),
          audit=white_box_audit("one full-batch step (q = 1), a row pushing at the full clip (white box)", "add-remove",
                                runs=400_000, shift=2 * 1.0 / 50, n=50, **PUSH_AT_CLIP,
                                hyper={"steps": 1, "noise_multiplier": 4.0, "batch_size": 50, "clip": 1.0,
                                       "learning_rate": 1.0}),
          description="noisy SGD, Poisson sampling, noise multiplier 4, epsilon from the RDP or PLD accountant")
def fit_sgd_ma(problem, privacy: Privacy, rng, draws: int = 1, *, steps: int = 1000,
               noise_multiplier: float = 4.0, batch_size: int | None = None, clip: float = 4.0,
               learning_rate: float = 0.05, snapshots=(), accountant: str = "rdp", reference: bool = False):
    """SGD-MA; ``reference`` (fixed by the registration) samples and accounts as the code does."""
    return _fit_sgd_ma(problem, privacy, rng, draws, steps=steps, noise_multiplier=noise_multiplier,
                       batch_size=batch_size, clip=clip, learning_rate=learning_rate, reference=reference,
                       snapshots=snapshots, accountant=accountant)


register_variant(
    "sgd-ma-reference", of="sgd-ma", switches={"reference": True}, drop=("accountant",), dp_as_implemented=False,
    # One step, all n public rows per batch (q = 1), sigma = 5: the order-32 moments accountant
    # claims epsilon = 1.02 at delta = 1e-5, while a displaced row makes the step about 1.55-DP.
    audit=displaced_row_audit(epsilon=1.0, hyper={"steps": 1, "noise_multiplier": 5.0, "batch_size": 40,
                                                  "clip": 0.5, "learning_rate": 1.0}, runs=2_000_000),
    caveat="fixed-size batches without replacement accounted as Poisson sampling at sensitivity C (a differing "
           "row displaces another: 2C), moments accountant at order 32 only (docs/deviations.md#moments-order-32, "
           "docs/privacy.md#moments-accountant): the reported epsilon is not a proven bound",
    description="SGD-MA as in the DP-AGD code")
