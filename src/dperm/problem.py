"""The regularised ERM problem every algorithm receives: data, loss and an explicit L2 term.

F(w) = (1/n) Σ_i ℓ(w; x_i, y_i) + (λ/2)‖w‖², λ = ``l2`` ≥ 0 on all coordinates including the
bias. Algorithms that instead add λ·w to a noisy direction (DP-AGD, the SGD baselines) use the
unregularised per-example methods (``clipped_grad_sum``, ``per_example_grad``) and add the term
themselves.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse

from .losses import GLMLoss
from .losses.arrays import read_only as _read_only

#: the one-weight-vector products use a CSR copy of X when at most this fraction of X is non-zero
#: (one-hot data: Adult 12%, KDDCup99 11%; measured 3.8× and 5.8× faster matrix-vector product
#: pairs; at BANK's and IPUMS-BR's ~30% the two were even) and X has at least SPARSE_MIN_SIZE
#: entries (below it the copy is not worth its set-up)
SPARSE_DENSITY = 0.2
# The most Problem.rows_cached keeps under one key when told the size of what it made: what is
# kept lives as long as the training fold, and a job holds all its folds (a KDDCup99 fold is
# 376 MB, an Adult fold 30 MB).
KEEP_PER_FOLD_BYTES = 64 * 2**20
SPARSE_MIN_SIZE = 1 << 18


@dataclass(eq=False)
class Problem:
    """ERM problem (X, y, loss, λ). ``w`` may be ``(p,)`` or ``(draws, p)`` everywhere.

    ``X`` is stored C-contiguous float64 (rows = examples); ``y`` must be in the label form the
    loss declares (``loss.labels``), which is checked once here rather than on every call.

    ``value``, ``grad``, ``value_and_grad`` and ``hvp`` at one weight vector (L-BFGS, Newton,
    gradient descent) multiply by a CSR copy of X when X is mostly zeros (:func:`sparse_rows`);
    at ``(draws, p)`` they stay one dense BLAS-3 product. ``shared`` is a dict that problems on
    the same rows share (the protocol keeps one per training fold) so that the copy is made once;
    X must not be changed in place after that (the protocol's folds are read-only).
    """

    X: np.ndarray
    y: np.ndarray
    loss: object
    l2: float = 0.0
    #: optional ‖x_i‖ already computed (e.g. kept from a parent problem by ``subset``)
    precomputed_row_norms: np.ndarray | None = field(default=None, repr=False)
    #: derived data of these rows (the CSR copy of X), shared by the problems made on the same rows
    shared: dict | None = field(default=None, repr=False)
    #: the row count an algorithm may treat as public (sampling rates, step counts, batch sizes);
    #: None means n itself (docs/privacy.md#public-n)
    public_n: int | None = None

    def __post_init__(self):
        self.X = np.ascontiguousarray(self.X, dtype=float)
        self.y = np.ascontiguousarray(self.y, dtype=float)
        if self.X.ndim != 2 or self.y.shape != (self.X.shape[0],):
            raise ValueError(f"X must be (n, p) and y (n,); got {self.X.shape} and {self.y.shape}")
        if not self.l2 >= 0:
            raise ValueError(f"l2 must be ≥ 0, got {self.l2!r}")
        self.l2 = float(self.l2)
        self.loss.check_labels(self.y)
        if self.precomputed_row_norms is not None and np.shape(self.precomputed_row_norms) != self.y.shape:
            raise ValueError("precomputed_row_norms must have one entry per row")

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def n_public(self) -> int:
        """The row count used where an algorithm needs one that neighbours share (a Poisson rate
        b/n, steps from epochs, a default batch size): under add/remove the true n is private,
        so a data set and its neighbour must give the same value (docs/privacy.md#public-n)."""
        return self.n if self.public_n is None else int(self.public_n)

    @property
    def p(self) -> int:
        """Number of model coordinates (for the MLP: of the flat parameter vector)."""
        n_params = getattr(self.loss, "n_params", None)
        return n_params(self.X.shape[1]) if n_params else self.X.shape[1]

    @cached_property
    def row_norms(self) -> np.ndarray:
        """‖x_i‖ for every row, computed once (used by clipping)."""
        if self.precomputed_row_norms is not None:
            return np.asarray(self.precomputed_row_norms, dtype=float)
        return np.sqrt(np.einsum("ij,ij->i", self.X, self.X))

    @cached_property
    def radius(self) -> float:
        """R = max_i ‖x_i‖, the data bound the loss constants are evaluated at."""
        return float(self.row_norms.max()) if self.n else 0.0

    def _products(self, w):
        """The matrix for products with ``w``: the CSR copy of X for one weight vector when X is
        sparse enough (:func:`sparse_rows`, made once per ``shared`` store) and the loss takes one
        (GLM losses, and losses declaring ``accepts_sparse``), else X itself."""
        if (np.ndim(w) != 1 or self.X.size < SPARSE_MIN_SIZE
                or not (isinstance(self.loss, GLMLoss) or getattr(self.loss, "accepts_sparse", False))):
            return self.X
        store = self._store()
        if "csr" not in store:
            store["csr"] = sparse_rows(self.X)
        return self.X if store["csr"] is None else store["csr"]

    def scores(self, w) -> np.ndarray:
        """z = X·w for one weight vector ``(p,)``, through the CSR copy where X is sparse
        (:meth:`_products`): one pass over the non-zeros, not over all of X."""
        return np.asarray(self._products(w) @ w)

    # -- regularised objective ------------------------------------------------------------------
    def _reg_value(self, w):
        return 0.5 * self.l2 * np.einsum("...j,...j->...", w, w)

    def value(self, w):
        """F(w): float or (draws,)."""
        return self.loss.value(w, self._products(w), self.y) + self._reg_value(w)

    def grad(self, w):
        """∇F(w) = mean loss gradient + λw."""
        g = self.loss.grad(w, self._products(w), self.y)
        if self.l2:
            g += self.l2 * w
        return g

    def value_and_grad(self, w):
        f, g = self.loss.value_and_grad(w, self._products(w), self.y)
        if self.l2:
            g += self.l2 * w
        return f + self._reg_value(w), g

    def hvp(self, w, v):
        """∇²F(w)·v = loss HVP + λv."""
        h = self.loss.hvp(w, v, self._products(w), self.y)
        if self.l2:
            h += self.l2 * v
        return h

    def batch_grad(self, w, rows):
        """(1/|B|) Σ_{i∈B} ∇ℓ_i(w) + λw for a batch of row indices (stochastic solvers)."""
        g = self.loss.grad(w, self.X[rows], self.y[rows])
        if self.l2:
            g += self.l2 * w
        return g

    # -- unregularised per-example quantities (privacy mechanisms clip these) ----------------------
    def per_example_value(self, w, rows=None):
        X, y = self._rows(rows)
        return self.loss.per_example_value(w, X, y)

    def per_example_grad(self, w, rows=None):
        X, y = self._rows(rows)
        return self.loss.per_example_grad(w, X, y)

    def clipped_grad_sum(self, w, clip, rows=None):
        """Σ_{i∈rows} clip_C(∇ℓ_i(w)) (no regulariser), using the cached row norms."""
        X, y = self._rows(rows)
        norms = self.row_norms if rows is None else self.row_norms[rows]
        return self.loss.clipped_grad_sum(w, X, y, clip, row_norms=norms)

    def with_loss(self, loss) -> Problem:
        """The same rows under another loss (labels in the form it expects are the caller's)."""
        return Problem(self.X, self.y, loss, self.l2, self.row_norms, self._store())

    def _store(self) -> dict:
        if self.shared is None:
            self.shared = {}
        return self.shared

    def rows_cached(self, key, make, nbytes=None):
        """``make()``, something derived from X alone, kept under ``key`` in the ``shared`` store
        of the problems made on these rows when X cannot change (read-only, as the protocol's
        training folds are, and every base it views read-only too): made once per store then.
        A writeable X gets ``make()`` on every call, so that a change made in place is never
        served from a stale entry. With ``nbytes`` (the size of what ``make`` returned), a result
        of more than :data:`KEEP_PER_FOLD_BYTES` is returned but not kept: made on every call."""
        if not _read_only(self.X):
            return make()
        store = self._store()
        cached = store.get(key)
        if cached is not None and cached[0] is self.X:
            return cached[1]
        value = make()
        if nbytes is None or nbytes(value) <= KEEP_PER_FOLD_BYTES:
            store[key] = (self.X, value)
        else:
            store.pop(key, None)
        return value

    def rows32(self, kept_only: bool = False) -> np.ndarray | None:
        """X in float32, read-only, kept in the ``shared`` store (:meth:`rows_cached`: made once
        per training fold). ``kept_only``: None where the copy would not be kept (a writeable X,
        or a copy over :data:`KEEP_PER_FOLD_BYTES`), for a caller that has a cheaper way than
        making a fresh copy on every call."""
        if kept_only and not (_read_only(self.X) and self.X.size * 4 <= KEEP_PER_FOLD_BYTES):
            return None

        def make():
            X32 = self.X.astype(np.float32)
            X32.flags.writeable = False
            return X32

        return self.rows_cached("rows32", make, nbytes=lambda a: a.nbytes)

    def rows_digest(self) -> str:
        """A digest of X (blake2b-128 of its shape, dtype and bytes), the key under which
        per-process caches keep what they derived from these rows (OutPert's descent paths,
        PIDP-SGD's non-private start).

        Hashing X costs a pass over it (48 ms on an Adult fold, the time of 45 gradient steps),
        so it is made once for read-only rows (:meth:`rows_cached`) and on every call for a
        writeable X."""

        def digest():
            h = hashlib.blake2b(digest_size=16)
            h.update(repr((self.X.shape, self.X.dtype.str)).encode())
            h.update(self.X.view(np.uint8))
            return h.hexdigest()

        return self.rows_cached("rows_digest", digest)

    def subset(self, rows) -> Problem:
        """The same problem on a subset of rows (e.g. a training fold)."""
        return Problem(self.X[rows], self.y[rows], self.loss, self.l2, self.row_norms[rows])

    def _rows(self, rows):
        return (self.X, self.y) if rows is None else (self.X[rows], self.y[rows])

    # -- constants --------------------------------------------------------------------------------
    @property
    def strong_convexity(self) -> float:
        """μ: λ for a convex loss; 0 for a non-convex one (no guarantee)."""
        return self.l2 if getattr(self.loss, "convex", False) else 0.0

    def smoothness(self) -> float:
        """β of F: the loss's β(R) + λ. Raises for non-smooth or non-convex losses."""
        return self.loss.smoothness(self.radius) + self.l2

    def lipschitz(self, radius=None) -> float:
        """Lipschitz constant of each unregularised ℓ_i at R = max‖x_i‖ (optionally on ‖w‖ ≤ radius).

        The regulariser is excluded: it is data-independent, so it cancels in neighbouring-data
        differences (docs/privacy.md#outpert-regulariser); add λ·radius yourself where a bound on
        ∇F itself is needed.
        """
        return self.loss.lipschitz(self.radius, radius)


def sparse_rows(X: np.ndarray):
    """X as a SciPy CSR matrix if at most ``SPARSE_DENSITY`` of its entries are non-zero, else None."""
    if np.count_nonzero(X) > SPARSE_DENSITY * X.size:
        return None
    return scipy.sparse.csr_matrix(X)
