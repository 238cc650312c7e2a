"""The paper's own evaluation: run the cells of one (experiment, dataset) and measure what the
generic records do not hold, because it needs the released weights on data the protocol does
not hand over: worst-group metrics (tilted ERM), robust accuracy under attacks of several radii
(adversarial training), population excess risk on a held-out sample and the curvature at the
optimum (rates).

Every fit is the one :func:`dperm.protocol.run_cell` makes for the same spec: the same training
rows (:func:`dperm.protocol.make_splits` with :func:`dperm.protocol.split_seed`), the same
generator (:func:`dperm.protocol.fit_seed`), the same hyper-parameters; the cells of a row (its
ε) are fitted together through ``fit_settings`` when the algorithm has it, which gives the same
numbers as lone fits for the deterministic solvers used here. Records keep the generic columns
a summary needs (:func:`dperm.report.tables.summarise`) plus the metrics of the analysis.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pandas as pd

KINDS = ("groups", "robust", "population")


def group_masks(columns, rows_X, group_by) -> dict[str, np.ndarray]:
    """{"sex=Female & race=Black": mask, ...}: every combination of the one-hot columns whose
    names start with ``<attribute>=`` for each attribute of ``group_by`` (rows of ``rows_X``)."""
    columns = [str(c) for c in columns]
    levels = []
    for attribute in group_by:
        idx = [j for j, c in enumerate(columns) if c.startswith(f"{attribute}=")]
        if not idx:
            raise ValueError(f"no one-hot columns '{attribute}=...' among the prepared columns")
        levels.append(idx)
    masks = {}
    for combo in itertools.product(*levels):
        mask = np.ones(rows_X.shape[0], dtype=bool)
        for j in combo:
            mask &= rows_X[:, j] > 0
        masks[" & ".join(columns[j] for j in combo)] = mask
    return masks


def _fits(specs, arrays, log=None):
    """Yield (spec, split, train problem, test rows, seed, result, seconds) for every cell of
    ``specs`` (cells differing only in ε are fitted together when the algorithm allows it)."""
    from dperm.algorithms import Privacy, get_algorithm
    from dperm.protocol.runner import build_problem
    from dperm.protocol.seeds import fit_seed, split_seed
    from dperm.protocol.settings import parse_setting
    from dperm.protocol.splits import make_splits

    groups: dict = {}
    for spec in specs:
        key = repr(sorted((k, repr(v)) for k, v in spec.items() if k != "epsilon"))
        groups.setdefault(key, []).append(spec)
    trains: dict = {}
    for members in groups.values():
        first = members[0]
        algo = get_algorithm(first["algorithm"])
        full = build_problem(first, arrays)
        draws = int(first["protocol"].get("draws", 1)) if algo.private else 1
        privacies = [Privacy(parse_setting(s["epsilon"])[0], s["delta"]) for s in members]
        for split in make_splits(first["protocol"], full.n, split_seed(first)):
            key = (split_seed(first), repr(first["protocol"]), split.fold, split.repeat, first["model"]["name"])
            if key not in trains:
                trains = {key: full.subset(split.train)}  # one split's rows at a time
            train = trains[key]
            seeds = [fit_seed(s, split) for s in members]
            start = time.perf_counter()
            if algo.shares_settings and len(members) > 1:
                results = algo.fit_settings(train, privacies, [np.random.default_rng(s) for s in seeds], draws=draws,
                                            **first["hyper"])
            else:
                results = [algo.fit(train, p, np.random.default_rng(s), draws=draws, **first["hyper"])
                           for p, s in zip(privacies, seeds)]
            seconds = (time.perf_counter() - start) / len(members)
            if log is not None:
                log(f"{first['cell_algorithm']} on {first['dataset']}/{first['model']['name']} split "
                    f"{split.fold}/{split.repeat}: {len(members)} setting(s) in {seconds * len(members):.2f}s")
            for spec, seed, result in zip(members, seeds, results):
                yield spec, split, train, full, seed, result, seconds


def _base_record(spec, split, seed, result, d, seconds):
    from dperm.algorithms import get_algorithm
    from dperm.protocol.settings import format_epsilon, parse_setting

    algo = get_algorithm(spec["algorithm"])
    extra = result.extra
    per_draw = result.seconds_per_draw if result.seconds_per_draw is not None else seconds / result.draws
    eps_spent = np.broadcast_to(np.asarray(result.epsilon_spent, dtype=float), (result.draws,))[d]
    return {
        "paper": spec["paper"], "experiment": spec["experiment"], "dataset": spec["dataset"],
        "model": spec["model"]["name"], "algorithm": spec["cell_algorithm"], "variant": algo.variant,
        "label": algo.label, "setting": format_epsilon(spec["epsilon"]), "sweep": spec.get("sweep", ""),
        "epsilon": parse_setting(spec["epsilon"])[0], "delta": spec["delta"], "epsilon_spent": eps_spent,
        "adjacency": result.adjacency, "fold": split.fold, "repeat": split.repeat, "draw": d, "seed": seed,
        "tuning": spec.get("tuning", "private"), "dp_as_implemented": algo.dp_as_implemented,
        "accounting": result.accounting, "fit_seconds": per_draw, "grad_evals": float(np.mean(result.grad_evals)),
        "iterations": int(np.mean(result.iterations)), "n_train": len(split.train), "p": result.weights.shape[1],
        "sensitivity": extra.get("sensitivity", 0.0), "noise_scale": extra.get("noise_scale", 0.0),
        "expected_noise_norm_sq": extra.get("expected_noise_norm_sq", 0.0),
        "notes": "; ".join(result.notes),
    }


def evaluate(specs: list[dict], arrays: dict, analysis: dict, population: dict | None = None, log=None) -> pd.DataFrame:
    """Records of every fit of ``specs`` (the cells of one experiment and dataset) with the
    metrics of ``analysis["kind"]``: ``groups`` (``group_by`` attributes), ``robust``
    (``test_radii``) or ``population`` (``population`` arrays, rows from ``start``)."""
    from dperm import solvers
    from dperm.losses import Tilted, robust_accuracy
    from dperm.problem import Problem

    kind = analysis["kind"]
    if kind not in KINDS:
        raise ValueError(f"analysis kind must be one of {KINDS}; got {kind!r}")
    rows, optima, pop_cache = [], {}, {}
    for spec, split, train, full, seed, result, seconds in _fits(specs, arrays, log):
        W = result.weights
        X_test, y_test = full.X[split.test], full.y[split.test]
        base = [_base_record(spec, split, seed, result, d, seconds) for d in range(result.draws)]
        loss = full.loss
        if kind == "groups":
            masks = group_masks(arrays["columns"], X_test, analysis["group_by"])
            masks = {k: m for k, m in masks.items() if m.any()}
            losses = loss.per_example_value(W, X_test, y_test)  # (draws, n_test)
            correct = ((W @ X_test.T) >= 0) == (y_test > 0)
            tilt = float(spec["hyper"].get("tilt", 0.0))
            tilted = Problem(train.X, train.y, Tilted(tilt, base=loss), train.l2)
            for d, record in enumerate(base):
                group_loss = {k: float(losses[d, m].mean()) for k, m in masks.items()}
                group_acc = {k: float(correct[d, m].mean()) for k, m in masks.items()}
                worst_loss = max(group_loss, key=group_loss.get)
                worst_acc = min(group_acc, key=group_acc.get)
                record.update(tilt=tilt, test_loss=float(losses[d].mean()), accuracy=float(correct[d].mean()),
                              worst_group_loss=group_loss[worst_loss], worst_loss_group=worst_loss,
                              worst_group_accuracy=group_acc[worst_acc], worst_accuracy_group=worst_acc,
                              tilted_objective=float(tilted.value(W[d])), n_groups=len(masks),
                              smallest_group=int(min(m.sum() for m in masks.values())))
        elif kind == "robust":
            radius = float(spec["hyper"].get("radius", 0.0))
            clean = loss.accuracy(W, X_test, y_test)
            for d, record in enumerate(base):
                record.update(train_radius=radius, accuracy=float(np.atleast_1d(clean)[d]))
                for r in analysis["test_radii"]:
                    record[f"robust_accuracy_{_token(r)}"] = float(robust_accuracy(W[d], X_test, y_test, r))
        else:
            key = (spec["dataset"], split.fold, split.repeat, spec["model"]["name"])
            if key not in optima:
                res = solvers.lbfgs(train, gtol=1e-10)
                w_hat = res.x
                curvature = float(np.trace(solvers.glm_hessian(train, w_hat)) / train.p)
                optima = {key: (float(res.fun), float(res.gap_bound), curvature)}
            f_star, gap_bound, curvature = optima[key]
            values = train.value(W)
            pop_excess = np.full(result.draws, np.nan)
            if population is not None:
                pkey = (spec["model"]["name"], W.shape[1])
                if pkey not in pop_cache:
                    P = Problem(population["X"], population["y"], loss, train.l2)
                    pop_cache[pkey] = (P, float(solvers.lbfgs(P, gtol=1e-10).fun))
                P, pop_star = pop_cache[pkey]
                pop_excess = np.array([P.value(w) for w in W]) - pop_star  # one draw at a time: 10⁶ rows
            for d, record in enumerate(base):
                record.update(excess_risk=float(np.atleast_1d(values)[d] - f_star), optimum_gap_bound=gap_bound,
                              curvature=curvature, population_excess_risk=float(np.atleast_1d(pop_excess)[d]),
                              n_population=0 if population is None else len(population["y"]))
        rows += base
    return pd.DataFrame.from_records(rows)


def _token(value) -> str:
    return f"{float(value):g}"


def population_arrays(arrays: dict, model_loss_labels: str, start: int) -> dict:
    """The population sample: rows [start, n) of a prepared dataset, labels in the loss's form."""
    from dperm.losses import to_label_form

    if not 0 < start < len(arrays["y01"]):
        raise ValueError(f"population start {start} outside the dataset's {len(arrays['y01'])} rows")
    y = to_label_form(arrays["y01"][start:], model_loss_labels)
    return {"X": np.ascontiguousarray(arrays["X"][start:], dtype=float), "y": y}


def summary_metrics(kind: str, analysis: dict) -> list[str]:
    """The metrics a summary of these records holds (mean, std, 95% CI, n per cell)."""
    common = ["fit_seconds", "grad_evals", "sensitivity", "noise_scale"]
    if kind == "groups":
        return ["test_loss", "accuracy", "worst_group_loss", "worst_group_accuracy", "tilted_objective", *common]
    if kind == "robust":
        return ["accuracy", *[f"robust_accuracy_{_token(r)}" for r in analysis["test_radii"]], *common]
    return ["excess_risk", "population_excess_risk", "curvature", "expected_noise_norm_sq", *common]
