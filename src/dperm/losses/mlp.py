"""One-hidden-layer MLP for binary classification with a logistic output (as in Kang et al.'s
experiments).

Model: a = W₁x + b₁, s = tanh(a), o = ⟨w₂, s⟩ + b₂, ℓ = log(1 + e^{o}) − t·o (t ∈ {0,1}; ±1
labels map to t = (1 + y)/2 as for :class:`Logistic`). Hidden width h defaults to the input
dimension d. Flat parameter layout (length P = h(d + 2) + 1):

    θ = [ W₁ row-major (h·d: row j = weights into hidden unit j) | b₁ (h) | w₂ (h) | b₂ (1) ]

``init`` draws W₁ and w₂ Glorot-uniform (Glorot & Bengio 2010, the tanh default), biases 0.
Gradients by backpropagation; Hessian-vector products by Pearlmutter's R-operator
(Pearlmutter 1994). Per-example gradient norms without materialising per-example gradients:
‖∂ℓ_i/∂W₁‖_F = ‖δa_i‖·‖x_i‖ for the outer product δa_i x_iᵀ (Goodfellow 2015,
arXiv:1510.01799), so the clipped sum is one backward pass with δo_i rescaled by
min(1, C/‖∇ℓ_i‖). Draws: θ of shape (draws, P) share one product X @ W₁ᵀ over all draws.
Rows are processed in chunks of at most ``chunk_elements`` hidden activations to bound memory.
The loss is non-convex: no Lipschitz or smoothness constant is offered.
"""

from __future__ import annotations

import threading

import numpy as np
from scipy.linalg.blas import dgemm

from . import numerics as nm
from .arrays import read_only
from .glm import check_label_form

# the last read-only X seen and [X, 1] (per thread; not in an MLP's attributes, which are its
# parameters: caches keyed by the loss read them)
_AUGMENTED = threading.local()


class MLP:
    """tanh hidden layer of width ``hidden`` (None → input dimension), logistic output."""

    name = "mlp"
    convex = False
    smooth = True

    def __init__(self, labels: str = "01", hidden: int | None = None, chunk_elements: int = 1 << 19):
        if labels not in ("01", "pm1"):
            raise ValueError(f"mlp labels must be '01' or 'pm1', got {labels!r}")
        self.labels = labels
        self.hidden = hidden
        self.chunk_elements = int(chunk_elements)

    # -- parameters ---------------------------------------------------------------------------
    def width(self, d: int) -> int:
        return d if self.hidden is None else int(self.hidden)

    def n_params(self, d: int) -> int:
        """P = h(d + 2) + 1 (= (d + 1)² at the default width h = d)."""
        return self.width(d) * (d + 2) + 1

    def init(self, rng: np.random.Generator, n_features: int, draws: int | None = None):
        """Glorot-uniform W₁ ~ U(±√(6/(d+h))), w₂ ~ U(±√(6/(h+1))), zero biases."""
        d, h = n_features, self.width(n_features)
        lead = () if draws is None else (draws,)
        theta = np.zeros(lead + (self.n_params(d),))
        a1, a2 = np.sqrt(6.0 / (d + h)), np.sqrt(6.0 / (h + 1))
        theta[..., : h * d] = rng.uniform(-a1, a1, size=lead + (h * d,))
        theta[..., h * d + h : h * d + 2 * h] = rng.uniform(-a2, a2, size=lead + (h,))
        return theta

    def _unpack(self, theta2, d):
        k, P = theta2.shape
        h = self.width(d)
        if P != self.n_params(d):
            raise ValueError(f"mlp: θ has {P} entries, expected h(d+2)+1 = {self.n_params(d)}")
        hd = h * d
        # (draws·h, d): one BLAS-3 product X @ W₁ᵀ evaluates every hidden unit of every draw.
        W1 = theta2[:, :hd].reshape(k * h, d)
        return W1, theta2[:, hd : hd + h], theta2[:, hd + h : hd + 2 * h], theta2[:, -1], h

    @staticmethod
    def _pack(gW1, gb1, gw2, gb2):
        k = gb1.shape[0]
        return np.concatenate([gW1.reshape(k, -1), gb1, gw2, gb2[:, None]], axis=1)

    def _chunks(self, n, width):
        step = max(1, self.chunk_elements // max(width, 1))
        return [slice(i, min(i + step, n)) for i in range(0, n, step)]

    def _targets(self, y):
        return nm.logistic_targets(y, self.labels)

    # -- forward / backward on one chunk of rows -------------------------------------------------
    @staticmethod
    def _forward(Xc, W1, b1, w2, b2):
        """S = tanh(X W₁ᵀ + b₁) as (rows, draws, h) and outputs O as (draws, rows)."""
        k, h = b1.shape
        S = (Xc @ W1.T).reshape(Xc.shape[0], k, h)
        S += b1
        np.tanh(S, out=S)
        O = np.einsum("nkh,kh->kn", S, w2)
        O += b2[:, None]
        return S, O

    @staticmethod
    def _backprop(S, w2, dO):
        """δa = δo · w₂ ⊙ (1 − s²), shape (rows, draws, h)."""
        dA = S * S
        np.subtract(1.0, dA, out=dA)
        dA *= w2
        dA *= dO.T[:, :, None]
        return dA

    def _collect(self, Xc, S, dA, dO):
        """Σ over the chunk's rows of the per-example gradients given δa and δo."""
        n, k, h = S.shape
        gW1 = dA.reshape(n, k * h).T @ Xc
        return self._pack(gW1, dA.sum(axis=0), np.einsum("kn,nkh->kh", dO, S), dO.sum(axis=-1))

    def _run(self, theta, X, y, per_chunk):
        """Call ``per_chunk(sl, Xc, lab, S, O, params)`` over row chunks, lab = the chunk's
        (t, s) label vectors (see ``numerics.logistic_targets``); True if θ was 1-D."""
        theta = np.asarray(theta, dtype=float)
        squeeze = theta.ndim == 1
        Th = theta[None] if squeeze else theta
        params = self._unpack(Th, X.shape[1])
        t, s = self._targets(y)
        for sl in self._chunks(X.shape[0], Th.shape[0] * params[-1]):
            S, O = self._forward(X[sl], *params[:4])
            per_chunk(sl, X[sl], (t[sl], s[sl]), S, O, params)
        return squeeze

    # -- the gradient passes (value_and_grad, clipped_grad_sum) ----------------------------------
    # Backpropagation with as few passes over a chunk's (rows, draws, h) activations as numpy
    # allows, in reused scratch buffers (no fresh temporaries per chunk). With q = s² and
    # c = δo (clipped: δo·min(1, C/‖∇ℓ_i‖)), δa = c·w₂ ⊙ (1 − q), so
    #   ∂W̃₁ = Σ_n δa x̃ᵀ = w₂ ⊙ (Σ_n c x̃ᵀ − Σ_n (c q) x̃ᵀ)   (x̃ = [x, 1]: the bias b₁ rides along)
    #   ‖δa‖² = c²·(Σ_h w₂² − 2 Σ_h w₂² q + Σ_h w₂² q²),      ‖s‖² = Σ_h q
    # The passes: S = tanh(X̃ W̃₁ᵀ) (the bias folded into the product), o = Σ_h s w₂ (read), q = s²
    # (write), for the clipped sum the norm sums (two reads: Σ q and Σ w₂² q together as a batched
    # product, Σ w₂² q² apart), q ← c·q (write), then the product (c q)ᵀ X̃ and ∂w₂ = Σ_n c s
    # (read): two writes and two to four reads, against six writes and six reads, two of them
    # into fresh temporaries, before. The expansion of ‖δa‖² cancels where q ≈ 1 (absolute error
    # ~1e-16·Σ w₂², against a squared norm ≥ δo²) and is clamped at 0.

    def _augmented_rows(self, X):
        """[X, 1] for every row, kept for the last X seen when X cannot change (read-only, as the
        protocol's training folds): the many passes of an L-BFGS solve then slice it; None for a
        writeable X (each chunk is augmented in a scratch buffer instead)."""
        cached = getattr(_AUGMENTED, "rows", None)
        if cached is not None and cached[0] is X:
            return cached[1]
        if not read_only(X):
            return None
        Xa = np.empty((X.shape[0], X.shape[1] + 1))
        Xa[:, :-1] = X
        Xa[:, -1] = 1.0
        _AUGMENTED.rows = (X, Xa)
        return Xa

    @staticmethod
    def _augmented(Xc):
        """[X_c, 1] in a reused buffer."""
        n, d = Xc.shape
        Xa = nm.scratch("mlp.xa", (n, d + 1))
        Xa[:, :d] = Xc
        Xa[:, d] = 1.0
        return Xa

    def _grad_chunks(self, theta, X, y, clip=None, sq=None, row_weights=None):
        """(Σ ℓ_i, Σ ∇ℓ_i) over the rows — or, with ``clip``, (None, Σ clip_C(∇ℓ_i)·weight_i) —
        per draw, the draws of θ (k, P) in one pass over the chunks."""
        k, P = theta.shape
        n, d = X.shape
        h = self.width(d)
        hd = h * d
        W1a = np.empty((k * h, d + 1))  # [W₁, b₁]: the bias as the weight of a constant input
        W1a[:, :d] = theta[:, :hd].reshape(k * h, d)
        W1a[:, d] = theta[:, hd:hd + h].reshape(-1)
        w2, b2 = theta[:, hd + h:hd + 2 * h], theta[:, -1]
        w2sq = w2 * w2
        ones_w2sq = np.stack([np.ones_like(w2), w2sq], axis=-1)  # (k, h, 2)
        t_all, s_all = self._targets(y)
        Xa_all = self._augmented_rows(X)
        value = np.zeros(k)
        G1, Gc = np.zeros((k * h, d + 1)), np.zeros((k, d + 1))  # Σ (c q) x̃ᵀ and Σ c x̃ᵀ
        gw2, gb2 = np.zeros((k, h)), np.zeros(k)
        for sl in self._chunks(n, k * h):
            Xa = self._augmented(X[sl]) if Xa_all is None else Xa_all[sl]
            m = Xa.shape[0]
            S = np.matmul(Xa, W1a.T, out=nm.scratch("mlp.s", (m, k * h))).reshape(m, k, h)
            np.tanh(S, out=S)
            St = S.transpose(1, 0, 2)  # (k, m, h): per-draw products as one batched BLAS call
            O = np.matmul(St, w2[:, :, None])[:, :, 0]
            O += b2[:, None]
            t, s = t_all[sl], s_all[sl]
            if clip is None:
                v, c = nm.logistic_sum_phi_dphi(O, t, s, out=np.empty_like(O))
                value += v
            else:
                c = nm.logistic_dphi(O, t, out=O)
            Q = np.multiply(S, S, out=nm.scratch("mlp.q", (m, k, h)))
            if clip is not None:
                sums = np.matmul(Q.transpose(1, 0, 2), ones_w2sq)  # (k, m, 2): Σ_h q, Σ_h w₂² q
                nd = np.einsum("nkh,nkh,kh->kn", Q, Q, w2sq)
                nd -= 2.0 * sums[:, :, 1]
                nd += w2sq.sum(axis=-1)[:, None]
                np.maximum(nd, 0.0, out=nd)  # Σ_h w₂²(1 − q)², rounding clamped
                norm2 = nd * (sq[sl] + 1.0)
                norm2 += sums[:, :, 0]
                norm2 += 1.0
                norm2 *= c * c
                norm = np.sqrt(norm2, out=norm2)
                scale = clip / np.maximum(norm, clip)  # min(1, C/‖∇ℓ_i‖), no 0/0
                if row_weights is not None:
                    scale *= row_weights(sl, norm)
                c *= scale
            gw2 += np.matmul(c[:, None, :], St)[:, 0, :]
            Gc += c @ Xa
            gb2 += c.sum(axis=-1)
            Q *= c.T[:, :, None]
            # G1 += (c q)ᵀ X̃, accumulated by BLAS (as G1ᵀ += X̃ᵀ (c q): Fortran views, no copies)
            out = dgemm(1.0, Xa.T, Q.reshape(m, k * h).T, beta=1.0, c=G1.T, trans_b=1, overwrite_c=1)
            if not np.may_share_memory(out, G1):  # pragma: no cover - a copy would lose the sum
                raise RuntimeError("dgemm did not accumulate in place")
        gW1a = (Gc[:, None, :] - G1.reshape(k, h, d + 1)) * w2[:, :, None]
        grad = np.concatenate([gW1a[:, :, :d].reshape(k, hd), gW1a[:, :, d], gw2, gb2[:, None]], axis=1)
        return (None if clip is not None else value), grad

    # -- public API (same protocol as the GLM losses) -------------------------------------------
    def _value_grad(self, theta, X, y, with_grad: bool):
        if with_grad:
            theta = np.asarray(theta, dtype=float)
            squeeze = theta.ndim == 1
            Th = theta[None] if squeeze else theta
            self._unpack(Th, X.shape[1])  # checks the layout
            v, g = self._grad_chunks(Th, X, y)
            v, g = v / X.shape[0], g / X.shape[0]
            return (v[0], g[0]) if squeeze else (v, g)
        acc = {"v": 0.0}

        def step(sl, Xc, lab, S, O, params):
            acc["v"] += nm.logistic_sum_phi(O, *lab)

        squeeze = self._run(theta, X, y, step)
        v = acc["v"] / X.shape[0]
        return (v[0], None) if squeeze else (v, None)

    def value_and_grad(self, theta, X, y):
        """Mean loss and its gradient: float/(P,) or (draws,)/(draws, P)."""
        return self._value_grad(theta, X, y, True)

    def value(self, theta, X, y):
        """Mean loss (1/n) Σ ℓ_i(θ): float or (draws,)."""
        return self._value_grad(theta, X, y, False)[0]

    def grad(self, theta, X, y):
        """Mean gradient: (P,) or (draws, P)."""
        return self.value_and_grad(theta, X, y)[1]

    def per_example_value(self, theta, X, y):
        """ℓ_i(θ): (n,) or (draws, n)."""
        out = []
        squeeze = self._run(theta, X, y, lambda sl, Xc, lab, S, O, p: out.append(nm.logistic_phi(O, *lab)))
        vals = np.concatenate(out, axis=-1)
        return vals[0] if squeeze else vals

    def per_example_grad(self, theta, X, y):
        """∇ℓ_i(θ) materialised: (n, P) or (draws, n, P) — for small batches only."""
        n, d = X.shape
        blocks = []

        def step(sl, Xc, lab, S, O, params):
            dO = nm.logistic_dphi(O, lab[0])
            dA = self._backprop(S, params[2], dO)
            nc, k, h = S.shape
            gW1 = (dA[..., None] * Xc[:, None, None, :]).reshape(nc, k, h * d)
            blk = np.concatenate([gW1, dA, dO.T[:, :, None] * S, dO.T[:, :, None]], axis=-1)
            blocks.append(blk.transpose(1, 0, 2))

        squeeze = self._run(theta, X, y, step)
        G = np.concatenate(blocks, axis=1)
        return G[0] if squeeze else G

    def clipped_grad_sum(self, theta, X, y, clip, row_norms=None, row_weights=None):
        """Σ_i clip_C(∇ℓ_i(θ)) with ‖∇ℓ_i‖² = ‖δa_i‖²(‖x_i‖² + 1) + δo_i²(‖s_i‖² + 1).

        ``row_weights(rows, norms)``, when given, is called once per chunk of rows (a slice) with
        the per-example gradient norms ‖∇ℓ_i(θ_d)‖ of that chunk, shape (draws, rows), and returns
        multipliers of the same shape applied to the clipped gradients (e.g. 0 to leave a row
        out): a per-example decision from each row's own norm in the same single pass.
        """
        if not clip > 0:
            raise ValueError(f"clip must be positive, got {clip!r}")
        sq = np.einsum("ij,ij->i", X, X) if row_norms is None else np.square(row_norms)
        theta = np.asarray(theta, dtype=float)
        squeeze = theta.ndim == 1
        Th = theta[None] if squeeze else theta
        self._unpack(Th, X.shape[1])  # checks the layout
        g = self._grad_chunks(Th, X, y, clip=clip, sq=sq, row_weights=row_weights)[1]
        return g[0] if squeeze else g

    def hvp(self, theta, v, X, y):
        """∇²F(θ)·v by the R-operator: forward-mode derivative of backprop along v."""
        V = np.asarray(v, dtype=float)
        V = V[None] if V.ndim == 1 else V
        V1, c1, v2, c2, _ = self._unpack(V, X.shape[1])
        acc = {}

        def step(sl, Xc, lab, S, O, params):
            w2 = params[2]
            nc, k, h = S.shape
            D1 = 1.0 - S * S  # tanh'
            Rs = (Xc @ V1.T).reshape(nc, k, h)
            Rs += c1
            Rs *= D1  # R{s} = (1 − s²) ⊙ R{a}
            Ro = np.einsum("nkh,kh->kn", S, v2) + np.einsum("nkh,kh->kn", Rs, w2) + c2[:, None]
            dO = nm.logistic_dphi(O, lab[0])
            RdO = nm.logistic_d2phi(O) * Ro
            # R{δa} = R{δo} w₂ D₁ + δo v₂ D₁ − 2 δo w₂ s ⊙ R{s}
            RdA = (RdO.T[:, :, None] * w2 + dO.T[:, :, None] * v2) * D1
            RdA -= 2.0 * dO.T[:, :, None] * w2 * S * Rs
            gw2 = np.einsum("kn,nkh->kh", RdO, S) + np.einsum("kn,nkh->kh", dO, Rs)
            gW1 = RdA.reshape(nc, k * h).T @ Xc
            acc["g"] = acc.get("g", 0.0) + self._pack(gW1, RdA.sum(axis=0), gw2, RdO.sum(axis=-1))

        squeeze = self._run(theta, X, y, step)
        g = acc["g"] / X.shape[0]
        return g[0] if squeeze else g

    # -- metrics, labels, constants -------------------------------------------------------------
    def scores(self, theta, X):
        """Network outputs o (pre-sigmoid): (n,) or (draws, n)."""
        out = []
        y0 = np.zeros(X.shape[0])
        squeeze = self._run(theta, X, y0, lambda sl, Xc, lab, S, O, p: out.append(O))
        O = np.concatenate(out, axis=-1)
        return O[0] if squeeze else O

    def predict(self, theta, X):
        """Predicted label in this loss's form; o = 0 predicts positive (the DP-AGD code's LR
        rule)."""
        pos = self.scores(theta, X) >= 0
        return pos.astype(float) if self.labels == "01" else np.where(pos, 1.0, -1.0)

    def accuracy(self, theta, X, y):
        return np.mean((self.scores(theta, X) >= 0) == (y > 0), axis=-1)

    def check_labels(self, y):
        check_label_form(y, self.labels, self.name)

    def lipschitz(self, R, radius=None):
        raise NotImplementedError("the MLP loss is non-convex and has no global Lipschitz constant here")

    def smoothness(self, R):
        raise NotImplementedError("the MLP loss is non-convex and has no global smoothness constant here")

    def __repr__(self):
        return f"MLP(labels={self.labels!r}, hidden={self.hidden!r})"
