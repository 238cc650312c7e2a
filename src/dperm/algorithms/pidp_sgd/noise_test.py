"""PIDP-SGD's noisy influence test (Kang et al., Algorithm 1 lines 7–11, Theorems 4 and 5): its
threshold, its noise σ_c, the error bound E, the two readings of ζ, and the exact probability
that a step passes it.

* ``noise_free_test`` — lines 10–11 as printed (both conditions; they reduce to
  max_i |c_t,i| ≤ 2rδ₁(1 + e^{−ε₁}), :func:`noise_free_threshold`).
* ``contribution_noise`` — σ_c = 2√2·√(ln(1.25R/δ₂))·G·R/(nζε₂) (the proof's c′ = 2√2).
* ``error_bound`` — E = (2βG + C_H·G²/ζ)/(ζ²n²) (Theorem 4).
* ζ (:data:`ZETA_READINGS`): ``"proof"`` — a lower bound on λ_min of the (shifted) Hessian, what
  the proof's ‖H⁻¹g‖ ≤ ‖g‖/ζ needs; here λ + ζ₀, which holds for every round's Hessian of a
  convex loss (and of the MLP's output-layer block); ``"printed"`` — ‖H‖₂ ≥ ζ as Theorem 4 and
  Remark 5 print it, read at its largest: ζ = ‖H(θ̃) + ζ₀I‖₂ at the start (the same H the
  first round inverts). σ_c ∝ 1/ζ and E ∝ 1/ζ² (and 1/ζ³), so the printed reading makes both
  smaller by the Hessian's condition number.
* ``noise_free_probability`` — given the contributions c of every row at a round's global
  iterate, the exact probability that a step of that round is noise-free: the row is uniform,
  and given the row every coordinate of c_t = 2(c + E·sign c) + N(0, σ_c²) must fall in
  [−thr, thr], so P = (1/n)·Σ_z Π_i [Φ((thr − a_{z,i})/σ_c) − Φ((−thr − a_{z,i})/σ_c)] with
  a = 2(|c| + E) (the law is symmetric in the sign), times (2Φ(thr/σ_c) − 1)^{m′} for m′
  coordinates whose c is 0 (the MLP's hidden layer). Exact for the first round, whose iterate
  θ̃ is fixed before any step.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, ndtr

ZETA_READINGS = ("proof", "printed")


def noise_free_test(c_t, epsilon1, delta1, radius):
    """Algorithm 1 lines 10–11 for each row of ``c_t`` (k, m), ε₁ and δ₁ scalars or (k,):
    True where no noise is added."""
    epsilon1 = np.broadcast_to(np.asarray(epsilon1, dtype=float), c_t.shape[:1])[:, None]
    delta1 = np.broadcast_to(np.asarray(delta1, dtype=float), c_t.shape[:1])[:, None]
    radius = np.broadcast_to(np.asarray(radius, dtype=float), c_t.shape[:1])[:, None]
    A = 2.0 * radius * np.exp(epsilon1) * delta1
    k = np.expm1(epsilon1)
    a = np.abs(c_t)
    first = np.all(a < A / k, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        second = np.all(np.log(A / (A - k * np.minimum(a, A / k))) <= 2.0 * epsilon1, axis=1)
    return first & second


def noise_free_threshold(epsilon1, delta1, radius):
    """The simplified threshold 2rδ₁(1 + e^{−ε₁}) on max_i |c_t,i|."""
    return 2.0 * radius * delta1 * (1.0 + math.exp(-epsilon1))


def contribution_noise(*, epsilon2, delta2, rounds, clip, n, zeta):
    """σ_c = 2√2·√(ln(1.25R/δ₂))·G·R/(nζε₂) (Kang et al., proof of Theorem 5)."""
    return 2.0 * math.sqrt(2.0) * math.sqrt(math.log(1.25 * rounds / delta2)) * clip * rounds / (n * zeta * epsilon2)


def error_bound(*, smoothness, hessian_lipschitz, clip, zeta, n):
    """E = (2βG + C_H·G²/ζ)/(ζ²n²) (Kang et al., Theorem 4)."""
    return (2.0 * smoothness * clip + hessian_lipschitz * clip**2 / zeta) / (zeta**2 * n**2)


def zeta_value(reading: str, *, l2: float, shift: float, hessian: np.ndarray | None = None) -> float:
    """ζ under ``reading`` (module docstring): ``proof`` λ + ζ₀; ``printed`` ‖H‖₂ of the shifted
    Hessian ``hessian`` (p × p, ζ₀ and λ already on its diagonal)."""
    if reading == "proof":
        return float(l2 + shift)
    if reading == "printed":
        if hessian is None:
            raise ValueError("zeta='printed' needs the Hessian at the start")
        return float(np.linalg.eigvalsh(hessian)[-1])
    raise ValueError(f"zeta must be one of {ZETA_READINGS}; got zeta={reading!r}")


# Below this, a row's log-probability's exp is 0.0: exp underflows at −745.13, and the margin
# covers the rounding of the exact form at the rows noise_free_probability skips.
_LOG_UNDERFLOW = -800.0


def noise_free_probability(contributions: np.ndarray, *, error: float, sigma_c: float, threshold: float,
                           rest: int = 0) -> float:
    """The exact probability that a step is noise-free (module docstring): ``contributions`` is
    (n, m), the c of every row on the m coordinates it covers; ``rest`` coordinates have c = 0.

    Rows that the exact form would round to probability 0.0 are not evaluated:

    * every term log(Φ(u) − Φ(l)) it computes is at most 0, so a chain whose ``rest`` term alone
      is below −800 (the MLP's, whose hidden layer has c = 0) is 0.0 without evaluating a row;
    * each coordinate's Φ(u) − Φ(l), u − l = 2·thr/σ_c, is at most (u − l)·φ at the point of
      [l, u] nearest 0, so a row's log-probability is at most
      m·log((u − l)/√(2π)) − ½Σ_i max(0, −u_i)² plus the ``rest`` term. Rows whose bound is below
      −800 are skipped where u − l ≥ 10⁻⁹·(1 + max|u|): there the exact form's rounding moves
      each term by under 10⁻⁶, far inside the margin to −745.

    The other rows are evaluated exactly as before, element by element: the result is the same
    float (a row holding a NaN counts 0 in both, as the exact form's guard on Φ(l)/Φ(u) < 1 gives it)."""
    log_rest = 0.0
    if rest:
        inside = 2.0 * ndtr(threshold / sigma_c) - 1.0
        log_rest = rest * (math.log(inside) if inside > 0 else -math.inf)
    if log_rest < _LOG_UNDERFLOW:
        return 0.0
    a = 2.0 * (np.abs(contributions) + error)
    live = _live_rows(a, sigma_c, threshold, log_rest)
    log_p = np.full(a.shape[0], -np.inf)
    if live.any():
        log_p[live] = _log_row_probability(a if live.all() else a[live], sigma_c, threshold)
    if rest:
        log_p = log_p + log_rest
    return float(np.mean(np.exp(log_p)))


def _live_rows(a, sigma_c, threshold, log_rest):
    """The rows of ``a`` (n, m) whose bound (:func:`noise_free_probability`) is at or above −800,
    all of them where the rounding argument does not cover the skip."""
    n, m = a.shape
    width = 2.0 * threshold / sigma_c
    if width <= 0 or not a.size:
        return np.ones(n, dtype=bool)
    gap_max = max(float(a.max()) - threshold, 0.0) / sigma_c  # NaN rows make it NaN: no skipping
    if not width >= 1e-9 * (1.0 + gap_max + threshold / sigma_c):
        return np.ones(n, dtype=bool)
    head = m * math.log(width / math.sqrt(2.0 * math.pi)) + log_rest  # every row's bound at gap 0
    if head < _LOG_UNDERFLOW:
        return np.zeros(n, dtype=bool)
    if head - 0.5 * m * gap_max**2 >= _LOG_UNDERFLOW:  # no row can fall below
        return np.ones(n, dtype=bool)
    gap = np.maximum(a - threshold, 0.0) / sigma_c  # −u where u < 0; 0 where [l, u] holds 0
    return head - 0.5 * np.einsum("ij,ij->i", gap, gap) >= _LOG_UNDERFLOW


def _log_row_probability(a, sigma_c, threshold):
    """Σ_i log(Φ(u_i) − Φ(l_i)) per row of ``a`` (rows, m), elementwise, stable where both are tiny."""
    upper, lower = (threshold - a) / sigma_c, (-threshold - a) / sigma_c
    # log(Φ(u) − Φ(l)) = log Φ(u) + log(1 − Φ(l)/Φ(u))
    log_u = log_ndtr(upper)
    with np.errstate(divide="ignore", invalid="ignore"):  # ratio 1 (u = l in floating point): −inf, kept out
        ratio = np.exp(log_ndtr(lower) - log_u)
        return np.where(ratio < 1.0, log_u + np.log1p(-np.minimum(ratio, 1.0)), -np.inf).sum(axis=1)
