"""Adversarially robust logistic loss against ℓ2 perturbations of the features (radius r).

An adversary moves each row x to x + v with ‖v‖ ≤ r. For a linear model the worst case has a
closed form: min_{‖v‖≤r} y⟨w, x + v⟩ = y⟨w, x⟩ − r‖w‖ (v = −r·y·w/‖w‖), so the robust loss is
the logistic loss of the robust margin,

    ℓ_i(w) = log(1 + exp(r‖w‖ − y_i⟨w, x_i⟩))   (y_i ∈ {−1, +1}),

the inner maximum of Lowy & Razaviyayn's adversarial training problem (§5.2) in closed form. It is
the logistic loss at the shifted score z̃_i = ⟨w, x_i⟩ − r·y_i·‖w‖, so the stable logistic kernels
serve it. By default every coordinate (the bias column included) may be perturbed; with
``coordinates`` = A only those may (v supported on A, the attack model of a dataset whose other
columns cannot move, such as one-hot indicators and the bias): then the worst case is
y⟨w, x⟩ − r‖w_A‖, and every formula below holds with w_A (w outside A set to 0) in the norm and
ŵ = w_A/‖w_A‖.

Convex: r‖w‖ − y⟨w, x⟩ is convex and log(1 + e^u) is convex and increasing. Gradient
∇ℓ_i = φ'(z̃_i)·(x_i − r·y_i·ŵ), ŵ = w/‖w‖, of norm ≤ ‖x_i‖ + r: L = R + r. At w = 0 the loss is
not differentiable (the kink of ‖w‖). So
the loss is not smooth (``smoothness`` raises); ``grad`` returns the least-norm subgradient there, so
w = 0 is recognised as the minimiser when it is one (weak signal, large r). Away from 0 its Hessian is
Σ σ(z̃)σ(−z̃)·a aᵀ/n + r·mean(|φ'|)·(I − ŵŵᵀ)/‖w‖ with a_i = x_i − r y_i ŵ (``hvp``), which is
what certified solvers use near a minimiser (a minimiser is never 0 once some row is classified
with positive robust margin; the certificate ‖w − w*‖ ≤ ‖g‖/μ holds for any subgradient g).

``radius = 0`` is the logistic loss. :func:`robust_accuracy` is the accuracy under the worst
attack of a given radius (a row counts as correct iff its robust margin is positive).
"""

from __future__ import annotations

import numpy as np

from .glm import NotSmoothError
from .logistic import Logistic
from .tilted import _scores, _times


def _norms(w):
    return np.linalg.norm(w, axis=-1, keepdims=np.ndim(w) > 1)


def _attacked(w, coordinates):
    """w with the coordinates outside ``coordinates`` set to 0 (w itself when None: all attacked)."""
    if coordinates is None:
        return w
    out = np.zeros_like(np.asarray(w, dtype=float))
    index = (..., list(coordinates))
    out[index] = np.asarray(w)[index]
    return out


def check_coordinates(coordinates, p: int | None = None):
    """``coordinates`` as a sorted tuple of distinct non-negative ints (< p when given), or None."""
    if coordinates is None:
        return None
    out = tuple(sorted({int(c) for c in coordinates}))
    if len(out) != len(list(coordinates)) or not out or out[0] < 0 or (p is not None and out[-1] >= p):
        raise ValueError(f"attack coordinates must be distinct column indices in [0, {p}); got {coordinates!r}")
    return out


def robust_accuracy(w, X, y, radius: float, coordinates=None) -> np.ndarray | float:
    """Fraction of rows whose worst-case margin y⟨w, x⟩ − radius·‖w_A‖ is positive (labels in
    {0, 1} or {−1, +1}; A = ``coordinates``, every coordinate when None); ``w`` may be ``(p,)``
    or ``(draws, p)``."""
    s = np.where(np.asarray(y) > 0, 1.0, -1.0)
    margins = s * np.asarray(w @ X.T) - float(radius) * _norms(_attacked(w, coordinates))
    return np.mean(margins > 0, axis=-1)


class RobustLogistic:
    """Logistic loss of the robust margin, perturbation radius ``radius``; ``labels`` "01" or "pm1";
    ``coordinates``: the attacked columns (None: all)."""

    name = "robust-logistic"
    accepts_sparse = True  # X may be a CSR matrix for one weight vector (Problem._products)
    convex = True
    smooth = False  # not differentiable at w = 0; see the module docstring

    def __init__(self, radius: float = 0.1, labels: str = "01", coordinates=None):
        radius = float(radius)
        if not (np.isfinite(radius) and radius >= 0):
            raise ValueError(f"robust-logistic needs a finite radius >= 0; got radius={radius!r}")
        self.radius = radius
        self.coordinates = check_coordinates(coordinates)
        self._logistic = Logistic(labels)
        self.labels = labels

    def _signs(self, y):
        return np.where(np.asarray(y) > 0, 1.0, -1.0)

    def _shifted(self, w, X, y):
        """(z̃ = ⟨w, x⟩ − r·y·‖w_A‖, ‖w_A‖, signs y ∈ {±1})."""
        s = self._signs(y)
        norms = _norms(_attacked(w, self.coordinates))
        return _scores(w, X) - self.radius * s * norms, norms, s

    def _unit(self, w, norms):
        """ŵ = w_A/‖w_A‖ (0 where w_A = 0)."""
        w = _attacked(w, self.coordinates)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(norms > 0, w / np.where(norms > 0, norms, 1.0), 0.0)

    def per_example_value(self, w, X, y):
        z, _, _ = self._shifted(w, X, y)
        return self._logistic.phi(z, y)

    def value(self, w, X, y):
        return self.per_example_value(w, X, y).mean(axis=-1)

    def _grad_parts(self, w, X, y):
        z, norms, s = self._shifted(w, X, y)
        d = self._logistic.dphi(z, y)  # φ'(z̃) = σ(z̃) − t, sign −y·σ(−margin)
        return z, norms, s, d

    def grad(self, w, X, y):
        """(1/n)[Xᵀφ' − r·ŵ·Σ φ'_i y_i] at w_A ≠ 0; at w_A = 0 the subgradient of least norm,
        g_s + c·v with g_s = Xᵀφ'/n, c = −r·Σ φ'_i y_i/n ≥ 0 and v in the unit ball of the attacked
        coordinates chosen against g_s's part there, g_A: that part becomes 0 when ‖g_A‖ ≤ c, else
        g_A·(1 − c/‖g_A‖). So a gradient-norm certificate also certifies a minimiser at the kink."""
        _, norms, s, d = self._grad_parts(w, X, y)
        n = X.shape[0]
        keep = np.ndim(w) > 1
        g = _times(d, X) / n
        c = -self.radius * np.sum(d * s, axis=-1, keepdims=keep) / n
        at_zero = norms == 0
        if np.any(at_zero):
            g_a = _attacked(g, self.coordinates)
            gn = np.linalg.norm(g_a, axis=-1, keepdims=keep)
            with np.errstate(invalid="ignore", divide="ignore"):
                shrink = np.where(gn > c, 1.0 - c / np.where(gn > 0, gn, 1.0), 0.0)
            g = np.where(at_zero, g - g_a + g_a * shrink, g + c * self._unit(w, norms))
            return g
        g += c * self._unit(w, norms)
        return g

    def value_and_grad(self, w, X, y):
        return self.value(w, X, y), self.grad(w, X, y)

    def per_example_grad(self, w, X, y):
        _, norms, s, d = self._grad_parts(w, X, y)
        unit = self._unit(w, norms)
        return d[..., None] * (X - self.radius * s[:, None] * unit[..., None, :])

    def hvp(self, w, v, X, y):
        """Hessian-vector product at w_A ≠ 0 (see the module docstring); at w_A = 0 the r‖w_A‖
        term's curvature is left out."""
        z, norms, s, d = self._grad_parts(w, X, y)
        n = X.shape[0]
        c = self._logistic.d2phi(z, y)
        unit = self._unit(w, norms)
        uv = np.sum(unit * v, axis=-1, keepdims=np.ndim(w) > 1)
        av = _scores(v, X) - self.radius * s * uv  # a_i·v
        cav = c * av
        out = _times(cav, X) / n
        out -= self.radius * unit * (np.sum(cav * s, axis=-1, keepdims=np.ndim(w) > 1) / n)
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = np.where(norms > 0, self.radius * np.mean(np.abs(d), axis=-1, keepdims=np.ndim(w) > 1)
                             / np.where(norms > 0, norms, 1.0), 0.0)
        out += scale * (_attacked(v, self.coordinates) - unit * uv)
        return out

    def lipschitz(self, R, radius=None):
        """L = R + r: ‖x − r y ŵ‖ ≤ ‖x‖ + r."""
        return float(R) + self.radius

    def smoothness(self, R):
        raise NotSmoothError("the robust logistic loss is not differentiable at w = 0 (the kink of r‖w‖), "
                             "so it has no global smoothness constant")

    def check_labels(self, y):
        self._logistic.check_labels(y)

    def predict(self, w, X):
        return self._logistic.predict(w, X)

    def accuracy(self, w, X, y):
        """Clean accuracy (no attack), as the logistic loss counts it."""
        return self._logistic.accuracy(w, X, y)

    def robust_accuracy(self, w, X, y, radius=None):
        return robust_accuracy(w, X, y, self.radius if radius is None else radius, self.coordinates)

    def __repr__(self):
        return f"RobustLogistic(radius={self.radius!r}, labels={self.labels!r}, coordinates={self.coordinates!r})"
