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
datasets on which the NoisyMin flaw shows in the released weights.

Lockstep draws (implementation; no effect on what is released). The ``draws`` independent runs
(one generator each, from :func:`~.base.draw_rngs`) advance together in rounds: in a round every
active chain takes its next primitive pair — a fresh clipped gradient sum if its last search
accepted a step (GradAvg's extra measurement of the same true sum if it did not), then a
step-size search. Each chain charges its own budget and draws from its own generator in the
order of a lone run, so it stops at its own round and its release equals a lone run's; only the
work is shared: the clipped sums of the chains that moved are one product R·X, the search
products one D·Xᵀ (BLAS-3, the data read once per round for up to ``GROUP`` chains), and X·w
is kept per chain and updated along accepted steps. A chain has a fixed row (slot) in the block
buffers, and BLAS computes each row of a block from that row alone, so a chain run alone in
its slot gives the same bits (the tests check it for both variants and losses). Mini-batch
chains (each samples its own rows) take the same rounds with per-chain products. Cost per
search and chain: 2/``draws``-ish passes over X, O(n·m) float32 elementwise work for the
logistic scores, O(n) for the hinge (:mod:`.dp_agd_scores`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg.blas import daxpy

from ..privacy import noisy_max_scale, zcdp_from_dp
from .base import FitResult, Privacy, draw_rngs
from .dp_agd_primitives import (CodeBudget, FilterBudget, clipped_dphi, clipped_grad_from_scores,
                                grad_avg)
from .dp_agd_scores import CandidateScorer, candidate_grid
from .dp_sgd import poisson_batch
from .registry import register

SAMPLINGS = ("poisson", "fixed")
GROUP = 16  # chains advanced in lockstep together
GROUP_ELEMENTS = 4_000_000  # … and at most this many (chains × rows) per buffer
BLOCK = 16  # chains per matrix product (one block per group up to 16 chains: fewest passes over X)
SCORE_DTYPE = np.float32  # precision of the logistic candidate scores (dp_agd_scores, "float32")


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


def run_once(problem, privacy: Privacy, rng, sem: Semantics, **hyper) -> RunTrace:
    """One DP-AGD run (one release) under the semantics ``sem``: a lockstep group of one chain."""
    hyper.pop("_data", None)
    return run_chains(problem, privacy, [rng], sem, **hyper)[0]


def run_chains(problem, privacy: Privacy, rngs, sem: Semantics, *, slots=None, width=None,
               **hyper) -> list[RunTrace]:
    """Independent DP-AGD runs, one per generator, advanced together in lockstep rounds.

    ``slots``/``width`` place the chains in a group of ``width`` (default: these chains, slots
    0, 1, …). A chain's result depends only on its generator and its slot, never on the other
    chains of the group: running chain j alone with ``slots=[j]`` and the same ``width`` gives
    the same bits (the tests check it). With another ``width`` it is the same run up to the
    last bits of the matrix products (BLAS rounds a block of B rows, or a lone matrix-vector
    product, in a way that may depend on B), i.e. equal in law, not bit for bit.
    """
    width = len(rngs) if width is None else width
    slots = list(range(len(rngs))) if slots is None else list(slots)
    if len(slots) != len(rngs) or len(set(slots)) != len(slots) or not all(0 <= j < width for j in slots):
        raise ValueError(f"slots must be distinct integers in [0, width={width}); got {slots!r}")
    cfg = _Config(problem, privacy, sem, hyper)
    chains = [_Chain(cfg, rng, slot) for rng, slot in zip(rngs, slots)]
    (_FullBatch if cfg.full else _MiniBatch)(cfg, width).run(chains)
    return [ch.finish() for ch in chains]


class _Config:
    """Everything a run needs that does not depend on the chain: data views, privacy shares."""

    def __init__(self, problem, privacy, sem, hyper):
        self.problem, self.sem = problem, sem
        for name in ("grad_clip", "obj_clip", "gamma", "exp_dec", "batch_size", "batch_sampling",
                     "n_steps", "step_max", "step_window", "step_growth", "step_cap", "init"):
            setattr(self, name, hyper[name])
        splits = hyper["splits"]
        self.n, self.p, self.lam = problem.n, problem.p, problem.l2
        self.full = self.batch_size is None
        self.rho_total = zcdp_from_dp(privacy.epsilon, privacy.delta)
        eps_split = privacy.epsilon / (2.0 * splits)
        self.rho_nmax = 0.5 * eps_split**2
        self.rho_ng = eps_split**2 / (4.0 * math.log(1.25 / privacy.delta))
        self.eps_nmax = math.sqrt(2.0 * self.rho_nmax)
        # P3: a fixed-size batch turns an added row into a replaced one: 2C_grad, non-monotone scores
        doubled = not self.full and self.batch_sampling == "fixed" and not sem.code_sensitivities
        self.grad_sens = self.grad_clip * (2.0 if doubled else 1.0)
        # s_0 is scaled by exp_dec: its sensitivity is exp_dec·C_obj when exp_dec > 1
        obj_sens = self.obj_clip if sem.noise_added else self.obj_clip * max(1.0, self.exp_dec)
        # NoisyMin noise scale: that of report_noisy_min (b = Δ/ε monotone, 2Δ/ε otherwise) and,
        # for the reference, of report_noisy_min_reference (b = C_obj/ε)
        self.scale = (self.obj_clip / self.eps_nmax if sem.noise_added
                      else noisy_max_scale(obj_sens, self.eps_nmax, monotone=not doubled))
        self.k = int(self.n_steps) + 1
        with np.errstate(divide="ignore"):
            bound = self.grad_clip / problem.row_norms
        self.limit = np.stack([-bound, bound])  # clipping φ' to ±C_grad/‖x_i‖ clips the gradient
        self.settings = {"rho_budget": self.rho_total, "rho_nmax": self.rho_nmax,
                         "rho_ng_initial": self.rho_ng, "grad_sensitivity": self.grad_sens,
                         "noisy_min_scale": self.scale}

    def scorer(self):
        return CandidateScorer(self.problem.loss, self.obj_clip, self.n_steps, dtype=SCORE_DTYPE)


class _Chain:
    """One run's state; it consumes its own generator in the order of a lone run."""

    def __init__(self, cfg, rng, slot):
        self.cfg, self.rng, self.slot = cfg, rng, slot
        self.budget = CodeBudget(cfg.rho_total) if cfg.sem.code_budget else FilterBudget(cfg.rho_total)
        self.w = np.zeros(cfg.p) if cfg.init is None else np.array(cfg.init, dtype=float)
        self.trace = RunTrace(w=self.w, ledger=[], rho_spent=0.0, settings=dict(cfg.settings))
        self.rho_ng, self.alpha_max, self.recent = cfg.rho_ng, float(cfg.step_max), []
        self.retry = False  # the last search chose the step 0: re-measure by GradAvg
        self.done = False

    # -- the primitives, in the order a lone run takes them ----------------------------------------
    def open_gradient(self) -> bool:
        """Start an iteration: whether the budget lets it pay for a fresh noisy gradient."""
        if not self.budget.open():
            return self.stop()
        if not self.cfg.full:
            self.draw_rows()
        # The code subtracts this charge unchecked; its next check (after NoisyMin) stops the run.
        if not self.budget.pay(self.rho_ng, "noisy gradient", checked=not self.cfg.sem.code_budget):
            return self.stop()
        return True

    def measured(self, g, rows) -> None:
        """The true clipped sum g has been computed: add its noise (first measurement)."""
        cfg = self.cfg
        self.g = g
        self.first = self.estimate = g + self.rng.normal(0.0, cfg.grad_sens / math.sqrt(2.0 * self.rho_ng),
                                                          size=cfg.p)
        self.trace.gradients += rows / cfg.n

    def remeasure(self) -> bool:
        """GradAvg after a failed search (the true g has not changed): pay and average in."""
        cfg = self.cfg
        rho_old, rho_new = self.rho_ng, (1.0 + cfg.gamma) * self.rho_ng
        if not self.budget.pay(rho_new - rho_old, "gradient averaging", checked=not cfg.sem.code_budget):
            return self.stop()
        self.estimate = grad_avg(self.first if cfg.sem.average_with_first else self.estimate, rho_old,
                                 rho_new, self.g, cfg.grad_sens, self.rng)
        self.rho_ng = rho_new
        self.trace.grad_avg_calls += 1
        return True

    def open_search(self) -> bool:
        """Set the direction and pay for its NoisyMin step-size search."""
        cfg = self.cfg
        norm = np.linalg.norm(self.estimate)
        direction = self.estimate / norm if norm > 0 else np.zeros(cfg.p)
        if cfg.lam > 0:  # the code adds the regulariser after normalising
            direction += cfg.lam * self.w
        self.direction = direction
        self.phis = candidate_grid(self.alpha_max, cfg.n_steps)
        if not self.budget.pay(cfg.rho_nmax, "noisy min", checked=True):
            return self.stop()
        return True

    def noise(self) -> np.ndarray:
        """The NoisyMin noise: iid Exp(mean b), drawn as report_noisy_min draws it."""
        return self.rng.exponential(self.cfg.scale, size=self.cfg.k)

    def searched(self, k: int, rows) -> float:
        """Apply NoisyMin's choice k; return the step taken (0 if none: GradAvg comes next)."""
        cfg, trace = self.cfg, self.trace
        trace.noisy_min_calls += 1
        trace.loss_evals += cfg.k * rows / cfg.n
        if k == 0:
            self.retry = True
            return 0.0
        self.retry = False
        step = self.phis[k - 1] if cfg.sem.accept_previous else self.phis[k]
        self.w = self.w - step * self.direction
        trace.chosen.append(k)
        trace.applied.append(step)
        if cfg.sem.double_charge:
            self.budget.pay(self.rho_ng, "noisy gradient (charged again)", checked=False)
        self.recent.append(self.phis[k])
        if len(self.recent) == cfg.step_window:
            self.alpha_max = (1.0 + cfg.step_growth) * max(self.recent)
            if cfg.step_cap is not None:
                self.alpha_max = min(self.alpha_max, cfg.step_cap)
            self.recent = []
        return step

    def stop(self) -> bool:
        self.done = True
        return False

    def finish(self) -> RunTrace:
        trace = self.trace
        trace.w, trace.ledger, trace.rho_spent = self.w, self.budget.ledger, self.budget.spent
        trace.alpha_max, trace.rho_ng = self.alpha_max, self.rho_ng
        return trace

    # -- mini-batches -----------------------------------------------------------------------------
    def draw_rows(self) -> None:
        cfg = self.cfg
        rows = draw_batch(self.rng, cfg.n, cfg.batch_size, cfg.batch_sampling)
        self.Xr, self.yr, self.lr = cfg.problem.X[rows], cfg.problem.y[rows], cfg.limit[:, rows]


def _select(scores, noise, added: bool) -> np.ndarray:
    """NoisyMin for a batch of chains: argmin(s − E) per row (the reference: argmin(s + E))."""
    return np.argmin(scores + noise if added else scores - noise, axis=1)


class _FullBatch:
    """Lockstep rounds on the full data: every active chain re-measures its gradient (a fresh
    clipped sum after a step, GradAvg after a failed search), then searches. The matrix products
    of a round are done for blocks of chains at once (BLAS-3): the clipped sums R·X of the chains
    that moved and the search products D·Xᵀ of all searching chains; X·w is kept per chain and
    updated along accepted steps. Chains sit at fixed rows (their slots) of the block buffers,
    so a chain's products never depend on which other chains are active."""

    def __init__(self, cfg, width):
        self.cfg = cfg
        problem = cfg.problem
        n, p = cfg.n, cfg.p
        self.block = _block_size(width)
        rows = -(-width // self.block) * self.block
        self.X = problem.X  # C-contiguous: R·X
        self.XT = np.ascontiguousarray(problem.X.T)  # (p, n) C-contiguous: D·Xᵀ
        self.Z0, self.Zd, self.R = np.zeros((rows, n)), np.zeros((rows, n)), np.zeros((rows, n))
        self.D, self.G = np.zeros((rows, p)), np.zeros((rows, p))
        self.scorer = cfg.scorer()
        self.scorer.set_rows(problem.y)
        self.z_init = np.zeros(n) if cfg.init is None else self.XT.T @ np.asarray(cfg.init, dtype=float)

    def products(self, A, M, out, chains) -> None:
        """out[s] = A[s]·M for the slots s of ``chains``, by whole blocks of rows."""
        b = self.block
        for start in sorted({ch.slot // b * b for ch in chains}):
            np.matmul(A[start:start + b], M, out=out[start:start + b])

    def run(self, chains) -> None:
        cfg, Z0, Zd, R, D, G = self.cfg, self.Z0, self.Zd, self.R, self.D, self.G
        loss, y, limit, n = cfg.problem.loss, cfg.problem.y, cfg.limit, cfg.n
        for ch in chains:
            Z0[ch.slot] = self.z_init
        active = list(chains)
        while active:
            movers = [ch for ch in active if not ch.retry and ch.open_gradient()]
            if movers:
                for ch in movers:
                    clipped_dphi(loss, Z0[ch.slot], y, limit, out=R[ch.slot])
                self.products(R, self.X, G, movers)
                for ch in movers:
                    ch.measured(G[ch.slot].copy(), n)
            searchers = [ch for ch in active if not ch.done and (not ch.retry or ch.remeasure())
                         and ch.open_search()]
            if searchers:
                for ch in searchers:
                    D[ch.slot] = ch.direction
                self.products(D, self.XT, Zd, searchers)
                scores = np.array([self.scorer.scores(Z0[ch.slot], Zd[ch.slot], ch.alpha_max)
                                   for ch in searchers])
                scores[:, 0] *= cfg.exp_dec
                noise = np.array([ch.noise() for ch in searchers])
                for ch, k in zip(searchers, _select(scores, noise, cfg.sem.noise_added).tolist()):
                    step = ch.searched(k, n)
                    if step:  # X·w ← X·w − Φ·X·d, in place
                        z0 = Z0[ch.slot]
                        if daxpy(Zd[ch.slot], z0, a=-step) is not z0:  # pragma: no cover
                            raise RuntimeError("daxpy did not update X·w in place")
            active = [ch for ch in active if not ch.done]


class _MiniBatch:
    """Lockstep rounds when every chain samples its own mini-batch each iteration: the rounds
    are the same as for the full batch, but each chain's products (on its own rows) are done
    one chain at a time; each chain has its own score buffers."""

    def __init__(self, cfg, width):
        self.cfg = cfg

    def run(self, chains) -> None:
        cfg = self.cfg
        loss = cfg.problem.loss
        for ch in chains:
            ch.scorer = cfg.scorer()
        active = list(chains)
        while active:
            for ch in active:
                if not ch.retry and ch.open_gradient():
                    ch.z0 = ch.Xr @ ch.w
                    ch.scorer.set_rows(ch.yr)
                    ch.measured(clipped_grad_from_scores(loss, ch.z0, ch.yr, ch.lr, ch.Xr), ch.z0.size)
            searchers = [ch for ch in active if not ch.done and (not ch.retry or ch.remeasure())
                         and ch.open_search()]
            if searchers:
                scores = np.array([ch.scorer.scores(ch.z0, ch.Xr @ ch.direction, ch.alpha_max)
                                   for ch in searchers])
                scores[:, 0] *= cfg.exp_dec
                noise = np.array([ch.noise() for ch in searchers])
                for ch, k in zip(searchers, _select(scores, noise, cfg.sem.noise_added).tolist()):
                    ch.searched(k, ch.z0.size)
            active = [ch for ch in active if not ch.done]


def _block_size(width: int) -> int:
    """Rows per matrix product: at most BLOCK, as even as possible (10 chains: two blocks of 5)."""
    return -(-width // -(-width // BLOCK))


def groups(draws: int, n: int) -> list[tuple[int, int]]:
    """(first draw, size) of the lockstep groups: at most GROUP chains, and at most
    GROUP_ELEMENTS/n so that the (chains × n) buffers stay small on large data."""
    size = max(1, min(GROUP, GROUP_ELEMENTS // max(n, 1)))
    return [(start, min(size, draws - start)) for start in range(0, draws, size)]


def draw_batch(rng, n, size, sampling):
    """Sorted row indices of one mini-batch: Poisson (each row kept with probability size/n, n
    public) or a fixed-size sample without replacement (the code's ``np.random.choice``)."""
    if sampling == "poisson":
        return poisson_batch(rng, n, size / n)
    return np.sort(rng.choice(n, size=size, replace=False))


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
    children = draw_rngs(rng, draws)
    runs = []
    for start, size in groups(draws, problem.n):
        runs += run_chains(problem, privacy, children[start:start + size], sem, **hyper)

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
