"""Regression losses on the residual u = ⟨w, x⟩ − y (real targets; Zhang et al. 2017).

Constants assume ‖x‖ ≤ R and targets y ∈ [0, 1] (docs/deviations.md#zhang-unknowns). On ‖w‖ ≤ D
this gives ⟨w, x⟩ ∈ [−DR, DR] and hence |u| ≤ DR + 1.
"""

from __future__ import annotations

import numpy as np

from .glm import GLMLoss


def _residual_bound(R, radius):
    """sup |⟨w, x⟩ − y| over ‖w‖ ≤ radius, ‖x‖ ≤ R, y ∈ [0, 1]."""
    return float(radius) * float(R) + 1.0


class Huber(GLMLoss):
    """Huber regression h_δ(u) = u²/2 (|u| ≤ δ), δ(|u| − δ/2) otherwise; δ = ``delta`` (1 in our
    Zhang et al. runs, docs/deviations.md#zhang-unknowns).

    With c = clip(u, −δ, δ): ℓ = c·(u − c/2), ℓ' = c, ℓ'' = 1{|u| ≤ δ}.
    L = δR (globally; min(δ, DR + 1)·R on ‖w‖ ≤ D), β = R² — i.e. L = δ_H, β = 1 at R = 1.
    """

    name = "huber"
    labels = "real"

    def __init__(self, delta: float = 1.0):
        if not delta > 0:
            raise ValueError(f"huber needs delta > 0, got {delta!r}")
        self.delta = float(delta)

    def phi(self, z, y):
        u = z - y
        c = np.clip(u, -self.delta, self.delta)
        c *= 0.5
        u -= c  # u − c/2
        c *= 2.0
        u *= c
        return u

    def dphi(self, z, y):
        u = z - y
        np.clip(u, -self.delta, self.delta, out=u)
        return u

    def d2phi(self, z, y):
        return (np.abs(z - y) <= self.delta).astype(float)

    def lipschitz(self, R, radius=None):
        slope = self.delta if radius is None else min(self.delta, _residual_bound(R, radius))
        return slope * float(R)

    def smoothness(self, R):
        return float(R) ** 2


class Squared(GLMLoss):
    """Squared loss ℓ = (⟨w, x⟩ − y)²/2; ℓ' = u, ℓ'' = 1.

    β = R². It is not globally Lipschitz: L = (DR + 1)·R needs a radius D with ‖w‖ ≤ D.
    """

    name = "squared"
    labels = "real"

    def phi(self, z, y):
        u = z - y
        u *= u
        u *= 0.5
        return u

    def dphi(self, z, y):
        return z - y

    def d2phi(self, z, y):
        return np.ones(np.broadcast_shapes(np.shape(z), np.shape(y)))

    def lipschitz(self, R, radius=None):
        if radius is None:
            raise ValueError("the squared loss is Lipschitz only on a ball: pass radius=D (‖w‖ ≤ D)")
        return _residual_bound(R, radius) * float(R)

    def smoothness(self, R):
        return float(R) ** 2
