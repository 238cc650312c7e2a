"""The run protocol: seeds, splits, metrics, and one table cell run into tidy records.

A *cell* is one (paper, experiment, dataset, model, algorithm, privacy setting); its file holds
one row per fit (fold × repeat × draw). Everything random is derived from ``SeedSequence`` over
stable integers (crc32 of names), so a cell's records are the same whatever the job order or the
number of cores; only ``fit_seconds`` (wall time) varies between runs.

Privacy settings (the ``eps`` part of a cell's file name, written by :func:`format_epsilon`):
a number is the target ε; ``inf`` is a non-private algorithm; ``T<steps>`` is an algorithm whose ε
is *computed* from a fixed number of steps (SGD-MA), reported in ``epsilon_spent``. The
``T<steps>`` cells of one (experiment, dataset, model, algorithm) are run as one *path*: the
longest cell's fits, each also releasing its iterate after the shorter step counts (the first t
steps of that run are a t-step run; see :func:`run_cell`), so the grid costs its longest run.
The numeric-ε cells of one (experiment, dataset, model, algorithm) are run as one *row*. A path,
a row or a lone non-private cell is one *job* (:func:`run_job`): one process, one load of the
data, the training folds cut once; each cell's fits are those it has alone (DP-AGD fits a row's
ε together, each from its own seed). Every record also carries the fit's hyper-parameters and
the algorithm's ``extra`` as JSON (:mod:`dperm.records`), and the ``preprocessing`` label of the
prepared arrays it ran on (:func:`preprocessing_label`).
"""

from __future__ import annotations

import math
import re
import time
import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import __version__

RECORD_COLUMNS = [
    "paper", "experiment", "dataset", "model", "algorithm", "variant", "label", "setting", "sweep",
    "epsilon", "delta", "epsilon_spent", "delta_spent", "adjacency", "fold", "repeat", "draw", "seed",
    "accuracy", "test_loss", "objective", "regularised_objective", "opt_gap", "excess_risk", "fit_seconds",
    "grad_evals", "iterations", "n_train", "n_test", "p", "tuning", "preprocessing", "dp_as_implemented",
    "accounting", "notes", "hyper", "extra", "dperm_version",
]

_STEPS = re.compile(r"^T([1-9][0-9]*)$")


def format_epsilon(value) -> str:
    """The one spelling of a privacy setting in file names: 0.05 -> '0.05', 1 and 1.0 -> '1',
    inf -> 'inf', 'T100' stays 'T100'."""
    if isinstance(value, str):
        if value == "inf" or _STEPS.match(value):
            return value
        value = float(value)
    value = float(value)
    if math.isinf(value) and value > 0:
        return "inf"
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"epsilon must be > 0, inf, or T<steps>; got {value!r}")
    return np.format_float_positional(value, trim="-")


def parse_setting(token: str) -> tuple[float, int | None]:
    """(target ε, steps) of a privacy setting token: ('0.1') -> (0.1, None); ('T100') -> (inf, 100)."""
    token = format_epsilon(token)
    match = _STEPS.match(token)
    return (math.inf, int(match.group(1))) if match else (float(token), None)


def stable_int(name: str) -> int:
    """A name's crc32: stable across processes and Python versions (unlike ``hash``)."""
    return zlib.crc32(name.encode("utf-8"))


def derive_seed(root: int, *parts) -> int:
    """A 63-bit seed from the root seed and names/integers, through ``SeedSequence``."""
    entropy = [int(root)] + [stable_int(p) if isinstance(p, str) else int(p) for p in parts]
    return int(np.random.SeedSequence(entropy).generate_state(1, np.uint64)[0] >> 1)


@dataclass(frozen=True)
class Split:
    fold: int
    repeat: int
    train: np.ndarray
    test: np.ndarray


def make_splits(protocol: dict, n: int, seed: int) -> list[Split]:
    """Train/test splits of ``n`` rows. ``kind``: ``kfold`` (``folds`` × ``repeats``, a fresh
    permutation per repeat), ``holdout`` (``test_fraction``, ``repeats`` times), ``full`` (train
    and evaluate on every row: Lee & Kifer's Figure 1 scripts,
    docs/deviations.md#fig1-training-accuracy)."""
    kind, repeats = protocol["kind"], int(protocol.get("repeats", 1))
    if n < 2:
        raise ValueError(f"need at least 2 rows to split; got n={n}")
    out = []
    for repeat in range(repeats):
        perm = np.random.default_rng(derive_seed(seed, "split", repeat)).permutation(n)
        if kind == "kfold":
            folds = int(protocol["folds"])
            if not 2 <= folds <= n:
                raise ValueError(f"folds must be in [2, n={n}]; got folds={folds}")
            for fold, test in enumerate(np.array_split(perm, folds)):
                train = np.ones(n, dtype=bool)  # the rows not in the test fold, ascending
                train[test] = False
                out.append(Split(fold, repeat, np.flatnonzero(train), np.sort(test)))
        elif kind == "holdout":
            frac = float(protocol["test_fraction"])
            if not 0 < frac < 1:
                raise ValueError(f"test_fraction must be in (0, 1); got {frac}")
            cut = int(round(n * frac))
            out.append(Split(0, repeat, np.sort(perm[cut:]), np.sort(perm[:cut])))
        elif kind == "full":
            everything = np.arange(n)
            out.append(Split(0, repeat, everything, everything))
        else:
            raise ValueError(f"protocol kind {kind!r}; allowed: kfold, holdout, full")
    return out


def split_seed(spec: dict) -> int:
    """Splits depend on the dataset and experiment only: every algorithm, model and ε of an
    experiment sees the same folds (paired comparisons); an experiment with ``splits_of`` sees
    that experiment's folds."""
    return derive_seed(spec["seed"], spec["paper"], spec.get("splits_of", spec["experiment"]), spec["dataset"])


def cell_algorithm(spec: dict) -> str:
    """The cell's algorithm key (an alias such as ``dp-agd-lam0`` may ``use`` a registered one)."""
    return spec.get("cell_algorithm", spec["algorithm"])


def fit_seed(spec: dict, split: Split) -> int:
    return derive_seed(spec["seed"], spec["paper"], spec["experiment"], spec["dataset"],
                       spec["model"]["name"], cell_algorithm(spec), format_epsilon(spec["epsilon"]),
                       split.fold, split.repeat)


def build_problem(spec: dict, arrays: dict, rows=None):
    """The model's loss and the label array it expects, as a :class:`Problem` on ``rows``."""
    from .losses import get_loss
    from .problem import Problem

    model = spec["model"]
    loss = get_loss(model["loss"], **model.get("loss_params", {}))
    y = arrays["y"] if loss.labels == "real" else arrays["y01" if loss.labels == "01" else "ypm"]
    X = arrays["X"]
    if rows is not None:
        X, y = X[rows], y[rows]
    return Problem(X, np.asarray(y, dtype=float), loss, float(model.get("l2", 0.0)))


def _per_draw(value, draws: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(value, dtype=float), (draws,))


def _metrics(loss, result, train, X_test, y_test):
    """(accuracy, test loss, objective, regularised objective), one value per draw. The test
    loss is the unregularised mean loss on the test rows (NaN without test rows); on a tuning
    protocol's folds it is the validation loss the tuning step selects by."""
    draws = result.draws
    constant = result.extra.get("constant_prediction")
    if constant is not None:  # Majority: a label, not weights
        accuracy = np.full(draws, float(np.mean(y_test == constant)) if len(y_test) else np.nan)
        return accuracy, *(np.full(draws, np.nan),) * 3
    W = result.weights
    accuracy = (_per_draw(loss.accuracy(W, X_test, y_test), draws) if loss.labels != "real"
                else np.full(draws, np.nan))
    test_loss = _per_draw(loss.value(W, X_test, y_test), draws) if len(y_test) else np.full(draws, np.nan)
    objective = _per_draw(loss.value(W, train.X, train.y), draws)
    return accuracy, test_loss, objective, _per_draw(train.value(W), draws)


def preprocessing_label(arrays: dict) -> str:
    """How the prepared arrays were made: ``data-dependent`` (a scaling bound or category list
    read from the data) or ``public-bounds`` (docs/privacy.md#public-bounds), as prepare wrote it
    into them."""
    from .datasets.encode import PREPROCESSING

    if "preprocessing" not in arrays:
        raise ValueError("the prepared arrays carry no 'preprocessing' entry (prepared by an older dperm?): "
                         "prepare them again")
    label = str(arrays["preprocessing"])
    if label not in PREPROCESSING:
        raise ValueError(f"the prepared arrays' preprocessing is {label!r}; expected one of {PREPROCESSING}")
    return label


def record_label(spec: dict, algo) -> str:
    """A cell's name in tables and legends: its config ``label`` when it has one, else the
    registered algorithm's; a reference variant keeps its registered label, which carries its
    caveat (docs/privacy.md)."""
    return (spec.get("label") or algo.label) if algo.variant != "reference" else algo.label


def _records(spec, algo, privacy, setting, result, split, seed, elapsed, metrics, p, hyper,
             preprocessing) -> list[dict]:
    """One record per draw of ``result`` (a fit of ``spec`` on ``split``, at privacy ``setting``,
    with hyper-parameters ``hyper``, on arrays whose preprocessing label is ``preprocessing``)."""
    from .records import record_json

    accuracy, test_loss, objective, regularised, opt_gap, excess = metrics
    per_draw = result.seconds_per_draw if result.seconds_per_draw is not None else elapsed / result.draws
    eps_spent = _per_draw(result.epsilon_spent, result.draws)
    evals, iters = _per_draw(result.grad_evals, result.draws), _per_draw(result.iterations, result.draws)
    return [{
        "paper": spec["paper"], "experiment": spec["experiment"], "dataset": spec["dataset"],
        "model": spec["model"]["name"], "algorithm": cell_algorithm(spec), "variant": algo.variant,
        "label": record_label(spec, algo), "setting": setting, "sweep": spec.get("sweep", ""),
        "epsilon": parse_setting(setting)[0], "delta": privacy.delta, "epsilon_spent": eps_spent[d],
        "delta_spent": result.delta_spent, "adjacency": result.adjacency,
        "fold": split.fold, "repeat": split.repeat, "draw": d, "seed": seed,
        "accuracy": accuracy[d], "test_loss": test_loss[d], "objective": objective[d],
        "regularised_objective": regularised[d],
        "opt_gap": opt_gap[d], "excess_risk": excess[d], "fit_seconds": per_draw,
        "grad_evals": evals[d], "iterations": int(iters[d]), "n_train": len(split.train),
        "n_test": len(split.test), "p": p, "tuning": spec.get("tuning", "private"),
        "preprocessing": preprocessing,
        "dp_as_implemented": algo.dp_as_implemented if algo.private else "n/a", "accounting": result.accounting,
        "notes": "; ".join(result.notes),
        "hyper": hyper, "extra": record_json(result.extra, d, result.draws), "dperm_version": __version__,
    } for d in range(result.draws)]


def _train_problem(full, split: Split, folds: dict | None, key):
    """``full`` on the split's training rows; with ``folds`` (a cache shared by the cells of one
    job), the rows of X are cut once per split and kept read-only, so that a fit cannot change
    the data the next cell sees, and what is derived from them (the sparse copy of X,
    :attr:`Problem.shared`) is made once."""
    from .problem import Problem

    if folds is None:
        return full.subset(split.train)
    if key not in folds:
        X = full.X[split.train]
        X.setflags(write=False)
        folds[key] = (X, full.row_norms[split.train], {})
    X, norms, shared = folds[key]
    return Problem(X, full.y[split.train], full.loss, full.l2, norms, shared)


def run_job(specs: list[dict], arrays: dict, optima: pd.DataFrame | None = None,
            log=None) -> pd.DataFrame:
    """The cells of one job (every ε of one experiment, dataset, model and algorithm; or the
    step counts of a path, one spec with ``path``; or a lone cell) on the same prepared arrays,
    their records concatenated in ``specs`` order.

    Splits depend on the experiment and dataset only (:func:`split_seed`) and fit seeds on the
    cell's own names, so each cell's fits are those of :func:`run_cell` on it alone. The cells
    share one copy of each training fold's rows. Cells that differ only in a numeric ε, of an
    algorithm with ``fit_settings`` (DP-AGD), are fitted together split by split: each cell
    keeps its own seed and budget, its records have the same law as alone and, where BLAS
    rounds a row of a product independently of the rows beside it, the same numbers; their
    ``fit_seconds`` is the shared time divided evenly among them."""
    if not specs:
        raise ValueError("a job needs at least one cell spec")
    folds: dict = {}
    together: dict = {}  # spec without its ε -> indices of the cells that can share fits
    for i, spec in enumerate(specs):
        together.setdefault(_shared_key(spec), []).append(i)
    frames: list = [None] * len(specs)
    for key, members in together.items():
        if key is not None and len(members) > 1:
            for i, frame in zip(members, _run_together([specs[i] for i in members], arrays, optima,
                                                       log, folds)):
                frames[i] = frame
        else:
            for i in members:
                frames[i] = run_cell(specs[i], arrays, optima, log=log, folds=folds)
    return pd.concat(frames, ignore_index=True)


def _shared_key(spec: dict):
    """What cells must agree on to be fitted together (everything but a numeric ε), or None for
    a cell that runs alone (no ``fit_settings``, a path, a step count or a non-private ε)."""
    from .algorithms import get_algorithm

    target, steps = parse_setting(spec["epsilon"])
    if (not get_algorithm(spec["algorithm"]).shares_settings or spec.get("path") or steps is not None
            or not math.isfinite(target)):
        return None
    return repr(sorted((k, repr(v)) for k, v in spec.items() if k != "epsilon"))


@dataclass
class _Cell:
    """One cell's algorithm, target, hyper-parameters, data and splits (:func:`_prepare`)."""

    spec: dict
    algo: object
    privacy: object
    hyper: dict
    path: list
    full: object
    splits: list
    draws: int
    best: pd.DataFrame | None
    preprocessing: str

    def fold(self, split: Split, folds: dict | None):
        key = (split_seed(self.spec), repr(self.spec["protocol"]), split.fold, split.repeat)
        return _train_problem(self.full, split, folds, key)

    def records(self, split: Split, train, seed: int, result, elapsed: float) -> list[dict]:
        """The records of ``result`` (this cell's fit on ``split``) and of its path releases."""
        spec, algo = self.spec, self.algo
        row = self.best.loc[(split.fold, split.repeat)] if self.best is not None else None

        def metrics(res):
            """(accuracy, test loss, objective, regularised objective, opt_gap, excess_risk) per draw."""
            accuracy, test_loss, objective, regularised = _metrics(
                self.full.loss, res, train, self.full.X[split.test], self.full.y[split.test])
            if row is None:
                return accuracy, test_loss, objective, regularised, *(np.full(res.draws, np.nan),) * 2
            return (accuracy, test_loss, objective, regularised, objective - row["L_star"],
                    regularised - row["F_star"])

        records = _records(spec, algo, self.privacy, format_epsilon(spec["epsilon"]), result, split, seed,
                           elapsed, metrics(result), self.full.p, self.recorded_hyper(), self.preprocessing)
        missing = sorted(set(self.path) - set(result.path))
        if missing:
            raise RuntimeError(f"{spec['algorithm']} returned no release at steps {missing} of its path")
        for t in self.path:  # the same run after t steps: its own cell (setting T<t>)
            records += _records(spec, algo, self.privacy, f"T{t}", result.path[t], split, seed, elapsed,
                                metrics(result.path[t]), self.full.p, self.recorded_hyper(t), self.preprocessing)
        return records

    def recorded_hyper(self, steps: int | None = None) -> str:
        """The ``hyper`` column: every hyper-parameter the fit ran with (defaults filled in), a
        path release's own step count, not the snapshots the protocol asks for."""
        from .records import record_json

        values = self.algo.hyper({k: v for k, v in self.hyper.items() if k != "snapshots"})
        values.pop("snapshots", None)
        if steps is not None:
            values["steps"] = steps
        return record_json(values)


def _prepare(spec: dict, arrays: dict, optima: pd.DataFrame | None) -> _Cell:
    from .algorithms import Privacy, get_algorithm

    algo = get_algorithm(spec["algorithm"])
    target, steps = parse_setting(spec["epsilon"])
    hyper = dict(spec.get("hyper") or {})
    if steps is not None:
        hyper["steps"] = steps
    path = [int(t) for t in spec.get("path", [])]
    if path:
        if steps is None or any(not 1 <= t < steps for t in path):
            raise ValueError(f"a path needs a T<steps> setting and shorter step counts; got "
                             f"epsilon={spec['epsilon']!r}, path={spec['path']!r}")
        hyper["snapshots"] = tuple(path)
    full = build_problem(spec, arrays)
    return _Cell(spec=spec, algo=algo, privacy=Privacy(target, spec["delta"]), hyper=hyper, path=path,
                 full=full, splits=make_splits(spec["protocol"], full.n, split_seed(spec)),
                 draws=int(spec["protocol"].get("draws", 1)) if algo.private else 1,
                 best=optima.set_index(["fold", "repeat"]) if optima is not None else None,
                 preprocessing=preprocessing_label(arrays))


def _log_split(log, cells, i, split, result, elapsed) -> None:
    if log is not None:
        settings = ",".join(format_epsilon(c.spec["epsilon"]) for c in cells)
        log(f"{cell_algorithm(cells[0].spec)} eps={settings}: split {i}/{len(cells[0].splits)} "
            f"(fold {split.fold}, repeat {split.repeat}) {result.draws} draw(s) in {elapsed:.2f}s")


def run_cell(spec: dict, arrays: dict, optima: pd.DataFrame | None = None, log=None,
             folds: dict | None = None) -> pd.DataFrame:
    """Run every fold, repeat and draw of one cell; return one record per fit.

    ``optima`` (from :func:`dperm.optimum.compute_optima`, same splits) supplies the certified
    optimum of each training fold for ``opt_gap`` and ``excess_risk``; without it they are NaN.

    ``spec["path"]`` (step counts below the cell's ``T<steps>``) runs the cells of those step
    counts along the same run: each fit also releases its iterate after each of them (the first
    t steps of the run, accounted for t steps), recorded with setting ``T<t>`` and the fit's seed.
    The ``T<steps>`` records are the same as without a path.

    ``folds`` (from :func:`run_job`) caches the training folds' rows across the cells of a job.
    """
    cell = _prepare(spec, arrays, optima)
    records = []
    for i, split in enumerate(cell.splits, start=1):
        train = cell.fold(split, folds)
        seed = fit_seed(spec, split)
        start = time.perf_counter()
        result = cell.algo.fit(train, cell.privacy, np.random.default_rng(seed), draws=cell.draws,
                               **cell.hyper)
        elapsed = time.perf_counter() - start
        records += cell.records(split, train, seed, result, elapsed)
        _log_split(log, [cell], i, split, result, elapsed)
    return pd.DataFrame.from_records(records, columns=RECORD_COLUMNS)


def _run_together(specs: list[dict], arrays: dict, optima, log, folds: dict) -> list[pd.DataFrame]:
    """Cells that differ only in ε (:func:`_shared_key`), fitted split by split with one
    ``fit_settings`` call, each from its own seed; one frame per cell."""
    cells = [_prepare(spec, arrays, optima) for spec in specs]
    first = cells[0]
    records: list = [[] for _ in cells]
    for i, split in enumerate(first.splits, start=1):
        train = first.fold(split, folds)
        seeds = [fit_seed(cell.spec, split) for cell in cells]
        start = time.perf_counter()
        results = first.algo.fit_settings(train, [cell.privacy for cell in cells],
                                          [np.random.default_rng(seed) for seed in seeds],
                                          draws=first.draws, **first.hyper)
        elapsed = time.perf_counter() - start
        for cell, out, seed, result in zip(cells, records, seeds, results):
            out += cell.records(split, train, seed, result, elapsed / len(cells))  # split evenly
        _log_split(log, cells, i, split, results[0], elapsed)
    return [pd.DataFrame.from_records(out, columns=RECORD_COLUMNS) for out in records]
