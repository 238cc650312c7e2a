"""Logistic loss in both label forms.

{0,1} labels (DP-AGD code form): ℓ = log(1 + e^{z}) − y·z, ∇ℓ = (σ(z) − y)·x, z = ⟨w, x⟩.
±1 labels (paper form): ℓ = log(1 + e^{−y z}). Both are the same function once ±1 labels are
mapped to t = (1 + y)/2 ∈ {0, 1}, so one stable kernel (``numerics``) serves both.
"""

from __future__ import annotations

import numpy as np

from . import numerics as nm
from .glm import GLMLoss


class Logistic(GLMLoss):
    """Logistic regression loss; ``labels="01"`` (default) or ``"pm1"``.

    Constants on ‖x‖ ≤ R: |φ'| ≤ 1 ⇒ L = R; φ'' ≤ 1/4 ⇒ β = R²/4.
    """

    name = "logistic"

    def __init__(self, labels: str = "01"):
        if labels not in ("01", "pm1"):
            raise ValueError(f"logistic labels must be '01' or 'pm1', got {labels!r}")
        self.labels = labels

    def _targets(self, y):
        """(t, s): the {0,1} target and s = 1 − 2t (= −y for ±1 labels)."""
        return nm.logistic_targets(y, self.labels)

    def target01(self, y):
        """The {0,1} target t alone (y itself for 01 labels: no copy on the gradient path)."""
        return y if self.labels == "01" else self._targets(y)[0]

    def phi(self, z, y):
        return nm.logistic_phi(z, *self._targets(y))

    def dphi(self, z, y):
        return nm.logistic_dphi(z, self.target01(y))

    def d2phi(self, z, y):
        return nm.logistic_d2phi(z)

    def dphi_overwrite(self, z, y):
        return nm.logistic_dphi(z, self.target01(y), out=z)

    def _sum_phi_dphi(self, z, y, out):
        return nm.logistic_sum_phi_dphi(z, *self._targets(y), out=out)

    def _sum_phi(self, z, y):
        # The chunked-product sum of log terms is 2–3× cheaper than log1p elementwise.
        return nm.logistic_sum_phi(z, *self._targets(y))

    def lipschitz(self, R, radius=None):
        return float(R)

    def smoothness(self, R):
        return float(R) ** 2 / 4.0

    # The DP-AGD code's LR rule: predict sign(⟨w, x⟩) with 0 counted as +1.
    def predict(self, w, X):
        """Predicted label in this loss's form (1/0 or +1/−1); a zero score predicts positive."""
        pos = w @ X.T >= 0
        return pos.astype(float) if self.labels == "01" else np.where(pos, 1.0, -1.0)

    def accuracy(self, w, X, y):
        """Fraction of rows whose predicted label equals y."""
        return np.mean((w @ X.T >= 0) == (y > 0), axis=-1)
