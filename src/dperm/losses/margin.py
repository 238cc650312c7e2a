"""Hinge and Huberised hinge losses on ±1 labels, written in the margin m = y·⟨w, x⟩."""

from __future__ import annotations

import numpy as np

from .glm import GLMLoss, MarginClassifier, NotSmoothError


class Hinge(MarginClassifier, GLMLoss):
    """SVM hinge ℓ = max(0, 1 − m), the loss DP-AGD uses for every SVM algorithm.

    Subgradient convention (DP-AGD code): −y·x where m < 1, else 0 (so 0 at the
    kink m = 1). The Hessian-vector product is 0, the Hessian wherever it exists. L = R; the
    hinge is not smooth, so ``smoothness`` raises :class:`NotSmoothError`.
    """

    name = "hinge"
    labels = "pm1"
    smooth = False

    def phi(self, z, y):
        out = y * z
        np.subtract(1.0, out, out=out)
        np.maximum(out, 0.0, out=out)
        return out

    def dphi(self, z, y):
        return np.where(y * z < 1.0, -y, 0.0)

    def d2phi(self, z, y):
        return np.zeros(np.broadcast_shapes(np.shape(z), np.shape(y)))

    def lipschitz(self, R, radius=None):
        return float(R)

    def smoothness(self, R):
        raise NotSmoothError("the hinge loss is not smooth; use 'huber-hinge' where β is needed")


class HuberHinge(MarginClassifier, GLMLoss):
    """Huberised hinge (Chaudhuri et al. 2011; dpml-benchmark), parameter h > 0.

    With q = 1 + h − m: ℓ = 0 (q < 0), q²/(4h) (0 ≤ q ≤ 2h), q − h (q > 2h), i.e. dpml-benchmark's
    (1−m)²/(4h) + (1−m)/2 + h/4 in the middle piece. With u = clip(q/(2h), 0, 1):
    ℓ = u·(q − h·u), dℓ/dm = −u, d²ℓ/dm² = 1/(2h) on 0 < q < 2h. Constants: L = R, β = R²/(2h).
    """

    name = "huber-hinge"
    labels = "pm1"

    def __init__(self, h: float = 0.1):
        if not h > 0:
            raise ValueError(f"huber-hinge needs h > 0, got {h!r}")
        self.h = float(h)

    def _q_u(self, z, y):
        q = y * z
        np.subtract(1.0 + self.h, q, out=q)
        u = q * (0.5 / self.h)
        np.clip(u, 0.0, 1.0, out=u)
        return q, u

    def phi(self, z, y):
        q, u = self._q_u(z, y)
        q -= self.h * u
        q *= u
        return q

    def dphi(self, z, y):
        _, u = self._q_u(z, y)
        u *= y
        np.negative(u, out=u)
        return u

    def d2phi(self, z, y):
        q = 1.0 + self.h - y * z
        return np.where((q > 0.0) & (q < 2.0 * self.h), 0.5 / self.h, 0.0)

    def lipschitz(self, R, radius=None):
        return float(R)

    def smoothness(self, R):
        return float(R) ** 2 / (2.0 * self.h)
