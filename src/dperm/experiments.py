"""Paper configurations -> table cells -> jobs -> fully resolved cell specifications.

A paper's grid lives in ``config/papers/<paper>.yaml`` (schema ``dperm/schemas/paper.schema.yaml``;
every key is documented in ``config/README.md``). This module is the one place that turns it into
cells, groups the cells into jobs and writes the JSON spec a job receives, so Snakemake and
``python -m dperm`` agree. :func:`load_paper` refuses, with the file, the key and what is
allowed, every grid that could not run as written.

A *cell* is one (paper, experiment, dataset, model, algorithm key, privacy setting). A *job* is
the cells of one (paper, experiment, dataset, model, algorithm key) run in one process: the
target ε of a row (DP-AGD fits them together), the step counts of a path (one run, released
along the way), or a lone non-private cell.

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
from dataclasses import dataclass
from pathlib import Path

from .config import ConfigError, read_yaml, validate
from .protocol.settings import format_epsilon

RESERVED = ("use", "profile", "label", "model_overrides")


@dataclass(frozen=True)
class Cell:
    paper: str
    experiment: str
    dataset: str
    model: str
    algorithm: str  # the paper's algorithm key, or a sweep key such as dp-agd-splits20
    epsilon: str  # a privacy-setting token, see dperm.protocol.settings.format_epsilon

    @property
    def job(self) -> Job:
        return Job(self.paper, self.experiment, self.dataset, self.model, self.algorithm)

    @property
    def path(self) -> str:
        return f"{self.job.cell_dir}/eps{self.epsilon}.csv"


@dataclass(frozen=True)
class Job:
    """The cells of one (paper, experiment, dataset, model, algorithm key), run in one process."""

    paper: str
    experiment: str
    dataset: str
    model: str
    algorithm: str

    @property
    def path(self) -> str:
        return f"results/jobs/{self.paper}/{self.experiment}/{self.dataset}/{self.model}/{self.algorithm}.csv"

    @property
    def cell_dir(self) -> str:
        return f"results/runs/{self.paper}/{self.experiment}/{self.dataset}/{self.model}/{self.algorithm}"


# -- loading and checking a paper ------------------------------------------------------------------

def merge(base, override):
    """``override`` deep-merged over ``base``: mappings merge key by key, anything else replaces,
    and a null value removes the key (a quick run can drop a whole experiment)."""
    if not isinstance(base, dict) or not isinstance(override, dict):
        return copy.deepcopy(override)
    out = copy.deepcopy(base)
    for key, value in override.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def load_paper(path, quick: bool = False) -> dict:
    """Read and check a paper config: the schema (defaults filled in), then every name it uses
    (algorithms, hyper-parameters and their types, models, experiments, figure references) and
    every grid that would not run as written. ``quick``: the file's ``quick`` section is merged
    over it first (reduced protocols; see ``config/quick.yaml``) and ``paper["quick"]`` is true.
    Raises :class:`ConfigError` naming the file and the key."""
    raw = read_yaml(path)
    overrides = raw.pop("quick", None) if isinstance(raw, dict) else None
    paper = merge(raw, overrides or {}) if quick else raw
    where = f"{path}" + (" (quick run: its 'quick' section merged in)" if quick and overrides else "")
    validate(paper, "paper", where)
    _check_paper(paper, where)
    paper["quick"] = bool(quick)
    return paper


def _fail(where: str, message: str):
    raise ConfigError(f"{where}: {message}")


def registered_name(paper: dict, key: str) -> str:
    return paper["algorithms"][key].get("use", key)


def algorithm_spec(paper: dict, key: str):
    from .algorithms import get_algorithm

    return get_algorithm(registered_name(paper, key))


def check_hyper(paper: dict, key: str, hyper: dict, where: str) -> None:
    """The algorithm of ``key`` accepts every hyper-parameter named, with a value of its type."""
    spec = algorithm_spec(paper, key)
    given = {k: v for k, v in hyper.items() if k not in RESERVED}
    unknown = sorted(set(given) - set(spec.defaults))
    if unknown:
        _fail(where, f"unknown hyper-parameter(s) {unknown} for algorithm {spec.name!r}; allowed: "
                     f"{sorted(spec.defaults)}")
    spec.check_types(given, where)


def _check_paper(paper: dict, where: str) -> None:
    from .algorithms import algorithm_names

    known = algorithm_names()
    for key, block in paper["algorithms"].items():
        name = block.get("use", key)
        if name not in known:
            _fail(f"{where}: algorithms.{key}", f"unknown algorithm {name!r}; known algorithms: {', '.join(known)}")
        check_hyper(paper, key, block, f"{where}: algorithms.{key}")
        for model in block.get("model_overrides", {}):
            if model not in paper["models"]:
                _fail(f"{where}: algorithms.{key}.model_overrides", f"unknown model {model!r}; models: "
                                                                    f"{sorted(paper['models'])}")
    for name, exp in paper["experiments"].items():
        _check_experiment(paper, name, exp, f"{where}: experiments.{name}")
    for name, fig in paper["figures"].items():
        _check_figure(paper, fig, f"{where}: figures.{name}")
    tuning = paper.get("tuning")
    if tuning:
        missing = sorted(set(tuning["experiments"]) - set(paper["experiments"]))
        if missing:
            _fail(f"{where}: tuning.experiments", f"experiments {missing} are not defined; defined: "
                                                  f"{sorted(paper['experiments'])}")
        for algorithm in tuning.get("l2", {}).get("algorithms", []):
            if algorithm not in paper["algorithms"]:
                _fail(f"{where}: tuning.l2.algorithms", f"unknown algorithm key {algorithm!r}")
        keys = [block["algorithm"] for block in tuning.get("hyper", [])]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:  # the second block would silently overwrite the first's choice
            _fail(f"{where}: tuning.hyper", f"algorithm keys {twice} have more than one grid block; give each one "
                                            "block (one grid over all its hyper-parameters)")
        for block in tuning.get("hyper", []):
            if block["algorithm"] not in paper["algorithms"]:
                _fail(f"{where}: tuning.hyper", f"unknown algorithm key {block['algorithm']!r}; defined: "
                                                f"{sorted(paper['algorithms'])}")
            check_hyper(paper, block["algorithm"], {k: v[0] for k, v in block["grid"].items()},
                        f"{where}: tuning.hyper[{block['algorithm']}]")


def _unique_settings(values, where: str, what: str) -> None:
    tokens = [format_epsilon(v) for v in values]
    repeated = sorted({t for t in tokens if tokens.count(t) > 1})
    if repeated:
        _fail(where, f"{what} {list(values)} name the same setting twice ({repeated}): each value would "
                     "count the same fits twice")


def _check_experiment(paper: dict, name: str, exp: dict, where: str) -> None:
    for key in ("models", "algorithms"):
        unknown = sorted(set(exp[key]) - set(paper[key]))
        if unknown:
            _fail(f"{where}.{key}", f"{unknown} are not defined in the paper's {key!r} section; defined: "
                                    f"{sorted(paper[key])}")
    for dataset, models in exp.get("dataset_models", {}).items():
        if dataset not in exp["datasets"] or not set(models) <= set(exp["models"]):
            _fail(f"{where}.dataset_models.{dataset}", f"must name one of the experiment's datasets "
                                                       f"{exp['datasets']} and a subset of its models {exp['models']}")
    for key, models in exp.get("algorithm_models", {}).items():
        if key not in exp["algorithms"] or not set(models) <= set(exp["models"]):
            _fail(f"{where}.algorithm_models.{key}", f"must name one of the experiment's algorithms "
                                                     f"{exp['algorithms']} and a subset of its models {exp['models']}")
    _unique_settings(exp["epsilons"], f"{where}.epsilons", "epsilons")
    for key, values in exp["epsilons_by_algorithm"].items():
        if key not in exp["algorithms"]:
            _fail(f"{where}.epsilons_by_algorithm", f"{key!r} is not one of the experiment's algorithms "
                                                    f"{exp['algorithms']}")
        _unique_settings(values, f"{where}.epsilons_by_algorithm.{key}", "epsilons")
    for key, steps in exp["steps"].items():
        if key not in exp["algorithms"] or algorithm_spec(paper, key).depends_on_epsilon:
            _fail(f"{where}.steps.{key}", "steps are for algorithms of the experiment whose epsilon is "
                                          "computed from a number of steps (e.g. sgd-ma)")
        if len(set(steps)) != len(steps):
            _fail(f"{where}.steps.{key}", f"{steps} names a step count twice")
    for key in exp["algorithms"]:
        spec = algorithm_spec(paper, key)
        if spec.private and not settings(paper, exp, key):
            what = "steps" if not spec.depends_on_epsilon else "epsilons"
            _fail(where, f"algorithm {key!r} is private but the experiment gives it no {what}: it would "
                         f"run no cells")
    for block_name, block in [("hyper", exp["hyper"])] + [
            (f"per_dataset.{d}", {a: h for a, h in b.items() if a != "models"}) for d, b in exp["per_dataset"].items()]:
        for key, hyper in block.items():
            if key not in paper["algorithms"]:
                _fail(f"{where}.{block_name}", f"unknown algorithm key {key!r}; defined: {sorted(paper['algorithms'])}")
            check_hyper(paper, key, hyper, f"{where}.{block_name}.{key}")
    for key, names in exp["data_derived"].items():
        if key not in exp["algorithms"]:
            _fail(f"{where}.data_derived", f"{key!r} is not one of the experiment's algorithms {exp['algorithms']}")
        unknown = sorted(set(names) - set(algorithm_spec(paper, key).defaults))
        if unknown:
            _fail(f"{where}.data_derived.{key}", f"{unknown} are not hyper-parameters of {key!r}")
    for dataset in exp["per_dataset"]:
        if dataset not in exp["datasets"]:
            _fail(f"{where}.per_dataset", f"{dataset!r} is not one of the experiment's datasets {exp['datasets']}")
    other = exp.get("splits_of")
    if other is not None:
        if other not in paper["experiments"] or other == name:
            _fail(f"{where}.splits_of", f"{other!r} is not another experiment of the paper; defined: "
                                        f"{sorted(paper['experiments'])}")
        theirs = paper["experiments"][other]
        splits = [{k: v for k, v in e["protocol"].items() if k != "draws"} for e in (exp, theirs)]
        if splits[0] != splits[1] or not set(exp["datasets"]) <= set(theirs["datasets"]):
            _fail(f"{where}.splits_of", f"experiment {other!r} must split as this one does ({splits[0]}; it has "
                                        f"{splits[1]}) and hold every dataset of this one ({exp['datasets']}; "
                                        f"it has {theirs['datasets']})")
    sweep = exp.get("sweep")
    if sweep:
        keys = [sweep_key("", sweep["param"], v) for v in sweep["values"]]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:  # 2 and 2.0 name the same cell key (a value of 0 is allowed: key <param>0)
            _fail(f"{where}.sweep.values", f"values {list(sweep['values'])} name the same cell twice ({repeated})")
        for key in exp["algorithms"]:
            for value in sweep["values"]:
                check_hyper(paper, key, {sweep["param"]: value}, f"{where}.sweep")


def _check_figure(paper: dict, fig: dict, where: str) -> None:
    experiments = paper["experiments"]
    if fig["experiment"] not in experiments:
        _fail(f"{where}.experiment", f"unknown experiment {fig['experiment']!r}; defined: {sorted(experiments)}")
    exp = experiments[fig["experiment"]]
    available = set(exp["algorithms"])
    for other, algorithms in fig.get("borrow", {}).items():
        if other not in experiments:
            _fail(f"{where}.borrow", f"unknown experiment {other!r}; defined: {sorted(experiments)}")
        missing = sorted(set(algorithms) - set(experiments[other]["algorithms"]))
        if missing:
            _fail(f"{where}.borrow.{other}", f"experiment {other!r} does not run {missing}")
        available |= set(algorithms)
    unknown = sorted(set(fig.get("algorithms", [])) - available)
    if unknown:
        _fail(f"{where}.algorithms", f"{unknown} are not run by experiment {fig['experiment']!r} (nor borrowed); "
                                     f"available: {sorted(available)}")
    drawn = set(fig.get("algorithms", exp["algorithms"]))
    for key, partner in fig.get("pairs", {}).items():
        if key not in drawn or partner not in drawn or key == partner or partner in fig["pairs"]:
            _fail(f"{where}.pairs.{key}", f"pairs two different curves of the figure ({sorted(drawn)}), the second "
                                          f"not itself paired; got {key!r} -> {partner!r}")
    datasets = [p["dataset"] for p in fig.get("panels", [])] + fig.get("datasets", [])
    unknown = sorted(set(datasets) - set(exp["datasets"]))
    if unknown:
        _fail(f"{where}", f"datasets {unknown} are not in experiment {fig['experiment']!r} ({exp['datasets']})")
    models = [p["model"] for p in fig.get("panels", [])] + ([fig["model"]] if "model" in fig else [])
    unknown = sorted(set(models) - set(exp["models"]))
    if unknown:
        _fail(f"{where}", f"models {unknown} are not in experiment {fig['experiment']!r} ({exp['models']})")
    if fig["kind"] == "sweep" and fig.get("param") != (exp.get("sweep") or {}).get("param"):
        _fail(f"{where}.param", f"a sweep figure draws its experiment's swept parameter "
                                f"({(exp.get('sweep') or {}).get('param')!r}); got {fig.get('param')!r}")


def profile_options(profiles: dict, dataset: str, profile: str) -> dict:
    """A profile's options for one dataset: its common options, then its per-dataset ones."""
    spec = dict(profiles[profile])
    per_dataset = spec.pop("per_dataset", {}) or {}
    return {**spec, **per_dataset.get(dataset, {})}


def check_profiles(paper: dict, profiles, source: str) -> None:
    """Every preprocessing profile the paper uses is defined in the global config, and can
    prepare every dataset it is used on (a profile with public bounds refuses a dataset with an
    attribute that has none, docs/privacy.md#public-bounds)."""
    from .datasets import registry
    from .datasets.encode import resolve_profile

    checked = set()
    for name in paper["experiments"]:
        exp = paper["experiments"][name]
        for key in exp["algorithms"]:
            profile = experiment_profile(paper, name, key)
            if profile not in profiles:
                raise ConfigError(f"{source}: experiment {name!r}, algorithm {key!r}: profile {profile!r} is not "
                                  f"in config 'profiles' (defined: {sorted(profiles)})")
            for dataset in exp["datasets"]:
                if (dataset, profile) in checked:
                    continue
                checked.add((dataset, profile))
                try:
                    resolve_profile(registry.get(dataset), profile_options(profiles, dataset, profile))
                except ValueError as err:
                    raise ConfigError(f"{source}: experiment {name!r}, algorithm {key!r}: profile {profile!r} "
                                      f"cannot prepare dataset {dataset!r}: {err}") from None


# -- cells and jobs ----------------------------------------------------------------------------------

def sweep_key(algorithm: str, param: str, value) -> str:
    """File-name key of one swept value: ``dp-agd`` + ``c_grad`` = 4 -> ``dp-agd-cgrad4``."""
    text = format_epsilon(value) if isinstance(value, (int, float)) and value > 0 else str(value)
    return f"{algorithm}-{param.replace('_', '')}{text}"


def sweep_lookup(exp: dict) -> dict[str, tuple[str, object]]:
    """Sweep key -> (the paper's algorithm key, the swept value, as the config writes it)."""
    sweep = exp.get("sweep")
    if not sweep:
        return {}
    return {sweep_key(a, sweep["param"], v): (a, v) for a in exp["algorithms"] for v in sweep["values"]}


def settings(paper: dict, experiment: dict, key: str) -> list[str]:
    """The privacy settings (file-name tokens) an algorithm key is run at in an experiment."""
    spec = algorithm_spec(paper, key)
    if not spec.private:
        return ["inf"]
    if not spec.depends_on_epsilon:
        return [f"T{int(t)}" for t in experiment["steps"].get(key, [])]
    return [format_epsilon(e) for e in experiment["epsilons_by_algorithm"].get(key, experiment["epsilons"])]


def experiment_models(exp: dict, dataset: str) -> list[str]:
    """The models an experiment fits on a dataset (``dataset_models`` narrows ``models``)."""
    return exp.get("dataset_models", {}).get(dataset, exp["models"])


def runs_on(exp: dict, key: str, model: str) -> bool:
    """Whether the experiment's algorithm ``key`` (a paper key, not a sweep key) fits ``model``
    (``algorithm_models`` narrows an algorithm to some models, e.g. a convex-only mechanism)."""
    return model in exp.get("algorithm_models", {}).get(key, [model])


def jobs(paper: dict, experiments=None) -> list[Job]:
    """Every job of the named experiments (all when None), in the config's order."""
    out = []
    for name, exp in paper["experiments"].items():
        if experiments is not None and name not in experiments:
            continue
        lookup = sweep_lookup(exp)
        keys = list(lookup) or exp["algorithms"]
        for dataset in exp["datasets"]:
            for model in experiment_models(exp, dataset):
                out += [Job(paper["paper"], name, dataset, model, key) for key in keys
                        if runs_on(exp, lookup.get(key, (key, None))[0], model)]
    return out


def base_key(paper: dict, job: Job | Cell) -> str:
    """The paper's algorithm key of a job (a sweep key such as dp-agd-splits20 -> dp-agd)."""
    exp = paper["experiments"][job.experiment]
    return sweep_lookup(exp).get(job.algorithm, (job.algorithm, None))[0]


def job_settings(paper: dict, job: Job) -> list[str]:
    return settings(paper, paper["experiments"][job.experiment], base_key(paper, job))


def cells(paper: dict, experiments=None) -> list[Cell]:
    return [Cell(*vars(job).values(), setting) for job in jobs(paper, experiments)
            for setting in job_settings(paper, job)]


def find_job(paper: dict, experiment: str, dataset: str, model: str, algorithm: str) -> Job:
    """The job of these names, or a :class:`ConfigError` saying which name is not in the grid."""
    exp = paper["experiments"].get(experiment)
    if exp is None:
        raise ConfigError(f"paper {paper['paper']!r} has no experiment {experiment!r}; it has "
                          f"{sorted(paper['experiments'])}")
    job = Job(paper["paper"], experiment, dataset, model, algorithm)
    if job not in jobs(paper, [experiment]):
        raise ConfigError(f"{paper['paper']}/{experiment} has no job for dataset {dataset!r}, model {model!r}, "
                          f"algorithm {algorithm!r} (datasets {exp['datasets']}, models {exp['models']}, "
                          f"algorithms {list(sweep_lookup(exp)) or exp['algorithms']})")
    return job


def experiment_profile(paper: dict, experiment: str, algorithm: str) -> str:
    """Preprocessing profile of an algorithm's runs (its own, else the experiment's)."""
    return paper["algorithms"][algorithm].get("profile") or paper["experiments"][experiment]["profile"]


# -- specs -------------------------------------------------------------------------------------------

def uses_tuning(paper: dict, experiment: str, algorithm: str) -> dict | None:
    """What of a cell the paper's non-private tuning run chooses (``{"l2": bool, "hyper":
    bool}``), or None when it chooses nothing."""
    tuning = paper.get("tuning")
    if not tuning or experiment not in tuning["experiments"]:
        return None
    l2 = algorithm in tuning.get("l2", {}).get("algorithms", [])
    hyper = any(block["algorithm"] == algorithm for block in tuning.get("hyper", []))
    return {"l2": l2, "hyper": hyper} if l2 or hyper else None


def job_uses_tuning(paper: dict, job: Job) -> bool:
    return uses_tuning(paper, job.experiment, base_key(paper, job)) is not None


def cell_spec(paper: dict, cell: Cell, seed: int) -> dict:
    """Everything a job needs to run a cell, as plain JSON-able data. A cell whose values come
    from the tuning run carries ``tuned`` (what is chosen there) and is completed by
    :func:`apply_tuning` inside the job, so that the spec itself depends on the config only."""
    exp = paper["experiments"][cell.experiment]
    key, swept = sweep_lookup(exp).get(cell.algorithm, (cell.algorithm, None))
    algo_cfg = copy.deepcopy(paper["algorithms"][key])
    hyper = {k: v for k, v in algo_cfg.items() if k not in RESERVED}
    hyper.update(exp["hyper"].get(key, {}))
    hyper.update(exp["per_dataset"].get(cell.dataset, {}).get(key, {}))
    sweep = ""
    if swept is not None:
        hyper[exp["sweep"]["param"]] = swept
        sweep = f"{exp['sweep']['param']}={swept}"
    model = {"name": cell.model, **copy.deepcopy(paper["models"][cell.model])}
    model.update(exp["model_overrides"].get(cell.model, {}))
    model.update(algo_cfg.get("model_overrides", {}).get(cell.model, {}))
    model.update(exp["per_dataset"].get(cell.dataset, {}).get("models", {}).get(cell.model, {}))
    spec = {
        "paper": cell.paper, "experiment": cell.experiment, "dataset": cell.dataset,
        "profile": experiment_profile(paper, cell.experiment, key),
        "model": model, "algorithm": registered_name(paper, key), "cell_algorithm": cell.algorithm,
        "hyper": hyper, "sweep": sweep, "epsilon": cell.epsilon, "delta": exp["delta"],
        "protocol": copy.deepcopy(exp["protocol"]), "seed": int(seed),
        "tuning": "non-private" if exp["data_derived"].get(key) else "private",
    }
    if "splits_of" in exp:
        spec["splits_of"] = exp["splits_of"]
    if algo_cfg.get("label"):  # the name in tables and legends (records' ``label``)
        spec["label"] = algo_cfg["label"]
    tuned = uses_tuning(paper, cell.experiment, key)
    if tuned is not None:
        spec["tuned"] = {**tuned, "key": key, "profile": exp["profile"]}
    return spec


def job_specs(paper: dict, job: Job, seed: int) -> list[dict]:
    """The specs a job runs: one per target ε (a row) or the non-private cell, or for step-count
    settings one spec, the longest, whose run also releases the shorter ones (``path``)."""
    settings_ = job_settings(paper, job)
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
        out["hyper"].update(chosen.get("hyper", {}).get(what["key"], {}))
    out["tuning"] = "non-private"
    return out


def figure_spec(paper: dict, name: str) -> dict:
    """Everything a declared figure reads from the configuration (its own entry, its
    experiment's protocol, panels and swept values, the protocols of the experiments it borrows
    from, the paper's algorithm order for colours, whether it is a quick run)."""
    fig = copy.deepcopy(paper["figures"][name])
    exp = paper["experiments"][fig["experiment"]]
    return {**fig, "figure": name, "protocol": copy.deepcopy(exp["protocol"]),
            "experiment_models": list(exp["models"]), "experiment_datasets": list(exp["datasets"]),
            "experiment_algorithms": list(exp["algorithms"]),
            "sweep_values": {key: value for key, (_, value) in sweep_lookup(exp).items()},
            "steps": {key: list(steps) for key, steps in exp["steps"].items()
                      if key in fig.get("algorithms", exp["algorithms"])},
            "borrowed_protocols": {e: copy.deepcopy(paper["experiments"][e]["protocol"])
                                   for e in fig.get("borrow", {})},
            "palette": list(paper["algorithms"]), "quick": bool(paper.get("quick"))}


def figure_datasets(paper: dict, name: str) -> list[str]:
    fig = paper["figures"][name]
    if "panels" in fig:
        return [p["dataset"] for p in fig["panels"]]
    return fig.get("datasets", paper["experiments"][fig["experiment"]]["datasets"])


# -- certified optima --------------------------------------------------------------------------------

def l2_token(l2: float) -> str:
    return "0" if l2 == 0 else format_epsilon(l2)


def optimum_path(spec: dict) -> str:
    """Optima are shared by every cell with the same data, splits, loss and λ."""
    return (f"results/optima/{spec['paper']}/{spec['experiment']}/{spec['dataset']}/"
            f"{spec['model']['name']}/{spec['profile']}/l2-{l2_token(spec['model'].get('l2', 0.0))}.csv")


def solves_optimum(paper: dict, model: str) -> bool:
    """Whether a cell of ``model`` is compared with the optima of its splits: convex models (a
    certified optimum), non-convex ones only when the paper asks for multi-start solves
    (``optimum: {multistart: k}``), and never in papers that turn optima off (``solve: false``)."""
    convex = paper["models"][model]["loss"] != "mlp"
    return paper["optimum"]["solve"] and (convex or paper["optimum"].get("multistart", 0) > 0)


def optimum_spec(paper: dict, experiment: str, dataset: str, model: str, profile: str, l2: float,
                 seed: int) -> dict:
    """What fixes an optimum: data (dataset, profile), splits (protocol, seed), loss and λ, and
    (only when off: older specs stay valid) whether the unregularised optimum L* is solved."""
    spec = {"paper": paper["paper"], "experiment": experiment, "dataset": dataset, "profile": profile,
            "model": {"name": model, **copy.deepcopy(paper["models"][model]),
                      **paper["experiments"][experiment]["model_overrides"].get(model, {}), "l2": float(l2)},
            "protocol": copy.deepcopy(paper["experiments"][experiment]["protocol"]), "seed": int(seed)}
    if not paper["optimum"]["unregularised"]:
        spec["unregularised"] = False
    if paper["models"][model]["loss"] == "mlp" and paper["optimum"].get("multistart", 0) > 0:
        spec["multistart"] = {"starts": int(paper["optimum"]["multistart"]),
                              "iterations": int(paper["optimum"].get("multistart_iterations", 200))}
    if "splits_of" in paper["experiments"][experiment]:
        spec["splits_of"] = paper["experiments"][experiment]["splits_of"]
    return spec


def dumps(spec) -> str:
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


def paper_path(paper_dir, name: str) -> Path:
    return Path(paper_dir, f"{name}.yaml")
