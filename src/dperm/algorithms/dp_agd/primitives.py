"""DP-AGD's data-access primitives and the two ways its budget is kept (Lee & Kifer 2018,
Algorithm 2).

* :func:`margin_weights` — the clipped gradient sum of Algorithm 2 line 4, Σ_i clip_C(∇ℓ_i(w)),
  as weights on the rows, from the margins the engine keeps (:func:`logistic_weights32` from
  float32 margins);
* :func:`grad_avg` — GradAvg (Lee & Kifer 2018, §4), one function for both the corrected running
  estimate and the code's average with the first measurement (the caller chooses what it passes in);
* :class:`FilterBudget` — a :class:`~dperm.privacy.ZCDPFilter`: every primitive is charged
  before it runs and a charge that would exceed the budget is refused (the run stops);
* :class:`CodeBudget` — the reference code's float: subtract, and stop once it is negative.

Budgets record a ledger of (what, ρ) so tests can check what was charged.
"""

from __future__ import annotations

import math

import numpy as np

from ...losses.arrays import float32_floor
from ...privacy import ZCDPFilter

__all__ = ["CodeBudget", "FilterBudget", "float32_floor", "grad_avg", "logistic_weights32", "margin_weights"]


def margin_weights(kind, loss, m, y, bound, out):
    """Weights ω_i ≥ 0 (or signed, for a loss without a label sign) with
    Σ_i clip_C(∇ℓ_i(w)) = −Σ_i ω_i·σ_i·x_i, from the margins m_i = σ_i⟨w, x_i⟩ (σ_i the row sign of
    :func:`~.scores.row_signs`), written to ``out``; ``bound`` = (C/‖x_i‖, min(1, C/‖x_i‖)).

    The per-example gradient is φ'·x_i, of norm |φ'|·‖x_i‖, so clipping it to norm C is clipping
    φ' to ±C/‖x_i‖. In margins φ'(z_i) = −σ_i·ψ(m_i) with ψ ≥ 0 for the binary losses — logistic
    ψ = 1/(1 + e^{m}) (φ' = σ(z) − t), hinge ψ = 1[m < 1] (Hinge.dphi) — so the clip is one
    minimum with C/‖x_i‖ (infinite where x_i = 0). Any other loss (σ = 1): ω = −clip(φ', ±C/‖x_i‖).
    The caller ignores floating-point overflow: e^{m} = inf gives the correct limit ω = 0."""
    if kind == "logistic":
        np.exp(m, out=out)
        out += 1.0
        np.reciprocal(out, out=out)
        np.minimum(out, bound[0], out=out)
    elif kind == "hinge":
        np.less(m, 1.0, out=out)  # 1[m < 1] as 0.0/1.0
        out *= bound[1]
    else:
        d = loss.dphi(m, y)
        np.maximum(d, -bound[0], out=d)
        np.minimum(d, bound[0], out=d)
        np.negative(d, out=out)
    return out


def logistic_weights32(u, bound32, work, out):
    """The logistic weights ω = min(1/(1 + e^{m}), C/‖x_i‖) (:func:`margin_weights`)
    from float32 u = −m, computed in float32 and written to the float64 ``out``: 1/(1 + e^{−u}) is
    within a few float32 ulps of ψ(m), clipped to the bound rounded down to float32, so
    0 ≤ ω_i ≤ C/‖x_i‖ holds exactly and the sum Σ ω_i σ_i x_i (float64) keeps the sensitivity
    C_grad. The caller ignores overflow (e^{−u} = inf gives ω = 0)."""
    np.negative(u, out=work)
    np.exp(work, out=work)
    work += np.float32(1.0)
    np.divide(np.float32(1.0), work, out=work)
    np.minimum(work, bound32, out=work)
    np.copyto(out, work)
    return out


def grad_avg(estimate, rho_old, rho_new, true_grad, sensitivity, rng):
    """GradAvg (Lee & Kifer 2018, §4): measure g₂ = g + N(0, Δ²/(2(ρ_new − ρ_old)) I) and return
    (ρ_old·estimate + (ρ_new − ρ_old)·g₂)/ρ_new.

    If ``estimate`` is unbiased with variance Δ²/(2ρ_old) per coordinate, the result has variance
    Δ²/(2ρ_new): the same as one measurement at the total cost. Broadcasts over leading axes.
    """
    fresh = true_grad + rng.normal(0.0, sensitivity / math.sqrt(2.0 * (rho_new - rho_old)),
                                   size=np.shape(estimate))
    share = rho_old / rho_new
    return share * estimate + (1.0 - share) * fresh


class FilterBudget:
    """Filter semantics: ``pay`` charges before the primitive runs and returns False (recording
    nothing) if the total would exceed the budget; the caller then releases its last iterate."""

    def __init__(self, budget):
        self.filter = ZCDPFilter(budget)

    def open(self) -> bool:
        return True

    def pay(self, rho, what, checked=True) -> bool:
        return self.filter.try_charge(rho, what)

    @property
    def ledger(self) -> list:
        return [(c.what, c.rho) for c in self.filter.ledger]

    @property
    def spent(self) -> float:
        return self.filter.spent


class CodeBudget:
    """The reference code's accounting (``algo/agd_rho.py``): every charge is subtracted from a
    float; only the charge after NoisyMin is checked (``checked=True`` returns whether the
    remainder is still ≥ 0) and the main loop runs while the remainder is > 0."""

    def __init__(self, budget):
        self.remaining, self.ledger = budget, []

    def open(self) -> bool:
        return self.remaining > 0

    def pay(self, rho, what, checked=True) -> bool:
        self.remaining -= rho
        self.ledger.append((what, rho))
        return self.remaining >= 0 or not checked

    @property
    def spent(self) -> float:
        return math.fsum(r for _, r in self.ledger)
