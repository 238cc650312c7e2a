"""DP-AGD's step-size scores: clipped-loss sums of all grid candidates from two mat-vecs.

The descent test of DP-AGD (Lee & Kifer 2018, Algorithm 2 line 9; spec §2.1 step 5a) scores
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

All paths are exact up to floating-point rounding (relative error ~1e-15 on BANK-sized sums;
tests compare them with the naive per-candidate evaluation, :func:`naive_candidate_scores`).
Every row's term is a function of that row alone and lies in [0, C_obj], so the scores keep the
add/remove sensitivity C_obj and monotonicity the NoisyMin calibration relies on.
"""

from __future__ import annotations

import math

import numpy as np

from ..losses import Hinge, Logistic

__all__ = ["CandidateScorer", "candidate_grid", "naive_candidate_scores"]

# Rows starting below e^-700 go to the direct block: e^u·r^k must not start subnormal.
_EXP_SAFE = 700.0
_SMALL = 256


def candidate_grid(alpha_max: float, n_steps: int) -> np.ndarray:
    """Φ = (0, h, 2h, …, m·h), h = α_max/m: the paper's m non-zero step sizes plus 0 (S-003 §5)."""
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

    def __init__(self, loss, clip: float, n_steps: int):
        if not clip > 0:
            raise ValueError(f"the objective clip C_obj must be > 0; got {clip!r}")
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
        self._ucap = math.log(math.expm1(self.clip))  # min(log(1 + e^u), C) = log(1 + e^{min(u, u_C)})
        self._capacity = 0

    # -- rows ---------------------------------------------------------------------------------
    def set_rows(self, y) -> None:
        """Labels of the rows the next scores refer to (in the loss's label form)."""
        y = np.asarray(y, dtype=float)
        self.y = y
        if self.kind == "logistic":
            self.sign = 2.0 * self.loss._target(y) - 1.0  # ℓ = softplus(−s·z) for either label form
            self._negsign = -self.sign
        elif self.kind == "hinge":
            self.sign = y
        self._step = None  # h·s is cached per step width h
        self._reserve(y.size)

    def _reserve(self, n: int) -> None:
        """Grow the work buffers to n rows (padded to whole chunks); never shrink them."""
        padded = -(-max(n, 1) // self.chunk) * self.chunk
        if padded <= self._capacity:
            return
        self._capacity = padded
        self._a, self._b = np.empty(padded), np.empty(padded)
        if self.kind == "logistic":
            self._e, self._t = np.empty(padded), np.empty(padded)
            self._prod = np.empty((self.k, padded // self.chunk))

    def _signed_step(self, h):
        """h·s_i for every row (recomputed only when α_max changes)."""
        if self._step != h:
            self._hsign, self._step = h * self.sign, h
        return self._hsign

    # -- scores -------------------------------------------------------------------------------
    def scores(self, z0, zd, alpha_max: float) -> np.ndarray:
        """s_k = Σ_i min(ℓ(z0_i − Φ_k zd_i, y_i), C_obj) for Φ = candidate_grid(α_max, m)."""
        z0, zd = np.asarray(z0, dtype=float), np.asarray(zd, dtype=float)
        if z0.shape != self.y.shape or zd.shape != self.y.shape:
            raise ValueError(f"z0 and zd must have the rows' shape {self.y.shape}; got {z0.shape}, {zd.shape}")
        h = alpha_max / (self.k - 1)
        if self.y.size == 0:
            return np.zeros(self.k)
        if self.kind == "logistic":
            return self._logistic(z0, zd, h)
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

    def _logistic_direct(self, a, beta):
        """Σ_i log(1 + min(e^{a_i + kβ_i}, e^C − 1)) for a few rows, as one (k × rows) block."""
        u = np.arange(self.k)[:, None] * beta[None, :]
        u += a[None, :]
        np.minimum(u, self._ucap, out=u)  # clipping at C, in u-space
        with np.errstate(under="ignore"):
            np.exp(u, out=u)
        return np.log1p(u).sum(axis=1)

    def _hinge(self, z0, zd, h):
        # loss_ik = clip(v_i + k·β_i, 0, C), v = 1 − s·z0, β = h·s·zd (margin m = s·z).
        n, k, cap = z0.size, self.k, self.clip
        v, beta = self._a[:n], self._b[:n]
        np.multiply(z0, self.sign, out=v)
        np.subtract(1.0, v, out=v)
        np.multiply(zd, self._signed_step(h), out=beta)
        end = beta * (k - 1)
        end += v
        low, high = np.minimum(v, end), np.maximum(v, end)  # the row's range over the grid
        linear = (low >= 0.0) & (high <= cap)  # no kink: contributes v + kβ at every k
        saturated = low >= cap  # contributes C at every k
        kinked = np.flatnonzero(~(linear | saturated | (high <= 0.0)))
        lin = linear.astype(float)
        grid = np.arange(k)
        total = (v @ lin) + grid * (beta @ lin) + cap * np.count_nonzero(saturated)
        if kinked.size:
            total += _kinked_hinge_sums(v.take(kinked), beta.take(kinked), cap, k)
        return total


def _kinked_hinge_sums(v, beta, cap, k):
    """Σ_i clip(v_i + jβ_i, 0, C) for j = 0..k−1 over rows with a kink inside the grid (β ≠ 0).

    Row i is linear on the index interval [min(q0, qc), max(q0, qc)) and equal to C on [qc, k)
    (β > 0) or [0, qc) (β < 0), where q0 = ⌈−v/β⌉ and qc = ⌈(C − v)/β⌉ are the first indices on
    the far side of the levels 0 and C; sums of per-interval terms come from ``bincount`` and a
    cumulative sum. At a level the two neighbouring pieces agree, so rounding in q is harmless.
    """
    q0 = np.ceil(-v / beta)
    qc = np.ceil((cap - v) / beta)
    np.clip(q0, 0, k, out=q0)
    np.clip(qc, 0, k, out=qc)
    q0, qc = q0.astype(np.intp), qc.astype(np.intp)
    lo, hi = np.minimum(q0, qc), np.maximum(q0, qc)
    size = k + 1
    lin_v = np.bincount(lo, v, size) - np.bincount(hi, v, size)
    lin_b = np.bincount(lo, beta, size) - np.bincount(hi, beta, size)
    up = beta > 0.0
    sat = np.bincount(qc, np.where(up, 1.0, -1.0), size)
    sat[0] += up.size - np.count_nonzero(up)
    return (np.cumsum(lin_v)[:k] + np.arange(k) * np.cumsum(lin_b)[:k] + cap * np.cumsum(sat)[:k])
