"""DP-AGD's step-size scores: clipped-loss sums of all grid candidates from two mat-vecs.

The descent test of DP-AGD (Lee & Kifer 2018, Algorithm 2 line 9) scores
the candidates w_k = w − Φ_k·d, Φ_k = k·h (k = 0..m, h = α_max/m), by

    s_k = Σ_i min(ℓ_i(w_k), C_obj).

For a linear model ℓ_i(w) = φ(⟨w, x_i⟩, y_i), so the score of candidate k only needs
z_ik = ⟨w, x_i⟩ − Φ_k·⟨d, x_i⟩: two matrix-vector products X·w and X·d per search instead of
m + 1 (the caller keeps X·w up to date, so in practice one). What is left is elementwise work
on the n × (m+1) margins, which this module does without transcendental calls per element:

* **logistic** — ℓ = log(1 + e^u), u_ik = −s_i z_ik (s_i = ±1 the label sign), and clipping
  commutes with the monotone softplus: min(ℓ, C) = log(1 + e^{min(u, u_C)}), u_C = log(e^C − 1).
  Because u is affine in k, e^{u_ik} = e^{u_i0}·r_i^k with r_i = e^{β_i} — one multiplication per
  element instead of an exp — and Σ_i log(1 + ·) is taken as the log of products of
  min(64, ⌊600/C⌋) factors in [1, e^C] (no overflow): one log per chunk instead of per element.
  Rows whose u reaches u_C somewhere on the grid (checked at both ends, u being affine) or
  starts below −700 are summed directly as one small 2-D block (a few per cent of the rows), so
  the main pass needs no clipping and e^u never leaves the normal float range. Batches of at
  most 256 rows are done in one 2-D evaluation (k passes of tiny ufunc calls would cost more).
* **hinge** — min(max(0, 1 − m), C) with m_ik = s_i z_ik is piecewise linear in k. A row whose
  range over the grid stays inside [0, C], above C or below 0 contributes v_i + k·β_i, C or 0
  at every k (dot products over all such rows); a row with a kink inside the grid is linear on
  one index interval and C on another, summed with ``bincount`` and a cumulative sum. O(n), not
  O(n·m).
* **any other GLM loss** (``loss.phi``) — the (m+1) × n margins are formed by broadcasting and
  passed to ``phi`` (still two mat-vecs, generic elementwise cost).

All float64 paths are exact up to floating-point rounding (relative error ~1e-15 on BANK-sized
sums; tests compare them with the naive per-candidate evaluation, :func:`naive_candidate_scores`).
Every row's term is a function of that row alone and lies in [0, C_obj], so the scores keep the
add/remove sensitivity C_obj and monotonicity the NoisyMin calibration relies on.

**float32 scores** (``dtype=np.float32``, what DP-AGD uses; logistic loss only — the hinge pass
is O(n) and stays float64). The chunked-product pass runs on float32 copies a = −s·fl32(z0),
β = fl32(zd)·fl32(h·s): about half the memory traffic and twice the SIMD width of float64, 1.6–2×
faster per search. Privacy does not depend on how accurately the scores approximate the clipped
losses: the NoisyMin argument needs only that the score is a sum over rows of a term that
depends on that row alone (and on public or released values) and lies in [0, C_obj] — then
adding a row raises every score by an amount in [0, C_obj] (monotone, sensitivity C_obj). Here
row i's term is log t_ik with t_ik = fl(1 + e^{a_i}·(e^{β_i})^k) ≥ 1, clipped to fl32(e^C) ≤ e^C
*after* rounding whenever some row can reach the cap on the grid; when none comes within 10⁻³
of it (in u), the float32 error of e^u (< 10⁻⁵ relative, ≤ 4 ulp per exp and 21 products) cannot
reach it either. So every term is in [0, C_obj] and the privacy argument is unchanged; rows whose
u leaves [−80, 80] (e^u would not be a normal float32) are scored exactly in float64 and
clipped. Only utility moves: the sums differ from float64 by ~10⁻⁴ absolute on BANK (scores
~10⁴), against a NoisyMin noise scale of C_obj/ε_nmax ≥ 40 for ε ≤ 10; the tests check that a
whole run's selections agree with float64 ones (same noise) in ≥ 99% of searches, and that
every factor lies in [1, e^C]. The chunk products are taken over ⌊88/C⌋ factors (< FLT_MAX),
then groups of them multiplied in float64 before the log; this aggregation is rounded as any
floating-point sum is (here ~10⁻⁶ relative per chunk), in float64 as in float32.
"""

from __future__ import annotations

import math

import numpy as np

from ...losses import Hinge, Logistic

__all__ = ["CandidateScorer", "candidate_grid", "naive_candidate_scores"]

# Rows starting below e^-700 go to the direct block: e^u·r^k must not start subnormal.
_EXP_SAFE = 700.0
_SMALL = 256
_STEP_CACHE = 32  # step widths whose h·s is kept
_KINKED_DIRECT = 1024  # kinked hinge rows summed as one (k × rows) block up to this many
# float32 pass: rows whose u leaves [−_F32_RANGE, _F32_RANGE] somewhere on the grid go to the
# (float64) direct block, so e^u stays a normal float32; factors are clipped to e^C after rounding
# unless no row comes within _F32_MARGIN of the cap u_C (then rounding cannot reach it).
_F32_RANGE = 80.0
_F32_MARGIN = 1e-3
_F32_LOG_MAX = 88.0  # a product of float32 factors must stay below FLT_MAX ≈ e^88.72
_F64_LOG_MAX = 700.0  # and a product of those products below DBL_MAX ≈ e^709.78


def candidate_grid(alpha_max: float, n_steps: int) -> np.ndarray:
    """Φ = (0, h, 2h, …, m·h), h = α_max/m: the paper's m non-zero step sizes plus 0 (Lee & Kifer
    2018, §5)."""
    return np.arange(n_steps + 1) * (alpha_max / n_steps)


def naive_candidate_scores(problem, w, d, phis, clip, rows=None) -> np.ndarray:
    """Reference computation of s_k = Σ_i min(ℓ_i(w − Φ_k d), C) with one loss evaluation per
    candidate (what the DP-AGD code does); used by tests and benchmarks only."""
    cands = np.asarray(w)[None, :] - np.asarray(phis)[:, None] * np.asarray(d)[None, :]
    return np.array([np.minimum(problem.per_example_value(c, rows), clip).sum() for c in cands])


class CandidateScorer:
    """Scores of the m + 1 grid candidates for one loss, reusing buffers across searches.

    Call :meth:`set_rows` with the labels of the rows in use (once for full-batch runs, every
    iteration for mini-batches), then :meth:`scores` with z0 = X·w and zd = X·d on those rows.
    """

    def __init__(self, loss, clip: float, n_steps: int, dtype=np.float64):
        if not clip > 0:
            raise ValueError(f"the objective clip C_obj must be > 0; got {clip!r}")
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float64, np.float32):
            raise ValueError(f"dtype must be float64 or float32; got {dtype!r}")
        self.loss, self.clip, self.k = loss, float(clip), int(n_steps) + 1
        if isinstance(loss, Logistic):
            self.kind = "logistic"
        elif isinstance(loss, Hinge):
            self.kind = "hinge"
        elif hasattr(loss, "phi"):
            self.kind = "glm"
        else:
            raise TypeError(f"DP-AGD's candidate scores need a linear-model loss with phi(z, y); got {loss!r}")
        # Chunk of products: factors lie in [1, e^C], so ⌊600/C⌋ of them stay below e^600.
        self.chunk = max(1, min(64, int(600.0 // self.clip)))
        # float32: ⌊88/C⌋ factors per float32 product, then groups of those in float64
        self.chunk32 = max(1, min(64, int(_F32_LOG_MAX // self.clip)))
        self.group32 = max(1, min(16, int(_F64_LOG_MAX // (self.clip * self.chunk32))))
        self.f32 = self.dtype == np.float32 and self.kind == "logistic"
        self._ucap = math.log(math.expm1(self.clip))  # min(log(1 + e^u), C) = log(1 + e^{min(u, u_C)})
        # the float32 factor cap: the largest float32 ≤ e^C (e^C itself may round up)
        cap = np.float32(min(math.exp(min(self.clip, 88.0)), float(np.finfo(np.float32).max)))
        self._cap32 = cap if float(cap) <= math.exp(self.clip) else np.nextafter(cap, np.float32(0))
        self._capacity = 0

    # -- rows ---------------------------------------------------------------------------------
    def set_rows(self, y) -> None:
        """Labels of the rows the next scores refer to (in the loss's label form)."""
        y = np.asarray(y, dtype=float)
        self.y = y
        if self.kind == "logistic":
            self.sign = 2.0 * self.loss.target01(y) - 1.0  # ℓ = softplus(−s·z) for either label form
            self._negsign = -self.sign
            self._negsign32 = self._negsign.astype(np.float32)
        elif self.kind == "hinge":
            self.sign = y
        self._hsigns = {}  # h·s is cached per step width h
        self._reserve(y.size)

    def _reserve(self, n: int) -> None:
        """Grow the work buffers to n rows (padded to whole chunks); never shrink them."""
        block = self.chunk32 * self.group32 if self.f32 else self.chunk
        padded = -(-max(n, 1) // block) * block
        if padded <= self._capacity:
            return
        self._capacity = padded
        self._a, self._b = np.empty(padded), np.empty(padded)
        if self.f32:
            f4 = np.float32
            self._a4, self._b4 = np.empty(padded, f4), np.empty(padded, f4)  # (only n used)
            self._e4, self._r4, self._t4 = np.empty(padded, f4), np.empty(padded, f4), np.empty(padded, f4)
            self._prod4 = np.empty((self.k, padded // self.chunk32), f4)
            self._cap4 = np.full(padded, self._cap32, f4)  # an array operand: np.minimum is 5× faster
            self._prod8 = np.empty((self.k, padded // self.chunk32))
        elif self.kind == "logistic":
            self._e, self._t = np.empty(padded), np.empty(padded)
            self._prod = np.empty((self.k, padded // self.chunk))
        elif self.kind == "hinge":  # float64 whatever the dtype: the hinge pass is O(n), not O(n·m)
            self._e, self._t, self._u = np.empty(padded), np.empty(padded), np.empty(padded)
            self._mask, self._mask2 = np.empty(padded, bool), np.empty(padded, bool)
            self._mask3, self._mask4 = np.empty(padded, bool), np.empty(padded, bool)
            self._kinked = _KinkedHinge(padded, self.clip, self.k)

    def _signed_step(self, h, dtype=np.float64):
        """h·s_i for every row (rounded to ``dtype``), cached for the last few step widths h
        (chains in lockstep search with their own α_max)."""
        key = (h, dtype)
        hsign = self._hsigns.get(key)
        if hsign is None:
            if len(self._hsigns) >= _STEP_CACHE:
                self._hsigns.pop(next(iter(self._hsigns)))
            hsign = self._hsigns[key] = (h * self.sign).astype(dtype)
        return hsign

    # -- scores -------------------------------------------------------------------------------
    def scores(self, z0, zd, alpha_max: float) -> np.ndarray:
        """s_k = Σ_i min(ℓ(z0_i − Φ_k zd_i, y_i), C_obj) for Φ = candidate_grid(α_max, m).
        ``zd`` may be float32 when the scores are (it is rounded to float32 anyway)."""
        z0, zd = np.asarray(z0, dtype=float), np.asarray(zd)
        if not (self.f32 and zd.dtype == np.float32):
            zd = np.asarray(zd, dtype=float)
        if z0.shape != self.y.shape or zd.shape != self.y.shape:
            raise ValueError(f"z0 and zd must have the rows' shape {self.y.shape}; got {z0.shape}, {zd.shape}")
        h = alpha_max / (self.k - 1)
        if self.y.size == 0:
            return np.zeros(self.k)
        if self.kind == "logistic":
            return self._logistic32(z0, zd, h) if self.f32 and z0.size > _SMALL else self._logistic(z0, zd, h)
        if self.kind == "hinge":
            return self._hinge(z0, zd, h)
        phis = np.arange(self.k) * h
        z = z0[None, :] - phis[:, None] * zd[None, :]
        return np.minimum(self.loss.phi(z, self.y), self.clip).sum(axis=1)

    def _logistic(self, z0, zd, h):
        n, c, k = z0.size, self.chunk, self.k
        if n <= _SMALL:  # a few rows: one 2-D evaluation beats k passes of tiny ufunc calls
            u = -self.sign[:, None] * (z0[:, None] - (np.arange(k) * h)[None, :] * zd[:, None])
            return np.minimum(np.logaddexp(0.0, u), self.clip).sum(axis=0)
        m = -(-n // c) * c
        a, e, r, t = self._a[:n], self._e[:m], self._b[:m], self._t[:m]
        np.multiply(z0, self._negsign, out=a)  # u_i0 = −s_i z0_i; u_ik = u_i0 + k·β_i, β_i = h s_i zd_i
        beta = r[:n]
        np.multiply(zd, self._signed_step(h), out=beta)
        # Rows that reach the cap somewhere on the grid (u is affine in k: test the far end too),
        # or start below e^-700, are summed directly; the rest need neither clipping nor care.
        top = t[:n]
        np.multiply(beta, k - 1, out=top)
        top += a
        np.maximum(top, a, out=top)
        special = np.flatnonzero((top >= self._ucap) | (a < -_EXP_SAFE))
        direct = self._logistic_direct(a.take(special), beta.take(special)) if special.size else 0.0
        with np.errstate(over="ignore"):  # only special rows can overflow; they are reset below
            np.exp(a, out=e[:n])
            np.exp(beta, out=beta)  # r_i = e^{β_i}
        e[n:], r[n:] = 0.0, 1.0  # padding rows contribute log(1 + 0) = 0
        e[special], r[special] = 0.0, 1.0
        prod = self._prod[:, : m // c]
        with np.errstate(under="ignore"):  # e^{u} ↦ 0 for u < −745: an absolute error < 1e-300
            for j in range(k):
                if j:
                    e *= r
                np.add(e, 1.0, out=t)  # e < e^C − 1 here, so no clipping is needed
                np.multiply.reduce(t.reshape(c, -1), axis=0, out=prod[j])
        return np.log(prod).sum(axis=1) + direct

    def _logistic32(self, z0, zd, h, factors=None):
        """The chunked-product pass with float32 factors (module docstring, "float32 scores").

        a = −s·fl32(z0) and β = fl32(zd)·fl32(h·s) are float32; u_ik = a_i + kβ_i. If u leaves
        [−80, 80] somewhere on the grid (u is affine in k: both ends are tested), those rows go
        to the float64 direct block; for the others e^u is a normal float32. Every factor
        t_ik = fl(1 + e^{a_i}·(e^{β_i})^k) ≥ 1 is clipped to e^C after rounding when some row
        reaches u_C − 10⁻³ on the grid; otherwise the computed e^u is within a relative
        21·4 ulp < 10⁻⁵ of e^{u} < e^{u_C − 10⁻³}, so t < e^C without clipping. Either way each
        row's term log t_ik lies in [0, C]. ``factors`` (tests) receives the t's, (k, n).
        """
        n, c, g, k = z0.size, self.chunk32, self.group32, self.k
        m = -(-n // (c * g)) * (c * g)
        e, r, t = self._e4[:m], self._r4[:m], self._t4[:m]
        a, b, end = self._a4[:n], self._b4[:n], t[:n]
        np.copyto(a, z0, casting="same_kind")
        a *= self._negsign32  # u_i0 = −s_i z0_i (an exact sign flip of the rounded z0)
        np.copyto(b, zd, casting="same_kind")
        b *= self._signed_step(h, np.float32)  # β_i = h s_i zd_i
        np.multiply(b, k - 1, out=end)  # u at the far end of the grid
        end += a
        low, high = min(a.min(), end.min()), max(a.max(), end.max())
        clip = high >= self._ucap - _F32_MARGIN
        special = ()
        if low < -_F32_RANGE or high > _F32_RANGE:  # rare: rows far outside the clipped range
            outside = (np.minimum(a, end) < -_F32_RANGE) | (np.maximum(a, end) > _F32_RANGE)
            special = np.flatnonzero(outside)
        with np.errstate(over="ignore", under="ignore"):  # only special rows can leave the range
            np.exp(a, out=e[:n])
            np.exp(b, out=r[:n])  # r_i = e^{β_i}
        e[n:], r[n:] = 0.0, 1.0  # padding rows contribute log(1 + 0) = 0
        direct = 0.0
        if len(special):
            e[special], r[special] = 0.0, 1.0
            direct = self._logistic_direct(-self.sign[special] * z0[special],
                                           zd[special] * self._signed_step(h)[special])
        prod, cap = self._prod4[:, : m // c], self._cap4[:m]
        for j in range(k):
            if j:
                e *= r
            np.add(e, 1.0, out=t)
            if clip:
                np.minimum(t, cap, out=t)
            if factors is not None:
                factors[j] = t[:n]
            np.multiply.reduce(t.reshape(c, -1), axis=0, out=prod[j])
        # groups of float32 products multiplied in float64, one log per group
        wide = self._prod8[:, : m // c]
        np.copyto(wide, prod)
        grouped = np.multiply.reduce(wide.reshape(k, g, -1), axis=1)
        return np.log(grouped, out=grouped).sum(axis=1) + direct

    def _logistic_direct(self, a, beta):
        """Σ_i log(1 + min(e^{a_i + kβ_i}, e^C − 1)) for a few rows, as one (k × rows) block."""
        u = np.arange(self.k)[:, None] * beta[None, :]
        u += a[None, :]
        np.minimum(u, self._ucap, out=u)  # clipping at C, in u-space
        with np.errstate(under="ignore"):
            np.exp(u, out=u)
        return np.log1p(u).sum(axis=1)

    def _hinge(self, z0, zd, h):
        # loss_ik = clip(v_i + k·β_i, 0, C), v = 1 − s·z0, β = h·s·zd (margin m = s·z). Over the
        # grid a row ranges between v and v + (k−1)β; one inside [0, C] is linear (v + kβ at every
        # k), one above C or below 0 is constant (C or 0), the rest have a kink (summed apart).
        n, k, cap = z0.size, self.k, self.clip
        v, beta, lo, hi, lin = self._a[:n], self._b[:n], self._e[:n], self._t[:n], self._u[:n]
        linear, high, low, kinked = self._mask[:n], self._mask2[:n], self._mask3[:n], self._mask4[:n]
        np.multiply(z0, self.sign, out=v)
        np.subtract(1.0, v, out=v)
        np.multiply(zd, self._signed_step(h), out=beta)
        np.multiply(beta, k - 1, out=hi)
        hi += v  # the far end; then the row's range [lo, hi] over the grid
        np.minimum(v, hi, out=lo)
        np.maximum(v, hi, out=hi)
        np.greater_equal(lo, cap, out=high)  # C at every k
        np.less_equal(hi, 0.0, out=low)  # 0 at every k
        np.greater_equal(lo, 0.0, out=linear)
        linear &= np.less_equal(hi, cap, out=kinked)
        np.logical_or(linear, high, out=kinked)
        kinked |= low
        np.logical_not(kinked, out=kinked)
        np.copyto(lin, linear)
        grid = np.arange(k)
        total = (v @ lin) + grid * (beta @ lin) + cap * np.count_nonzero(high)
        rows = np.flatnonzero(kinked)
        if rows.size:
            part = self._kinked
            total += part.sums(part.take(v, rows, 1), part.take(beta, rows, 2))
        return total


class _KinkedHinge:
    """Σ_i clip(v_i + jβ_i, 0, C), j = 0..k−1, over hinge rows with a kink inside the grid
    (β ≠ 0), in preallocated buffers.

    Up to ``_KINKED_DIRECT`` rows are evaluated directly as one (k × rows) block. For more, row i
    is linear on the index interval [min(q0, qc), max(q0, qc)) and equal to C on [qc, k) (β > 0)
    or [0, qc) (β < 0), where q0 = ⌈−v/β⌉ and qc = ⌈(C − v)/β⌉ are the first indices on the far
    side of the levels 0 and C; sums of per-interval terms come from ``bincount`` and a
    cumulative sum. At a level the two neighbouring pieces agree, so rounding in q is harmless.
    """

    def __init__(self, size, cap, k):
        self.cap, self.k = cap, k
        self.f = [np.empty(size) for _ in range(4)]
        self.i = [np.empty(size, dtype=np.intp) for _ in range(3)]
        self.block = np.empty((k, _KINKED_DIRECT))
        self.grid = np.arange(k, dtype=float)[:, None]

    def take(self, values, rows, buf=0):
        return np.take(values, rows, out=self.f[buf][: rows.size])

    def sums(self, v, beta):
        m, k, cap = v.size, self.k, self.cap
        if m <= _KINKED_DIRECT:
            u = self.block[:, :m]
            np.multiply(self.grid, beta[None, :], out=u)
            u += v[None, :]
            np.clip(u, 0.0, cap, out=u)
            return u.sum(axis=1)
        q0, qc = self.f[0][:m], self.f[3][:m]
        np.divide(v, beta, out=q0)
        np.floor(q0, out=q0)
        np.negative(q0, out=q0)  # ⌈−v/β⌉ = −⌊v/β⌋
        np.subtract(cap, v, out=qc)
        np.divide(qc, beta, out=qc)
        np.ceil(qc, out=qc)
        np.clip(q0, 0, k, out=q0)
        np.clip(qc, 0, k, out=qc)
        i0, ic, lo = self.i[0][:m], self.i[1][:m], self.i[2][:m]
        np.copyto(i0, q0, casting="unsafe")
        np.copyto(ic, qc, casting="unsafe")
        np.minimum(i0, ic, out=lo)
        hi = np.maximum(i0, ic, out=i0)
        size = k + 1
        lin_v = np.bincount(lo, v, size) - np.bincount(hi, v, size)
        lin_b = np.bincount(lo, beta, size) - np.bincount(hi, beta, size)
        sign = np.sign(beta, out=q0)  # +1 at qc: saturated from qc on; −1: saturated before qc
        sat = np.bincount(ic, sign, size)
        sat[0] += m - np.count_nonzero(sign > 0.0)
        return np.cumsum(lin_v)[:k] + np.arange(k) * np.cumsum(lin_b)[:k] + cap * np.cumsum(sat)[:k]


def _kinked_hinge_sums(v, beta, cap, k):
    """Σ_i clip(v_i + jβ_i, 0, C) for j = 0..k−1 over rows with a kink inside the grid (β ≠ 0)."""
    return _KinkedHinge(v.size, cap, k).sums(np.asarray(v, dtype=float), np.asarray(beta, dtype=float))
