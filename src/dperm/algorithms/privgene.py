"""PrivGene (Zhang, Xiao, Yang, Zhang & Winslett, SIGMOD 2013) as simplified in the DP-AGD
authors' code (Lee & Kifer 2018's baseline; `algo/privgene.py`).

Algorithm: start from the parent w = 0 and mutation scale s = 0.5; in each of r iterations score
the 2p candidates w ± s·e_j (j = 0..p−1, bias included), select one with the exponential
mechanism, make it the parent and shrink s ← 0.95·s. Output: the last parent.

Utilities (the code's, with φ the loss as a function of the score t = ⟨w, x⟩):
LR:  u(w) = Σ_i [y_i t_i − log(1 + e^{t_i})] = −Σ_i φ(t_i)             (C = 1, no ridge);
SVM: u(w) = −(C Σ_i max(0, 1 − y_i t_i) + ½‖w_{1:}‖²)                     (C = 10; bias = column 0).
(``problem.l2`` is not used: the utilities carry their own ridge, as in the code. Any linear-model
loss works; its |φ'| bound, ``loss.lipschitz(1)``, scales the sensitivity below.)

Sensitivity (our derivation, checked for both utilities and both adjacencies): the exponential
mechanism's probabilities are unchanged when the parent's utility is subtracted from every
score, so the relevant function is v_k(D) = u_k(D) − u_parent(D). Candidate k differs from the
parent in one coordinate j by ±s, so one row changes its score t_i by s·x_ij, |x_ij| ≤ B (the
public ``feature_bound``, default 1: the min–max scaled features and the bias; entries are
clipped to [−B, B] so the bound is enforced). Logistic, hinge and Huber hinge are 1-Lipschitz in
t (|φ'| ≤ 1; LR: |y − σ(t)| ≤ 1), so one row moves v_k by at most C·s·B; the ridge term does not
depend on the data and cancels. Replace-one therefore changes v_k by ≤ 2CsB and add/remove by
≤ CsB. ``Δu = 2CsB`` (the code's 2Cs) makes every selection ε_iter-DP under replace-one and, a
fortiori, under add/remove — for full batches and for both kinds of mini-batch
(docs/privacy.md#minibatch-sensitivity): a Poisson batch moves by an added/removed row (or a
replaced one, under replace-one), a fixed-size batch drawn without replacement by a replaced row
(2CsB). With ``adjacency="add-remove"`` the tight Δu = CsB is used for full and Poisson batches and
2CsB for fixed-size ones (the doubling of docs/privacy.md#minibatch-sensitivity). Default:
replace-one with 2CsB, the code's numbers.

Accounting: each selection is ε_iter-DP, hence ε_iter²/2-zCDP (Bun & Steinke 2016, Prop. 1.4); r of
them compose to r·ε_iter²/2 = ρ = zcdp_from_dp(ε, δ), so ε_iter = √(2ρ/r), and ρ-zCDP gives
(ε, δ)-DP. ``composition="best"`` instead takes the larger of √(2ρ/r) and ε/r (basic composition of
pure-DP steps, also valid; better when r is small); δ = 0 always uses ε/r.
Mini-batches (KDDCup99: B = 40,000 in the paper) only save computation: no amplification is
claimed, each iteration still pays ε_iter.

Iterations: r = max(round(n·ε/c), 1), c = 800 (code; docs/deviations.md#privgene-iterations), with
Python 2 rounding (half away from zero) as the code ran; ``iterations`` overrides r. r depends on n,
which is public under replace-one; under add/remove n is itself private (neighbours differ in
size), so ``adjacency="add-remove"`` requires an explicit ``iterations`` (the paper treated n as
public: docs/privacy.md#objpert-add-remove-n).

Cost: the 2p candidate scores differ from the parent's only where x_ij ≠ 0, so one iteration
evaluates the loss change at the 2·nnz(X) shifted margins t_i ± s·x_ij and sums it per column
(``np.add.reduceat`` over the column-ordered non-zeros) — O(nnz) instead of the reference's
O(2p·n·p); no loop over candidates. For LR the change is log1p(σ(t)(e^{±s·x} − 1)) ∓ s·x·y
(no cancellation, e^{±s·x} − 1 looked up per distinct x); for the hinge a few max operations.
In a column whose non-zeros all hold one value (one-hot columns: 9 of Adult's 13 entries per
row) that change depends on the row alone, so it is computed once per row and looked up per
entry; mini-batches gather compact entries (one-byte columns, two-byte value codes). Both do the
same operations on the same numbers and sum each column in the same order: the scores, hence the
selections, are those of the plain entry-by-entry computation to the bit (tests).
"""

from __future__ import annotations

import math

import numpy as np

from ..losses import GLMLoss, Hinge, HuberHinge, Logistic
from ..privacy import exponential_mechanism, zcdp_from_dp
from ..privacy.budget_steps import steps_for_budget
from ..privacy.selection import RdpStatement
from ..privacy.validation import check_real
from .audit_cases import AuditCase
from .base import FitResult, Privacy, draw_rngs
from .domains import NON_NEGATIVE, POSITIVE, POSITIVE_INT, UNIT, finite_epsilon, one_of, optional
from .dp_sgd.engine import poisson_batch
from .registry import register

SAMPLINGS = ("poisson", "fixed")
ADJACENCY_CLAIMS = ("replace-one", "add-remove")
COMPOSITIONS = ("zcdp", "best")


def privgene_iterations(n: int, epsilon: float, c: float = 800.0) -> int:
    """r = max(round(n·ε/c), 1) (DP-AGD `run_privgene_*`; docs/deviations.md#privgene-iterations)."""
    return steps_for_budget(n, epsilon, c)


def default_fitness_weight(loss) -> float:
    """C of the utility: 10 for the SVM (hinge-type) losses, 1 otherwise (LR)."""
    return 10.0 if isinstance(loss, (Hinge, HuberHinge)) else 1.0


def default_ridge(loss) -> float:
    """Weight of ½‖w_{1:}‖² in the utility: 1 for the SVM, 0 for LR (as the code)."""
    return 1.0 if isinstance(loss, (Hinge, HuberHinge)) else 0.0


def score_sensitivity(C: float, s: float, feature_bound: float, slope: float, *,
                      adjacency: str = "replace-one", sampling: str | None = None) -> float:
    """Δu of v_k = u_k − u_parent: 2·C·s·B·slope, or half of it for add/remove on full or
    Poisson batches (module docstring). ``slope`` bounds |φ'| (1 for LR and the hinges)."""
    one_row = C * s * feature_bound * slope
    if adjacency == "add-remove" and sampling != "fixed":
        return one_row
    return 2.0 * one_row


def _single_value_first(cols: np.ndarray, vals: np.ndarray, counts: np.ndarray, n: int):
    """(column order, entries in the leading columns, their value): the columns whose non-zeros
    all hold one value v first (one-hot columns, v = 1; the v held by the most entries), then
    the rest, each group in column order. In those columns a row's loss change is the same, so
    :func:`relative_scores` computes it once per row; worth it once they hold more entries than
    half the rows (Adult: 9 of 13 entries per row). ``cols`` sorted, ``counts`` per column."""
    p = counts.size
    nonempty = np.flatnonzero(counts)
    plain = (np.arange(p), 0, None)
    if nonempty.size == 0:
        return plain
    seg = (np.cumsum(counts) - counts)[nonempty]
    lo, hi = np.minimum.reduceat(vals, seg), np.maximum.reduceat(vals, seg)
    one = lo == hi
    if not one.any():
        return plain
    values, which = np.unique(lo[one], return_inverse=True)
    v = values[np.argmax(np.bincount(which.ravel(), weights=counts[nonempty][one]))]
    lead = np.zeros(p, dtype=bool)
    lead[nonempty[one & (lo == v)]] = True
    held = int(counts[lead].sum())
    if 2 * held <= n:
        return plain
    return np.concatenate([np.flatnonzero(lead), np.flatnonzero(~lead)]), held, float(v)


def _value_table(vals: np.ndarray):
    """(distinct values, each entry's index into them), or (None, None) when the values are too
    many for a table to pay (more than max(4096, entries/16))."""
    uniq, inv = np.unique(vals, return_inverse=True)
    return (uniq, inv.ravel()) if uniq.size <= max(4096, vals.size // 16) else (None, None)


class _ColumnEntries:
    """What :class:`_Nonzeros` needs of a dense block's X alone: its non-zeros in column order,
    the columns whose non-zeros all equal ``single`` first (:func:`_single_value_first`; their
    ``n_single`` entries lead), each column's entries in row order, so that every column sum adds
    the same numbers in the same order as in plain column order; and, made when first asked,
    the table of distinct values. Made once per training fold and kept for every fit on it
    (``Problem.rows_cached``: 80 ms per fit on an Adult fold, 60 fits per job)."""

    def __init__(self, X: np.ndarray):
        n, p = X.shape
        cols, rows = np.nonzero(X.T)  # column-major order: sorted by column
        vals = X[rows, cols]
        counts = np.bincount(cols, minlength=p)
        order, self.n_single, self.single = _single_value_first(cols, vals, counts, n)
        if self.n_single:
            rank = np.empty(p, dtype=np.intp)
            rank[order] = np.arange(p)
            moved = np.argsort(rank[cols], kind="stable")  # stable: rows stay in order within a column
            rows, vals = rows[moved], vals[moved]
        counts = counts[order]
        nonempty = counts > 0
        self.rows, self.vals, self.p = rows, vals, p
        self.starts = (np.cumsum(counts) - counts)[nonempty]
        self.sum_cols = order[nonempty]  # the column each segment sums
        self._table = None

    @property
    def nbytes(self) -> int:
        """Bytes held, counting the table as made: its index array and its distinct values are
        each at most one word per entry."""
        return sum(a.nbytes for a in (self.rows, self.vals, self.starts, self.sum_cols)) + 2 * self.vals.nbytes

    def table(self):
        """:func:`_value_table` of the entries, made when first asked."""
        if self._table is None:
            self._table = _value_table(self.vals)
        return self._table


class _Nonzeros:
    """The non-zero entries of a data block (rows, cols, vals), with the labels of their rows and
    three scratch buffers (no page faults per iteration). Built from a dense block (through its
    :class:`_ColumnEntries`), the entries are in column order, the one-valued columns first, and
    per-column sums are segment sums (``reduceat``); built from a mini-batch's entries
    (:meth:`from_entries`), they are in row order and summed by ``bincount``.
    ``lookup``: tabulate e^{±δ} − 1 per distinct value (worth it for a block used many times)."""

    def __init__(self, X: np.ndarray, y: np.ndarray, loss, lookup: bool = True,
                 columns: _ColumnEntries | None = None):
        c = _ColumnEntries(X) if columns is None else columns
        self.starts, self.sum_cols, self.n_single, self.single = c.starts, c.sum_cols, c.n_single, c.single
        table = c.table() if lookup and isinstance(loss, Logistic) else None
        self._build(None, c.rows, c.vals, y[c.rows], c.p, loss, table)

    @classmethod
    def from_entries(cls, cols, rows, vals, y, p, loss, table=None):
        """The structure from entries in any order: column indices ``cols``, block row indices
        ``rows``, values, and ``y`` the label of each entry's row (:class:`_RowEntries`).
        ``table`` = (distinct values, each entry's code into them), when the caller has one."""
        self = cls.__new__(cls)
        self.starts = None  # column sums by bincount
        self.n_single, self.single = 0, None
        self._build(cols, rows, vals, y, p, loss, table)
        return self

    def _build(self, cols, rows, vals, y, p, loss, table=None):
        self.cols, self.rows, self.vals, self.y, self.p = cols, rows, vals, y, p
        self.buf = (np.empty(vals.size), np.empty(vals.size), np.empty(vals.size))
        if isinstance(loss, Logistic):
            # Σ_i target_i x_ij, and e^{±δ} − 1 looked up per distinct value of x (one-hot data
            # has few): the per-iteration cost is two log1p per entry and no other transcendental.
            target = self.y if loss.labels == "01" else 0.5 * (self.y + 1.0)
            self.xty = self.column_sums(target * self.vals)
            self.uniq, self.inv = table if table is not None else (None, None)
        elif isinstance(loss, Hinge):
            self.yv = self.y * self.vals

    def column_sums(self, v: np.ndarray) -> np.ndarray:
        if self.starts is None:
            return np.bincount(self.cols, weights=v, minlength=self.p)
        out = np.zeros(self.p)
        if self.starts.size:
            out[self.sum_cols] = np.add.reduceat(v, self.starts)
        return out


def _index_type(count: int) -> np.dtype:
    """The smallest unsigned integer type holding 0..count−1: indices gathered per batch entry
    move fewer bytes (a batch's gathers, not its arithmetic, dominate a KDDCup99 iteration)."""
    return np.min_scalar_type(max(int(count) - 1, 0))


class _RowEntries:
    """The non-zeros of the whole data, kept once per training fold, from which each
    mini-batch's :class:`_Nonzeros` is cut without scanning the batch's dense rows (``np.nonzero``
    of a 40,000 × 119 block costs ~0.1 s on KDDCup99, and PrivGene takes up to ~800 batches per run).

    Row-major (CSR-like: ``start`` of each row's run in ``cols``/``codes``), so a batch's entries
    are a few contiguous runs gathered in O(nnz of the batch); their column sums are taken by
    ``bincount``, so they need no sort. The scores equal those of the dense construction
    ``_Nonzeros(X[rows], y[rows])`` up to the order of summation (a test compares them). Also
    column-major (``col_*``), so the margins X·w of all rows follow a one-coordinate move in
    O(nnz of that column) instead of a product with the batch.

    Compact: column indices in the smallest integer type (one byte for p ≤ 256) and, where the
    data have few distinct values (one-hot and min–max scaled columns: 17,406 on KDDCup99),
    each value as a code into the table ``uniq`` (two bytes), so a batch gathers 3 bytes per
    entry instead of 16, and e^{±δ} − 1 is computed per distinct value, not per entry; the
    values looked up are the same floats, so the scores are the same to the bit."""

    def __init__(self, X: np.ndarray):
        n, p = X.shape
        rows, cols = np.nonzero(X)  # row-major order
        vals = X[rows, cols]
        self.p = p
        self.start = np.searchsorted(rows, np.arange(n + 1))
        self.cols = cols.astype(_index_type(p))
        uniq, inv = _value_table(vals)
        if uniq is not None:
            self.uniq, self.codes, self.vals = uniq, inv.astype(_index_type(uniq.size)), None
        else:
            self.uniq, self.codes, self.vals = None, None, vals
        order = np.argsort(cols, kind="stable")
        self.col_rows = rows[order].astype(_index_type(n))
        self.col_codes = None if self.codes is None else self.codes[order]
        self.col_vals = vals[order] if self.codes is None else None
        self.col_start = np.searchsorted(cols[order], np.arange(p + 1))

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.start, self.cols, self.uniq, self.codes, self.vals, self.col_rows,
                                      self.col_codes, self.col_vals, self.col_start) if a is not None)

    def batch(self, rows: np.ndarray, y_rows: np.ndarray, loss) -> _Nonzeros:
        """The non-zeros of X[rows] in row order, rows numbered 0..len(rows)−1 as in the block."""
        first, counts = self.start[rows], self.start[rows + 1] - self.start[rows]
        offsets = np.cumsum(counts) - counts  # where each batch row's run begins in the output
        entry = np.arange(int(counts.sum())) + np.repeat(first - offsets, counts)
        local = np.repeat(np.arange(rows.size), counts)
        cols = self.cols[entry].astype(np.intp)  # bincount's index type, converted once for its sums
        if self.codes is None:
            return _Nonzeros.from_entries(cols, local, self.vals[entry], y_rows[local], self.p, loss)
        codes = self.codes[entry]
        return _Nonzeros.from_entries(cols, local, self.uniq[codes], y_rows[local], self.p, loss,
                                      table=(self.uniq, codes))

    def move(self, margins: np.ndarray, j: int, delta: float) -> None:
        """margins += delta·X[:, j], over the non-zeros of column j only."""
        lo, hi = self.col_start[j], self.col_start[j + 1]
        vals = self.col_vals[lo:hi] if self.col_codes is None else self.uniq[self.col_codes[lo:hi]]
        margins[self.col_rows[lo:hi]] += delta * vals


def _logistic_shift_sums(nz: _Nonzeros, margins: np.ndarray, s: float) -> np.ndarray:
    """Σ_i [φ(t_i ± s·x_ij) − φ(t_i)] per column for the logistic loss, without cancellation:
    softplus(t + δ) − softplus(t) = log1p(σ(t)(e^δ − 1)); the linear part is −δ·target."""
    with np.errstate(over="ignore"):
        sig = np.exp(-margins)
    sig += 1.0
    np.reciprocal(sig, out=sig)  # σ(t) per row of the block
    up, down, sig_rows = nz.buf
    m = nz.n_single
    if m:
        # the leading entries all hold x = single: log1p(σ(t)(e^{±s·x} − 1)) once per row, then
        # looked up per entry (the same operations on the same numbers as entry by entry)
        e1_up = np.expm1(np.full(1, s * nz.single))
        e1_down = -e1_up / (1.0 + e1_up)
        row_up, row_down = np.multiply(e1_up, sig), np.multiply(e1_down, sig)
        np.log1p(row_up, out=row_up)
        np.log1p(row_down, out=row_down)
        np.take(row_up, nz.rows[:m], out=up[:m], mode="clip")
        np.take(row_down, nz.rows[:m], out=down[:m], mode="clip")
    rest_up, rest_down, rest_sig, rest_rows = up[m:], down[m:], sig_rows[m:], nz.rows[m:]
    if nz.uniq is not None:
        e_up = np.expm1(s * nz.uniq)  # e^{δ} − 1
        e_down = -e_up / (1.0 + e_up)  # e^{−δ} − 1 ∈ (−1, 0]
        # mode="clip" skips the bounds-error path (indices are valid by construction): 4× faster
        np.take(e_up, nz.inv[m:], out=rest_up, mode="clip")
        np.take(e_down, nz.inv[m:], out=rest_down, mode="clip")
    else:
        np.multiply(nz.vals[m:], s, out=rest_up)
        np.expm1(rest_up, out=rest_up)
        np.add(rest_up, 1.0, out=rest_down)
        np.divide(rest_up, rest_down, out=rest_down)
        np.negative(rest_down, out=rest_down)
    np.take(sig, rest_rows, out=rest_sig, mode="clip")
    rest_up *= rest_sig
    np.log1p(rest_up, out=rest_up)
    rest_down *= rest_sig
    np.log1p(rest_down, out=rest_down)
    lin = s * nz.xty
    return np.concatenate([nz.column_sums(up) - lin, nz.column_sums(down) + lin])


def _hinge_shift_sums(nz: _Nonzeros, margins: np.ndarray, y: np.ndarray, s: float) -> np.ndarray:
    """Σ_i [h(t_i ± s·x_ij) − h(t_i)] per column for the hinge h(t) = max(0, 1 − y t)."""
    a = y * margins
    np.subtract(1.0, a, out=a)  # 1 − y t per row
    base_rows = np.maximum(a, 0.0)
    up, down, _ = nz.buf
    m = nz.n_single
    if m:
        # the leading entries all hold x = single: the change is a function of the row alone
        yv = y * nz.single
        row_up, row_down = np.multiply(yv, -s), np.multiply(yv, s)
        for row in (row_up, row_down):
            row += a
            np.maximum(row, 0.0, out=row)
            row -= base_rows
        np.take(row_up, nz.rows[:m], out=up[:m], mode="clip")
        np.take(row_down, nz.rows[:m], out=down[:m], mode="clip")
    rest_rows, rest_up, rest_down, rest_yv = nz.rows[m:], up[m:], down[m:], nz.yv[m:]
    base = base_rows[rest_rows]
    a = a[rest_rows]
    np.multiply(rest_yv, -s, out=rest_up)
    rest_up += a
    np.maximum(rest_up, 0.0, out=rest_up)
    rest_up -= base
    np.multiply(rest_yv, s, out=rest_down)
    rest_down += a
    np.maximum(rest_down, 0.0, out=rest_down)
    rest_down -= base
    return np.concatenate([nz.column_sums(up), nz.column_sums(down)])


def relative_scores(loss, nz: _Nonzeros, margins: np.ndarray, y: np.ndarray, parent: np.ndarray,
                    s: float, C: float, ridge: float) -> np.ndarray:
    """v_k = u(parent ± s·e_j) − u(parent) for all 2p candidates: first +s·e_0..+s·e_{p−1},
    then −s·e_0..−s·e_{p−1}. ``margins`` = X·parent on the block ``nz`` was built from."""
    if isinstance(loss, Logistic):
        data = _logistic_shift_sums(nz, margins, s)
    elif isinstance(loss, Hinge):
        data = _hinge_shift_sums(nz, margins, y, s)
    else:
        base = loss.phi(margins, y)[nz.rows]
        t = margins[nz.rows]
        step = s * nz.vals
        up = loss.phi(t + step, nz.y)
        up -= base
        down = loss.phi(t - step, nz.y)
        down -= base
        data = np.concatenate([nz.column_sums(up), nz.column_sums(down)])
    scores = -C * data
    if ridge:
        # ½((w_j ± s)² − w_j²) = ±s·w_j + s²/2 on coordinates 1..p−1 (the bias is not penalised)
        shift = s * parent[1:]
        scores[1:nz.p] -= ridge * (shift + 0.5 * s * s)
        scores[nz.p + 1:] -= ridge * (-shift + 0.5 * s * s)
    return scores


def candidate(parent: np.ndarray, k: int, s: float) -> np.ndarray:
    """The candidate with index k in the order of :func:`relative_scores`."""
    p = parent.size
    w = parent.copy()
    w[k % p] += s if k < p else -s
    return w


def iteration_budget(n: int, epsilon: float, delta: float, iterations, c: float, composition: str):
    """(r, ε_iter, ρ, ε_zcdp): the iteration count, each selection's pure-DP budget, the zCDP
    budget and the per-selection ε it allows (module docstring)."""
    r = privgene_iterations(n, epsilon, c) if iterations is None else int(iterations)
    rho = zcdp_from_dp(epsilon, delta) if delta > 0 else 0.0
    eps_zcdp = math.sqrt(2.0 * rho / r) if delta > 0 else 0.0
    eps_iter = eps_zcdp if composition == "zcdp" and delta > 0 else max(eps_zcdp, epsilon / r)
    return r, eps_iter, rho, eps_zcdp


def selection_trial(problem, epsilon: float, delta: float, hyper: dict):
    """One ``privgene`` fit as a trial of private selection (docs/privacy.md#private-selection), at
    (``epsilon``, the cell's ``delta``): r selections, each ε_iter-DP, so r·ε_iter-DP (basic
    composition) and r·ε_iter²/2-zCDP (Bun & Steinke 2016, Prop. 1.4 and composition)."""
    if hyper.get("iterations") is None and hyper.get("adjacency", "replace-one") == "add-remove":
        raise ValueError("privgene under add/remove needs an explicit iterations=r "
                         "(docs/privacy.md#objpert-add-remove-n)")
    r, eps_iter, _, _ = iteration_budget(problem.n, epsilon, delta, hyper.get("iterations"),
                                         hyper.get("c", 800.0), hyper.get("composition", "zcdp"))
    return Privacy(epsilon, delta), RdpStatement(rho=0.5 * r * eps_iter ** 2, epsilon=r * eps_iter,
                                                 adjacency=hyper.get("adjacency", "replace-one"))


def one_selection_audit() -> list[AuditCase]:
    """One selection between w = ±s (p = 1, hinge, C = 10, s = 0.5), whose two scores move
    apart by the full 2Δu when the differing row's label flips (replace-one: the hinge's slope is
    ±1 at the parent w = 0): the selection's logit moves by ε_iter = ε (one iteration, basic
    composition). Eight rows of label −1 on the same feature set the logit near −4ε so that the
    rarer choice carries the privacy loss (randomised response at its tail); the statistic is the
    released w."""
    from ..losses import Hinge
    from ..problem import Problem
    from .base import Privacy

    n, m = 20, 8
    X, y = np.zeros((n, 1)), np.where(np.arange(n) % 2 == 0, -1.0, 1.0)
    X[:m, 0], y[:m] = 1.0, -1.0
    X[-1, 0] = 1.0
    y_d, y_p = y.copy(), y.copy()
    y_d[-1], y_p[-1] = -1.0, 1.0
    d, d_prime = Problem(X, y_d, Hinge(), public_n=n), Problem(X, y_p, Hinge(), public_n=n)
    return [AuditCase("one selection whose two scores move apart by the sensitivity", d, d_prime, Privacy(1.0, 1e-5),
                      {"iterations": 1, "composition": "best"}, statistic=lambda W: np.asarray(W)[:, 0], runs=250_000)]


@register("privgene", rdp=selection_trial, audit=one_selection_audit,
          domains={"iterations": optional(POSITIVE_INT), "c": POSITIVE, "C": optional(POSITIVE),
                   "ridge": optional(NON_NEGATIVE), "initial_scale": POSITIVE, "shrink": UNIT,
                   "feature_bound": POSITIVE, "batch_size": optional(POSITIVE_INT), "sampling": one_of(*SAMPLINGS),
                   "adjacency": one_of(*ADJACENCY_CLAIMS), "composition": one_of(*COMPOSITIONS)},
          needs=(finite_epsilon,),
          size_bounds=("batch_size",),
          description="PrivGene (DP-AGD simplification): exponential mechanism over "
                                  "±s·e_j mutations, zCDP composition")
def fit_privgene(problem, privacy: Privacy, rng, draws: int = 1, *, iterations: int | None = None,
                 c: float = 800.0, C: float | None = None, ridge: float | None = None,
                 initial_scale: float = 0.5, shrink: float = 0.95, feature_bound: float = 1.0,
                 batch_size: int | None = None, sampling: str = "poisson",
                 adjacency: str = "replace-one", composition: str = "zcdp"):
    loss, n, p = problem.loss, problem.n, problem.p
    if not isinstance(loss, GLMLoss):
        raise ValueError(f"privgene needs a linear-model loss (margins t = ⟨w, x⟩); got loss {loss!r}")
    eps, delta = float(privacy.epsilon), float(privacy.delta)
    if not privacy.is_private:
        raise ValueError(f"privgene needs a finite epsilon; got epsilon={privacy.epsilon!r}")
    check_real(c, "c", low=0.0)
    check_real(initial_scale, "initial_scale", low=0.0)
    check_real(shrink, "shrink", low=0.0, high=1.0, high_open=False)
    check_real(feature_bound, "feature_bound", low=0.0)
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}; got sampling={sampling!r}")
    if adjacency not in ADJACENCY_CLAIMS:
        raise ValueError(f"adjacency must be one of {ADJACENCY_CLAIMS}; got adjacency={adjacency!r}")
    if composition not in COMPOSITIONS:
        raise ValueError(f"composition must be one of {COMPOSITIONS}; got composition={composition!r}")
    if batch_size is not None and not (isinstance(batch_size, (int, np.integer)) and 0 < batch_size <= n):
        raise ValueError(f"batch_size must be None (full data) or an integer in [1, n={n}]; "
                         f"got batch_size={batch_size!r}")
    if iterations is None and adjacency == "add-remove":
        raise ValueError("privgene under add/remove needs an explicit iterations=r: the default "
                         "r = round(n*epsilon/c) reads the row count, which add/remove adjacency keeps private "
                         "(docs/privacy.md#objpert-add-remove-n)")
    if iterations is not None and not (isinstance(iterations, (int, np.integer)) and iterations >= 1):
        raise ValueError(f"iterations must be a positive integer or None; got iterations={iterations!r}")
    C = default_fitness_weight(loss) if C is None else check_real(C, "C", low=0.0)
    ridge = default_ridge(loss) if ridge is None else check_real(ridge, "ridge", low=0.0, low_open=False)
    slope = float(loss.lipschitz(1.0))  # |φ'| bound: the loss's Lipschitz constant at ‖x‖ ≤ 1

    # Per-iteration budget (module docstring).
    notes = []
    r, eps_iter, rho, eps_zcdp = iteration_budget(n, eps, delta, iterations, c, composition)
    if delta == 0:
        notes.append("delta = 0: basic composition of pure-DP selections, epsilon_iter = epsilon/r")

    X = problem.X
    if np.abs(X).max(initial=0.0) > feature_bound:  # enforce the public bound (per-entry clip)
        X = np.clip(X, -feature_bound, feature_bound)
    y = problem.y
    # the non-zeros, made once per training fold and kept for the job's other cells when X is the
    # fold's own (not a clipped copy) and they are not too large (Problem.rows_cached): 1.8 s for
    # a KDDCup99 fold's row entries (51 MB kept), 80 ms for an Adult fold's column entries
    def per_fold(key, make):
        return problem.rows_cached(key, make, nbytes=lambda made: made.nbytes) if X is problem.X else make()

    full = entries = None
    if batch_size is None:
        full = _Nonzeros(X, y, loss, columns=per_fold("privgene-columns", lambda: _ColumnEntries(X)))
    else:
        entries = per_fold("privgene-rows", lambda: _RowEntries(X))
    mode = None if batch_size is None else sampling

    weights = np.zeros((draws, p))
    for d, child in enumerate(draw_rngs(rng, draws)):
        parent = weights[d]
        s = float(initial_scale)
        margins = np.zeros(n)  # X·parent on all rows, following the one-coordinate moves
        for _ in range(r):
            if full is not None:
                nz, block_y, t = full, y, margins
            else:
                rows = (poisson_batch(child, n, batch_size / problem.n_public) if sampling == "poisson"
                        else np.sort(child.choice(n, size=batch_size, replace=False)))
                # a fresh block per iteration, its values coded into the fold's table
                nz, block_y, t = entries.batch(rows, y[rows], loss), y[rows], margins[rows]
            scores = relative_scores(loss, nz, t, block_y, parent, s, C, ridge)
            sens = score_sensitivity(C, s, feature_bound, slope, adjacency=adjacency, sampling=mode)
            k = int(exponential_mechanism(scores, sensitivity=sens, epsilon=eps_iter, rng=child))
            j, sign = k % p, (1.0 if k < p else -1.0)
            parent[j] += sign * s
            if full is not None:
                margins += (sign * s) * X[:, j]
            else:
                entries.move(margins, j, sign * s)
            s *= shrink
    return FitResult(
        weights=weights, epsilon_spent=eps, delta_spent=delta, adjacency=adjacency,
        grad_evals=0.0, iterations=r, notes=notes,
        accounting=("zCDP composition of exponential mechanisms; Bun & Steinke, Prop. 1.3" if eps_iter == eps_zcdp
                    else "basic composition of pure-DP exponential mechanisms"),
        extra={"iterations": r, "epsilon_per_iteration": eps_iter, "rho": rho, "C": C, "ridge": ridge,
               "initial_scale": float(initial_scale), "shrink": float(shrink),
               "initial_sensitivity": score_sensitivity(C, initial_scale, feature_bound, slope,
                                                        adjacency=adjacency, sampling=mode),
               "batch_size": batch_size, "sampling": mode,
               # candidate utilities evaluated, in full-data loss-evaluation equivalents
               "loss_evals": r * 2 * p * (1.0 if batch_size is None else batch_size / n)})
