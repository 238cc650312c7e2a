"""Noisy mini-batch SGD with ``draws`` independent chains run in lockstep (SGD-Adv, SGD-MA, DP-SGD).

Every draw d runs w_d ← w_d − η·(G_d/L + λ·w_d) from w_d = 0 for T steps, with
G_d = Σ_{i∈B_{d,t}} clip_C(∇ℓ_i(w_d)) + N(0, σ²I), L the caller's normaliser (batch or expected
lot size) and the batch B_{d,t} and noise drawn from draw d's own generator (one per draw,
:func:`.base.draw_rngs`). For a GLM loss (ℓ_i = φ(⟨w, x_i⟩, y_i), :class:`dperm.losses.GLMLoss`)
one step of all draws is a handful of numpy calls instead of a dozen per draw:

* the batches of the draws form a padded (draws, m) index matrix, m the largest batch of the
  step; a padding entry reads a real row but has clip limit 0, so it adds exactly 0;
* the gathered rows X_B (draws, m, p) give all margins z = X_B·w_d in one batched product;
* ‖φ'(z_i)·x_i‖ = |φ'(z_i)|·‖x_i‖, so clipping the gradient to norm C is clipping φ'(z_i) to
  ±C/‖x_i‖ (limits computed once per fit, infinite where x_i = 0, whose gradient is 0);
* the per-draw sums are one batched product φ'_clipped (draws, 1, m) · X_B (draws, m, p);
* noise for a block of steps is drawn per draw as (steps, p) and applied as a (draws, p) slab.

For other losses (the MLP) the same batches and noise feed a per-draw loop over
``problem.clipped_grad_sum``. Either way each draw's generator is consumed in one fixed order:
per block of ``chunk`` steps, that block's batches (``sampler(rng, chunk)``), then its noise
(``rng.standard_normal((chunk, p))``). ``chunk`` depends on the sampler only, never on the
number of draws, so a draw's output does not depend on how many draws run beside it (up to
the rounding of the float32 products, which the step's padding width and the batched BLAS call
may order differently: about 10⁻⁷ relative).

**Privacy: lockstep execution changes nothing.** Draw d's output is a function of the data and of
its own generator only: its batches and noise come from that generator alone; its margins and
clipped sums involve only its own rows and its own w_d (the batched products never mix draws,
padding entries contribute exactly 0); its update is the one above. So each draw has exactly the
law of a separate run: the same per-step sampling law (Poisson at rate q, or b rows uniformly
without replacement), the same clipping (sensitivity C, or 2C where the caller accounts for
replace-one), the same Gaussian noise and number of steps, hence the same accounting. The only
coupling between draws is numerical: the padding width m is the largest batch of the step over
the draws, which depends on the other draws' data-independent sampling and may change the
summation order of a BLAS product in the last bit; it carries no information about the data. As
before, the draws are independent repetitions of the mechanism, not one composed release.

Samplers, one implementation shared by every noisy-SGD algorithm (:func:`poisson_batch` draws a
single Poisson batch for algorithms that sample step by step, e.g. DP-AGD and PrivGene):

* :class:`PoissonSampler` — each row independently with probability q: a Binomial(n, q) size,
  then a uniform subset of that size;
* :class:`FixedSizeSampler` — b distinct rows uniformly at random;
* both draw their subsets with :func:`uniform_subsets` (many steps at once, exact).

**Snapshots** (``snapshots=(t_1, ..., t_k)``, all below ``steps``): the iterates after t_j steps
are kept as well. They are the first t_j steps of the same chains, so each is exactly a t_j-step
run of the mechanism (same sampling, clipping and noise per step; accounted for t_j steps). The
random draws do not change: a block is still sampled and noised whole, and only the kernel call
is cut at a snapshot, so the ``steps`` result is identical with or without snapshots. (A
separate t_j-step run draws its last block shorter and so differs in its numbers, not its law.)
One path thus gives SGD-MA's whole T grid at the cost of its longest run.

**Smoothing** (``smooth``, DP-LSSGD): a linear map S of a ``(draws, p)`` array applied to each
step's noisy direction, w_d ← (1 − ηλ)w_d − S(η(G_d + noise_d)/L). It acts on the already
noised sum, so it is post-processing of each step's release (no privacy cost); without it the
arithmetic is exactly the unsmoothed one.

Cost per step and draw: the gather of the batch's rows from X (random rows, memory-bound) and
the sampling dominate; what lockstep removes is the per-call numpy overhead of one draw's step,
and the float32 rows of :class:`LockstepGLM` halve the gather's bytes (its docstring says why
the clipping bound still holds).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ...losses import GLMLoss
from ...losses.arrays import float32_floor
from ...privacy import calibration_faults as faults

#: target number of sampled indices per draw and block of steps (sets ``chunk`` from the width)
_CHUNK_ELEMENTS = 1 << 16
_MAX_CHUNK = 256
#: at most this many block indices (draws × chunk × width) or gathered values (draws × width × p)
#: per group of draws run together
_GROUP_ELEMENTS = 1 << 21
#: gathered rows per group of draws (bytes): reused from cache by the second product
_CACHE_BYTES = 1 << 20
# A float32 clip limit's shrink: |φ'|·‖x‖ ≤ C(1 − 2⁻²⁰), so each product rounded to float32
# (relative error ≤ 2⁻²⁴) leaves the clipped gradient's norm below C (LockstepGLM)
_CLIP_MARGIN = 1.0 - 2.0**-20


def uniform_subsets(rng: np.random.Generator, n: int, sizes: np.ndarray) -> np.ndarray:
    """One uniformly random subset of {0..n−1} of size ``sizes[t]`` for every t, as a sorted
    ``(len(sizes), max(sizes))`` int64 array padded with n after each subset's ``sizes[t]`` entries.

    Each subset starts as ``sizes[t]`` iid uniform indices; while it has repeated values, every
    repeat is replaced by a fresh uniform index. Exactness: a round maps the multiset M of a step
    to distinct(M) plus |M| − |distinct(M)| fresh iid uniforms, a rule that commutes with every
    permutation π of {0..n−1}, started from a π-invariant law; so the final set has a π-invariant
    law given its size, and permutations act transitively on the subsets of a given size: it is
    uniform. Rounds are few while sizes ≤ n/4 (a repeat recurs with probability ≤ 1/4); larger
    subsets are drawn one by one with ``rng.choice(n, size, replace=False)``.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    width = int(sizes.max(initial=0))
    if 4 * width > n:
        rows = np.full((sizes.size, width), n, dtype=np.int64)
        for t, m in enumerate(sizes):
            rows[t, :m] = np.sort(rng.choice(n, size=m, replace=False))
        return rows
    small = np.int32 if n + width < 2**31 else np.int64
    rows = rng.integers(0, n, size=(sizes.size, width), dtype=small)
    k = np.arange(width, dtype=small)
    np.copyto(rows, n + k, where=k >= sizes[:, None])  # distinct sentinels ≥ n sort last
    rows.sort(axis=1)
    todo = np.flatnonzero((rows[:, 1:] == rows[:, :-1]).any(axis=1))
    while todo.size:
        sub = rows[todo]
        repeat = sub[:, 1:] == sub[:, :-1]
        sub[:, 1:][repeat] = rng.integers(0, n, size=int(repeat.sum()), dtype=small)
        sub.sort(axis=1)
        rows[todo] = sub
        todo = todo[(sub[:, 1:] == sub[:, :-1]).any(axis=1)]
    np.minimum(rows, n, out=rows)
    return rows.astype(np.int64)


class PoissonSampler:
    """Poisson subsampling of {0..n−1} at rate q: each row independently with probability q.

    ``sampler(rng, steps)`` returns ``(rows, sizes)``: ``rows`` is ``(steps, width)`` int64 whose
    row t holds that step's batch in increasing order in its first ``sizes[t]`` entries and n
    after them. Law: the number of included rows of n independent Bernoulli(q) coins is
    Binomial(n, q) and, given that number, the set is uniform among sets of that size (every
    set of size m has probability q^m (1 − q)^(n−m)); so ``sizes`` ~ Binomial(n, q) iid and the
    rows come from :func:`uniform_subsets`.
    """

    def __init__(self, n: int, q: float):
        if not (n >= 1 and 0.0 < q <= 1.0):
            raise ValueError(f"PoissonSampler needs n >= 1 and 0 < q <= 1; got n={n!r}, q={q!r}")
        self.n, self.q = int(n), float(q)
        mean = self.n * self.q
        self.width = min(self.n, int(mean + 3.0 * math.sqrt(mean) + 1))  # typical padded width

    def __call__(self, rng: np.random.Generator, steps: int):
        n = self.n
        if self.q >= 1.0:
            return np.broadcast_to(np.arange(n, dtype=np.int64), (steps, n)).copy(), np.full(steps, n)
        sizes = rng.binomial(n, self.q, size=steps)
        return uniform_subsets(rng, n, sizes), sizes


class FixedSizeSampler:
    """b rows uniformly without replacement per step (a uniform b-subset of {0..n−1}), drawn by
    :func:`uniform_subsets`; ``sampler(rng, steps)`` returns ``(rows, sizes)`` as
    :class:`PoissonSampler` does, every size b."""

    def __init__(self, n: int, b: int):
        if not 1 <= b <= n:
            raise ValueError(f"FixedSizeSampler needs 1 <= b <= n; got n={n!r}, b={b!r}")
        self.n, self.b = int(n), int(b)
        self.width = self.b

    def __call__(self, rng: np.random.Generator, steps: int):
        sizes = np.full(steps, self.b, dtype=np.int64)
        return uniform_subsets(rng, self.n, sizes), sizes


def poisson_batch(rng: np.random.Generator, n: int, q: float) -> np.ndarray:
    """Sorted row indices of one Poisson sample (each of n rows independently with probability q)."""
    rows, sizes = PoissonSampler(n, q)(rng, 1)
    return rows[0, :sizes[0]]


def chunk_steps(sampler) -> int:
    """Steps sampled (and noised) per block for ``sampler``: depends on the sampler only."""
    return max(1, min(_MAX_CHUNK, _CHUNK_ELEMENTS // max(sampler.width, 1)))


@dataclass
class NoisySGDRun:
    """Output of :func:`run_noisy_sgd`: last iterates ``(draws, p)``, rows sampled per draw, the
    wall time, and the runs at the requested snapshots (steps -> :class:`NoisySGDRun`)."""

    weights: np.ndarray
    rows_sampled: np.ndarray
    seconds: float = 0.0
    snapshots: dict = field(default_factory=dict)

    def grad_evals(self, n: int) -> float:
        """Per-example gradients per draw, in full-gradient equivalents (mean over draws)."""
        return float(self.rows_sampled.mean()) / n


def check_snapshots(snapshots, steps: int) -> tuple[int, ...]:
    """Sorted distinct step counts in [1, steps); ValueError naming the bad value otherwise."""
    out = []
    for t in snapshots:
        if not (isinstance(t, (int, np.integer)) and 1 <= t < steps):
            raise ValueError(f"snapshots must be integers in [1, steps) with steps={steps}; got {t!r}")
        out.append(int(t))
    return tuple(sorted(set(out)))


def run_noisy_sgd(problem, rngs, steps: int, sampler, *, clip: float, noise_std: float,
                  learning_rate: float, divisor: float, chunk: int | None = None,
                  lockstep: bool | None = None, snapshots=(), smooth=None) -> NoisySGDRun:
    """Run one noisy-SGD chain per generator in ``rngs`` for ``steps`` steps (module docstring).

    ``rngs``: one generator per draw (:func:`.base.draw_rngs`); ``sampler(rng, k)`` gives k
    batches (:class:`PoissonSampler`, :class:`FixedSizeSampler`); ``noise_std`` is σ of the
    Gaussian added to each clipped sum; ``divisor`` the normaliser L; the L2 coefficient λ is
    ``problem.l2``. ``chunk`` (steps per block) defaults to :func:`chunk_steps`.
    ``lockstep=None`` batches the draws for GLM losses; ``False`` forces the per-draw loop (any
    loss). ``snapshots``: step counts below ``steps`` whose iterates are kept too (module
    docstring). ``smooth``: a linear map of ``(draws, p)`` arrays applied to each noisy
    direction (module docstring). Returns the last iterates and the rows each draw sampled.
    """
    if not clip > 0:
        raise ValueError(f"clip must be positive, got {clip!r}")
    noise_std = faults.noise_scale(noise_std)  # the audit's mutants only (privacy.calibration_faults)
    rngs = list(rngs)
    p, draws = problem.p, len(rngs)
    chunk = chunk_steps(sampler) if chunk is None else int(chunk)
    batched = isinstance(problem.loss, GLMLoss) if lockstep is None else bool(lockstep)
    if batched and not isinstance(problem.loss, GLMLoss):
        raise ValueError("lockstep=True needs a GLM loss")
    per_draw = max(chunk * sampler.width, sampler.width * problem.X.shape[1], 1)
    group = max(1, _GROUP_ELEMENTS // per_draw)
    snapshots = check_snapshots(snapshots, steps)

    def empty():
        return NoisySGDRun(weights=np.zeros((draws, p)), rows_sampled=np.zeros(draws, dtype=np.int64))

    out = empty()
    out.snapshots = {t: empty() for t in snapshots}
    kernel = LockstepGLM(problem, clip) if batched else _PerDraw(problem, clip)
    kernel.smooth = smooth
    start_time = time.perf_counter()
    for start in range(0, draws, group):  # groups bound the memory of a block; draws are independent
        sl = slice(start, min(start + group, draws))
        _run_group(kernel, out, sl, rngs[sl], steps, sampler, chunk, noise_std, learning_rate, divisor,
                   problem.l2)
    out.seconds = time.perf_counter() - start_time
    return out


def _run_group(kernel, out, sl, rngs, steps, sampler, chunk, noise_std, learning_rate, divisor, l2):
    """Advance the draws ``sl`` of ``out.weights`` (in place) block by block, filling their rows
    sampled, and their iterates, rows sampled and time at each snapshot.

    Per block of k steps: ``rows`` (k, draws, width) int64 padded with n, ``sizes`` (k, draws),
    ``noise`` (k, draws, p) already scaled by η·σ/L. A snapshot inside a block cuts the kernel
    call there; the block's random draws are made whole before, as without snapshots.
    """
    W = out.weights[sl]  # a view: the kernel updates it in place
    draws, p = W.shape
    step = learning_rate / divisor
    decay = 1.0 - learning_rate * l2
    seen = out.rows_sampled[sl]
    pending = sorted(out.snapshots)
    start_time = time.perf_counter()
    for t0 in range(0, steps, chunk):
        k = min(chunk, steps - t0)
        blocks, sizes = [], np.empty((k, draws), dtype=np.int64)
        noise = np.empty((k, draws, p))
        for d, rng in enumerate(rngs):  # this draw's batches, then its noise
            rows_d, sizes[:, d] = sampler(rng, k)
            blocks.append(rows_d)
            noise[:, d] = rng.standard_normal((k, p))
        noise *= step * noise_std
        width = int(sizes.max(initial=0))
        rows = np.full((k, draws, width), sampler.n, dtype=np.int64)
        for d, rows_d in enumerate(blocks):
            w = min(width, rows_d.shape[1])
            rows[:, d, :w] = rows_d[:, :w]
        a = 0
        while pending and pending[0] <= t0 + k:  # snapshots in this block: cut the kernel call
            b = pending.pop(0) - t0
            kernel.run(W, rows[a:b], sizes[a:b], noise[a:b], step, decay)
            seen += sizes[a:b].sum(axis=0)
            snap = out.snapshots[t0 + b]
            snap.weights[sl], snap.rows_sampled[sl] = W, seen
            snap.seconds += time.perf_counter() - start_time
            a = b
        if a < k:
            kernel.run(W, rows[a:], sizes[a:], noise[a:], step, decay)
            seen += sizes[a:].sum(axis=0)


def _clip_limits32(X32, clip) -> np.ndarray:
    """C(1 − 2⁻²⁰)/‖x̃_i‖ per float32 row x̃_i, rounded down to float32 (inf for a zero row)."""
    norms = np.sqrt(np.einsum("ij,ij->i", X32, X32, dtype=float))
    with np.errstate(divide="ignore"):
        return float32_floor(clip * _CLIP_MARGIN / norms)


class LockstepGLM:
    """All draws of a group in a few numpy calls per step (GLM losses).

    Index n is the padding row: gathering it reads row n − 1 of X (``take(mode="clip")``), but
    its clip limit is 0, so it adds exactly 0. Labels and clip limits C/‖x_i‖ are gathered from a
    compact (n + 1, 2) array. Draws go in groups whose gathered rows fit in about
    ``_CACHE_BYTES``, so the second product reads them from cache.

    **Single precision.** The gather of random rows is memory-bound (about half of SGD-MA's
    time in float64), so the rows are gathered from a float32 copy of X (``Problem.rows32``, made
    once per training fold) and the margins, φ' and the clipped sums are float32: half the bytes
    moved. The weights, the noise and the update stay float64. Privacy: row i's limit is
    C(1 − 2⁻²⁰)/‖x̃_i‖, x̃_i its float32 row, rounded down to float32, so |φ'_i| ≤ C(1 − 2⁻²⁰)/‖x̃_i‖
    and its clipped gradient, each coordinate rounded to float32 (relative error ≤ 2⁻²⁴), has
    norm ≤ C: the sensitivity the accounting assumes holds for each row's contribution as
    computed (tested). The batch sum rounds in float32, as a float64 sum rounds in float64
    (docs/privacy.md#single-precision). Utility does not move measurably: SGD-MA's Figure 2 row
    on Adult gives the same accuracy in all 500 records and losses within 2·10⁻⁹ relative.
    """

    smooth = None

    def __init__(self, problem, clip):
        n = problem.n
        self.X, self.p, self.loss = problem.rows32(), problem.X.shape[1], problem.loss
        # per row: label and clip limit C/‖x_i‖ of the float32 row, shrunk by 2⁻²⁰ and rounded
        # down to float32, so that a clipped gradient rounded to float32 keeps its norm ≤ C (class
        # docstring); inf where x_i = 0 (its gradient is 0); the padding row n has any valid label
        # and limit 0
        self.aux = np.zeros((n + 1, 2), dtype=np.float32)
        self.aux[:n, 0], self.aux[n, 0] = problem.y, problem.y[-1]
        self.aux[:n, 1] = problem.rows_cached(f"clip_limits32/{clip!r}", lambda: _clip_limits32(self.X, clip))
        self.bufs = {}

    def _buf(self, name, shape):
        size = math.prod(shape)
        buf = self.bufs.get(name)
        if buf is None or buf.size < size:
            buf = self.bufs[name] = np.empty(size, dtype=np.float32)
        return buf[:size].reshape(shape)

    def sums(self, W, rows):
        """Σ_i clip_C(∇ℓ_i(w_d)) for each draw d over the (draws, m) padded ``rows``.
        Returns a view of a buffer reused by the next call."""
        draws, m = rows.shape
        r = rows.reshape(-1)
        Xb = self.X.take(r, axis=0, out=self._buf("rows", (r.size, self.p)), mode="clip")
        Xb = Xb.reshape(draws, m, self.p)
        aux = self.aux.take(r, axis=0, out=self._buf("aux", (r.size, 2))).reshape(draws, m, 2)
        W32 = self._buf("w", W.shape)
        W32[...] = W
        z = np.matmul(Xb, W32[:, :, None], out=self._buf("z", (draws, m, 1)))[:, :, 0]
        d = self.loss.dphi_overwrite(z, aux[:, :, 0])  # φ'(z); may reuse z's buffer
        high = aux[:, :, 1]
        np.minimum(d, high, out=d)  # clip φ' to ±C/‖x_i‖: the gradient φ'·x_i to norm C
        np.negative(high, out=high)
        np.maximum(d, high, out=d)
        return np.matmul(d[:, None, :], Xb, out=self._buf("g", (draws, 1, self.p)))[:, 0, :]

    def run(self, W, rows, sizes, noise, step, decay):
        draws = W.shape[0]
        per = max(1, _CACHE_BYTES // (4 * self.p * max(1, rows.shape[2])))
        blocks = [slice(a, min(a + per, draws)) for a in range(0, draws, per)]
        widths = [sizes[:, b].max(axis=1) for b in blocks]
        G = np.empty_like(W)
        for t in range(rows.shape[0]):
            for b, width in zip(blocks, widths):  # clipped sums at the current iterates
                m = width[t]
                if m:
                    G[b] = self.sums(W[b], rows[t, b, :m])
                else:
                    G[b] = 0.0
            if decay != 1.0:
                W *= decay
            G *= step
            if self.smooth is None:
                W -= G
                W -= noise[t]
            else:
                G += noise[t]
                W -= self.smooth(G)


class _PerDraw:
    """One draw at a time through ``problem.clipped_grad_sum`` (any loss, e.g. the MLP)."""

    smooth = None

    def __init__(self, problem, clip):
        self.problem, self.clip = problem, clip

    def run(self, W, rows, sizes, noise, step, decay):
        for d, w in enumerate(W):
            for t in range(rows.shape[0]):
                m = sizes[t, d]
                g = self.problem.clipped_grad_sum(w, self.clip, rows[t, d, :m]) if m else None
                if decay != 1.0:
                    w *= decay
                if self.smooth is not None:
                    direction = noise[t, d] + step * g if g is not None else noise[t, d].copy()
                    w -= self.smooth(direction[None])[0]
                    continue
                if g is not None:
                    w -= step * g
                w -= noise[t, d]


def clipped_grad_sums(problem, W, batches, clip) -> np.ndarray:
    """Σ_{i∈batches[d]} clip_C(∇ℓ_i(W[d])) for each draw d, by the lockstep kernel (GLM losses)."""
    W = np.atleast_2d(np.asarray(W, dtype=float))
    m = max((len(b) for b in batches), default=0)
    rows = np.full((len(batches), m), problem.n, dtype=np.int64)
    for d, b in enumerate(batches):
        rows[d, :len(b)] = b
    if m == 0:
        return np.zeros_like(W)
    return LockstepGLM(problem, clip).sums(W, rows).copy()
