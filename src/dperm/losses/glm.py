"""Shared machinery of the linear-model (GLM) losses ℓ_i(w) = φ(⟨w, x_i⟩, y_i).

Every quantity reduces to the scores z = X·w and the scalar derivatives φ', φ'' (e.g. Hastie,
Tibshirani & Friedman, *Elements of Statistical Learning*, §4.4), so each costs one or two
matrix products with X and O(n) elementwise work:

* mean value (1/n) Σ φ(z_i, y_i); gradient (1/n) Xᵀ φ'(z); per-example gradient φ'(z_i)·x_i;
* Hessian-vector product (1/n) Xᵀ (φ''(z) ⊙ X v);
* clipped gradient sum Σ_i clip_C(φ'(z_i) x_i) = Xᵀ (φ'(z) · C / max(C, |φ'(z)|·‖x_i‖)),
  because ‖φ'(z_i) x_i‖ = |φ'(z_i)|·‖x_i‖ — the n×p per-example matrix is never formed.

Draws: ``w`` may be ``(p,)`` or ``(draws, p)``. Scores are ``w @ X.T``, i.e. ``(n,)`` or one
BLAS-3 product giving ``(draws, n)``; gradients are ``r @ X``. Values come back as a float or
``(draws,)``, gradients as ``(p,)`` or ``(draws, p)``.

Sparse rows: ``value``, ``grad``, ``value_and_grad`` and ``hvp`` also accept X as a SciPy CSR
matrix (``dperm.problem.Problem._products`` hands one over for one-hot data), whose
products cost O(nnz) instead of O(n·p); the sums are the same up to their order.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse

from .numerics import scratch

LABEL_FORMS = ("01", "pm1", "real")


class NotSmoothError(ValueError):
    """Raised when a smoothness constant is asked of a loss that has none (e.g. the hinge)."""


def row_norms(X: np.ndarray) -> np.ndarray:
    """‖x_i‖ for every row; precompute once and pass to ``clipped_grad_sum`` on hot paths."""
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def check_label_form(y, form: str, name: str = "labels") -> None:
    """Raise ValueError unless ``y`` is a finite 1-D array in label form ``form``."""
    y = np.asarray(y)
    if y.ndim != 1 or not np.all(np.isfinite(y)):
        raise ValueError(f"{name}: labels must be a finite 1-D array")
    allowed = {"01": (0.0, 1.0), "pm1": (-1.0, 1.0)}.get(form)
    if allowed is not None and not np.all(np.isin(y, allowed)):
        raise ValueError(f"{name}: labels must be in {set(allowed)} (form {form!r})")


def clipped_sum(d, X, norms, clip, out):
    """Σ_i clip_C(φ'_i x_i) = C·Σ_i φ'_i / max(C, |φ'_i|‖x_i‖) · x_i from the derivatives ``d``
    (φ'_i) and the row norms; ``out`` (same shape as ``d``) is scratch. Rows with zero gradient
    contribute zero (the divisor is ≥ C). Shared by every GLM clipped-sum path, so they agree
    bit for bit."""
    s = np.abs(d, out=out)
    s *= norms  # ‖∇ℓ_i‖
    np.maximum(s, clip, out=s)
    np.divide(d, s, out=s)  # φ'_i / max(C, ‖∇ℓ_i‖); times C below
    g = s @ X
    g *= clip
    return g


class GLMLoss:
    """Base class: subclasses define ``phi``, ``dphi``, ``d2phi`` on scores z (last axis = rows).

    These three return fresh arrays and leave ``z`` alone; the model-level methods hold the
    scores in a scratch buffer and let ``dphi_overwrite`` reuse it.
    """

    name = ""
    labels = "real"  # label form expected: "01", "pm1" or "real"
    convex = True
    smooth = True

    # -- scalar kernels, overridden by every loss -------------------------------------------
    def phi(self, z, y):  # pragma: no cover - abstract
        raise NotImplementedError

    def dphi(self, z, y):  # pragma: no cover - abstract
        raise NotImplementedError

    def d2phi(self, z, y):  # pragma: no cover - abstract
        raise NotImplementedError

    def _sum_phi_dphi(self, z, y, out):
        """(Σ φ over the last axis, φ'); may use ``out`` for φ'. Logistic overrides to share work."""
        return self.phi(z, y).sum(axis=-1), self.dphi(z, y)

    def _sum_phi(self, z, y):
        return self.phi(z, y).sum(axis=-1)

    def dphi_overwrite(self, z, y):
        """φ'(z), allowed to overwrite the scratch scores ``z``."""
        return self.dphi(z, y)

    # -- model-level API --------------------------------------------------------------------
    @staticmethod
    def scores(w, X):
        """z = ⟨w, x_i⟩: ``(n,)`` for one draw, ``(draws, n)`` for a matrix of draws."""
        return w @ X.T

    @staticmethod
    def _scratch_scores(w, X, name="z"):
        # Scores are temporaries of every method below: a reused buffer saves page faults.
        if scipy.sparse.issparse(X):
            return np.asarray(X @ w) if np.ndim(w) == 1 else np.asarray(X @ np.transpose(w)).T
        return np.matmul(w, X.T, out=scratch(name, np.shape(w)[:-1] + X.shape[:1]))

    @staticmethod
    def _times_X(r, X):
        """r @ X for r ``(n,)`` or ``(draws, n)``: gradients and Hessian-vector products."""
        if scipy.sparse.issparse(X):
            return np.asarray(X.T @ r) if r.ndim == 1 else np.asarray(X.T @ r.T).T
        return r @ X

    def value(self, w, X, y):
        """Mean loss (1/n) Σ ℓ_i(w)."""
        return self._sum_phi(self._scratch_scores(w, X), y) / X.shape[0]

    def grad(self, w, X, y):
        """Mean gradient (1/n) Σ ∇ℓ_i(w) = (1/n) Xᵀ φ'(z)."""
        g = self._times_X(self.dphi_overwrite(self._scratch_scores(w, X), y), X)
        g /= X.shape[0]
        return g

    def value_and_grad(self, w, X, y):
        """(value, grad) from one pass over the scores."""
        z = self._scratch_scores(w, X)
        total, d = self._sum_phi_dphi(z, y, scratch("d", z.shape))
        g = self._times_X(d, X)
        g /= X.shape[0]
        return total / X.shape[0], g

    def per_example_value(self, w, X, y):
        """ℓ_i(w) for every row: ``(n,)`` or ``(draws, n)``."""
        return self.phi(self._scratch_scores(w, X), y)

    def per_example_grad(self, w, X, y):
        """∇ℓ_i(w) = φ'(z_i)·x_i: ``(n, p)`` or ``(draws, n, p)`` — materialised, use on batches."""
        return self.dphi_overwrite(self._scratch_scores(w, X), y)[..., None] * X

    def hvp(self, w, v, X, y):
        """∇²F(w)·v = (1/n) Xᵀ (φ''(z) ⊙ X v); ``v`` has the shape of ``w``."""
        c = self.d2phi(self._scratch_scores(w, X), y)
        c *= self._scratch_scores(v, X, "zv")
        g = self._times_X(c, X)
        g /= X.shape[0]
        return g

    def clipped_grad_sum(self, w, X, y, clip, row_norms=None):
        """Σ_i clip_C(∇ℓ_i(w)), clip_C(g) = g·min(1, C/‖g‖), without forming per-example rows.

        ``row_norms`` (‖x_i‖, e.g. from :func:`row_norms`) saves a pass over X when given.
        Rows with zero gradient contribute zero (no division by zero: the divisor is ≥ C).
        """
        if not clip > 0:
            raise ValueError(f"clip must be positive, got {clip!r}")
        d = self.dphi_overwrite(self._scratch_scores(w, X), y)
        nrm = np.sqrt(np.einsum("ij,ij->i", X, X)) if row_norms is None else row_norms
        return clipped_sum(d, X, nrm, clip, scratch("c", d.shape))

    # -- constants on {‖x‖ ≤ R} ---------------------------------------------------------------
    def lipschitz(self, R, radius=None):
        """Lipschitz constant in w of every ℓ_i when ‖x_i‖ ≤ R (and ‖w‖ ≤ radius, if needed)."""
        raise NotImplementedError

    def smoothness(self, R):
        """β such that ∇ℓ_i is β-Lipschitz in w whenever ‖x_i‖ ≤ R."""
        raise NotImplementedError

    # -- labels and metrics -------------------------------------------------------------------
    def check_labels(self, y):
        """Raise ValueError unless ``y`` is 1-D, finite and in this loss's label form."""
        check_label_form(y, self.labels, self.name)

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({params})"


class MarginClassifier:
    """Accuracy for ±1-label margin losses (the DP-AGD code's SVM rule): correct iff
    y·⟨w, x⟩ > 0."""

    def predict(self, w, X):
        """sign(⟨w, x⟩) in {−1, +1}, ties (0) mapped to +1."""
        return np.where(w @ X.T >= 0, 1.0, -1.0)

    def accuracy(self, w, X, y):
        """Fraction of rows with y·⟨w, x⟩ > 0 (a zero score counts as wrong)."""
        return np.mean(y * (w @ X.T) > 0, axis=-1)
