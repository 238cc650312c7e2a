"""Non-private hyper-parameter selection (docs/deviations.md#non-private-tuning; Lee & Kifer
2018 §6 "fine-tuned λ ... with grid search", OutPert's "heavily tuned" T and step size).

This is *not* private: it looks at the data (validation folds) to choose hyper-parameters and
pays no privacy for it (docs/privacy.md#data-dependent-choices). The paper did the same; we do
it in one documented, separate step per dataset whose choices are written to
``results/tuning/<paper>/<dataset>.json`` and whose every grid point is kept in the ``.csv``
beside it. Every cell that uses a choice is marked ``tuning: non-private``.

A dataset's choices are made in *parts*, one per (model, tuning profile) (:func:`tuning_parts`): no
choice of one part reads another's runs, so each part is a job of its own
(``results/tuning/<paper>/<dataset>/<model>/<profile>.json``, the choices file's shape restricted to
its part), a fit waits only for its own part, and :func:`merge` joins the parts into the dataset's
files, equal to those of one run over every part.

The criterion (``tuning.criterion``) is the mean *validation loss* by default: the model's
unregularised loss on the held-out fold (the records' ``test_loss`` on the tuning protocol's
splits), lower is better. Accuracy stays the reported metric, not the criterion: on an
imbalanced dataset every setting that predicts the majority class ties in accuracy, and the
tie would be broken by grid order (docs/deviations.md#tuning-criterion). ``accuracy`` (mean
validation accuracy, higher is better) is kept for comparison with the papers' practice.

* λ (per dataset × model): the grid value with the best criterion for NonPrivate (L-BFGS);
  ties go to the larger λ (the smoother problem).
* an algorithm's grid (per dataset × model): the grid point with the best criterion of that
  private algorithm, averaged over the block's ε values; ties go to the first point in grid order.
  A block with ``per_epsilon: true`` chooses a point for each of its ε instead (the choices file
  holds ``{"by_epsilon": {<ε token>: point}}``), and a cell takes the point of its own ε.

A non-finite validation loss (a diverged fit) ranks last. A choice at the smallest or largest
value of a grid of two or more values is reported in the table's ``at_edge`` column and in the
log: the grid may be too narrow there.

Both run through :func:`dperm.protocol.runner.run_cell`, on the tuning protocol's splits. A tuning job
receives :func:`tuning_spec`, the part of the paper config it reads, so that it reruns exactly
when one of those values changes.

Choices are made per *tuning profile*, the preprocessing profile of the tuned experiment (its
``profile`` key; an algorithm's own profile still decides where its grid runs): an experiment on
public bounds (docs/privacy.md#public-bounds) gets λ chosen on public-bounds data, never on data
scaled with bounds read from the rows. The choices file is ``{dataset: {profile: {model:
choice}}}``.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from .protocol.runner import run_cell
from .protocol.settings import format_epsilon


def tuning_spec(paper, dataset: str | None) -> dict:
    """The part of a paper config (:class:`dperm.grid.Paper`) the tuning of ``dataset`` reads: the
    tuning section, the tuned experiments, the models and the algorithms, as the JSON-able
    paper-shaped mapping every function below takes (a tuning job receives it as its spec)."""
    read = ("datasets", "models", "dataset_models", "algorithm_models", "algorithms", "delta", "profile",
            "model_overrides")
    experiments = {name: {k: copy.deepcopy(v) for k, v in paper.experiments[name].raw.items() if k in read}
                   for name in paper.tuning.experiments}
    return {"paper": paper.key, "tuning": copy.deepcopy(paper.tuning.raw), "models": copy.deepcopy(paper.models),
            "algorithms": copy.deepcopy(paper.algorithms), "dataset": dataset, "experiments": experiments}


def as_spec(paper) -> dict:
    """``paper`` as the paper-shaped mapping the functions below read: a tuning spec is returned
    as it is, a :class:`dperm.grid.Paper` turned into its tuning spec (every dataset)."""
    return paper if isinstance(paper, dict) else tuning_spec(paper, None)


def registered_name(paper: dict, key: str) -> str:
    return paper["algorithms"][key].get("use", key)


def experiment_models(exp: dict, dataset: str) -> list[str]:
    return exp.get("dataset_models", {}).get(dataset, exp["models"])


def runs_on(exp: dict, key: str, model: str) -> bool:
    return model in exp.get("algorithm_models", {}).get(key, [model])


def experiment_profile(paper: dict, experiment: str, algorithm: str) -> str:
    return paper["algorithms"][algorithm].get("profile") or paper["experiments"][experiment]["profile"]


def tuned_algorithms(paper: dict) -> list[str]:
    """Registered algorithms the tuning grid runs (NonPrivate for λ, each hyper block's own)."""
    paper = as_spec(paper)
    tuning = paper["tuning"]
    keys = (["nonprivate"] if "l2" in tuning else []) + [b["algorithm"] for b in tuning.get("hyper", [])]
    return [registered_name(paper, k) if k in paper["algorithms"] else k for k in keys]


def tuning_profile(paper: dict, experiment: str) -> str:
    """The profile an experiment's choices are made on (its ``profile``; module docstring)."""
    paper = as_spec(paper)
    return paper["experiments"][experiment]["profile"]


def tuning_parts(paper: dict, dataset: str) -> list[tuple[str, str]]:
    """(model, tuning profile) of each part of ``dataset``'s tuning, in the order one run over the
    whole dataset makes them (:func:`tuning_jobs`)."""
    paper = as_spec(paper)
    return [(model, tuning_profile(paper, experiment)) for _, model, experiment in tuning_jobs(paper, [dataset])]


def tuning_jobs(paper: dict, datasets=None, parts=None) -> list[tuple[str, str, str]]:
    """(dataset, model, experiment) for every (dataset, model, tuning profile) the tuned
    experiments use (the first experiment of each wins); only those of ``datasets`` and of the
    (model, tuning profile) ``parts`` when given (None: all)."""
    paper = as_spec(paper)
    seen, out = set(), []
    for name in paper["tuning"]["experiments"]:
        exp = paper["experiments"][name]
        for dataset, model in ((d, m) for d in exp["datasets"] for m in experiment_models(exp, d)):
            if (dataset, model, exp["profile"]) not in seen:
                seen.add((dataset, model, exp["profile"]))
                out.append((dataset, model, name))
    return [(dataset, model, name) for dataset, model, name in out
            if (datasets is None or dataset in datasets)
            and (parts is None or (model, tuning_profile(paper, name)) in parts)]


def runs_with(paper: dict, key: str, dataset: str, model: str, profile: str | None = None) -> bool:
    """Whether algorithm ``key`` runs on (dataset, model) in one of the tuned experiments (of
    tuning profile ``profile``, when given)."""
    paper = as_spec(paper)
    return any(key in exp["algorithms"] and dataset in exp["datasets"] and model in experiment_models(exp, dataset)
               and runs_on(exp, key, model) and profile in (None, exp["profile"])
               for name, exp in paper["experiments"].items() if name in paper["tuning"]["experiments"])


def needed_profiles(paper: dict, experiment: str, dataset: str, model: str) -> set[str]:
    paper = as_spec(paper)
    tuning = paper["tuning"]
    keys = [b["algorithm"] for b in tuning.get("hyper", [])
            if runs_with(paper, b["algorithm"], dataset, model, tuning_profile(paper, experiment))]
    profiles = {paper["experiments"][experiment]["profile"]} if "l2" in tuning else set()
    return profiles | {experiment_profile(paper, experiment, k) for k in keys}


def _spec(paper, experiment, dataset, model, key, l2, hyper, epsilon, seed):
    exp = paper["experiments"][experiment]
    from .grid.specs import RESERVED

    algo = {k: v for k, v in paper["algorithms"].get(key, {}).items() if k not in RESERVED}
    return {"paper": paper["paper"], "experiment": f"tuning-{experiment}", "dataset": dataset,
            "profile": experiment_profile(paper, experiment, key) if key in paper["algorithms"] else exp["profile"],
            "model": {"name": model, **copy.deepcopy(paper["models"][model]),
                      **exp["model_overrides"].get(model, {}),
                      **paper["algorithms"].get(key, {}).get("model_overrides", {}).get(model, {}),
                      "l2": float(l2)},
            "algorithm": registered_name(paper, key) if key in paper["algorithms"] else key,
            "cell_algorithm": key, "hyper": {**algo, **hyper}, "epsilon": format_epsilon(epsilon),
            "delta": exp["delta"], "protocol": copy.deepcopy(paper["tuning"]["protocol"]),
            "seed": int(seed), "tuning": "non-private"}


GRID_COLUMNS = ["dataset", "profile", "model", "tuned", "setting", "mean_validation_loss", "mean_accuracy", "chosen",
                "at_edge"]


def _score(frames: list[pd.DataFrame], criterion: str) -> tuple[float, float, float]:
    """(rank key, mean validation loss, mean accuracy) of a grid point's records; the rank key
    is smaller for better points (a non-finite loss ranks last)."""
    loss = float(np.mean([f["test_loss"].mean() for f in frames]))
    accuracy = float(np.mean([f["accuracy"].mean() for f in frames]))
    if criterion == "accuracy":
        return (-accuracy if np.isfinite(accuracy) else np.inf), loss, accuracy
    return (loss if np.isfinite(loss) else np.inf), loss, accuracy


def grid_edges(grid: dict, point: dict) -> str:
    """Which values of ``point`` are the smallest or largest of their grid (grids of two or more
    values; numbers by value, other values by their place in the list), e.g.
    ``"steps=200 (largest)"``; empty when none is."""
    out = []
    for name, value in point.items():
        values = list(grid[name])
        if len(values) < 2:
            continue
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        low, high = (min(values), max(values)) if numeric else (values[0], values[-1])
        if value == low:
            bound = numeric and value == 0 and low >= 0  # nothing below 0 for a non-negative grid
            out.append(f"{name}={value} ({'smallest' if numeric else 'first'}"
                       f"{', 0: no smaller value exists' if bound else ''})")
        elif value == high:
            out.append(f"{name}={value} ({'largest' if numeric else 'last'})")
    return "; ".join(out)


def _progress(paper: dict, datasets, parts=None):
    """The tuning run's :class:`dperm.progress.Progress`, counted in grid points: the λ grid of each
    (dataset, model) it tunes, and each block's grid once per ε group (one, or one per ε)."""
    from .progress import Progress

    tuning, total = paper["tuning"], 0
    for dataset, model, experiment in tuning_jobs(paper, datasets, parts):
        total += len(tuning["l2"]["grid"]) if "l2" in tuning else 0
        for block in tuning.get("hyper", []):
            if runs_with(paper, block["algorithm"], dataset, model, tuning_profile(paper, experiment)):
                groups = len(block["epsilons"]) if block.get("per_epsilon") else 1
                total += groups * math.prod(len(values) for values in block["grid"].values())
    where = "/".join(datasets) if datasets else "every dataset"
    if parts is not None:
        where += " (" + ", ".join(f"{model}/{profile}" for model, profile in parts) + ")"
    return Progress(f"{paper.get('paper', 'tuning')}/tuning/{where}", total, unit="grid points")


def tune(paper: dict, data: Callable[[str, str], dict], seed: int, datasets=None, parts=None,
         log: Callable[[str], None] = lambda message: None) -> tuple[dict, pd.DataFrame]:
    """Run the paper's tuning grid on ``datasets`` (None: every dataset), restricted to the (model,
    tuning profile) ``parts`` when given; return (choices, one row per grid point)."""
    paper = as_spec(paper)
    if parts is not None:
        parts = [tuple(part) for part in parts]
        known = {part for dataset in (datasets or {d for d, _, _ in tuning_jobs(paper)})
                 for part in tuning_parts(paper, dataset)}
        unknown = [part for part in parts if part not in known]
        if unknown:
            raise ValueError(f"no tuning part {', '.join('/'.join(p) for p in unknown)}: the parts of "
                             f"{'/'.join(datasets) if datasets else 'this paper'} are "
                             f"{', '.join('/'.join(p) for p in sorted(known)) or 'none'} (model/profile)")
    tuning = paper["tuning"]
    criterion = tuning.get("criterion", "validation-loss")
    chosen, rows = {}, []
    folds: dict = {}  # per prepared array set: its training folds, cut once (protocol.run_cells)

    def run(spec):
        return run_cell(spec, data(spec["dataset"], spec["profile"]), log=None,
                        folds=folds.setdefault((spec["dataset"], spec["profile"]), {}))

    progress = _progress(paper, datasets, parts)

    def report(where, what, grid, point, loss, accuracy):
        edge = grid_edges(grid, point)
        setting = ", ".join(f"{n}={v}" for n, v in point.items())
        log(f"{where}: {what} {setting} (mean validation loss {loss:.4f}, accuracy {accuracy:.4f})"
            + (f"; WARNING: at the edge of its grid: {edge}" if edge else ""))
        return edge

    for dataset, model, experiment in tuning_jobs(paper, datasets, parts):
        profile = tuning_profile(paper, experiment)
        where = f"{dataset}/{profile}/{model}"
        default_l2 = paper["models"][model].get("l2", 0.0)
        choice = {"l2": default_l2, "hyper": {}}
        edges, texts = {}, {}  # per tuned key: the chosen point's edge note and its setting text
        if "l2" in tuning:
            grid = tuning["l2"]["grid"]
            scores = []
            for l2 in grid:
                spec = _spec(paper, experiment, dataset, model, "nonprivate", l2, {}, "inf", seed)
                scores.append(_score([run(spec)], criterion))
                rows.append({"dataset": dataset, "profile": profile, "model": model, "tuned": "l2",
                             "setting": f"l2={l2}", "mean_validation_loss": scores[-1][1],
                             "mean_accuracy": scores[-1][2]})
                progress.advance()
            best = min(range(len(grid)), key=lambda i: (scores[i][0], -grid[i]))
            choice["l2"] = float(grid[best])
            texts["l2"] = f"l2={grid[best]}"
            edges["l2"] = report(where, "lambda", {"l2": grid}, {"l2": grid[best]}, *scores[best][1:])
        for block in tuning.get("hyper", []):
            key = block["algorithm"]
            if not runs_with(paper, key, dataset, model, profile):
                continue
            l2 = choice["l2"] if key in tuning.get("l2", {}).get("algorithms", []) else default_l2
            names = sorted(block["grid"])
            # One choice over the block's ε (scored by the mean over them), or one per ε.
            groups = ([(format_epsilon(eps), [eps]) for eps in block["epsilons"]] if block.get("per_epsilon")
                      else [(None, block["epsilons"])])
            for token, epsilons in groups:
                tuned = key if token is None else f"{key} (ε = {token})"
                best_score, best_point = None, None
                for values in itertools.product(*(block["grid"][n] for n in names)):
                    point = dict(zip(names, values))
                    score = _score([run(spec) for spec in (_spec(paper, experiment, dataset, model, key, l2, point,
                                                                 eps, seed) for eps in epsilons)], criterion)
                    rows.append({"dataset": dataset, "profile": profile, "model": model, "tuned": tuned,
                                 "setting": ", ".join(f"{n}={v}" for n, v in point.items()),
                                 "mean_validation_loss": score[1], "mean_accuracy": score[2]})
                    progress.advance()
                    if best_score is None or score[0] < best_score[0]:
                        best_score, best_point = score, point
                if token is None:
                    choice["hyper"][key] = best_point
                else:
                    choice["hyper"].setdefault(key, {"by_epsilon": {}})["by_epsilon"][token] = best_point
                texts[tuned] = ", ".join(f"{n}={v}" for n, v in best_point.items())
                edges[tuned] = report(where, tuned, block["grid"], best_point, *best_score[1:])
        chosen.setdefault(dataset, {}).setdefault(profile, {})[model] = choice
        for row in rows:
            if (row["dataset"], row["profile"], row["model"]) == (dataset, profile, model):
                row["chosen"] = row["setting"] == texts.get(row["tuned"])
                row["at_edge"] = edges.get(row["tuned"], "") if row["chosen"] else ""
    return chosen, pd.DataFrame(rows, columns=GRID_COLUMNS)


def merge(parts: list[tuple[dict, pd.DataFrame]]) -> tuple[dict, pd.DataFrame]:
    """One dataset's (choices, grid) from those of its parts, given in :func:`tuning_parts`' order:
    what one run over every part returns. Two parts choosing for the same (dataset, profile,
    model) are refused (a part given twice)."""
    chosen, grids = {}, []
    for choices, grid in parts:
        for dataset, profiles in choices.items():
            for profile, models in profiles.items():
                mine = chosen.setdefault(dataset, {}).setdefault(profile, {})
                for model, choice in models.items():
                    if model in mine:
                        raise ValueError(f"two tuning parts choose for {dataset}/{profile}/{model}")
                    mine[model] = choice
        grids.append(grid)
    grid = pd.concat(grids, ignore_index=True) if grids else pd.DataFrame(columns=GRID_COLUMNS)
    return chosen, grid[GRID_COLUMNS]
