"""DP-AGD: adaptive private gradient descent (Lee & Kifer, KDD 2018, Algorithm 2).

Each iteration measures the clipped gradient sum g = Σ_i clip_{C_grad}(∇ℓ_i(w)) with Gaussian
noise of std Δ_g/√(2ρ_ng), moves along d = g̃/‖g̃‖ (+ λw, λ = ``problem.l2``, added after the
normalisation as the code does) and picks the step from the grid Φ = linspace(0, α_max, m + 1)
with NoisyMin on the clipped-loss sums s_k = Σ_i min(ℓ_i(w − Φ_k d), C_obj), s_0 scaled by
``exp_dec``. If the step 0 wins, the direction is deemed useless: ρ_ng ← (1 + γ)ρ_ng (for the
rest of the run) and the gradient is measured again with the difference and averaged in
(GradAvg, Lee & Kifer 2018, §4). The run ends when the budget cannot pay for the next
primitive; the last iterate is released. Every τ iterations α_max ← (1 + η)·max(last τ chosen Φ),
capped at ``step_cap``.

Hyper-parameters (defaults = paper §6.2 and the code's run scripts): ``grad_clip`` C_grad = 3,
``obj_clip`` C_obj = 3, ``gamma`` γ = 0.1, ``splits`` = 60, ``exp_dec`` = 1, ``batch_size`` None
(full batch; KDDCup99 used 40,000), ``batch_sampling`` "poisson" ("fixed" for the reference),
``n_steps`` m = 20, ``step_max`` initial α_max = 2, ``step_window`` τ = 10, ``step_growth``
η = 0.1, ``step_cap`` 2.0, ``init`` None (w₀ = 0), ``selection`` "noisymin" (the paper's; "gumbel":
the exponential mechanism, below). λ is the model's ``problem.l2``.

Privacy (variant ``dp-agd``). Adjacency: add/remove one row. Budget: ρ = zcdp_from_dp(ε, δ),
kept by a :class:`~dperm.privacy.ZCDPFilter` that charges every primitive *before* it runs and
stops at the first charge that would exceed ρ — the total never exceeds it. Shares (Lee & Kifer
2018, §6.2): ε_split = ε/(2·splits), ρ_nmax = ε_split²/2, ρ_ng = ε_split²/(4 ln(1.25/δ)).
Sensitivities: full batch or Poisson batch (rows kept independently with probability B/n, n
public): the clipped gradient sum moves by ≤ C_grad (Gaussian mechanism, Δ²/(2σ²)-zCDP; Bun &
Steinke 2016, Prop. 1.6) and every clipped-loss score by ≤ C_obj in the same direction
(monotone), so NoisyMin argmin_k(s_k − E_k), E_k ~ Exp(C_obj/ε_nmax), ε_nmax = √(2ρ_nmax), is
ε_nmax-DP, hence ρ_nmax-zCDP (Prop. 1.4). Fixed-size batches drawn without replacement
(``batch_sampling="fixed"``) turn an added row into a replaced row within the batch: 2C_grad, and
non-monotone scores with E_k ~ Exp(2C_obj/ε_nmax) (docs/privacy.md#minibatch-sensitivity). No
subsampling amplification is claimed. With exp_dec > 1 the sensitivity of s_0 is exp_dec·C_obj,
which the scale then uses. The shares are chosen adaptively from earlier outputs; that a fixed
total still holds is a filter theorem (Feldman & Zrnic 2021; Whitehouse et al. 2023), not the
plain composition that Lee & Kifer 2018, Theorem 5.1, cites (docs/privacy.md#adaptive-budget).
ρ-zCDP ⇒ (ρ + 2√(ρ ln(1/δ)), δ)-DP = (ε, δ)-DP (Bun & Steinke, Prop. 1.3).

Selection ``selection="gumbel"`` (beyond the paper; docs/privacy.md#bounded-range-selection). The
step is argmin_k(s_k − G_k), G_k iid Gumbel(0, b): the exponential mechanism P(k) ∝ exp(−s_k/b)
(Gumbel-max identity; report_noisy_min with ``noise="gumbel"``). It is charged the same ρ_nmax
(the paper's split is unchanged) but uses ε_sel = √(8ρ_nmax) = 2ε_split, twice the NoisyMin ε,
because it is ε_sel-*bounded-range* and ε-bounded-range is ε²/8-zCDP (Durfee & Rogers 2019;
Cesar & Rogers 2021), where an ε-DP NoisyMin is charged ε²/2. The scale, derived rather than
assumed: for neighbours D, D′ and δ_k = s_k(D′) − s_k(D), the privacy loss at output k is
ln P_D(k)/P_D′(k) = δ_k/b + ln(Z′/Z) (Z, Z′ the normalisers), so over the outputs it spans
(max_k δ_k − min_k δ_k)/b.

* Full batch or Poisson batch, add/remove: the added row puts a term in [0, C_obj] into every
  score (removal takes one out), so all δ_k lie in [0, C_obj] (or all in [−C_obj, 0]): width
  ≤ C_obj/b, and b = C_obj/ε_sel is ε_sel-bounded-range — the same b = Δ/ε formula as the
  monotone NoisyMin, at twice the ε. With a Poisson batch this holds for each coupled pair of
  batches (B, B ∪ {x}, the other rows sampled alike); the mixture over batches is ρ_nmax-zCDP
  because Rényi divergence is jointly quasi-convex (van Erven & Harremoës 2014), not because
  the mixture is bounded-range (it need not be). No amplification is claimed.
* ``exp_dec`` = e: δ_0 ∈ [0, e·C_obj], the other δ_k ∈ [0, C_obj]: width ≤ max(1, e)·C_obj, so
  b = max(1, e)·C_obj/ε_sel.
* Fixed-size batches: an added row can displace one, so each score moves by a term in
  [−C_obj, C_obj] and the δ_k need not share a sign: width ≤ 2·max(1, e)·C_obj, b =
  2·max(1, e)·C_obj/ε_sel — the usual exponential-mechanism scale ε/(2Δ). The monotone scale
  there would be only 2ε_sel-bounded-range (tests/privacy/test_bounded_range.py shows it fail).

Then ε_sel-bounded-range ⇒ ε_sel²/8 = ρ_nmax-zCDP, and the filter is unchanged. The records say
so: ``hyper`` carries ``selection`` and ``accounting`` names the mechanism and its charge;
``extra.noisy_min_scale`` is b. The reference variant has no ``selection`` (it reproduces the
published code; setting it is refused as an unknown hyper-parameter).

Where ``dp-agd`` departs from the paper or the code (docs/deviations.md, Part A):

* NoisyMin subtracts the exponential noise (the code adds it: not DP,
  docs/privacy.md#noisymin-sign; the paper's Algorithm 1 writes Laplace noise,
  docs/deviations.md#dp-agd-noisymin-noise).
* The chosen candidate w_{k*} is applied (the code applies w_{k*−1},
  docs/deviations.md#dp-agd-off-by-one); ρ_ng is charged once per measurement (the code charges it
  again after every accepted step, docs/deviations.md#dp-agd-double-charge).
* GradAvg keeps the precision-weighted running estimate S ← (ρ_old S + (ρ_ng − ρ_old) g₂)/ρ_ng,
  whose variance is Δ_g²/(2ρ_ng) after any number of failures (the code averages with the first
  measurement, the paper passes the normalised direction, docs/deviations.md#dp-agd-gradavg).
* α_max follows the code's cap at 2.0 (``step_cap``; None gives the paper's uncapped rule,
  docs/deviations.md#dp-agd-step-cap): the published figures come from the capped code, the cap
  keeps the variants comparable, and on BANK (LR, 4 draws) it was as good or better (mean objective
  0.53 vs 0.67 at ε = 0.1, equal at ε = 0.4 and 1.6). It has no privacy effect (α_max depends on
  released choices only).
* Budget: filter semantics as above (the code subtracts and stops once the remainder is negative;
  it releases the same kind of iterate, but the filter's ledger never exceeds ρ).

Variant ``dp-agd-reference`` reproduces the code (commit f3309463, ``algo/agd_rho.py``) with all
of the above switched back (:data:`REFERENCE`) — argmin(s + E), w_{k*−1}, the double charge,
GradAvg with the first measurement, the code's stopping rule and, for mini-batches, fixed batches
with the add/remove sensitivities (docs/privacy.md#minibatch-sensitivity). **It is not DP as
implemented** (docs/privacy.md#noisymin-sign: one selection leaks up to m·ε_nmax, not ε_nmax; the
end-to-end audit in the tests shows it); its ``epsilon_spent`` is the ε its accounting claims. At
small ε it reaches lower objectives than ``dp-agd``: its NoisyMin concentrates on the best step as
if the noise were m times smaller — the leak it pays.

``init`` is a public starting point (default 0, as the paper); tests use it to build neighbouring
datasets on which the NoisyMin flaw shows in the released weights.

Lockstep draws (implementation; no effect on what is released). The ``draws`` independent runs
(one generator each, from :func:`~.base.draw_rngs`) advance together in rounds: in a round every
active chain takes its next primitive pair — a fresh clipped gradient sum if its last search
accepted a step (GradAvg's extra measurement of the same true sum if it did not), then a
step-size search. Each chain charges its own budget and draws from its own generator in the
order of a lone run, so it stops at its own round and its release equals a lone run's; only the
work is shared: the clipped sums of the chains that moved are one product Xᵀ·Rᵀ, the search
products one D·Xᵀ (BLAS-3, the data read once per round for up to ``GROUP`` chains), on rows
multiplied once by their label sign so that both give margins σ_i⟨w, x_i⟩ directly, and each
chain keeps its margins along its accepted steps (:class:`.engine._FullBatch`). A chain has a
fixed row (slot) in the block buffers, and BLAS computes each row of a block from that row
alone, so a chain run alone in its slot gives the same bits (the tests check it for both
variants and losses). Mini-batch chains (each samples its own rows) take the same rounds with
per-chain products. Cost per search and chain: 2/``draws``-ish passes over X, O(n·m) float32
elementwise work for the logistic scores (three passes per candidate), O(n) for the hinge
(:mod:`.scores`).

Several ε at once (``fit_settings``, used by the protocol for the ε of one row): the chains of
every target join one lockstep group (up to ``GROUP`` chains), each with its own generator,
budget, shares and noise scales; a target's release is its lone run's, only the passes over X
are shared (60 chains of a Figure 2 row: one BLAS-3 block of 60 instead of six of 10). This
pays because DP-AGD's number of rounds hardly depends on ε (325–348 on Adult for ε from 0.05
to 1.6). Mini-batch runs fit one target at a time. The chains of a group may also differ in λ
(:meth:`~.base.AlgorithmSpec.fit_trials`, private selection's trials over λ): λ enters a run
only through its direction d + λw, so each chain keeps its own and the rest is shared.
"""

from __future__ import annotations

import math

import numpy as np

from ...privacy import zcdp_from_dp
from ...privacy.selection import RdpStatement
from ..audit_cases import canary_audit, single_selection_audit
from ..base import FitResult, Privacy, draw_rngs
from ..domains import (
    ANY,
    FRACTION,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    finite_epsilon,
    one_of,
    optional,
    positive_delta,
)
from ..registry import register, register_variant
from .engine import (  # noqa: F401
    CORRECT,
    REFERENCE,
    SAMPLINGS,
    SELECTIONS,
    RunTrace,
    Semantics,
    groups,
    run_chains,
    run_once,
)


def _check(problem, privacy, grad_clip, obj_clip, gamma, splits, exp_dec, batch_size, batch_sampling,
           n_steps, step_max, step_window, step_growth, step_cap, init, selection):
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
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {sorted(SELECTIONS)}; got selection={selection!r}")
    if batch_sampling not in SAMPLINGS:
        raise ValueError(f"batch_sampling must be one of {SAMPLINGS}; got {batch_sampling!r}")
    if batch_size is not None and not (int(batch_size) == batch_size and 1 <= batch_size <= problem.n):
        raise ValueError(f"batch_size must be None (full batch) or an integer in [1, n={problem.n}]; "
                         f"got batch_size={batch_size!r}")
    if init is not None and np.shape(init) != (problem.p,):
        raise ValueError(f"init must have shape ({problem.p},); got {np.shape(init)}")


def _fit_settings(problem, privacies, rngs, draws, *, semantics: Semantics, l2=None, **hyper) -> list[FitResult]:
    """``draws`` runs for each privacy target (an int, or one count per target), target i's from
    generator ``rngs[i]``; one :class:`FitResult` per target. ``l2``: None (λ = ``problem.l2``)
    or one λ per target (:meth:`~.base.AlgorithmSpec.fit_trials`: private selection's trials over
    λ). Full batch: the chains of all targets share lockstep groups (and so the passes over X);
    mini-batches: one target at a time (per-chain products share nothing, and each chain keeps
    its batch of rows)."""
    for privacy in privacies:
        _check(problem, privacy, **hyper)
    counts = [draws] * len(privacies) if np.ndim(draws) == 0 else [int(k) for k in draws]
    lams = [problem.l2] * len(privacies) if l2 is None else list(l2)
    if not len(rngs) == len(counts) == len(lams) == len(privacies):
        raise ValueError(f"need one generator per privacy target, and one draw count and l2 each: {len(rngs)} "
                         f"generators, {len(counts)} counts and {len(lams)} l2 for {len(privacies)} targets")
    if hyper["batch_size"] is not None:
        hyper["batch_size"] = int(hyper["batch_size"])
    hyper["n_steps"], hyper["step_window"] = int(hyper["n_steps"]), int(hyper["step_window"])
    targets = list(range(len(privacies)))
    batches = [targets] if hyper["batch_size"] is None else [[i] for i in targets]
    children = [draw_rngs(rng, k) for rng, k in zip(rngs, counts)]
    runs = {}
    for batch in batches:
        owner = [i for i in batch for _ in range(counts[i])]
        chain_rngs = [rng for i in batch for rng in children[i]]
        done = []
        for start, size in groups(len(chain_rngs), problem.n):
            part = slice(start, start + size)
            done += run_chains(problem, [privacies[i] for i in owner[part]], chain_rngs[part], semantics,
                               l2=[lams[i] for i in owner[part]], **hyper)
        for i, run in zip(owner, done):
            runs.setdefault(i, []).append(run)
    return [_result(semantics, privacy, runs[i], hyper["selection"]) for i, privacy in enumerate(privacies)]


# What ``accounting`` says about the step-size selection (docs/privacy.md#bounded-range-selection)
SELECTION_ACCOUNTING = {
    "noisymin": "selection: report-noisy-min with exponential noise, epsilon-DP => epsilon^2/2-zCDP "
                "(epsilon = sqrt(2 rho_nmax))",
    "gumbel": "selection: exponential mechanism (Gumbel noise), epsilon-bounded range => epsilon^2/8-zCDP "
              "(Cesar & Rogers 2021; epsilon = sqrt(8 rho_nmax))",
}


def _result(sem: Semantics, privacy, runs, selection: str = "noisymin") -> FitResult:
    def per_draw(attr, dtype=float):
        return np.array([getattr(run, attr) for run in runs], dtype=dtype)

    return FitResult(
        weights=np.array([run.w for run in runs]), epsilon_spent=privacy.epsilon,
        delta_spent=privacy.delta, adjacency="add-remove", grad_evals=per_draw("gradients"),
        iterations=np.array([len(run.applied) for run in runs]),
        accounting=(f"zCDP filter over adaptive shares; {SELECTION_ACCOUNTING[selection]}; rho-zCDP to "
                    "(epsilon, delta) by Bun & Steinke, Prop. 1.3" if sem == CORRECT
                    else "zCDP budget subtracted as the DP-AGD code does; Bun & Steinke, Prop. 1.3"),
        notes=([] if sem == CORRECT
               else ["reference code semantics: not DP as implemented (docs/privacy.md#noisymin-sign)"]),
        extra={"noisy_min_calls": per_draw("noisy_min_calls", int),
               "grad_avg_calls": per_draw("grad_avg_calls", int), "rho_spent": per_draw("rho_spent"),
               "loss_evals": per_draw("loss_evals"), "alpha_max_final": per_draw("alpha_max"),
               "rho_ng_final": per_draw("rho_ng"), **runs[0].settings},
    )


def selection_trial(problem, epsilon: float, delta: float, hyper: dict):
    """One ``dp-agd`` fit as a trial of private selection (docs/privacy.md#private-selection): it
    runs at (ε, δ) = (``epsilon``, the cell's ``delta``), a parametrisation of its budget
    ρ = zcdp_from_dp(ε, δ), which its filter never exceeds: ρ-zCDP, i.e. (α, αρ)-RDP at every α
    (module docstring), whatever the other hyper-parameters."""
    privacy = Privacy(epsilon, delta)
    _check(problem, privacy, **{k: hyper[k] for k in _CHECKED})
    return privacy, RdpStatement(rho=zcdp_from_dp(epsilon, delta), adjacency="add-remove")


_CHECKED = ("grad_clip", "obj_clip", "gamma", "splits", "exp_dec", "batch_size", "batch_sampling", "n_steps",
            "step_max", "step_window", "step_growth", "step_cap", "init", "selection")
_DOC = "DP-AGD (Lee & Kifer 2018): noisy normalised gradient, NoisyMin step size, adaptive ρ_ng"


def _audit_cases():
    """The canary and the one-selection case (audit_cases), each with the paper's NoisyMin and with
    the Gumbel selection (its mutant controls: dperm.audit, "Gumbel selection")."""
    gumbel = {"selection": "gumbel"}
    return (canary_audit("add-remove", epsilon=1.0, delta=1e-5, runs=2000, hyper={"splits": 10})()
            + single_selection_audit(1.97 - 2.0)()
            + canary_audit("add-remove", epsilon=1.0, delta=1e-5, runs=2000, hyper={"splits": 10, **gumbel},
                           name="canary on an unused coordinate, Gumbel selection")()
            + single_selection_audit(1.97 - 2.0, hyper=gumbel, name="one Gumbel selection decides the release")())


_LIMIT = ("DP-AGD's claim buys rho = zcdp_from_dp(epsilon, delta) (0.021 at epsilon = 1, delta = 1e-5), spent over "
          "about 2 x splits primitives: one NoisyMin runs at epsilon/(2 splits) (0.17 in the one-selection case) and "
          "the release shows the noisy gradients only through a normalised direction and a chosen step, so at half the "
          "noise (or on replace-one neighbours) every case's privacy loss stays far below the claim and no number of "
          "runs can catch it; a twofold error in its selection is caught on the mechanism controls (noisy max, the "
          "Gumbel selection) instead")


@register("dp-agd", switches={"semantics": CORRECT}, settings=_fit_settings, l2_per_target=True, audit=_audit_cases,
          rdp=selection_trial,
          domains={"grad_clip": POSITIVE, "obj_clip": POSITIVE, "gamma": FRACTION, "splits": POSITIVE,
                   "exp_dec": POSITIVE, "batch_size": optional(POSITIVE_INT), "batch_sampling": one_of(*SAMPLINGS),
                   "n_steps": POSITIVE_INT, "step_max": POSITIVE, "step_window": POSITIVE_INT,
                   "step_growth": NON_NEGATIVE, "step_cap": POSITIVE, "init": ANY,
                   "selection": one_of(*sorted(SELECTIONS))},
          needs=(finite_epsilon, positive_delta),
          size_bounds=("batch_size",),
          audit_limits={"half noise": _LIMIT, "sensitivity halved": _LIMIT, "wrong adjacency": _LIMIT},
          description=_DOC + "; corrected (zCDP filter, add/remove)")
def fit_dp_agd(problem, privacy: Privacy, rng, draws: int = 1, *, grad_clip: float = 3.0,
               obj_clip: float = 3.0, gamma: float = 0.1, splits: float = 60, exp_dec: float = 1.0,
               batch_size: int | None = None, batch_sampling: str = "poisson", n_steps: int = 20,
               step_max: float = 2.0, step_window: int = 10, step_growth: float = 0.1,
               step_cap: float | None = 2.0, init=None, selection: str = "noisymin",
               semantics: Semantics = CORRECT) -> FitResult:
    """DP-AGD at one privacy target: :func:`_fit_settings` with every keyword as given. See the
    module docstring for the guarantee and every departure (``semantics`` is fixed by the
    registration: :data:`CORRECT` here, :data:`REFERENCE` for ``dp-agd-reference``)."""
    keywords = {k: v for k, v in locals().items() if k not in ("problem", "privacy", "rng", "draws")}
    return _fit_settings(problem, [privacy], [rng], draws, **keywords)[0]


register_variant("dp-agd-reference", of="dp-agd", switches={"semantics": REFERENCE}, drop=("selection",),
                 audit=single_selection_audit(1.97 - 1.9),
                 defaults={"batch_sampling": "fixed"}, dp_as_implemented=False,
                 caveat="not DP as implemented: NoisyMin noise sign flipped (docs/privacy.md#noisymin-sign)",
                 description=_DOC + "; reference-code semantics (docs/deviations.md#dp-agd-off-by-one, "
                 "docs/deviations.md#dp-agd-double-charge, docs/deviations.md#dp-agd-gradavg, "
                 "docs/privacy.md#noisymin-sign)")
