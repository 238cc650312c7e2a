"""Non-private hyper-parameter selection (docs/deviations.md#non-private-tuning; Lee & Kifer
2018 §6 "fine-tuned λ ... with grid search", OutPert's "heavily tuned" T and step size).

This is *not* private: it looks at the data (CV accuracy) to choose hyper-parameters and pays no
privacy for it (docs/privacy.md#data-dependent-choices). The paper did the same; we do it in one
documented, separate step per dataset whose choices are written to
``results/tuning/<paper>/<dataset>.json`` and whose every grid point is kept in the ``.csv``
beside it. Every cell that uses a choice is marked ``tuning: non-private``.

* λ (per dataset × model): the grid value with the best mean CV accuracy of NonPrivate (L-BFGS);
  ties go to the larger λ (the smoother problem).
* an algorithm's grid (per dataset × model): the grid point with the best mean CV accuracy of
  that private algorithm over the block's ε values; ties go to the first point in grid order.

Both run through :func:`dperm.protocol.run_cell`, on the tuning protocol's splits. A tuning job
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
from collections.abc import Callable

import numpy as np
import pandas as pd

from .experiments import experiment_models, experiment_profile, registered_name
from .protocol import format_epsilon, run_cell


def tuning_spec(paper: dict, dataset: str) -> dict:
    """The part of a paper config the tuning of ``dataset`` reads: the tuning section, the tuned
    experiments, the models and the algorithms (a paper-shaped dict :func:`tune` accepts)."""
    tuning = paper["tuning"]
    read = ("datasets", "models", "dataset_models", "algorithms", "delta", "profile", "model_overrides")
    experiments = {name: {k: copy.deepcopy(v) for k, v in paper["experiments"][name].items() if k in read}
                   for name in tuning["experiments"]}
    return {"paper": paper["paper"], "tuning": copy.deepcopy(tuning), "models": copy.deepcopy(paper["models"]),
            "algorithms": copy.deepcopy(paper["algorithms"]), "dataset": dataset, "experiments": experiments}


def tuned_algorithms(paper: dict) -> list[str]:
    """Registered algorithms the tuning grid runs (NonPrivate for λ, each hyper block's own)."""
    tuning = paper["tuning"]
    keys = (["nonprivate"] if "l2" in tuning else []) + [b["algorithm"] for b in tuning.get("hyper", [])]
    return [registered_name(paper, k) if k in paper["algorithms"] else k for k in keys]


def tuning_profile(paper: dict, experiment: str) -> str:
    """The profile an experiment's choices are made on (its ``profile``; module docstring)."""
    return paper["experiments"][experiment]["profile"]


def tuning_jobs(paper: dict) -> list[tuple[str, str, str]]:
    """(dataset, model, experiment) for every (dataset, model, tuning profile) the tuned
    experiments use (the first experiment of each wins)."""
    seen, out = set(), []
    for name in paper["tuning"]["experiments"]:
        exp = paper["experiments"][name]
        for dataset, model in ((d, m) for d in exp["datasets"] for m in experiment_models(exp, d)):
            if (dataset, model, exp["profile"]) not in seen:
                seen.add((dataset, model, exp["profile"]))
                out.append((dataset, model, name))
    return out


def runs_with(paper: dict, key: str, dataset: str, model: str, profile: str | None = None) -> bool:
    """Whether algorithm ``key`` runs on (dataset, model) in one of the tuned experiments (of
    tuning profile ``profile``, when given)."""
    return any(key in exp["algorithms"] and dataset in exp["datasets"] and model in experiment_models(exp, dataset)
               and profile in (None, exp["profile"])
               for name, exp in paper["experiments"].items() if name in paper["tuning"]["experiments"])


def needed_profiles(paper: dict, experiment: str, dataset: str, model: str) -> set[str]:
    tuning = paper["tuning"]
    keys = [b["algorithm"] for b in tuning.get("hyper", [])
            if runs_with(paper, b["algorithm"], dataset, model, tuning_profile(paper, experiment))]
    profiles = {paper["experiments"][experiment]["profile"]} if "l2" in tuning else set()
    return profiles | {experiment_profile(paper, experiment, k) for k in keys}


def _spec(paper, experiment, dataset, model, key, l2, hyper, epsilon, seed):
    exp = paper["experiments"][experiment]
    from .experiments import RESERVED

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


def tune(paper: dict, data: Callable[[str, str], dict], seed: int, datasets=None,
         log: Callable[[str], None] = lambda message: None) -> tuple[dict, pd.DataFrame]:
    """Run the paper's tuning grid; return (choices, one row per grid point)."""
    tuning = paper["tuning"]
    chosen, rows = {}, []
    folds: dict = {}  # per prepared array set: its training folds, cut once (protocol.run_cells)

    def run(spec):
        return run_cell(spec, data(spec["dataset"], spec["profile"]), log=None,
                        folds=folds.setdefault((spec["dataset"], spec["profile"]), {}))

    for dataset, model, experiment in tuning_jobs(paper):
        if datasets is not None and dataset not in datasets:
            continue
        profile = tuning_profile(paper, experiment)
        default_l2 = paper["models"][model].get("l2", 0.0)
        choice = {"l2": default_l2, "hyper": {}}
        if "l2" in tuning:
            scores = []
            for l2 in tuning["l2"]["grid"]:
                spec = _spec(paper, experiment, dataset, model, "nonprivate", l2, {}, "inf", seed)
                acc = run(spec)["accuracy"].mean()
                scores.append(acc)
                rows.append({"dataset": dataset, "profile": profile, "model": model, "tuned": "l2",
                             "setting": f"l2={l2}", "mean_accuracy": acc})
            best = max(range(len(scores)), key=lambda i: (scores[i], tuning["l2"]["grid"][i]))
            choice["l2"] = float(tuning["l2"]["grid"][best])
            log(f"{dataset}/{profile}/{model}: lambda = {choice['l2']} (CV accuracy {scores[best]:.4f})")
        for block in tuning.get("hyper", []):
            key = block["algorithm"]
            if not runs_with(paper, key, dataset, model, profile):
                continue
            l2 = choice["l2"] if key in tuning.get("l2", {}).get("algorithms", []) else default_l2
            names = sorted(block["grid"])
            best_acc, best_point = -np.inf, None
            for values in itertools.product(*(block["grid"][n] for n in names)):
                point = dict(zip(names, values))
                accs = [run(spec)["accuracy"].mean()
                        for spec in (_spec(paper, experiment, dataset, model, key, l2, point, eps, seed)
                                     for eps in block["epsilons"])]
                acc = float(np.mean(accs))
                rows.append({"dataset": dataset, "profile": profile, "model": model, "tuned": key,
                             "setting": ", ".join(f"{n}={v}" for n, v in point.items()), "mean_accuracy": acc})
                if acc > best_acc:
                    best_acc, best_point = acc, point
            choice["hyper"][key] = best_point
            log(f"{dataset}/{profile}/{model}: {key} {best_point} (mean CV accuracy {best_acc:.4f})")
        chosen.setdefault(dataset, {}).setdefault(profile, {})[model] = choice
    grid = pd.DataFrame(rows, columns=["dataset", "profile", "model", "tuned", "setting", "mean_accuracy"])
    grid["chosen"] = False
    for dataset, profiles in chosen.items():
        for profile, models in profiles.items():
            for model, choice in models.items():
                mask = (grid["dataset"] == dataset) & (grid["profile"] == profile) & (grid["model"] == model)
                grid.loc[mask & (grid["tuned"] == "l2") & (grid["setting"] == f"l2={choice['l2']}"), "chosen"] = True
                for key, point in choice["hyper"].items():
                    text = ", ".join(f"{n}={v}" for n, v in point.items())
                    grid.loc[mask & (grid["tuned"] == key) & (grid["setting"] == text), "chosen"] = True
    return chosen, grid
