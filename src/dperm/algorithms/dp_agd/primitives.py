"""DP-AGD's data-access primitives and the two ways its budget is kept (Lee & Kifer 2018,
Algorithm 2).

* :func:`clipped_grad_from_scores` — the clipped gradient sum of Algorithm 2 line 4;
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

from ...losses import Hinge
from ...privacy import ZCDPFilter

__all__ = ["CodeBudget", "FilterBudget", "clipped_dphi", "clipped_grad_from_scores", "grad_avg"]


def clipped_grad_from_scores(loss, z, y, limit, X):
    """Σ_i clip_C(φ'(z_i, y_i)·x_i) from given scores z = X·w, as Xᵀ clip(φ', −C/‖x_i‖, C/‖x_i‖).

    The per-example gradient φ'·x_i has norm |φ'|·‖x_i‖, so clipping it to norm C is clipping φ'
    to ±C/‖x_i‖ (``limit`` = the pair of arrays (−C/‖x_i‖, C/‖x_i‖), infinite where x_i = 0).
    Same value as :meth:`dperm.losses.GLMLoss.clipped_grad_sum`, without recomputing X·w.
    """
    d = loss.dphi(z, y)
    np.maximum(d, limit[0], out=d)
    np.minimum(d, limit[1], out=d)
    return d @ X


def clipped_dphi(loss, z, y, limit, out):
    """The weights clip(φ'(z_i, y_i), −C/‖x_i‖, C/‖x_i‖) of :func:`clipped_grad_from_scores`,
    written to ``out`` (the clipped gradient sum is then out·X)."""
    if isinstance(loss, Hinge):  # φ' = −y where y·z < 1, else 0 (Hinge.dphi), without temporaries
        np.multiply(z, y, out=out)
        np.less(out, 1.0, out=out)
        np.multiply(out, y, out=out)
        np.negative(out, out=out)
        d = out
    else:
        np.copyto(out, z)
        d = loss.dphi_overwrite(out, y)  # the logistic kernel works in place; others allocate
    np.maximum(d, limit[0], out=out)
    np.minimum(out, limit[1], out=out)
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
