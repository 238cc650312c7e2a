"""Fully resolved specifications: what a job, an optimum or a figure reads from the config, as
plain JSON-able data, so Snakemake (which passes them as rule parameters: a changed value reruns
exactly what it fixes) and ``python -m dperm`` agree.

Hyper-parameters of a cell, later entries winning: the algorithm's registered defaults < the
paper's ``algorithms`` section < the experiment's ``hyper`` < the experiment's ``per_dataset`` <
the swept value (parameter sweeps) < values chosen by the paper's non-private tuning run
(:func:`apply_tuning`, which marks the cell ``tuning: non-private``). The model: the paper's
``models`` < the experiment's ``model_overrides`` < the algorithm's ``model_overrides`` < the
experiment's ``per_dataset`` < tuned λ.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from ..protocol.settings import format_epsilon
from .cells import (
    Cell,
    Job,
    algorithm_spec,
    base_key,
    experiment_profile,
    job_parts,
    job_settings,
    jobs,
    sweep_lookup,
)
from .views import Paper

#: keys of an ``algorithms`` entry that are not hyper-parameters
RESERVED = ("use", "profile", "label", "model_overrides", "tuned_as")


def tuned_key(paper: Paper, algorithm: str) -> str:
    """The key whose tuned hyper-parameters a key uses: its ``tuned_as`` (a control that must run
    with another algorithm's choices), else itself."""
    return paper.algorithms.get(algorithm, {}).get("tuned_as", algorithm)


def uses_tuning(paper: Paper, experiment: str, algorithm: str) -> dict | None:
    """What of a cell the paper's non-private tuning run chooses (``{"l2": bool, "hyper":
    bool}``), or None when it chooses nothing. A key with ``tuned_as`` takes the hyper-parameters
    chosen for that key."""
    tuning = paper.tuning
    if tuning is None or experiment not in tuning.experiments:
        return None
    l2 = algorithm in tuning.l2_algorithms
    hyper = tuning.hyper_for(tuned_key(paper, algorithm)) is not None
    return {"l2": l2, "hyper": hyper} if l2 or hyper else None


def job_uses_tuning(paper: Paper, job: Job) -> bool:
    return uses_tuning(paper, job.experiment, base_key(paper, job)) is not None


def cell_spec(paper: Paper, cell: Cell, seed: int) -> dict:
    """Everything a job needs to run a cell, as plain JSON-able data. A cell whose values come
    from the tuning run carries ``tuned`` (what is chosen there) and is completed by
    :func:`apply_tuning` inside the job, so that the spec itself depends on the config only."""
    exp = paper.experiments[cell.experiment]
    key, swept = sweep_lookup(exp).get(cell.algorithm, (cell.algorithm, None))
    algo_cfg = copy.deepcopy(paper.algorithms[key])
    hyper = {k: v for k, v in algo_cfg.items() if k not in RESERVED}
    hyper.update(exp.hyper.get(key, {}))
    hyper.update(exp.per_dataset.get(cell.dataset, {}).get(key, {}))
    sweep = ""
    if swept is not None:
        hyper[exp.sweep.param] = swept
        sweep = f"{exp.sweep.param}={swept}"
    model = {"name": cell.model, **copy.deepcopy(paper.models[cell.model])}
    model.update(exp.model_overrides.get(cell.model, {}))
    model.update(algo_cfg.get("model_overrides", {}).get(cell.model, {}))
    model.update(exp.per_dataset.get(cell.dataset, {}).get("models", {}).get(cell.model, {}))
    spec = {
        "paper": cell.paper, "experiment": cell.experiment, "dataset": cell.dataset,
        "profile": experiment_profile(paper, cell.experiment, key),
        "model": model, "algorithm": paper.registered_name(key), "cell_algorithm": cell.algorithm,
        "hyper": hyper, "sweep": sweep, "epsilon": cell.epsilon,
        # δ only where it is a target: a non-private fit claims nothing, and changing δ reruns it not
        "delta": exp.delta if algorithm_spec(paper, key).private else 0.0,
        "protocol": copy.deepcopy(exp.protocol), "seed": int(seed),
        "tuning": _tuning_label(paper, exp, key),
    }
    if exp.splits_of is not None:
        spec["splits_of"] = exp.splits_of
    if algo_cfg.get("label"):  # the name in tables and legends (records' ``label``)
        spec["label"] = algo_cfg["label"]
    if exp.metrics:  # metric hooks the protocol computes on every fit (dperm.protocol.metrics)
        spec["metrics"] = copy.deepcopy(exp.metrics)
    tuned = uses_tuning(paper, cell.experiment, key)
    if tuned is not None:
        spec["tuned"] = {**tuned, "key": tuned_key(paper, key), "profile": exp.profile}
    return spec


def _tuning_label(paper: Paper, exp, key: str) -> str:
    """A cell's ``tuning`` label before any tuning run (:func:`apply_tuning`): ``non-private``
    when a configured value was read from the data (``data_derived``), ``n/a`` for a
    non-private algorithm (its whole fit reads the data: whether its settings did too says
    nothing of privacy), else ``private``."""
    if exp.data_derived.get(key):
        return "non-private"
    return "private" if algorithm_spec(paper, key).private else "n/a"


def job_specs(paper: Paper, job: Job, seed: int, part: int | None = None) -> list[dict]:
    """The specs a job runs: one per target ε (a row) or the non-private cell, or for step-count
    settings one spec, the longest, whose run also releases the shorter ones (``path``). ``part``
    (1, 2, ...): those of one part of a job split into processes (:func:`job_parts`)."""
    settings_ = job_settings(paper, job) if part is None else job_parts(paper, job)[part - 1]
    steps = sorted(int(s[1:]) for s in settings_ if s.startswith("T"))
    if steps:
        longest = cell_spec(paper, Cell(*vars(job).values(), f"T{steps[-1]}"), seed)
        return [{**longest, "path": steps[:-1]} if len(steps) > 1 else longest]
    return [cell_spec(paper, Cell(*vars(job).values(), s), seed) for s in settings_]


def apply_tuning(spec: dict, tuned: dict | None) -> dict:
    """``spec`` with the choices of the tuning run (λ and/or the algorithm's grid point) filled
    in and marked ``tuning: non-private``; a spec that uses none is returned unchanged."""
    what = spec.get("tuned")
    if what is None:
        return spec
    if tuned is None:
        raise ValueError(f"the cell {spec['paper']}/{spec['experiment']}/{spec['dataset']}/"
                         f"{spec['model']['name']}/{spec['cell_algorithm']} needs the paper's tuning choices")
    try:
        chosen = tuned[spec["dataset"]][what["profile"]][spec["model"]["name"]]
    except KeyError:
        raise ValueError(f"the tuning choices have nothing for dataset {spec['dataset']!r}, tuning profile "
                         f"{what['profile']!r}, model {spec['model']['name']!r}") from None
    out = copy.deepcopy(spec)
    if what["l2"]:
        out["model"]["l2"] = chosen["l2"]
    if what["hyper"]:
        point = chosen.get("hyper", {}).get(what["key"], {})
        if "by_epsilon" in point:  # chosen per ε (a per_epsilon tuning block): this cell's ε
            if spec["epsilon"] not in point["by_epsilon"]:
                raise ValueError(f"the tuning choices for {what['key']!r} have no point at epsilon "
                                 f"{spec['epsilon']!r}; "
                                 f"they have {sorted(point['by_epsilon'])}")
            point = point["by_epsilon"][spec["epsilon"]]
        out["hyper"].update(point)
    out["tuning"] = "non-private"
    return out


def figure_spec(paper: Paper, name: str) -> dict:
    """Everything a declared figure reads from the configuration (its own entry, its
    experiment's protocol, panels and swept values, the protocols of the experiments it borrows
    from, the paper's algorithm order for colours, whether it is a quick run)."""
    figure = paper.figures[name]
    fig = figure.as_config()
    exp = paper.experiments[figure.experiment]
    drawn = figure.algorithms if figure.algorithms is not None else exp.algorithms
    return {**fig, "figure": name, "protocol": copy.deepcopy(exp.protocol),
            "experiment_models": list(exp.models), "experiment_datasets": list(exp.datasets),
            "experiment_algorithms": list(exp.algorithms),
            "sweep_values": {key: value for key, (_, value) in sweep_lookup(exp).items()},
            "steps": {key: list(steps) for key, steps in exp.steps.items() if key in drawn},
            "borrowed_protocols": {e: copy.deepcopy(paper.experiments[e].protocol) for e in figure.borrow},
            "palette": list(paper.algorithms), "quick": paper.quick}


def figure_datasets(paper: Paper, name: str) -> list[str]:
    figure = paper.figures[name]
    if figure.panels is not None:
        return [p.dataset for p in figure.panels]
    return list(figure.datasets if figure.datasets is not None else paper.experiments[figure.experiment].datasets)


# -- certified optima --------------------------------------------------------------------------------

def l2_token(l2: float) -> str:
    return "0" if l2 == 0 else format_epsilon(l2)


def optimum_path(spec: dict) -> str:
    """Optima are shared by every cell with the same data, splits, loss and λ."""
    return (f"results/optima/{spec['paper']}/{spec['experiment']}/{spec['dataset']}/"
            f"{spec['model']['name']}/{spec['profile']}/l2-{l2_token(spec['model'].get('l2', 0.0))}.csv")


def optimum_part_count(paper: Paper, experiment: str, dataset: str, model: str) -> int:
    """How many processes the optima of (experiment, dataset, model) are solved in (``optimum_parts``;
    1: whole)."""
    return paper.experiments[experiment].optimum_parts.get(dataset, {}).get(model, 1)


def optimum_files(paper: Paper, spec: dict) -> list[str]:
    """The optimum file(s) a cell of ``spec`` reads: :func:`optimum_path`, or the parts of it its
    experiment splits the optimum into (``optimum_parts``: ``.../l2-<λ>/part<k>.csv``)."""
    path = optimum_path(spec)
    n = optimum_part_count(paper, spec["experiment"], spec["dataset"], spec["model"]["name"])
    return [path] if n == 1 else [f"{path.removesuffix('.csv')}/part{k}.csv" for k in range(1, n + 1)]


def start_specs(paper: Paper, experiment: str, dataset: str, model: str, profile: str, seed: int) -> list[dict]:
    """The first cell spec of each job of (experiment, dataset, model), on data of ``profile``,
    that starts from θ̃ (:func:`dperm.optimum.needs_start`): when two or more do, one job
    (rule ``starts``) solves θ̃ once per split for them all (:func:`start_file`)."""
    from ..optimum import needs_start

    specs = (job_specs(paper, job, seed)[0] for job in jobs(paper, [experiment])
             if (job.dataset, job.model) == (dataset, model))
    return [s for s in specs if s["profile"] == profile and needs_start(s)]


def start_path(paper: str, experiment: str, dataset: str, model: str, profile: str) -> str:
    """The file of θ̃ per split that the jobs of (experiment, dataset, model, profile) share."""
    return f"results/starts/{paper}/{experiment}/{dataset}/{model}/{profile}.npz"


def start_file(paper: Paper, job: Job, seed: int, *, spec: dict | None = None, starters=None) -> str | None:
    """The shared θ̃ file ``job`` reads: only if the job itself starts from θ̃ and another job
    of its (experiment, dataset, model) does too; None otherwise (a job that does not start from
    θ̃ must not wait for, or rerun after, a solve it never reads).

    ``spec``: the job's first cell spec, if the caller has it. ``starters(experiment, dataset,
    model, profile)``: :func:`start_specs` of a cell, for a caller that keeps them (the workflow
    asks once per job while it builds the graph; each call would rebuild every spec of the
    experiment)."""
    from ..optimum import needs_start

    spec = job_specs(paper, job, seed)[0] if spec is None else spec
    if not needs_start(spec):
        return None
    if starters is None:
        def starters(*cell):
            return start_specs(paper, *cell, seed)
    if len(starters(job.experiment, job.dataset, job.model, spec["profile"])) < 2:
        return None
    return start_path(paper.key, job.experiment, job.dataset, job.model, spec["profile"])


def solves_optimum(paper: Paper, model: str) -> bool:
    """Whether a cell of ``model`` is compared with the optima of its splits: convex models (a
    certified optimum), non-convex ones only when the paper asks for multi-start solves
    (``optimum: {multistart: k}``), and never in papers that turn optima off (``solve: false``)."""
    convex = paper.model_loss(model) != "mlp"
    return paper.optimum.solve and (convex or paper.optimum.multistart > 0)


def optimum_spec(paper: Paper, experiment: str, dataset: str, model: str, profile: str, l2: float,
                 seed: int) -> dict:
    """What fixes an optimum: data (dataset, profile), splits (protocol, seed), loss and λ, and
    (only when off: older specs stay valid) whether the unregularised optimum L* is solved.
    Nothing else: the number of draws (noise draws per fold) does not touch it, so changing it
    does not solve the optimum again."""
    exp = paper.experiments[experiment]
    spec = {"paper": paper.key, "experiment": experiment, "dataset": dataset, "profile": profile,
            "model": {"name": model, **copy.deepcopy(paper.models[model]),
                      **exp.model_overrides.get(model, {}), "l2": float(l2)},
            "protocol": {k: v for k, v in copy.deepcopy(exp.protocol).items() if k != "draws"}, "seed": int(seed)}
    if not paper.optimum.unregularised:
        spec["unregularised"] = False
    if paper.model_loss(model) == "mlp" and paper.optimum.multistart > 0:
        spec["multistart"] = {"starts": int(paper.optimum.multistart),
                              "iterations": int(paper.optimum.multistart_iterations)}
    if exp.splits_of is not None:
        spec["splits_of"] = exp.splits_of
    return spec


def dumps(spec) -> str:
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


def paper_path(paper_dir, name: str) -> Path:
    return Path(paper_dir, f"{name}.yaml")
