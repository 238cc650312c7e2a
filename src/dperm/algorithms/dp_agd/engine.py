"""The lockstep engine of DP-AGD (:mod:`.dp_agd`): chains, rounds, batched products.

Each draw is a *chain* with its own budget, generator and stopping point; a round advances every
active chain by one gradient measurement and one step-size search, sharing the products with X
across chains (Xᵀ·Rᵀ for gradients, D·Xᵀ for searches, on label-signed rows: margins). The
chains of a group may have different privacy targets (the ε of one row of a figure,
:func:`run_chains`): each has its own budget and shares; everything else (data, clipping, step
grid) is common. The privacy argument and the two variants' semantics are in :mod:`.dp_agd`;
this module only executes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg.blas import daxpy

from ...privacy import bounded_range_epsilon_for_zcdp, noisy_max_scale, pure_dp_epsilon_for_zcdp, zcdp_from_dp
from ...privacy import calibration_faults as faults
from ..base import Privacy
from ..dp_sgd.engine import poisson_batch
from .primitives import CodeBudget, FilterBudget, float32_floor, grad_avg, logistic_weights32, margin_weights
from .scores import CandidateScorer, row_signs

SAMPLINGS = ("poisson", "fixed")
# The step-size selection (dp_agd docstring, docs/privacy.md#bounded-range-selection): the paper's
# NoisyMin (exponential noise, ε-DP, charged ε²/2) or the exponential mechanism (Gumbel noise,
# ε-bounded range, charged ε²/8). Both are charged the paper's ρ_nmax; what ε it buys differs.
SELECTIONS = {"noisymin": ("exponential", pure_dp_epsilon_for_zcdp),
              "gumbel": ("gumbel", bounded_range_epsilon_for_zcdp)}
GROUP = 64  # chains advanced in lockstep together
GROUP_ELEMENTS = 4_000_000  # … and at most this many (chains × rows) per buffer
BLOCK = 64  # chains per matrix product (one block per group up to 64 chains: fewest passes over X)
SCORE_DTYPE = np.float32  # precision of the logistic candidate scores (scores.py, "float32")
REFRESH = 32  # full-batch: the margins are recomputed exactly every REFRESH rounds (float32 X·d)


@dataclass(frozen=True)
class Semantics:
    """The switches that separate the reference code from the corrected algorithm."""

    # NoisyMin as argmin(s + E) instead of argmin(s − E) (docs/privacy.md#noisymin-sign)
    noise_added: bool
    # apply w_{k*−1} instead of w_{k*} (docs/deviations.md#dp-agd-off-by-one)
    accept_previous: bool
    # charge ρ_ng again after every accepted step (docs/deviations.md#dp-agd-double-charge)
    double_charge: bool
    # GradAvg with the first measurement, not the running estimate (docs/deviations.md#dp-agd-gradavg)
    average_with_first: bool
    code_budget: bool  # subtract-then-check accounting instead of the never-overspending filter
    # add/remove sensitivities even for fixed-size batches (docs/privacy.md#minibatch-sensitivity)
    code_sensitivities: bool


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


def run_chains(problem, privacy, rngs, sem: Semantics, *, slots=None, width=None, l2=None,
               **hyper) -> list[RunTrace]:
    """Independent DP-AGD runs, one per generator, advanced together in lockstep rounds.

    ``privacy``: one :class:`~.base.Privacy` for every chain, or a sequence with one per chain
    (chains of several ε in one group: each keeps its own budget, shares and noise scales).

    ``l2``: None (every chain's λ is ``problem.l2``), one λ for every chain, or one per chain
    (the trials of private selection over λ in one group: λ enters a run only through its
    direction d + λw, so nothing else of the group depends on it).

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
    privacies = [privacy] * len(rngs) if isinstance(privacy, Privacy) else list(privacy)
    if len(privacies) != len(rngs):
        raise ValueError(f"need one privacy target per chain: {len(privacies)} for {len(rngs)} chains")
    lams = ([float(problem.l2)] * len(rngs) if l2 is None else
            [float(l2)] * len(rngs) if np.ndim(l2) == 0 else [float(lam) for lam in l2])
    if len(lams) != len(rngs):
        raise ValueError(f"need one l2 per chain: {len(lams)} for {len(rngs)} chains")
    if any(not (math.isfinite(lam) and lam >= 0) for lam in lams):
        raise ValueError(f"l2 must be finite and >= 0; got {lams!r}")
    # one configuration per distinct (target, λ): they differ only in the privacy fields and λ
    keys = list(zip(privacies, lams))
    configs = {key: _Config(problem, key[0], sem, hyper, lam=key[1]) for key in dict.fromkeys(keys)}
    chains = [_Chain(configs[key], rng, slot) for key, rng, slot in zip(keys, rngs, slots)]
    cfg = chains[0].cfg
    (_FullBatch if cfg.full else _MiniBatch)(cfg, width).run(chains)
    return [ch.finish() for ch in chains]


class _Config:
    """Everything a run needs that does not depend on the chain: data views, privacy shares."""

    def __init__(self, problem, privacy, sem, hyper, lam=None):
        self.problem, self.sem = problem, sem
        for name in ("grad_clip", "obj_clip", "gamma", "exp_dec", "batch_size", "batch_sampling",
                     "n_steps", "step_max", "step_window", "step_growth", "step_cap", "init", "selection"):
            setattr(self, name, hyper[name])
        splits = hyper["splits"]
        self.n, self.p, self.lam = problem.n, problem.p, problem.l2 if lam is None else lam
        self.full = self.batch_size is None
        self.rho_total = zcdp_from_dp(privacy.epsilon, privacy.delta)
        eps_split = privacy.epsilon / (2.0 * splits)
        self.rho_nmax = 0.5 * eps_split**2
        self.rho_ng = eps_split**2 / (4.0 * math.log(1.25 / privacy.delta))
        # the selection's ε for its charge ρ_nmax: √(2ρ) (ε-DP NoisyMin), √(8ρ) (ε-bounded range)
        self.noise_kind, epsilon_for = SELECTIONS[self.selection]
        self.eps_nmax = epsilon_for(self.rho_nmax)
        # A fixed-size batch turns an added row into a replaced one: 2C_grad, non-monotone scores
        # (docs/privacy.md#minibatch-sensitivity)
        doubled = not self.full and self.batch_sampling == "fixed" and not sem.code_sensitivities
        self.grad_sens = self.grad_clip * (2.0 if doubled else 1.0)
        # s_0 is scaled by exp_dec: its sensitivity is exp_dec·C_obj when exp_dec > 1
        obj_sens = self.obj_clip if sem.noise_added else self.obj_clip * max(1.0, self.exp_dec)
        # NoisyMin noise scale: that of report_noisy_min (b = Δ/ε monotone, 2Δ/ε otherwise, for
        # exponential and Gumbel noise alike) and, for the reference, of report_noisy_min_reference
        # (b = C_obj/ε)
        self.scale = (self.obj_clip / self.eps_nmax if sem.noise_added
                      else noisy_max_scale(obj_sens, self.eps_nmax, monotone=not doubled))
        self.k = int(self.n_steps) + 1
        with np.errstate(divide="ignore"):
            bound = self.grad_clip / problem.row_norms
        # clipping φ' to ±C_grad/‖x_i‖ clips the gradient (primitives.margin_weights)
        self.bound = (bound, np.minimum(bound, 1.0))
        # the audit's mutants only (privacy.calibration_faults): both noises are drawn by hand below
        self.grad_sens = faults.noise_scale(faults.sensitivity(self.grad_sens))
        self.scale = faults.noise_scale(self.scale)
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
        self.batch_buffer = None  # mini-batch rows of X (draw_rows)

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
        self.h = self.alpha_max / cfg.n_steps  # the grid Φ_k = k·h (scores.candidate_grid)
        if not self.budget.pay(cfg.rho_nmax, "noisy min", checked=True):
            return self.stop()
        return True

    def noise(self) -> np.ndarray:
        """The NoisyMin noise: iid Exp(mean b) or Gumbel(0, b), drawn as report_noisy_min draws it."""
        if self.cfg.noise_kind == "gumbel":
            return self.rng.gumbel(0.0, self.cfg.scale, size=self.cfg.k)
        return self.rng.exponential(self.cfg.scale, size=self.cfg.k)

    def searched(self, k: int, rows) -> int:
        """Apply NoisyMin's choice k; return the grid index j of the step taken, Φ_j = j·h (0 if
        none: GradAvg comes next after k = 0)."""
        cfg, trace = self.cfg, self.trace
        trace.noisy_min_calls += 1
        trace.loss_evals += cfg.k * rows / cfg.n
        if k == 0:
            self.retry = True
            return 0
        self.retry = False
        j = k - 1 if cfg.sem.accept_previous else k
        step = j * self.h  # = candidate_grid(α_max, m)[j], the same floating-point product
        self.w = self.w - step * self.direction
        trace.chosen.append(k)
        trace.applied.append(step)
        if cfg.sem.double_charge:
            self.budget.pay(self.rho_ng, "noisy gradient (charged again)", checked=False)
        self.recent.append(k * self.h)
        if len(self.recent) == cfg.step_window:
            self.alpha_max = (1.0 + cfg.step_growth) * max(self.recent)
            if cfg.step_cap is not None:
                self.alpha_max = min(self.alpha_max, cfg.step_cap)
            self.recent = []
        return j

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
        rows = self.rows = draw_batch(self.rng, cfg.n, cfg.batch_size, cfg.batch_sampling, cfg.problem.n_public)
        # X[rows] into a buffer kept across the chain's batches: a fresh 38 MB batch of KDDCup99
        # rows each round cost its page faults (15 → 10 ms per batch). The rows are valid
        # indices, so mode="clip" (no buffered bounds check) never clips.
        X = cfg.problem.X
        if self.batch_buffer is None or len(self.batch_buffer) < rows.size:
            self.batch_buffer = np.empty((rows.size,) + X.shape[1:], dtype=X.dtype)
        self.Xr = np.take(X, rows, axis=0, out=self.batch_buffer[:rows.size], mode="clip")
        self.yr, self.br = cfg.problem.y[rows], (cfg.bound[0][rows], cfg.bound[1][rows])


def _select(scores, noise, added: bool) -> np.ndarray:
    """NoisyMin: argmin(s − E) over the last axis, for one chain or a batch of chains (the
    reference: argmin(s + E))."""
    return np.argmin(scores + noise if added else scores - noise, axis=-1)


class _FullBatch:
    """Lockstep rounds on the full data: every active chain re-measures its gradient (a fresh
    clipped sum after a step, GradAvg after a failed search), then searches. The matrix products
    of a round are done for blocks of chains at once (BLAS-3): the clipped sums of the chains
    that moved and the search products of all searching chains. Chains sit at fixed rows (their
    slots) of the block buffers, so a chain's products never depend on which other chains are
    active.

    The rows are multiplied by their sign σ_i once (:func:`~.scores.row_signs`), so that every
    product gives *margins* m = σ·Xw and slopes β = σ·X(h·d) directly (the loss of a binary
    model depends on a row only through its margin): the gradient weights are one clip of a
    non-negative ψ(m) (:func:`~.primitives.margin_weights`) and the scores need no per-search
    sign work. Each chain keeps its margins along its accepted steps (m ← m − j·β for the step
    Φ_j = j·h) and does its search, selection and margin update while its rows of the buffers
    are in cache.

    With float32 scores (logistic loss) the search products are float32 too (half the memory
    traffic; the scores round them to float32 anyway) and the margins are kept in float32, as
    u = −m, the scores' own variable. Privacy is unaffected: row i's score term is still a
    function of (x_i, y_i) and released values alone, in [0, C_obj] (scores.py, "float32
    scores"), and its gradient weight ω_i = min(1/(1 + e^{m_i}), C/‖x_i‖), computed in float32
    (:func:`~.primitives.logistic_weights32`), is still in [0, C/‖x_i‖] with the bound rounded
    down, so the clipped sum Σ ω_i σ_i x_i, a float64 product, keeps its sensitivity C_grad.
    Only utility could move, and does not measurably: a weight is within a few float32 ulps
    (~1e-7 relative) of its float64 value, against Gaussian noise of standard deviation
    C_grad/√(2ρ_ng) (≥ 10³ at the default splits) on a sum of at most n·C_grad/‖x‖. The margins
    follow the steps with float32-accurate slopes, so every REFRESH rounds they are recomputed
    exactly (a float64 product, rounded once), for every chain of a block at once (drift ≲ 1e-6
    relative in between). Hinge and float64 scores keep float64 margins."""

    def __init__(self, cfg, width):
        self.cfg = cfg
        problem = cfg.problem
        n, p = cfg.n, cfg.p
        self.block = _block_size(width)
        rows = -(-width // self.block) * self.block
        self.scorer = cfg.scorer()
        self.scorer.set_rows(problem.y)
        self.kind = self.scorer.kind
        # σ_i·x_i as the columns of a (p, n) C-contiguous array: Xᵀ·r for one chain, the blocks'
        # products through its transpose
        self.XT = np.ascontiguousarray((problem.X * self.scorer.sign[:, None]).T)
        dtype = np.float32 if self.scorer.f32 else np.float64
        self.XTs = self.XT.astype(dtype, copy=False)  # (p, n): search products in the scores' precision
        # the margins, in the scores' precision: float64 m, or float32 u = −m (logistic)
        self.f32 = self.scorer.f32
        self.M = None if self.f32 else np.zeros((rows, n))
        self.U = np.zeros((rows, n), dtype) if self.f32 else None
        self.R = np.zeros((rows, n))
        self.B, self.D = np.zeros((rows, n), dtype), np.zeros((rows, p), dtype)
        self.GT, self.W = np.zeros((p, rows)), np.zeros((rows, p))
        self.step_buf = np.empty(n, dtype)
        self.work32 = np.empty(n, np.float32) if self.f32 else None
        # ω ≤ min(C/‖x_i‖ rounded down to float32, 1): the float32 weights' clip keeps ‖ω_i x_i‖ ≤ C
        self.bound32 = float32_floor(np.minimum(cfg.bound[0], 1.0)) if self.f32 else None
        self.m_init = np.zeros(n) if cfg.init is None else self.XT.T @ np.asarray(cfg.init, dtype=float)

    def products(self, A, M, out, chains) -> None:
        """out[s] = A[s]·M for the slots s of ``chains``, by whole blocks of rows."""
        b = self.block
        for start in sorted({ch.slot // b * b for ch in chains}):
            np.matmul(A[start:start + b], M, out=out[start:start + b])

    def gradients(self, chains) -> None:
        """G[:, s] = Xᵀ·R[s] (σ-signed rows) for the slots s of ``chains``, by whole blocks: as
        Xᵀ·R_blockᵀ, (p, b) = (p, n)·(n, b), which OpenBLAS does 2-3× faster here than the same
        product as R_block·X, (b, n)·(n, p)."""
        b = self.block
        for start in sorted({ch.slot // b * b for ch in chains}):
            if b == 1:  # a lone gradient: a matrix-vector product
                np.matmul(self.XT, self.R[start], out=self.GT[:, start])
            else:
                np.matmul(self.XT, self.R[start:start + b].T, out=self.GT[:, start:start + b])

    def run(self, chains) -> None:
        cfg, M, U, B, R, D, GT = self.cfg, self.M, self.U, self.B, self.R, self.D, self.GT
        loss, y, bound, n, exp_dec = cfg.problem.loss, cfg.problem.y, cfg.bound, cfg.n, cfg.exp_dec
        scores_of, added = self.scorer.margin_scores, cfg.sem.noise_added
        for ch in chains:
            self.reset(ch)
        active, rounds = list(chains), 0
        while active:
            movers = [ch for ch in active if not ch.retry and ch.open_gradient()]
            if movers:
                with np.errstate(over="ignore"):  # e^{m} = inf: the weight's limit 0
                    for ch in movers:
                        if U is None:
                            margin_weights(self.kind, loss, M[ch.slot], y, bound, R[ch.slot])
                        else:
                            logistic_weights32(U[ch.slot], self.bound32, self.work32, R[ch.slot])
                self.gradients(movers)
                for ch in movers:
                    ch.measured(np.negative(GT[:, ch.slot]), n)  # Σ clip(∇ℓ_i) = −Σ ω_i σ_i x_i
            searchers = [ch for ch in active if not ch.done and (not ch.retry or ch.remeasure())
                         and ch.open_search()]
            if searchers:
                for ch in searchers:
                    np.multiply(ch.direction, ch.h, out=D[ch.slot], casting="same_kind")
                self.products(D, self.XTs, B, searchers)
                for ch in searchers:  # search, select and follow while the chain's rows are hot
                    s = ch.slot
                    scores = scores_of(None, B[s], U[s]) if U is not None else scores_of(M[s], B[s])
                    scores[0] *= exp_dec
                    k = int(_select(scores, ch.noise(), added))
                    j = ch.searched(k, n)
                    if j:
                        self.follow(ch, j)
            rounds += 1
            active = [ch for ch in active if not ch.done]
            if rounds % REFRESH == 0 and active:
                self.refresh(chains, active)

    def reset(self, ch) -> None:
        if self.U is None:
            self.M[ch.slot] = self.m_init
        else:
            np.negative(self.m_init, out=self.U[ch.slot], casting="same_kind")

    def follow(self, ch, j) -> None:
        """Margins after the step Φ_j = j·h along d: m ← m − j·β (u ← u + j·β), in place."""
        beta = self.B[ch.slot]
        if self.U is None:
            m = self.M[ch.slot]
            if daxpy(beta, m, a=-float(j)) is not m:  # pragma: no cover
                raise RuntimeError("daxpy did not update the margins in place")
            return
        self.U[ch.slot] += np.multiply(beta, np.float32(j), out=self.step_buf)

    def refresh(self, chains, active) -> None:
        """The margins σ·Xw recomputed exactly for the blocks of the ``active`` chains (one float64
        product per block, every chain of the block at once); u = −m rounded to float32."""
        b = self.block
        for ch in chains:
            self.W[ch.slot] = ch.w
        for start in sorted({ch.slot // b * b for ch in active}):
            rows = slice(start, start + b)
            if self.U is None:
                np.matmul(self.W[rows], self.XT, out=self.M[rows])
            else:  # R is free between rounds: the exact margins pass through it
                np.matmul(self.W[rows], self.XT, out=self.R[rows])
                np.negative(self.R[rows], out=self.U[rows], casting="same_kind")


class _MiniBatch:
    """Lockstep rounds when every chain samples its own mini-batch each iteration: the rounds
    are the same as for the full batch, but each chain's products (on its own rows) are done
    one chain at a time; each chain has its own score buffers."""

    def __init__(self, cfg, width):
        self.cfg = cfg

    def run(self, chains) -> None:
        cfg = self.cfg
        loss, sign = cfg.problem.loss, row_signs(cfg.problem.loss, cfg.problem.y)
        for ch in chains:
            ch.scorer = cfg.scorer()
        active = list(chains)
        while active:
            for ch in active:
                if not ch.retry and ch.open_gradient():
                    ch.sr = sign[ch.rows]
                    ch.m0 = ch.sr * (ch.Xr @ ch.w)
                    ch.scorer.set_rows(ch.yr)
                    with np.errstate(over="ignore"):
                        weights = margin_weights(ch.scorer.kind, loss, ch.m0, ch.yr, ch.br, np.empty(ch.m0.size))
                    weights *= ch.sr
                    ch.measured(-(weights @ ch.Xr), ch.m0.size)
            searchers = [ch for ch in active if not ch.done and (not ch.retry or ch.remeasure())
                         and ch.open_search()]
            for ch in searchers:
                scores = ch.scorer.margin_scores(ch.m0, ch.sr * (ch.Xr @ (ch.h * ch.direction)))
                scores[0] *= cfg.exp_dec
                ch.searched(int(_select(scores, ch.noise(), cfg.sem.noise_added)), ch.m0.size)
            active = [ch for ch in active if not ch.done]


def _block_size(width: int) -> int:
    """Rows per matrix product: at most BLOCK, as even as possible (10 chains: one block of 10;
    100: two of 50)."""
    return -(-width // -(-width // BLOCK))


def groups(draws: int, n: int) -> list[tuple[int, int]]:
    """(first chain, size) of the lockstep groups of ``draws`` chains: at most GROUP chains, and
    at most GROUP_ELEMENTS/n so that the (chains × n) buffers stay small on large data; as few
    groups as that allows, as even as possible (70 chains: two groups of 35)."""
    most = max(1, min(GROUP, GROUP_ELEMENTS // max(n, 1)))
    size = -(-draws // -(-draws // most)) if draws else most
    return [(start, min(size, draws - start)) for start in range(0, draws, size)]


def draw_batch(rng, n, size, sampling, n_public=None):
    """Sorted row indices of one mini-batch of the n rows: Poisson (each row kept with
    probability size/n_public: docs/privacy.md#public-n) or a fixed-size sample without
    replacement (the code's ``np.random.choice``)."""
    if sampling == "poisson":
        return poisson_batch(rng, n, size / (n if n_public is None else n_public))
    return np.sort(rng.choice(n, size=size, replace=False))
