"""PrivGene: vectorised scores, score sensitivity on neighbours, EM frequencies, accounting, inputs."""

import math

import numpy as np
import pytest
from scipy import stats

from dperm import problem as problem_module
from dperm.algorithms import Privacy, get_algorithm, privgene
from dperm.algorithms.privgene import (
    _Nonzeros,
    _RowEntries,
    candidate,
    privgene_iterations,
    relative_scores,
    score_sensitivity,
)
from dperm.losses import MLP, Hinge, HuberHinge, Logistic
from dperm.privacy import exponential_mechanism_probabilities, zcdp_from_dp
from dperm.problem import Problem

FIT = get_algorithm("privgene").fit


def sparse_data(rng, n=120, p=6):
    """Bias column, one-hot-like binary columns and [0, 1] numeric columns with zeros."""
    X = rng.random((n, p))
    X[X < 0.4] = 0.0
    X[:, 0] = 1.0
    X[:, 1] = np.round(X[:, 1])
    return X


def labels(rng, loss, n):
    y = rng.integers(0, 2, n).astype(float)
    return 2 * y - 1 if loss.labels == "pm1" else y


def naive_scores(loss, X, y, parent, s, C, ridge):
    def utility(w):
        return -C * loss.per_example_value(w, X, y).sum() - ridge * 0.5 * (w[1:] @ w[1:])

    base = utility(parent)
    return np.array([utility(candidate(parent, k, s)) - base for k in range(2 * X.shape[1])])


def scores(loss, X, y, parent, s, C, ridge, lookup=True):
    return relative_scores(loss, _Nonzeros(X, y, loss, lookup), X @ parent, y, parent, s, C, ridge)


@pytest.mark.parametrize("loss", [Logistic(), Logistic("pm1"), Hinge(), HuberHinge(0.5)], ids=repr)
@pytest.mark.parametrize("ridge", [0.0, 1.0])
def test_vectorised_scores_equal_a_naive_loop(loss, ridge):
    rng = np.random.default_rng(0)
    X = sparse_data(rng)
    y = labels(rng, loss, X.shape[0])
    for scale in (0.0, 0.5, 3.0):
        parent = rng.normal(size=X.shape[1]) * scale
        want = naive_scores(loss, X, y, parent, 0.37, 2.5, ridge)
        for lookup in (True, False):  # full-data block (tabulated e^δ − 1) and mini-batch block
            got = scores(loss, X, y, parent, 0.37, 2.5, ridge, lookup)
            assert np.allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("loss", [Logistic(), Hinge(), HuberHinge(0.5)], ids=repr)
def test_batch_entries_score_as_the_dense_batch_block(loss):
    """Mini-batches are cut from the whole data's non-zeros (row order, bincount sums) instead of
    scanning the dense batch rows: the scores must be those of the dense block, whose column-order
    construction the naive loop above checks."""
    rng = np.random.default_rng(12)
    X = sparse_data(rng, n=400, p=9)
    X[7] = 0.0  # an all-zero row and an all-zero column
    X[:, 4] = 0.0
    y = labels(rng, loss, 400)
    entries = _RowEntries(X)
    for size in (1, 37, 400):
        rows = np.sort(rng.choice(400, size=size, replace=False))
        parent = rng.normal(size=9)
        block = entries.batch(rows, y[rows], loss)
        got = relative_scores(loss, block, X[rows] @ parent, y[rows], parent, 0.21, 3.0, 1.0)
        want = scores(loss, X[rows], y[rows], parent, 0.21, 3.0, 1.0, lookup=False)
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
        assert np.array_equal(np.sort(block.vals), np.sort(X[rows][X[rows] != 0]))


def one_hot_data(rng, n=300):
    """A bias, two one-hot groups (3 and 4 levels), a binary column scaled to 0.5 and numeric
    columns that sometimes hold 1.0 (not single-valued): Adult's and KDDCup99's shapes."""
    numeric = rng.random((n, 3))
    numeric[numeric < 0.3] = 0.0
    numeric[numeric > 0.9] = 1.0
    return np.column_stack([np.ones(n), np.eye(3)[rng.integers(0, 3, n)], np.eye(4)[rng.integers(0, 4, n)],
                            0.5 * rng.integers(0, 2, n), numeric])


@pytest.mark.parametrize("loss", [Logistic(), Logistic("pm1"), Hinge(), HuberHinge(0.5)], ids=repr)
@pytest.mark.parametrize("lookup", [True, False])
@pytest.mark.parametrize("numeric", [True, False], ids=["with numeric columns", "one-hot only"])
def test_single_value_columns_change_no_bit(loss, lookup, numeric, monkeypatch):
    """The one-hot columns' entries, computed once per row and looked up, must give the scores of
    the plain column-order layout to the bit (the same operations on the same numbers, each
    column summed in the same order), so that the exponential mechanism selects as before."""
    rng = np.random.default_rng(21)
    X = one_hot_data(rng)
    if not numeric:  # every entry in a one-valued column: nothing left for the per-entry path
        X = X[:, :8]
    y = labels(rng, loss, X.shape[0])
    fast = _Nonzeros(X, y, loss, lookup)
    assert fast.single == 1.0 and fast.n_single == 3 * X.shape[0]  # the bias and the two groups
    assert (fast.n_single == np.count_nonzero(X)) == (not numeric)
    monkeypatch.setattr(privgene, "_single_value_first", lambda cols, vals, counts, n: (np.arange(counts.size), 0, None))
    plain = _Nonzeros(X, y, loss, lookup)
    assert plain.n_single == 0
    for scale in (0.0, 0.4, 4.0):
        parent = rng.normal(size=X.shape[1]) * scale
        margins = X @ parent
        for s in (0.5, 0.013):
            got = relative_scores(loss, fast, margins.copy(), y, parent, s, 2.0, 1.0)
            want = relative_scores(loss, plain, margins.copy(), y, parent, s, 2.0, 1.0)
            assert np.array_equal(got, want)
            assert np.allclose(got, naive_scores(loss, X, y, parent, s, 2.0, 1.0), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("coded", [True, False], ids=["value codes", "too many values for codes"])
@pytest.mark.parametrize("loss", [Logistic(), Hinge()], ids=repr)
def test_compact_batches_change_no_bit(loss, coded):
    """A batch cut from the compact entries (one-byte columns, values as codes into the distinct
    values, or the values themselves where they are too many to code) scores exactly as one cut
    from the raw float64 entries, and moves the margins as the dense product does."""
    rng = np.random.default_rng(22)
    X = one_hot_data(rng, n=500)
    if not coded:  # 5,000 distinct values among 6,000-odd entries: more than max(4096, nnz/16)
        X = np.column_stack([X, rng.random((500, 10))])
    y = labels(rng, loss, 500)
    entries = _RowEntries(X)
    assert entries.cols.dtype == np.uint8 and (entries.codes is not None) == coded
    margins, w = np.zeros(500), np.zeros(X.shape[1])
    for j, delta in ((0, 0.5), (X.shape[1] - 1, -0.3), (2, 1.25)):
        entries.move(margins, j, delta)
        w[j] += delta
    assert np.allclose(margins, X @ w, rtol=1e-13, atol=1e-13)
    rows_all, cols_all = np.nonzero(X)
    start = np.searchsorted(rows_all, np.arange(501))
    for size in (1, 60, 500):
        rows = np.sort(rng.choice(500, size=size, replace=False))
        entry = np.concatenate([np.arange(start[r], start[r + 1]) for r in rows]).astype(np.intp)
        local = np.repeat(np.arange(size), np.diff(start)[rows])
        raw = _Nonzeros.from_entries(cols_all[entry], local, X[rows_all[entry], cols_all[entry]], y[rows][local],
                                     X.shape[1], loss)
        parent = rng.normal(size=X.shape[1])
        t = X[rows] @ parent
        got = relative_scores(loss, entries.batch(rows, y[rows], loss), t.copy(), y[rows], parent, 0.3, 2.0, 1.0)
        want = relative_scores(loss, raw, t.copy(), y[rows], parent, 0.3, 2.0, 1.0)
        assert np.array_equal(got, want)


def test_row_entries_move_tracks_the_margins():
    rng = np.random.default_rng(13)
    X = sparse_data(rng, n=200, p=7)
    entries, w, margins = _RowEntries(X), np.zeros(7), np.zeros(200)
    for _ in range(50):
        j, delta = int(rng.integers(7)), float(rng.normal())
        w[j] += delta
        entries.move(margins, j, delta)
    assert np.allclose(margins, X @ w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("loss,C", [(Logistic(), 1.0), (Hinge(), 10.0)], ids=["LR", "SVM"])
def test_score_sensitivity_holds_on_random_neighbours(loss, C):
    rng = np.random.default_rng(1)
    s = 0.3
    worst = {"replace-one": 0.0, "add-remove": 0.0}
    for _ in range(200):
        X = sparse_data(rng, n=30)
        y = labels(rng, loss, 30)
        parent = rng.normal(size=X.shape[1]) * rng.choice([0.1, 1.0, 5.0])
        base = scores(loss, X, y, parent, s, C, 1.0)
        i = rng.integers(30)
        X2, y2 = X.copy(), y.copy()
        X2[i] = sparse_data(rng, n=1)[0]
        y2[i] = labels(rng, loss, 1)[0]
        replaced = scores(loss, X2, y2, parent, s, C, 1.0)
        removed = scores(loss, np.delete(X, i, 0), np.delete(y, i), parent, s, C, 1.0)
        worst["replace-one"] = max(worst["replace-one"], np.abs(replaced - base).max())
        worst["add-remove"] = max(worst["add-remove"], np.abs(removed - base).max())
    for adjacency, observed in worst.items():
        bound = score_sensitivity(C, s, 1.0, 1.0, adjacency=adjacency)
        assert observed <= bound * (1 + 1e-12)
        assert observed > 0.3 * bound  # random pairs get within a small factor of the bound


def test_replace_one_needs_twice_the_add_remove_sensitivity():
    """Hinge rows at margin 0 with x_j = 1 and opposite labels: replacing one by the other moves
    v(+s·e_j) by exactly 2Cs — so 2Cs is tight under replace-one and Cs would be wrong."""
    C, s = 10.0, 0.3
    X = np.array([[1.0, 1.0], [1.0, 0.0]])
    parent = np.zeros(2)
    v = scores(Hinge(), X, np.array([1.0, 1.0]), parent, s, C, 0.0)
    v2 = scores(Hinge(), X, np.array([-1.0, 1.0]), parent, s, C, 0.0)
    change = np.abs(v2 - v).max()
    assert change == pytest.approx(score_sensitivity(C, s, 1.0, 1.0, adjacency="replace-one"))
    assert change > score_sensitivity(C, s, 1.0, 1.0, adjacency="add-remove")
    assert score_sensitivity(C, s, 1.0, 1.0, adjacency="add-remove", sampling="fixed") == pytest.approx(2 * C * s)


def test_em_selection_frequencies_match_theory():
    rng = np.random.default_rng(2)
    X = sparse_data(rng, n=40, p=3)
    y = labels(rng, Logistic(), 40)
    problem = Problem(X, y, Logistic())
    eps, delta, draws = 2.0, 1e-5, 6000
    res = FIT(problem, Privacy(eps, delta), np.random.default_rng(3), draws=draws, iterations=1)
    s = 0.5
    picked = [int(np.flatnonzero(w)[0]) + (0 if w[np.flatnonzero(w)[0]] > 0 else 3) for w in res.weights]
    counts = np.bincount(picked, minlength=6)
    eps_iter = math.sqrt(2 * zcdp_from_dp(eps, delta))
    assert res.extra["epsilon_per_iteration"] == pytest.approx(eps_iter)
    v = scores(Logistic(), X, y, np.zeros(3), s, 1.0, 0.0)
    p = exponential_mechanism_probabilities(v, sensitivity=2 * s, epsilon=eps_iter)
    assert stats.chisquare(counts, draws * p).pvalue > 1e-3
    # and not the distribution a twice-smaller sensitivity would give
    wrong = exponential_mechanism_probabilities(v, sensitivity=s, epsilon=eps_iter)
    assert stats.chisquare(counts, draws * wrong).pvalue < 1e-6


def test_iteration_heuristic_and_accounting():
    assert privgene_iterations(36169, 0.4) == 18
    assert privgene_iterations(2000, 1.0) == 3  # 2.5 rounds half up, as Python 2 did
    assert privgene_iterations(100, 0.05) == 1
    rng = np.random.default_rng(4)
    problem = Problem(sparse_data(rng, n=4000), labels(rng, Logistic(), 4000), Logistic())
    res = FIT(problem, Privacy(0.4, 1e-8), np.random.default_rng(0))
    r = res.extra["iterations"]
    assert r == 2 and res.iterations == 2
    eps_iter = res.extra["epsilon_per_iteration"]
    assert r * eps_iter ** 2 / 2 == pytest.approx(zcdp_from_dp(0.4, 1e-8))  # composes to rho
    best = FIT(problem, Privacy(0.4, 1e-8), np.random.default_rng(0), composition="best")
    assert best.extra["epsilon_per_iteration"] == pytest.approx(max(eps_iter, 0.4 / r))
    pure = FIT(problem, Privacy(0.4, 0.0), np.random.default_rng(0))
    assert pure.extra["epsilon_per_iteration"] == pytest.approx(0.4 / r) and pure.notes


def test_svm_defaults_and_mutation_schedule():
    rng = np.random.default_rng(5)
    problem = Problem(sparse_data(rng, n=200), labels(rng, Hinge(), 200), Hinge())
    res = FIT(problem, Privacy(1.0, 1e-6), np.random.default_rng(0), iterations=5)
    assert res.extra["C"] == 10.0 and res.extra["ridge"] == 1.0
    assert res.extra["initial_sensitivity"] == pytest.approx(2 * 10.0 * 0.5)
    # every coordinate of the output is a signed sum of distinct shrinking steps 0.5·0.95^t
    steps = 0.5 * 0.95 ** np.arange(5)
    assert np.abs(res.weights).sum() <= steps.sum() + 1e-12


@pytest.mark.parametrize("sampling", ["poisson", "fixed"])
def test_mini_batches_run_and_report(sampling):
    rng = np.random.default_rng(6)
    problem = Problem(sparse_data(rng, n=500), labels(rng, Logistic(), 500), Logistic())
    res = FIT(problem, Privacy(1.0, 1e-6), np.random.default_rng(0), batch_size=100, sampling=sampling,
              iterations=4, adjacency="add-remove")
    assert res.adjacency == "add-remove" and res.extra["sampling"] == sampling
    factor = 2.0 if sampling == "fixed" else 1.0
    assert res.extra["initial_sensitivity"] == pytest.approx(factor * 0.5)
    assert np.count_nonzero(res.weights) >= 1


def test_feature_bound_is_enforced():
    rng = np.random.default_rng(7)
    X = sparse_data(rng, n=300) * 4.0
    y = labels(rng, Logistic(), 300)
    a = FIT(Problem(X, y, Logistic()), Privacy(1.0, 1e-6), np.random.default_rng(1), iterations=6)
    b = FIT(Problem(np.clip(X, -1, 1), y, Logistic()), Privacy(1.0, 1e-6), np.random.default_rng(1), iterations=6)
    assert np.array_equal(a.weights, b.weights)


def test_deterministic_and_draws_independent():
    rng = np.random.default_rng(8)
    problem = Problem(sparse_data(rng, n=300), labels(rng, Logistic(), 300), Logistic())
    a = FIT(problem, Privacy(0.5, 1e-6), np.random.default_rng(11), draws=4, iterations=8)
    b = FIT(problem, Privacy(0.5, 1e-6), np.random.default_rng(11), draws=4, iterations=8)
    assert np.array_equal(a.weights, b.weights)
    assert len({tuple(w) for w in a.weights}) > 1


@pytest.mark.parametrize("batch_size", [None, 60])
def test_entries_are_made_once_per_read_only_fold(batch_size, monkeypatch):
    """The fold's non-zeros are made once for read-only rows (the protocol's folds) and kept for
    the next fits; above the size limit, or on writeable rows, they are made for every fit. The
    fits are the same either way."""
    made = []
    for name in ("_ColumnEntries", "_RowEntries"):
        cls = getattr(privgene, name)
        monkeypatch.setattr(privgene, name, type(name, (cls,), {"__init__": lambda self, X, cls=cls: (
            made.append(1), cls.__init__(self, X))[1]}))
    rng = np.random.default_rng(9)
    X = one_hot_data(rng, n=240)
    y = labels(rng, Logistic(), 240)
    frozen = X.copy()
    frozen.setflags(write=False)

    def fits(X):
        problem = Problem(X, y, Logistic())
        return [FIT(problem, Privacy(eps, 1e-6), np.random.default_rng(5), draws=2, iterations=6,
                    batch_size=batch_size).weights for eps in (0.3, 1.0, 3.0)]

    limit = problem_module.KEEP_PER_FOLD_BYTES
    kept = fits(frozen)
    assert len(made) == 1
    made.clear()
    monkeypatch.setattr(problem_module, "KEEP_PER_FOLD_BYTES", 1000)  # less than these entries hold
    over = fits(frozen)
    assert len(made) == 3
    made.clear()
    monkeypatch.setattr(problem_module, "KEEP_PER_FOLD_BYTES", limit)
    writeable = fits(X)
    assert len(made) == 3
    assert all(np.array_equal(a, b) and np.array_equal(a, c) for a, b, c in zip(kept, over, writeable))


@pytest.mark.parametrize("kwargs,name", [
    ({"iterations": 0}, "iterations"), ({"batch_size": 0}, "batch_size"), ({"sampling": "bernoulli"}, "sampling"),
    ({"adjacency": "swap"}, "adjacency"), ({"shrink": 1.5}, "shrink"), ({"initial_scale": -1.0}, "initial_scale"),
    ({"composition": "rdp"}, "composition"), ({"C": 0.0}, "C"),
    ({"adjacency": "add-remove"}, r"explicit iterations=r: the default r = round\(n\*epsilon/c\) reads the row count"),
])
def test_bad_inputs_name_the_value(kwargs, name):
    rng = np.random.default_rng(9)
    problem = Problem(sparse_data(rng, n=50), labels(rng, Logistic(), 50), Logistic())
    with pytest.raises(ValueError, match=name):
        FIT(problem, Privacy(1.0, 1e-6), np.random.default_rng(0), **kwargs)


def test_refuses_non_linear_losses_and_infinite_epsilon():
    rng = np.random.default_rng(10)
    X, y = sparse_data(rng, n=50), labels(rng, Logistic(), 50)
    with pytest.raises(ValueError, match="linear-model loss"):
        FIT(Problem(X, y, MLP(hidden=2)), Privacy(1.0, 1e-6), np.random.default_rng(0))
    with pytest.raises(ValueError, match="epsilon"):
        FIT(Problem(X, y, Logistic()), Privacy(math.inf), np.random.default_rng(0))
