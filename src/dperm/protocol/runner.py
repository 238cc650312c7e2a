"""Running the cells of a job into records.

The ``T<steps>`` cells of one (experiment, dataset, model, algorithm) are run as one *path*: the
longest cell's fits, each also releasing its iterate after the shorter step counts (the first t
steps of that run are a t-step run; see :func:`run_cell`), so the grid costs its longest run.
The numeric-ε cells of one (experiment, dataset, model, algorithm) are run as one *row*. A path,
a row or a lone non-private cell is one *job* (:func:`run_job`): one process, one load of the
data, the training folds cut once; each cell's fits are those it has alone (DP-AGD fits a row's
ε together, each from its own seed).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .columns import RECORD_COLUMNS, fit_records
from .metrics import fit_metrics, preprocessing_label
from .seeds import cell_algorithm, fit_seed, split_seed
from .settings import format_epsilon, parse_setting
from .splits import Split, make_splits


def build_problem(spec: dict, arrays: dict, rows=None):
    """The model's loss and the label array it expects, as a :class:`Problem` on ``rows``."""
    from ..losses import get_loss
    from ..problem import Problem

    model = spec["model"]
    loss = get_loss(model["loss"], **model.get("loss_params", {}))
    y = arrays["y"] if loss.labels == "real" else arrays["y01" if loss.labels == "01" else "ypm"]
    X = arrays["X"]
    if rows is not None:
        X, y = X[rows], y[rows]
    return Problem(X, np.asarray(y, dtype=float), loss, float(model.get("l2", 0.0)))


def _train_problem(full, split: Split, folds: dict | None, key):
    """``full`` on the split's training rows; with ``folds`` (a cache shared by the cells of one
    job), the rows of X are cut once per split and kept read-only, so that a fit cannot change
    the data the next cell sees, and what is derived from them (the sparse copy of X,
    :attr:`Problem.shared`) is made once."""
    from ..problem import Problem

    if folds is None:
        return full.subset(split.train)
    if key not in folds:
        X = full.X[split.train]
        X.setflags(write=False)
        folds[key] = (X, full.row_norms[split.train], {})
    X, norms, shared = folds[key]
    return Problem(X, full.y[split.train], full.loss, full.l2, norms, shared)


def run_job(specs: list[dict], arrays: dict, optima: pd.DataFrame | None = None,
            log=None, data: dict | None = None) -> pd.DataFrame:
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
    progress = job_progress(specs)
    folds: dict = {}
    cache: dict = {}  # the metric hooks' (dperm.protocol.metric_hooks), shared by the job's cells
    together: dict = {}  # spec without its ε -> indices of the cells that can share fits
    for i, spec in enumerate(specs):
        together.setdefault(_shared_key(spec), []).append(i)
    frames: list = [None] * len(specs)
    for key, members in together.items():
        if key is not None and len(members) > 1:
            for i, frame in zip(members, _run_together([specs[i] for i in members], arrays, optima,
                                                       log, folds, data, cache, progress)):
                frames[i] = frame
        else:
            for i in members:
                frames[i] = run_cell(specs[i], arrays, optima, log=log, folds=folds, data=data, cache=cache,
                                     progress=progress)
    return pd.concat(frames, ignore_index=True)


def job_progress(specs: list[dict]):
    """The job's :class:`dperm.progress.Progress`: fits planned are every cell's splits times its
    draws (one for a non-private algorithm)."""
    from ..algorithms import get_algorithm
    from ..progress import Progress
    from .splits import split_count

    def fits(spec):
        draws = int(spec["protocol"].get("draws", 1)) if get_algorithm(spec["algorithm"]).private else 1
        return split_count(spec["protocol"]) * draws

    first = specs[0]
    name = "/".join(str(first.get(k, "?")) for k in ("paper", "experiment", "dataset")) + \
        f"/{first.get('model', {}).get('name', '?')}/{cell_algorithm(first)}"
    return Progress(name, sum(fits(spec) for spec in specs))


def _shared_key(spec: dict):
    """What cells must agree on to be fitted together (everything but a numeric ε), or None for
    a cell that runs alone (no ``fit_settings``, a path, a step count or a non-private ε)."""
    from ..algorithms import get_algorithm

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
    arrays: dict
    data: dict  # other prepared arrays the metric hooks read (role -> arrays)
    cache: dict  # the metric hooks' cache, shared by the cells of a job

    def fold(self, split: Split, folds: dict | None):
        key = (split_seed(self.spec), repr(self.spec["protocol"]), split.fold, split.repeat)
        return _train_problem(self.full, split, folds, key)

    def records(self, split: Split, train, seed: int, result, elapsed: float) -> list[dict]:
        """The records of ``result`` (this cell's fit on ``split``) and of its path releases."""
        spec, algo = self.spec, self.algo
        row = self.best.loc[(split.fold, split.repeat)] if self.best is not None else None

        def metrics(res):
            """Every per-draw measure of ``res`` (:func:`fit_metrics`), with ``opt_gap`` and
            ``excess_risk`` against the split's certified optima (NaN without them)."""
            out = fit_metrics(self.full.loss, res, train, self.full.X[split.test], self.full.y[split.test])
            if row is None:
                out["opt_gap"] = out["excess_risk"] = np.full(res.draws, np.nan)
            else:
                out["opt_gap"] = out["objective"] - row["L_star"]
                out["excess_risk"] = out["regularised_objective"] - row["F_star"]
            return out

        records = fit_records(spec, algo, self.privacy, format_epsilon(spec["epsilon"]), result, split, seed,
                              elapsed, metrics(result), self.full.p, self.recorded_hyper(), self.preprocessing,
                              self.measured(split, train, result, optimum=row))
        missing = sorted(set(self.path) - set(result.path))
        if missing:
            raise RuntimeError(f"{spec['algorithm']} returned no release at steps {missing} of its path")
        for t in self.path:  # the same run after t steps: its own cell (setting T<t>)
            records += fit_records(spec, algo, self.privacy, f"T{t}", result.path[t], split, seed, elapsed,
                                   metrics(result.path[t]), self.full.p, self.recorded_hyper(t), self.preprocessing,
                                   self.measured(split, train, result.path[t], t, optimum=row))
        return records

    def resolved_hyper(self, steps: int | None = None) -> dict:
        """Every hyper-parameter the fit ran with (defaults filled in), a path release's own step
        count, not the snapshots the protocol asks for."""
        values = self.algo.hyper({k: v for k, v in self.hyper.items() if k != "snapshots"})
        values.pop("snapshots", None)
        if steps is not None:
            values["steps"] = steps
        return values

    def recorded_hyper(self, steps: int | None = None) -> str:
        """The ``hyper`` column (:meth:`resolved_hyper` as JSON)."""
        from ..records import record_json

        return record_json(self.resolved_hyper(steps))

    def measured(self, split: Split, train, result, steps: int | None = None, optimum=None) -> dict | None:
        """What the cell's metric hooks measure on ``result`` (None when it asks for none);
        ``optimum``: the split's row of the certified optima, where the cell has them."""
        if not self.spec.get("metrics") or result.weights is None:
            return None
        from .metric_hooks import FitContext, compute

        return compute(FitContext(spec=self.spec, settings={}, split=split, train=train, full=self.full,
                                  arrays=self.arrays, weights=np.atleast_2d(result.weights),
                                  hyper=self.resolved_hyper(steps), data=self.data, cache=self.cache,
                                  optimum=None if optimum is None else dict(optimum),
                                  result_extra=dict(result.extra or {})))


def _prepare(spec: dict, arrays: dict, optima: pd.DataFrame | None, data: dict | None = None,
             cache: dict | None = None) -> _Cell:
    from ..algorithms import Privacy, get_algorithm

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
                 preprocessing=preprocessing_label(arrays), arrays=arrays, data=data or {},
                 cache=cache if cache is not None else {})


def _log_split(log, cells, i, split, result, elapsed) -> None:
    if log is not None:
        settings = ",".join(format_epsilon(c.spec["epsilon"]) for c in cells)
        log(f"{cell_algorithm(cells[0].spec)} eps={settings}: split {i}/{len(cells[0].splits)} "
            f"(fold {split.fold}, repeat {split.repeat}) {result.draws} draw(s) in {elapsed:.2f}s")


def run_cell(spec: dict, arrays: dict, optima: pd.DataFrame | None = None, log=None,
             folds: dict | None = None, data: dict | None = None, cache: dict | None = None,
             progress=None) -> pd.DataFrame:
    """Run every fold, repeat and draw of one cell; return one record per fit.

    ``optima`` (from :func:`dperm.optimum.compute_optima`, same splits) supplies the certified
    optimum of each training fold for ``opt_gap`` and ``excess_risk``; without it they are NaN.

    ``spec["path"]`` (step counts below the cell's ``T<steps>``) runs the cells of those step
    counts along the same run: each fit also releases its iterate after each of them (the first
    t steps of the run, accounted for t steps), recorded with setting ``T<t>`` and the fit's seed.
    The ``T<steps>`` records are the same as without a path.

    ``folds`` (from :func:`run_job`) caches the training folds' rows across the cells of a job.
    ``spec["metrics"]`` asks for metric hooks (:mod:`.metric_hooks`); ``data`` holds the other
    prepared arrays they read (role -> arrays), ``cache`` what they keep across a job's cells.
    ``progress`` (:class:`dperm.progress.Progress`) counts the fits done.
    """
    cell = _prepare(spec, arrays, optima, data, cache)
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
        if progress is not None:
            progress.advance(cell.draws)
    return pd.DataFrame.from_records(records, columns=RECORD_COLUMNS)


def _run_together(specs: list[dict], arrays: dict, optima, log, folds: dict, data=None,
                  cache=None, progress=None) -> list[pd.DataFrame]:
    """Cells that differ only in ε (:func:`_shared_key`), fitted split by split with one
    ``fit_settings`` call, each from its own seed; one frame per cell."""
    cells = [_prepare(spec, arrays, optima, data, cache) for spec in specs]
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
        if progress is not None:
            progress.advance(first.draws * len(cells))
    return [pd.DataFrame.from_records(out, columns=RECORD_COLUMNS) for out in records]
