"""The batch-1 chains of PIDP-SGD and of its DP-SGD control, run in lockstep.

One chain per (privacy target, draw): T steps, each on one row drawn uniformly from its own
generator; a step is θ ← Π_r(θ − α(clip_G(∇ℓ(θ; z_t)) + b)) with b ~ N(0, σ²G²I), or b = 0
when the chain's influence test (:mod:`.noise_test`) passes. ``test=None`` runs no test: every
step is noisy (the DP-SGD control). The start θ̃ and the Hessians are shared by the chains of a
fit (they do not depend on ε or the seed), so a chain's output is the same as alone.

Models: logistic regression (any GLM loss) with the exact Hessian, formed and inverted once per
round; the MLP with the output-layer block of its Hessian (exact for that block: the model is a
GLM in the hidden features), the influence taken as 0 on the hidden layer
(docs/deviations.md#pidp-unknowns).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, ndtr

from ... import solvers
from ...losses import MLP, GLMLoss
from .noise_test import noise_free_probability, noise_free_test

_STARTS: dict = {}
_STARTS_KEPT = 8
_SHARED: dict = {}  # θ̃ solved once for several jobs (dperm.optimum.compute_starts), by start_key
_CHUNK = 256


def _digest(problem, *extra) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(problem.rows_digest().encode())  # X hashed once per training fold
    h.update(np.ascontiguousarray(problem.y).view(np.uint8))
    h.update(repr((type(problem.loss).__name__, sorted(vars(problem.loss).items()), problem.l2, extra)).encode())
    return h.hexdigest()


def start_key(problem, shift: float, start_iterations: int) -> str:
    """What fixes θ̃ (``start: nonprivate``): the training rows and labels, the loss, λ, the shift
    and the iteration cap."""
    return _digest(problem, shift, start_iterations)


def share_starts(starts: dict) -> None:
    """θ̃ by :func:`start_key`, solved by another process (a start file): :func:`start_point`
    returns them instead of solving again. A start it does not find there it solves itself."""
    _SHARED.update(starts)


def start_point(problem, *, start: str, shift: float, start_iterations: int) -> np.ndarray:
    """θ̃, not yet projected: ``start: nonprivate`` a **non-private** solve of F + (shift/2)‖θ‖², at
    most ``start_iterations`` iterations (a smooth GLM: damped Newton from 0, as the certified
    optima, which converges to ‖∇F‖ ≤ 10⁻⁸ in a few dozen; the MLP: L-BFGS from a public Glorot
    initialisation), ``start: zero`` the origin. Cached per data and settings within a process
    (the ε of a row share it)."""
    if start == "zero":
        return np.zeros(problem.p)
    if start != "nonprivate":
        raise ValueError(f"start must be 'nonprivate' or 'zero'; got start={start!r}")
    key = start_key(problem, shift, start_iterations)
    if key in _SHARED:
        return _SHARED[key].copy()
    if key not in _STARTS:
        shifted = _shifted(problem, shift)
        if isinstance(problem.loss, MLP):
            x0 = problem.loss.init(np.random.default_rng(0), problem.X.shape[1])
            x = solvers.lbfgs(shifted, x0, gtol=1e-6, max_iter=start_iterations, polish=False).x
        elif solvers.newton_applies(shifted):
            x = solvers.newton(shifted.value_and_grad, lambda w: solvers.glm_hessian(shifted, w), np.zeros(problem.p),
                               gtol=1e-8, max_iter=start_iterations).x
        else:
            x = solvers.lbfgs(shifted, np.zeros(problem.p), gtol=1e-8, max_iter=start_iterations).x
        _STARTS[key] = x
        while len(_STARTS) > _STARTS_KEPT:
            _STARTS.pop(next(iter(_STARTS)))
    return _STARTS[key].copy()


def _shifted(problem, shift):
    from ...problem import Problem

    return Problem(problem.X, problem.y, problem.loss, problem.l2 + shift, problem.row_norms, problem.shared)


def project(W, radius, out=None):
    """Each row of ``W`` onto the ball ‖θ‖ ≤ ``radius`` (into ``out``, which may be ``W``)."""
    norms = np.linalg.norm(W, axis=1, keepdims=True)
    return np.multiply(W, np.minimum(1.0, radius / np.maximum(norms, 1e-300)), out=out)


def _clip_scale(norms, clip):
    """min(1, C/‖g‖) per row (1 for a zero gradient or C = inf)."""
    return np.where(norms > clip, clip / np.maximum(norms, 1e-300), 1.0)


class GLMModel:
    """Logistic regression (any GLM loss): exact Hessian per round, gradients per chain."""

    def __init__(self, problem, shift):
        self.problem, self.shift = problem, shift
        self.X, self.y = problem.X, problem.y
        self.loss = problem.loss
        self.out = slice(0, problem.p)

    def hessian(self, w):
        """∇²F(w) + ζ₀I (λ included)."""
        return solvers.glm_hessian(self.problem, w, self.shift)

    def grads(self, theta, idx, clip, out=None):
        x, y = self.X[idx], self.y[idx]
        z = np.einsum("kp,kp->k", theta, x)
        g = self.loss.dphi(z, y)[:, None] * x
        return np.multiply(g, _clip_scale(np.linalg.norm(g, axis=1), clip)[:, None], out=out)

    def covered_grads(self, theta, idx, clip):
        """The clipped gradient on the coordinates the influence covers (all of them here)."""
        return self.grads(theta, idx, clip)

    def rows_covered_grads(self, w, idx, clip):
        """:meth:`covered_grads` of many rows ``idx`` at one ``w`` (p,)."""
        x = self.X[idx]
        g = self.loss.dphi(x @ w, self.y[idx])[:, None] * x
        return g * _clip_scale(np.linalg.norm(g, axis=1), clip)[:, None]


class MLPModel:
    """The MLP: output-layer block influence (module docstring), batch-1 gradients per chain."""

    def __init__(self, problem, shift):
        self.problem, self.shift = problem, shift
        self.X = problem.X
        self.t = (problem.y > 0).astype(float)
        self.d = problem.X.shape[1]
        self.h = problem.loss.width(self.d)
        hd = self.h * self.d
        self.out = slice(hd + self.h, problem.p)  # w₂ and b₂

    def _unpack(self, theta):
        h, d = self.h, self.d
        hd = h * d
        k = theta.shape[0]
        return (theta[:, :hd].reshape(k, h, d), theta[:, hd:hd + h], theta[:, hd + h:hd + 2 * h], theta[:, -1])

    def hessian(self, w):
        """The output block (1/n)Σ σ'(o_i)[s_i; 1][s_i; 1]ᵀ + (λ + ζ₀)I at ``w``."""
        n = self.problem.n
        W1, b1, w2, b2 = self._unpack(w[None])
        H = np.zeros((self.h + 1, self.h + 1))
        for start in range(0, n, 8192):
            S = np.tanh(self.X[start:start + 8192] @ W1[0].T + b1[0])
            sig = expit(S @ w2[0] + b2[0])
            F = np.hstack([S, np.ones((S.shape[0], 1))]) * np.sqrt(sig * (1.0 - sig))[:, None]
            H += F.T @ F
        H /= n
        H += (self.problem.l2 + self.shift) * np.eye(self.h + 1)
        return H

    def _forward(self, theta, idx):
        W1, b1, w2, b2 = self._unpack(theta)
        x = self.X[idx]
        S = np.tanh(np.einsum("khd,kd->kh", W1, x) + b1)
        o = np.einsum("kh,kh->k", S, w2) + b2
        return x, S, w2, expit(o) - self.t[idx]

    def _scaled(self, theta, idx, clip):
        x, S, w2, dO = self._forward(theta, idx)
        dA = dO[:, None] * w2 * (1.0 - S * S)
        sq = np.einsum("kd,kd->k", x, x)
        norm = np.sqrt(np.einsum("kh,kh->k", dA, dA) * (sq + 1.0) + dO * dO * (np.einsum("kh,kh->k", S, S) + 1.0))
        scale = _clip_scale(norm, clip)
        return x, S, dA * scale[:, None], dO * scale

    def grads(self, theta, idx, clip, out=None):
        """Clipped per-chain gradients (k, p), written block by block into ``out`` when given
        (no concatenated copy: one pass fewer over the (k, p) array per step)."""
        x, S, dA, dO = self._scaled(theta, idx, clip)
        k, (h, d) = theta.shape[0], (self.h, self.d)
        out = np.empty_like(theta) if out is None else out
        np.multiply(dA[:, :, None], x[:, None, :], out=out[:, :h * d].reshape(k, h, d))
        out[:, h * d:h * d + h] = dA
        np.multiply(dO[:, None], S, out=out[:, h * d + h:h * d + 2 * h])
        out[:, -1] = dO
        return out

    def covered_grads(self, theta, idx, clip):
        _, S, _, dO = self._scaled(theta, idx, clip)
        return np.hstack([S, np.ones((S.shape[0], 1))]) * dO[:, None]

    def rows_covered_grads(self, w, idx, clip):
        """:meth:`covered_grads` of many rows ``idx`` at one ``w`` (p,): the output-layer part of
        each row's gradient, scaled by its whole gradient's clip factor."""
        W1, b1, w2, b2 = (a[0] for a in self._unpack(w[None]))
        x = self.X[idx]
        S = np.tanh(x @ W1.T + b1)
        dO = expit(S @ w2 + b2) - self.t[idx]
        dA = dO[:, None] * w2 * (1.0 - S * S)
        sq = np.einsum("nd,nd->n", x, x)
        norm = np.sqrt(np.einsum("nh,nh->n", dA, dA) * (sq + 1.0) + dO * dO * (np.einsum("nh,nh->n", S, S) + 1.0))
        return np.hstack([S, np.ones((S.shape[0], 1))]) * (dO * _clip_scale(norm, clip))[:, None]


def make_model(problem, shift):
    if isinstance(problem.loss, MLP):
        return MLPModel(problem, shift)
    if isinstance(problem.loss, GLMLoss):
        return GLMModel(problem, shift)
    raise ValueError(f"PIDP-SGD supports GLM losses and the MLP; got {problem.loss!r}")


def contributions(model, hinv, theta, clip, chunk: int = 4096) -> np.ndarray:
    """c_z = H⁻¹·clip_G(∇ℓ(θ; z))/n on the covered coordinates, for every row z, at one ``theta``."""
    n = model.problem.n
    out = []
    for start in range(0, n, chunk):
        g = model.rows_covered_grads(theta, np.arange(start, min(n, start + chunk)), clip)
        out.append(g @ hinv / n)  # H⁻¹ is symmetric
    return np.vstack(out)


@dataclass
class InfluenceTest:
    """Per-chain constants of the test: ε₁, δ₁ (k,), σ_c (k,), the threshold (k,), E and r."""

    epsilon1: np.ndarray
    delta1: np.ndarray
    sigma_c: np.ndarray
    threshold: np.ndarray
    error: float
    radius: float


def run_chains(problem, model, rngs, theta0, *, sigma, test: InfluenceTest | None, steps, rounds, learning_rate,
               clip, radius):
    """One chain per generator from ``theta0`` (already projected); ``sigma`` (k,) the training
    noise multipliers. Returns (weights (k, p), noise-free counts (k,), exact first-round
    noise-free probabilities (k,), NaN without a test)."""
    p = problem.p
    n = problem.n
    k = len(rngs)
    theta = np.repeat(theta0[None], k, axis=0)
    g, z = np.empty_like(theta), np.empty(p)  # the step's gradients and noise, reused: no allocation per step
    free = np.zeros(k, dtype=np.int64)
    first = np.full(k, np.nan)
    local = math.ceil(steps / rounds)
    t = 0
    rounds_done = 0
    while t < steps:
        theta_g = theta.copy()
        hinv = None
        if test is not None:
            hinv = np.stack([np.linalg.inv(model.hessian(w)) for w in theta_g])
            if rounds_done == 0:  # the first round's iterate θ̃ is fixed: its probability is exact
                c_all = contributions(model, hinv[0], theta_g[0], clip)
                rest = p - c_all.shape[1]
                first = np.array([noise_free_probability(c_all, error=test.error, sigma_c=s, threshold=thr, rest=rest)
                                  for s, thr in zip(test.sigma_c, test.threshold)])
        end = min(steps, t + local)
        while t < end:
            m = min(_CHUNK, end - t)
            idx = np.stack([rng.integers(0, n, size=m) for rng in rngs], axis=1)  # (m, k)
            for j in range(m):
                ok = np.zeros(k, dtype=bool)
                if test is not None:
                    c = np.einsum("kij,kj->ki", hinv, model.covered_grads(theta_g, idx[j], clip)) / n
                    width = c.shape[1]
                    c_t = 2.0 * (c + test.error * np.sign(c)) + test.sigma_c[:, None] * np.stack(
                        [r.standard_normal(width) for r in rngs])
                    ok = noise_free_test(c_t, test.epsilon1, test.delta1, test.radius)
                    rest = p - width
                    if rest:  # the coordinates whose c is 0: all m′ noises under the threshold at once
                        prob = (2.0 * ndtr(test.threshold / test.sigma_c) - 1.0) ** rest
                        ok &= np.array([r.random() for r in rngs]) < prob
                g = model.grads(theta, idx[j], clip, out=g)
                for i in np.flatnonzero(~ok):  # the noise drawn into one buffer, scaled in place
                    g[i] += np.multiply(rngs[i].standard_normal(out=z), sigma[i] * clip, out=z)
                g *= learning_rate  # theta -= lr·g in place, the same two roundings
                theta -= g
                project(theta, radius, out=theta)
                free += ok
                t += 1
        rounds_done += 1
    return theta, free, first
