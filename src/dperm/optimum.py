"""Certified optima of each training fold, the reference point of ``opt_gap`` and ``excess_risk``.

For every split of a cell's protocol (the same splits :func:`dperm.protocol.runner.run_cell` uses):

* ``F_star``: min of the model's regularised objective F(w) = L(w) + (λ/2)‖w‖² (Zhang et al.'s
  "Error" is F(w_priv) − F*), with ``F_gap_bound`` ≥ F(ŵ) − F* from the solver's certificate
  (‖∇F‖²/(2λ) when λ > 0; infinite, i.e. not certified, when λ = 0 or the loss is not smooth);
* ``L_star``: min of the unregularised mean loss L (Kang et al.'s optimality gap L(θ) − L*), with
  the gradient norm reached (convex but not strongly convex: stationarity is what we can show).
  NaN when the spec says ``"unregularised": false`` (papers that never report opt_gap: on
  nearly separable data this solve costs several times the regularised one).

Non-convex models (the MLP) have no certified optimum. When the spec carries ``multistart:
{starts: k, iterations: m}`` (a paper's ``optimum.multistart``), F* and L* are the best of k
non-private L-BFGS solves (at most m iterations each) from Glorot initialisations seeded by the
split and the start index: an upper bound on the true minimum, so an opt_gap below 0 means a
run beat them. ``certified`` is false and ``F_gap_bound`` infinite.

One file per (experiment, dataset, model) is shared by every algorithm and ε of that model; an
experiment may split a long one into parts (``optimum_parts``: each part solves every n-th split,
:func:`part_splits`), whose files the jobs read together. The
solutions are not kept: the certified optimum and PIDP-SGD's start solve different problems (F
from seeded draws, against F + (shift/2)‖θ‖² from one public initialisation).

**Starts** (:func:`compute_starts`): θ̃, the non-private solve PIDP-SGD and its control start from
(``start: nonprivate``), once per training split for every job of an (experiment, dataset, model)
that starts from it, instead of once in each job: a start file (.npz) keyed by
:func:`dperm.algorithms.pidp_sgd.start_key`, which the jobs read (``run-job --starts``). A job
whose start the file does not hold (e.g. a tuned shift) solves it itself; either way the same
computation on the same data gives the same θ̃, so the records do not change.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import solvers
from .protocol.runner import build_problem
from .protocol.seeds import split_seed
from .protocol.splits import make_splits

COLUMNS = ["fold", "repeat", "F_star", "F_gap_bound", "F_grad_norm", "L_star", "L_grad_norm", "certified"]


NONSMOOTH_FTOL = 2.220446049250313e-09  # scipy's default (factr 1e7), as the reference code


def _solve(problem, gtol: float, x0=None):
    """(F*, bound on F(ŵ) − F*, ‖∇F(ŵ)‖, ŵ).

    Smooth GLM losses of moderate dimension: damped Newton (:func:`dperm.solvers.glm_newton`), certified from the
    final gradient as L-BFGS's answers are; if it stops above gtol, L-BFGS continues from its
    point. Other smooth losses: L-BFGS to ‖∇F‖ ≤ gtol. A non-smooth loss (hinge) stops on
    L-BFGS's relative decrease instead.
    """
    loss = problem.loss
    smooth = getattr(loss, "smooth", False)
    x0 = np.zeros(problem.p) if x0 is None else x0
    if solvers.newton_applies(problem):
        res = solvers.glm_newton(problem, x0, gtol)
        x, f, gn = res.x, res.fun, res.grad_norm
        if gn <= gtol:
            gap, _ = solvers.certificate(gn, problem.strong_convexity, x)
            return f, float(gap), gn, x
        x0 = x  # Newton stalled (e.g. φ'' = 0 on every row, so H = λI = 0): L-BFGS goes on from here
    res = solvers.lbfgs(problem, x0, gtol=gtol, ftol=0.0 if smooth else NONSMOOTH_FTOL,
                        max_iter=20_000 if smooth else 5_000)
    return float(res.fun), float(res.gap_bound), float(res.grad_norm), res.x


def part_splits(splits: list, part: tuple[int, int] | None) -> list:
    """The splits of part ``(k, n)`` (k = 1..n): split i (from 0) goes to part i mod n + 1, so the
    parts of a split optimum share its splits evenly; None: all of them. Each split's solve
    depends only on the split (its rows, its seeds), so the parts' rows are the whole's."""
    if part is None:
        return splits
    k, n = part
    if not 1 <= k <= n:
        raise ValueError(f"optimum part {k} of {n}: the part must be 1..{n}")
    if n > len(splits):
        raise ValueError(f"optimum in {n} parts: the protocol has {len(splits)} splits, at most that many parts")
    return splits[k - 1::n]


def compute_optima(spec: dict, arrays: dict, gtol: float = 1e-9, log=None,
                   part: tuple[int, int] | None = None) -> pd.DataFrame:
    """One row per split of ``spec``'s protocol (module docstring); ``part`` (k, n): only the
    splits of part k of n (:func:`part_splits`)."""
    full = build_problem(spec, arrays)
    splits = part_splits(make_splits(spec["protocol"], full.n, split_seed(spec)), part)
    if not getattr(full.loss, "convex", False):
        if "multistart" not in spec:
            raise ValueError(f"loss {spec['model']['loss']!r} is not convex: no certified optimum exists "
                             "(a paper may ask for multi-start solves: optimum.multistart)")
        return _multistart_optima(spec, full, splits, log)
    rows = []
    for split in splits:
        train = full.subset(split.train)
        F_star, F_bound, F_grad, w_hat = _solve(train, gtol)
        if not spec.get("unregularised", True):
            L_star = L_grad = float("nan")
        elif train.l2 > 0:  # the unregularised minimum, from the regularised one
            train.l2 = 0.0
            L_star, _, L_grad, _ = _solve(train, gtol, x0=w_hat)
        else:
            L_star, L_grad = F_star, F_grad
        smooth = getattr(full.loss, "smooth", False)
        rows.append({"fold": split.fold, "repeat": split.repeat, "F_star": F_star,
                     "F_gap_bound": F_bound if smooth else np.inf, "F_grad_norm": F_grad,
                     "L_star": L_star, "L_grad_norm": L_grad,
                     "certified": bool(smooth and np.isfinite(F_bound) and F_bound < 1e-8)})
        if log is not None:
            log(f"optimum fold {split.fold} repeat {split.repeat}: F*={F_star:.6g} (bound {F_bound:.2g}), "
                f"L*={L_star:.6g}")
    return pd.DataFrame(rows, columns=COLUMNS)


def _multistart_optima(spec: dict, full, splits: list, log=None) -> pd.DataFrame:
    """Best of ``multistart.starts`` L-BFGS solves per split (module docstring)."""
    from .protocol.seeds import derive_seed

    starts, iterations = int(spec["multistart"]["starts"]), int(spec["multistart"]["iterations"])
    rows = []
    for split in splits:
        train = full.subset(split.train)
        best_F, best_L, best_g = np.inf, np.inf, np.nan
        for start in range(starts):
            rng = np.random.default_rng(derive_seed(split_seed(spec), "multistart", split.fold, split.repeat, start))
            x0 = train.loss.init(rng, train.X.shape[1])
            res = solvers.lbfgs(train, x0, gtol=1e-7, max_iter=iterations, polish=False)
            F = float(train.value(res.x))
            L = float(train.loss.value(res.x, train.X, train.y))
            if F < best_F:
                best_F, best_g = F, float(res.grad_norm)
            best_L = min(best_L, L)
            if log is not None:
                log(f"multistart fold {split.fold} repeat {split.repeat} start {start}: F={F:.6g}, L={L:.6g}, "
                    f"|grad|={res.grad_norm:.2g}")
        rows.append({"fold": split.fold, "repeat": split.repeat, "F_star": best_F, "F_gap_bound": np.inf,
                     "F_grad_norm": best_g, "L_star": best_L, "L_grad_norm": np.nan, "certified": False})
    return pd.DataFrame(rows, columns=COLUMNS)


def _start_hyper(spec: dict) -> dict | None:
    """The cell's hyper-parameters (its algorithm's defaults filled in) when it starts from θ̃, a
    non-private solve of each training split (module docstring); None when it does not."""
    from .algorithms import get_algorithm

    defaults = get_algorithm(spec["algorithm"]).defaults
    hyper = {**defaults, **(spec.get("hyper") or {})}
    return hyper if "start" in defaults and hyper["start"] == "nonprivate" else None


def needs_start(spec: dict) -> bool:
    """Whether a cell starts from θ̃ (:func:`compute_starts` can solve it for its job)."""
    return _start_hyper(spec) is not None


def compute_starts(specs: list[dict], arrays: dict, log=None) -> dict:
    """{start key: θ̃} for every training split of every spec that :func:`needs_start`, each
    solved once (the jobs of these specs would each solve them: module docstring)."""
    from .algorithms.pidp_sgd import start_key, start_point

    out = {}
    for spec in specs:
        hyper = _start_hyper(spec)
        if hyper is None:
            continue
        shift, iterations = hyper["start_shift"], hyper["start_iterations"]
        full = build_problem(spec, arrays)
        for split in make_splits(spec["protocol"], full.n, split_seed(spec)):
            train = full.subset(split.train)  # the rows a job's fold holds (runner._train_problem)
            key = start_key(train, shift, iterations)
            if key not in out:
                out[key] = start_point(train, start="nonprivate", shift=shift, start_iterations=iterations)
                if log is not None:
                    log(f"start of {spec.get('cell_algorithm', spec['algorithm'])} fold {split.fold} repeat "
                        f"{split.repeat} (shift {shift}, at most {iterations} iterations): |theta~| = "
                        f"{np.linalg.norm(out[key]):.6g}")
    return out


def write_starts(path, starts: dict) -> None:
    """:func:`compute_starts`' θ̃ as one .npz, written whole or not at all (:func:`dperm.files.atomic_path`)."""
    from .files import atomic_path

    with atomic_path(path, suffix=".npz") as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **starts)


def read_starts(path) -> dict:
    """{start key: θ̃} from :func:`write_starts`' file."""
    with np.load(path) as npz:
        return {key: npz[key] for key in npz.files}
