"""The lockstep engine of DP-AGD (:mod:`.dp_agd`): chains, rounds, batched products.

Each draw is a *chain* with its own budget, generator and stopping point; a round advances every
active chain by one gradient measurement and one step-size search, sharing the products with X
across chains (R·X for gradients, D·Xᵀ for searches). The chains of a group may have different
privacy targets (the ε of one row of a figure, :func:`run_chains`): each has its own budget
and shares; everything else (data, clipping, step grid) is common. The privacy argument and the
two variants' semantics are in :mod:`.dp_agd`; this module only executes them.
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
from .primitives import CodeBudget, FilterBudget, clipped_dphi, clipped_grad_from_scores, grad_avg
from .scores import CandidateScorer, candidate_grid

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
REFRESH = 32  # full-batch: X·w is recomputed exactly every REFRESH accepted steps (float32 X·d)


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


def run_chains(problem, privacy, rngs, sem: Semantics, *, slots=None, width=None,
               **hyper) -> list[RunTrace]:
    """Independent DP-AGD runs, one per generator, advanced together in lockstep rounds.

    ``privacy``: one :class:`~.base.Privacy` for every chain, or a sequence with one per chain
    (chains of several ε in one group: each keeps its own budget, shares and noise scales).

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
    # one configuration per distinct target: they differ only in the privacy fields
    configs = {pv: _Config(problem, pv, sem, hyper) for pv in dict.fromkeys(privacies)}
    chains = [_Chain(configs[pv], rng, slot) for pv, rng, slot in zip(privacies, rngs, slots)]
    cfg = chains[0].cfg
    (_FullBatch if cfg.full else _MiniBatch)(cfg, width).run(chains)
    return [ch.finish() for ch in chains]


class _Config:
    """Everything a run needs that does not depend on the chain: data views, privacy shares."""

    def __init__(self, problem, privacy, sem, hyper):
        self.problem, self.sem = problem, sem
        for name in ("grad_clip", "obj_clip", "gamma", "exp_dec", "batch_size", "batch_sampling",
                     "n_steps", "step_max", "step_window", "step_growth", "step_cap", "init", "selection"):
            setattr(self, name, hyper[name])
        splits = hyper["splits"]
        self.n, self.p, self.lam = problem.n, problem.p, problem.l2
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
        self.limit = np.stack([-bound, bound])  # clipping φ' to ±C_grad/‖x_i‖ clips the gradient
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
        self.phis = candidate_grid(self.alpha_max, cfg.n_steps)
        if not self.budget.pay(cfg.rho_nmax, "noisy min", checked=True):
            return self.stop()
        return True

    def noise(self) -> np.ndarray:
        """The NoisyMin noise: iid Exp(mean b) or Gumbel(0, b), drawn as report_noisy_min draws it."""
        if self.cfg.noise_kind == "gumbel":
            return self.rng.gumbel(0.0, self.cfg.scale, size=self.cfg.k)
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
        rows = draw_batch(self.rng, cfg.n, cfg.batch_size, cfg.batch_sampling, cfg.problem.n_public)
        # X[rows] into a buffer kept across the chain's batches: a fresh 38 MB batch of KDDCup99
        # rows each round cost its page faults (15 → 10 ms per batch). The rows are valid
        # indices, so mode="clip" (no buffered bounds check) never clips.
        X = cfg.problem.X
        if self.batch_buffer is None or len(self.batch_buffer) < rows.size:
            self.batch_buffer = np.empty((rows.size,) + X.shape[1:], dtype=X.dtype)
        self.Xr = np.take(X, rows, axis=0, out=self.batch_buffer[:rows.size], mode="clip")
        self.yr, self.lr = cfg.problem.y[rows], cfg.limit[:, rows]


def _select(scores, noise, added: bool) -> np.ndarray:
    """NoisyMin for a batch of chains: argmin(s − E) per row (the reference: argmin(s + E))."""
    return np.argmin(scores + noise if added else scores - noise, axis=1)


class _FullBatch:
    """Lockstep rounds on the full data: every active chain re-measures its gradient (a fresh
    clipped sum after a step, GradAvg after a failed search), then searches. The matrix products
    of a round are done for blocks of chains at once (BLAS-3): the clipped sums R·X of the chains
    that moved and the search products D·Xᵀ of all searching chains; X·w is kept per chain and
    updated along accepted steps. Chains sit at fixed rows (their slots) of the block buffers,
    so a chain's products never depend on which other chains are active.

    With float32 scores (logistic loss) the search products D·Xᵀ are float32 too (half the
    memory traffic; the scores round X·d to float32 anyway). Privacy is unaffected: row i's
    score term is still a function of (x_i, y_i) and released values alone, in [0, C_obj]
    (scores.py, "float32 scores"). X·w then follows the steps with float32-accurate X·d,
    so it is recomputed exactly every REFRESH accepted steps (drift ≲ 1e-6 relative in between).
    The gradient products R·X stay float64: their sensitivity argument is the float64 one."""

    def __init__(self, cfg, width):
        self.cfg = cfg
        problem = cfg.problem
        n, p = cfg.n, cfg.p
        self.block = _block_size(width)
        rows = -(-width // self.block) * self.block
        self.X = problem.X  # C-contiguous: R·X
        self.XT = np.ascontiguousarray(problem.X.T)  # (p, n) C-contiguous: Xᵀ·r (one chain), X·w
        self.scorer = cfg.scorer()
        self.scorer.set_rows(problem.y)
        dtype = np.float32 if self.scorer.f32 else np.float64
        self.XTs = self.XT.astype(dtype, copy=False)  # (p, n): D·Xᵀ in the scores' precision
        self.Z0, self.R = np.zeros((rows, n)), np.zeros((rows, n))
        self.Zd, self.D = np.zeros((rows, n), dtype), np.zeros((rows, p), dtype)
        self.G = np.zeros((rows, p))
        self.step_buf = np.empty(n)
        self.z_init = np.zeros(n) if cfg.init is None else self.XT.T @ np.asarray(cfg.init, dtype=float)

    def products(self, A, M, out, chains) -> None:
        """out[s] = A[s]·M for the slots s of ``chains``, by whole blocks of rows."""
        b = self.block
        for start in sorted({ch.slot // b * b for ch in chains}):
            if b == 1 and M is self.X:  # a lone gradient: Xᵀ·r as a matrix-vector product (faster)
                np.matmul(self.XT, A[start], out=out[start])
            else:
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
                self.products(D, self.XTs, Zd, searchers)
                scores = np.array([self.scorer.scores(Z0[ch.slot], Zd[ch.slot], ch.alpha_max)
                                   for ch in searchers])
                scores[:, 0] *= cfg.exp_dec
                noise = np.array([ch.noise() for ch in searchers])
                for ch, k in zip(searchers, _select(scores, noise, cfg.sem.noise_added).tolist()):
                    step = ch.searched(k, n)
                    if step:
                        self.follow(ch, step)
            active = [ch for ch in active if not ch.done]

    def follow(self, ch, step) -> None:
        """X·w ← X·w − Φ·X·d in place after an accepted step (exactly X·w every REFRESH steps)."""
        z0, zd = self.Z0[ch.slot], self.Zd[ch.slot]
        if zd.dtype != np.float64:
            if len(ch.trace.applied) % REFRESH == 0:
                np.matmul(self.XT.T, ch.w, out=z0)
            else:
                np.multiply(zd, -step, out=self.step_buf)
                z0 += self.step_buf
        elif daxpy(zd, z0, a=-step) is not z0:  # pragma: no cover
            raise RuntimeError("daxpy did not update X·w in place")


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
