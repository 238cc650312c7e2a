"""The tilted empirical risk (TERM; Li, Beirami, Sanjabi & Smith 2020) of a linear-model loss.

F_t(w) = (1/t)·log((1/n) Σ_i exp(t·ℓ_i(w))), t > 0, with ℓ_i(w) = φ(⟨w, x_i⟩, y_i) a GLM loss
(:class:`dperm.losses.glm.GLMLoss`; logistic by default). t → 0 gives the mean loss (ERM), t → ∞
the largest loss; ``tilt = 0`` is the mean exactly. Lowy & Razaviyayn §5.1 make it private by
output perturbation.

Derivatives, with softmax weights p_i = exp(t ℓ_i)/Σ_j exp(t ℓ_j) (computed with the largest
t·ℓ_i subtracted first, so nothing overflows):

* ∇F_t = Σ p_i ∇ℓ_i = Xᵀ(p ⊙ φ'(z));
* ∇²F_t = Σ p_i ∇²ℓ_i + t·(Σ p_i ∇ℓ_i ∇ℓ_iᵀ − ∇F_t ∇F_tᵀ), so the Hessian-vector product is
  Xᵀ(p ⊙ (φ'' + t φ'²) ⊙ Xv) − t·∇F_t (∇F_t·v).

Constants on ‖x‖ ≤ R: the gradient is a convex combination of the ∇ℓ_i, so F_t is L-Lipschitz
with L the base loss's constant. The covariance term is positive semi-definite and at most
Σ p_i ‖∇ℓ_i‖² ≤ L² in every direction, so F_t is (β + t·L²)-smooth (β the base loss's
smoothness): our derivation of Lowy & Razaviyayn's Lemma 5.3. F_t is convex when every ℓ_i is
(log-sum-exp is convex and increasing in each argument). A ridge (λ/2)‖w‖² added by
:class:`dperm.problem.Problem` is the tilt of the regularised per-example losses, since tilting
commutes with adding the same function to every ℓ_i.

F_t is not a mean of per-example losses, so ``per_example_value``/``per_example_grad`` (what
clipping mechanisms need) are refused; ``component_values`` gives the ℓ_i. Products are with a
dense X or, for one weight vector, the problem's sparse copy of X (``accepts_sparse``); the loss
is not a :class:`GLMLoss`, since Newton's GLM Hessian does not apply to it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse


def _scores(w, X):
    """⟨w, x_i⟩ for a dense X or (one weight vector) a SciPy sparse one."""
    return np.asarray(X @ w) if scipy.sparse.issparse(X) else w @ X.T


def _times(r, X):
    """r @ X, i.e. Xᵀr, for a dense or sparse X."""
    return np.asarray(X.T @ r) if scipy.sparse.issparse(X) else r @ X


class Tilted:
    """F_t of a GLM ``base`` loss (a loss name with its parameters, or a loss object; default:
    logistic with {0,1} labels); ``tilt`` = t ≥ 0."""

    name = "tilted"
    accepts_sparse = True  # X may be a CSR matrix for one weight vector (Problem._products)

    def __init__(self, tilt: float = 1.0, base="logistic", **base_params):
        from .catalog import get_loss

        tilt = float(tilt)
        if not (np.isfinite(tilt) and tilt >= 0):
            raise ValueError(f"tilted needs a finite tilt t >= 0; got tilt={tilt!r}")
        self.tilt = tilt
        self.base = get_loss(base, **base_params) if isinstance(base, str) else base
        if not hasattr(self.base, "dphi"):
            raise ValueError(f"tilted needs a linear-model (GLM) base loss; got {self.base!r}")
        self.labels = self.base.labels
        self.convex = getattr(self.base, "convex", False)
        self.smooth = getattr(self.base, "smooth", False)

    # -- per-component quantities ----------------------------------------------------------------
    def component_values(self, w, X, y):
        """ℓ_i(w) for every row: ``(n,)`` or ``(draws, n)``."""
        return self.base.per_example_value(w, X, y)

    def weights(self, w, X, y):
        """(softmax weights p_i ∝ exp(t ℓ_i), ℓ_i, scores z): the tilt's weights on the rows."""
        z = _scores(w, X)
        losses = self.base.phi(z, y)
        if self.tilt == 0.0:
            p = np.full(losses.shape, 1.0 / losses.shape[-1])
        else:
            a = self.tilt * losses
            a -= a.max(axis=-1, keepdims=True)
            p = np.exp(a)
            p /= p.sum(axis=-1, keepdims=True)
        return p, losses, z

    # -- the objective -----------------------------------------------------------------------------
    def value(self, w, X, y):
        """F_t(w): float or ``(draws,)``."""
        losses = self.base.phi(_scores(w, X), y)
        if self.tilt == 0.0:
            return losses.mean(axis=-1)
        a = self.tilt * losses
        top = a.max(axis=-1)
        return (top + np.log(np.exp(a - top[..., None]).mean(axis=-1))) / self.tilt

    def grad(self, w, X, y):
        """∇F_t(w) = Σ p_i φ'(z_i) x_i."""
        p, _, z = self.weights(w, X, y)
        return _times(p * self.base.dphi(z, y), X)

    def value_and_grad(self, w, X, y):
        p, losses, z = self.weights(w, X, y)
        if self.tilt == 0.0:
            value = losses.mean(axis=-1)
        else:
            a = self.tilt * losses
            top = a.max(axis=-1)
            value = (top + np.log(np.exp(a - top[..., None]).mean(axis=-1))) / self.tilt
        return value, _times(p * self.base.dphi(z, y), X)

    def hvp(self, w, v, X, y):
        """∇²F_t(w)·v = Xᵀ(p ⊙ (φ'' + tφ'²) ⊙ Xv) − t·∇F_t(∇F_t·v)."""
        p, _, z = self.weights(w, X, y)
        d = self.base.dphi(z, y)
        g = _times(p * d, X)
        xv = _scores(v, X)
        out = _times(p * (self.base.d2phi(z, y) + self.tilt * d * d) * xv, X)
        out -= self.tilt * g * np.sum(g * v, axis=-1, keepdims=np.ndim(v) > 1)
        return out

    def per_example_value(self, w, X, y):
        raise TypeError("the tilted objective is not a mean of per-example losses; use component_values")

    def per_example_grad(self, w, X, y):
        raise TypeError("the tilted objective is not a mean of per-example losses: no per-example gradients")

    def clipped_grad_sum(self, w, X, y, clip, row_norms=None):
        raise TypeError("the tilted objective is not a mean of per-example losses: nothing to clip")

    # -- constants on {‖x‖ ≤ R} ------------------------------------------------------------------------
    def lipschitz(self, R, radius=None):
        """L of F_t: the base loss's (∇F_t is a convex combination of the ∇ℓ_i)."""
        return self.base.lipschitz(R, radius)

    def smoothness(self, R):
        """β_t = β + t·L² (β, L the base loss's constants at R)."""
        return self.base.smoothness(R) + self.tilt * self.base.lipschitz(R) ** 2

    def range_width(self, R, radius):
        """sup − inf of the base loss over ‖x‖ ≤ R, ‖w‖ ≤ radius and both labels: the M with
        ℓ_i(w) − ℓ_j(w) ≤ M for all rows i, j and every w of the ball (the scores ⟨w, x⟩ fill
        [−R·radius, R·radius]). Logistic: exactly R·radius."""
        return loss_range(self.base, R, radius)

    # -- labels and metrics ------------------------------------------------------------------------
    def check_labels(self, y):
        self.base.check_labels(y)

    def predict(self, w, X):
        return self.base.predict(w, X)

    def accuracy(self, w, X, y):
        return self.base.accuracy(w, X, y)

    def __repr__(self):
        return f"Tilted(tilt={self.tilt!r}, base={self.base!r})"


def loss_range(loss, R, radius, grid: int = 4001) -> float:
    """sup − inf of a GLM loss φ(z, y) over scores |z| ≤ R·radius and every label value (a dense
    grid of scores plus its end points; exact for losses monotone in z, such as the logistic)."""
    bound = float(R) * float(radius)
    z = np.linspace(-bound, bound, grid)
    labels = {"01": (0.0, 1.0), "pm1": (-1.0, 1.0)}.get(loss.labels)
    if labels is None:
        raise ValueError(f"loss_range needs a classification loss; got labels {loss.labels!r}")
    values = np.concatenate([loss.phi(z, np.full_like(z, y)) for y in labels])
    return float(values.max() - values.min())
