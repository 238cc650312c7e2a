"""DP-AGD's step-size scores: clipped-loss sums of all grid candidates from two mat-vecs.

The descent test of DP-AGD (Lee & Kifer 2018, Algorithm 2 line 9) scores
the candidates w_k = w − Φ_k·d, Φ_k = k·h (k = 0..m, h = α_max/m), by

    s_k = Σ_i min(ℓ_i(w_k), C_obj).

For a linear model ℓ_i(w) = φ(⟨w, x_i⟩, y_i), so the score of candidate k only needs the
*margins* m_ik = σ_i⟨w_k, x_i⟩ = m_i − k·β_i, with m_i = σ_i⟨w, x_i⟩ and β_i = σ_i⟨h·d, x_i⟩:
two matrix-vector products per search instead of m + 1 (the engine keeps the margins up to date
along the steps and multiplies by rows already signed, so in practice one). The row sign σ_i is
the label sign ±1 for the binary losses (logistic: 2t − 1; hinge: y), 1 for any other loss
(:func:`row_signs`); in margins both binary losses depend on the row only through m_ik. What is
left is elementwise work on the n × (m+1) margins, done without transcendental calls per
element:

* **logistic** — ℓ = log(1 + e^u), u_ik = −m_ik = a_i + k·β_i (a = −m), and clipping commutes
  with the monotone softplus: min(ℓ, C) = log(1 + e^{min(u, u_C)}), u_C = log(e^C − 1). Because
  u is affine in k, e^{u_ik} = e^{a_i}·r_i^k with r_i = e^{β_i} — one multiplication per element
  instead of an exp — and Σ_i log(1 + ·) is taken as the log of products of chunks of factors in
  [1, e^C] (no overflow): one log per chunk instead of per element. Which rows can reach the cap
  u_C somewhere on the grid (u is affine in k: both ends are tested) is decided once per search;
  those rows (and rows far below, where e^u leaves the normal range) are summed apart as one small
  block with the clip, so the main pass over the other rows needs no clipping: per candidate it is
  one multiplication, one addition and one chunked product. Batches of at most 256 rows are done
  in one 2-D evaluation (k passes of tiny ufunc calls would cost more).
* **hinge** — min(max(0, 1 − m), C) is piecewise linear in k. A row whose range over the grid
  stays inside [0, C], above C or below 0 contributes v_i + k·β_i, C or 0 at every k (v = 1 − m;
  dot products over all such rows); a row with a kink inside the grid is linear on one index
  interval and C on another, summed with ``bincount`` and a cumulative sum. O(n), not O(n·m).
* **any other GLM loss** (``loss.phi``; σ = 1, so margins are the scores z) — the (m+1) × n
  values are formed by broadcasting and passed to ``phi`` (generic elementwise cost).

All float64 paths are exact up to floating-point rounding (relative error ~1e-15 on BANK-sized
sums; tests compare them with the naive per-candidate evaluation, :func:`naive_candidate_scores`).
Every row's term is a function of that row alone (and of released values) and lies in
[0, C_obj], so the scores keep the add/remove sensitivity C_obj and the monotonicity the NoisyMin
calibration relies on.

**float32 scores** (``dtype=np.float32``, what DP-AGD uses; logistic loss only — the hinge pass
is O(n) and stays float64). The chunked-product pass runs on float32 a = −m and β: half the
memory traffic and twice the SIMD width of float64. Privacy does not depend on how accurately
the scores approximate the clipped losses: the NoisyMin argument needs only that the score is a
sum over rows of a term that depends on that row alone (and on public or released values) and
lies in [0, C_obj] — then adding a row raises every score by an amount in [0, C_obj] (monotone,
sensitivity C_obj). Here:

* a row of the main pass has u < u_C − 10⁻³ and u ≥ −80 at every grid point (tested in float32
  on a and a + (k−1)β). Its factor t_ik = fl(1 + e^{a_i}·(e^{β_i})^k) ≥ 1 is computed to within a
  relative 21·4 ulp < 10⁻⁵ of 1 + e^{u}, and e^{u} < e^{u_C − 10⁻³}, so t < e^C: its term
  log t_ik lies in [0, C] without clipping. The factors are multiplied in chunks of ⌊88/C⌋
  (< FLT_MAX), and each chunk product's log is taken in float32 and summed in float64.
* a row that reaches u_C − 10⁻³ somewhere, or goes below −80, is scored in a (k × rows) float32
  block as min(log(1 + e^{min(u, u_C)}), C) — clipped after rounding, so in [0, C] — and a row at
  or above u_C at both ends (clipped on the whole grid) contributes C.

So every term is in [0, C_obj] and the privacy argument is unchanged. Only utility moves: the
sums differ from float64 by ~10⁻⁴ absolute on BANK (scores ~10⁴), against a NoisyMin noise scale
of C_obj/ε_nmax ≥ 40 for ε ≤ 10; the tests check that a whole run's selections agree with
float64 ones (same noise) in ≥ 99% of searches, and that every factor lies in [1, e^C]. The chunk
logs and the float64 sum are rounded as any floating-point sum is (~10⁻⁶ relative per chunk).
"""

from __future__ import annotations

import math

import numpy as np

from ...losses import Hinge, Logistic

__all__ = ["CandidateScorer", "candidate_grid", "naive_candidate_scores", "row_signs"]

# Rows starting below e^-700 go to the direct block: e^u·r^k must not start subnormal.
_EXP_SAFE = 700.0
_SMALL = 256
_KINKED_DIRECT = 1024  # kinked hinge rows summed as one (k × rows) block up to this many
# float32 pass: rows whose u leaves [−_F32_RANGE, u_C − _F32_MARGIN] somewhere on the grid are
# scored apart (the clipped block), so the main pass needs no clip and e^u stays a normal float32
_F32_RANGE = 80.0
_F32_MARGIN = 1e-3
_F32_LOG_MAX = 88.0  # a product of float32 factors must stay below FLT_MAX ≈ e^88.72


def candidate_grid(alpha_max: float, n_steps: int) -> np.ndarray:
    """Φ = (0, h, 2h, …, m·h), h = α_max/m: the paper's m non-zero step sizes plus 0 (Lee & Kifer
    2018, §5)."""
    return np.arange(n_steps + 1) * (alpha_max / n_steps)


def naive_candidate_scores(problem, w, d, phis, clip, rows=None) -> np.ndarray:
    """Reference computation of s_k = Σ_i min(ℓ_i(w − Φ_k d), C) with one loss evaluation per
    candidate (what the DP-AGD code does); used by tests and benchmarks only."""
    cands = np.asarray(w)[None, :] - np.asarray(phis)[:, None] * np.asarray(d)[None, :]
    return np.array([np.minimum(problem.per_example_value(c, rows), clip).sum() for c in cands])


def score_kind(loss) -> str:
    """"logistic", "hinge" or "glm" (any other loss with ``phi``): how the scores are taken."""
    if isinstance(loss, Logistic):
        return "logistic"
    if isinstance(loss, Hinge):
        return "hinge"
    if hasattr(loss, "phi"):
        return "glm"
    raise TypeError(f"DP-AGD's candidate scores need a linear-model loss with phi(z, y); got {loss!r}")


def row_signs(loss, y) -> np.ndarray:
    """σ_i: the label sign ±1 of each row for the logistic (2t − 1) and hinge (y) losses, whose
    loss is a function of the margin σ_i⟨w, x_i⟩ alone; 1 for any other loss."""
    kind = score_kind(loss)
    y = np.asarray(y, dtype=float)
    if kind == "logistic":
        return 2.0 * loss.target01(y) - 1.0
    if kind == "hinge":
        return y.copy()
    return np.ones_like(y)


def _float32_below(x: float) -> np.float32:
    """The largest float32 ≤ x."""
    f = np.float32(x)
    return f if float(f) <= x else np.nextafter(f, np.float32(-np.inf))


class CandidateScorer:
    """Scores of the m + 1 grid candidates for one loss, reusing buffers across searches.

    Call :meth:`set_rows` with the labels of the rows in use (once for full-batch runs, every
    iteration for mini-batches), then :meth:`scores` with z0 = X·w and zd = X·d on those rows,
    or :meth:`margin_scores` with the margins and their slopes (what the engine keeps).
    """

    def __init__(self, loss, clip: float, n_steps: int, dtype=np.float64):
        if not clip > 0:
            raise ValueError(f"the objective clip C_obj must be > 0; got {clip!r}")
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float64, np.float32):
            raise ValueError(f"dtype must be float64 or float32; got {dtype!r}")
        self.loss, self.clip, self.k = loss, float(clip), int(n_steps) + 1
        self.kind = score_kind(loss)
        # Chunk of products: factors lie in [1, e^C], so ⌊600/C⌋ of them stay below e^600.
        self.chunk = max(1, min(64, int(600.0 // self.clip)))
        # float32: ⌊88/C⌋ factors per float32 product (< FLT_MAX), one log per product
        self.chunk32 = max(1, min(64, int(_F32_LOG_MAX // self.clip)))
        self.f32 = self.dtype == np.float32 and self.kind == "logistic"
        self._ucap = math.log(math.expm1(self.clip))  # min(log(1 + e^u), C) = log(1 + e^{min(u, u_C)})
        self._main32 = np.float32(self._ucap - _F32_MARGIN)  # main-pass rows stay below this u
        self._ucap32 = _float32_below(self._ucap)
        self._clip32 = _float32_below(self.clip)
        self._grid32 = np.arange(self.k, dtype=np.float32)[:, None]
        self._capacity = 0

    # -- rows ---------------------------------------------------------------------------------
    def set_rows(self, y) -> None:
        """Labels of the rows the next scores refer to (in the loss's label form)."""
        y = np.asarray(y, dtype=float)
        self.y = y
        self.sign = row_signs(self.loss, y)
        self._reserve(y.size)

    def _reserve(self, n: int) -> None:
        """Grow the work buffers to n rows (padded to whole chunks); never shrink them."""
        block = self.chunk32 if self.f32 else self.chunk
        padded = -(-max(n, 1) // block) * block
        if padded <= self._capacity:
            return
        self._capacity = padded
        self._a, self._b = np.empty(padded), np.empty(padded)
        if self.f32:
            f4 = np.float32
            self._a4, self._b4 = np.empty(padded, f4), np.empty(padded, f4)
            self._end4, self._hi4 = np.empty(padded, f4), np.empty(padded, f4)
            self._e4, self._r4, self._t4 = np.empty(padded, f4), np.empty(padded, f4), np.empty(padded, f4)
            self._prod4 = np.empty((self.k, padded // self.chunk32), f4)
            self._logs, self._ones = np.empty((self.k, padded // self.chunk32)), np.ones(padded // self.chunk32)
            self._reach = np.empty(padded, bool)
        if self.kind == "logistic":
            self._e, self._t = np.empty(padded), np.empty(padded)
            self._prod = np.empty((self.k, padded // self.chunk))
        elif self.kind == "hinge":  # float64 whatever the dtype: the hinge pass is O(n), not O(n·m)
            self._e, self._t, self._u = np.empty(padded), np.empty(padded), np.empty(padded)
            self._mask, self._mask2 = np.empty(padded, bool), np.empty(padded, bool)
            self._mask3, self._mask4 = np.empty(padded, bool), np.empty(padded, bool)
            self._kinked = _KinkedHinge(padded, self.clip, self.k)

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
        slope = (zd * self.sign.astype(zd.dtype)) * zd.dtype.type(h)  # β = σ·h·zd
        return self.margin_scores(self.sign * z0, slope)

    def margin_scores(self, m0, beta, u0=None) -> np.ndarray:
        """s_k = Σ_i min(ℓ_i, C_obj) at the margins m0 − k·β (k = 0..m; the rows set by
        :meth:`set_rows`). ``beta`` may be float32 when the scores are; the logistic scores may
        be given u0 = −m0 in float32 instead of m0 (``m0`` None: what the engine keeps)."""
        if self.y.size == 0:
            return np.zeros(self.k)
        if self.kind == "logistic":
            if self.f32 and self.y.size > _SMALL:
                return self._logistic32(m0, beta, u0)
            a = np.negative(m0, out=self._a[:m0.size]) if m0 is not None else np.asarray(u0, dtype=float)
            return self._logistic(a, np.asarray(beta, dtype=float))
        if self.kind == "hinge":
            return self._hinge(m0, np.asarray(beta, dtype=float))
        z = m0[None, :] - np.arange(self.k)[:, None] * np.asarray(beta, dtype=float)[None, :]
        return np.minimum(self.loss.phi(z, self.y), self.clip).sum(axis=1)

    def _logistic(self, a, beta):
        """float64 chunked products; u_ik = a_i + k·β_i."""
        n, c, k = a.size, self.chunk, self.k
        if n <= _SMALL:  # a few rows: one 2-D evaluation beats k passes of tiny ufunc calls
            u = a[:, None] + np.arange(k)[None, :] * beta[:, None]
            return np.minimum(np.logaddexp(0.0, u), self.clip).sum(axis=0)
        m = -(-n // c) * c
        e, r, t = self._e[:m], self._b[:m], self._t[:m]
        np.copyto(r[:n], beta)
        beta = r[:n]
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

    def _logistic32(self, m0, beta, u0=None, factors=None):
        """The chunked-product pass with float32 factors (module docstring, "float32 scores").

        a = −m0 and β in float32; u_ik = a_i + kβ_i. Rows whose u reaches u_C − 10⁻³ or goes below
        −80 at either end of the grid (u is affine in k) are set aside (factor 1 in the main
        pass) and scored in the clipped block (:meth:`_clipped32`). ``factors`` (tests) receives
        the main pass's t's, (k, n): every one in [1, e^C).
        """
        n, c, k = self.y.size, self.chunk32, self.k
        m = -(-n // c) * c
        e, r, t = self._e4[:m], self._r4[:m], self._t4[:m]
        if u0 is None:
            a = np.negative(m0, out=self._a4[:n], casting="same_kind")
        else:
            a = u0
        b = beta
        if b.dtype != np.float32:
            b = self._b4[:n]
            np.copyto(b, beta, casting="same_kind")
        end, hi = self._end4[:n], self._hi4[:n]
        np.multiply(b, np.float32(k - 1), out=end)
        end += a  # u at the far end of the grid
        np.maximum(a, end, out=hi)
        low = min(a.min(), end.min())
        special = None
        if hi.max() >= self._main32 or low < -_F32_RANGE:  # some row must be scored apart
            reach = np.greater_equal(hi, self._main32, out=self._reach[:n])
            if low < -_F32_RANGE:
                reach |= np.minimum(a, end) < -_F32_RANGE
            special = np.flatnonzero(reach)
        with np.errstate(over="ignore", under="ignore"):  # only special rows can leave the range
            np.exp(a, out=e[:n])
            np.exp(b, out=r[:n])  # r_i = e^{β_i}
        e[n:], r[n:] = 0.0, 1.0  # padding rows contribute log(1 + 0) = 0
        clipped = 0.0
        if special is not None:
            e[special], r[special] = 0.0, 1.0
            clipped = self._clipped32(a.take(special), b.take(special), end.take(special))
        prod = self._prod4[:, : m // c]
        for j in range(k):
            if j:
                e *= r
            np.add(e, np.float32(1.0), out=t)
            if factors is not None:
                factors[j] = t[:n]
            np.multiply.reduce(t.reshape(c, -1), axis=0, out=prod[j])
        logs = self._logs[:, : m // c]
        np.copyto(logs, np.log(prod, out=prod))  # float32 logs of the chunk products, summed in float64
        return logs @ self._ones[: m // c] + clipped

    def _clipped32(self, a, beta, end):
        """Σ_i min(log(1 + e^{min(u_ik, u_C)}), C) for the rows set aside by :meth:`_logistic32`
        (float32, the clip applied after rounding: every term in [0, C]); a row at or above u_C
        at both ends is clipped on the whole grid and contributes C."""
        full = np.minimum(a, end) >= self._ucap32
        count = int(np.count_nonzero(full))
        if count:
            a, beta = a[~full], beta[~full]
        out = np.full(self.k, self.clip * count)
        if a.size:
            u = self._grid32 * beta[None, :]
            u += a[None, :]
            np.minimum(u, self._ucap32, out=u)
            with np.errstate(under="ignore"):
                np.exp(u, out=u)
            u += np.float32(1.0)
            np.log(u, out=u)
            np.minimum(u, self._clip32, out=u)
            out += u.sum(axis=1, dtype=np.float64)
        return out

    def _logistic_direct(self, a, beta):
        """Σ_i log(1 + min(e^{a_i + kβ_i}, e^C − 1)) for a few rows, as one (k × rows) block."""
        u = np.arange(self.k)[:, None] * beta[None, :]
        u += a[None, :]
        np.minimum(u, self._ucap, out=u)  # clipping at C, in u-space
        with np.errstate(under="ignore"):
            np.exp(u, out=u)
        return np.log1p(u).sum(axis=1)

    def _hinge(self, m0, beta):
        # loss_ik = clip(v_i + k·β_i, 0, C), v = 1 − m0 (margins m_ik = m0_i − kβ_i). Over the
        # grid a row ranges between v and v + (k−1)β; one inside [0, C] is linear (v + kβ at every
        # k), one above C or below 0 is constant (C or 0), the rest have a kink (summed apart).
        n, k, cap = m0.size, self.k, self.clip
        v, lo, hi, lin = self._a[:n], self._e[:n], self._t[:n], self._u[:n]
        linear, high, low, kinked = self._mask[:n], self._mask2[:n], self._mask3[:n], self._mask4[:n]
        np.subtract(1.0, m0, out=v)
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
