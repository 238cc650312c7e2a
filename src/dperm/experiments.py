"""Paper configurations -> table cells -> fully resolved cell specifications.

A paper's grid lives in ``config/papers/<paper>.yaml`` (schema:
``workflow/schemas/paper.schema.yaml``). This module is the one place that turns it into cells
and into the JSON spec a ``run_cell`` job receives, so Snakemake and ``python -m dperm`` agree.

Hyper-parameters of a cell, later entries winning: the algorithm's signature defaults < the
paper's ``algorithms`` section < the experiment's ``hyper`` < the experiment's ``per_dataset`` <
the swept value (parameter sweeps) < values chosen by the paper's non-private tuning run, which
mark the cell ``tuning: non-private``. The model: the paper's ``models`` < the experiment's
``model_overrides`` < the algorithm's ``model_overrides`` (e.g. SGD-MA's λ = 0 for LR, as its
reference code) < the experiment's ``per_dataset`` < tuned λ.
"""

from __future__ import annotations

import copy
import inspect
import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from .protocol import format_epsilon

SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "paper.schema.yaml"
RESERVED = ("use", "profile", "label", "model_overrides")


@dataclass(frozen=True)
class Cell:
    paper: str
    experiment: str
    dataset: str
    model: str
    algorithm: str  # the paper's algorithm key, or a sweep key such as dp-agd-splits20
    epsilon: str  # a privacy-setting token, see dperm.protocol.format_epsilon

    @property
    def path(self) -> str:
        return (f"results/runs/{self.paper}/{self.experiment}/{self.dataset}/{self.model}/"
                f"{self.algorithm}/eps{self.epsilon}.csv")


def check_hyper(registered: str, hyper: dict, where: str) -> None:
    """The algorithm exists and accepts every hyper-parameter named (error lists the allowed)."""
    from .algorithms import get_algorithm

    spec = get_algorithm(registered)
    params = inspect.signature(spec.fit).parameters
    allowed = sorted(n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY)
    unknown = sorted(set(hyper) - set(allowed) - set(RESERVED))
    if unknown:
        raise ValueError(f"{where}: unknown hyper-parameter(s) {unknown} for algorithm {spec.name!r}; "
                         f"allowed: {allowed}")


def registered_name(paper: dict, key: str) -> str:
    return paper["algorithms"][key].get("use", key)


def load_paper(path, schema=SCHEMA) -> dict:
    """Read and validate a paper config (defaults filled in, names and hyper-parameters checked)."""
    from snakemake.utils import validate

    config = yaml.safe_load(Path(path).read_text())
    validate(config, schema=str(schema), set_default=True)
    for key, hyper in config["algorithms"].items():
        check_hyper(hyper.get("use", key), hyper, where=str(path))
    for name, exp in config["experiments"].items():
        where = f"{path}: experiment {name!r}"
        for dataset, models in exp.get("dataset_models", {}).items():
            if dataset not in exp["datasets"] or not set(models) <= set(exp["models"]):
                raise ValueError(f"{where}: dataset_models[{dataset!r}] must name one of the experiment's "
                                 f"datasets and a subset of its models {exp['models']}; got {models}")
        for key in ("models", "algorithms"):
            unknown = sorted(set(exp[key]) - set(config[key]))
            if unknown:
                raise ValueError(f"{where} uses {key} {unknown} that the paper's {key!r} section does "
                                 f"not define; defined: {sorted(config[key])}")
        blocks = [exp["hyper"]] + [{a: h for a, h in d.items() if a != "models"} for d in exp["per_dataset"].values()]
        for block in blocks:
            for key, hyper in block.items():
                check_hyper(registered_name(config, key), hyper, where=where)
        if exp.get("sweep"):
            for key in exp["algorithms"]:
                check_hyper(registered_name(config, key), {exp["sweep"]["param"]: None}, where=where)
    tuning = config.get("tuning")
    if tuning:
        missing = sorted(set(tuning["experiments"]) - set(config["experiments"]))
        if missing:
            raise ValueError(f"{path}: tuning names experiments {missing} that are not defined")
        for block in tuning.get("hyper", []):
            check_hyper(registered_name(config, block["algorithm"]), block["grid"], where=f"{path}: tuning")
    return config


def sweep_key(algorithm: str, param: str, value) -> str:
    """File-name key of one swept value: ``dp-agd`` + ``c_grad`` = 4 -> ``dp-agd-cgrad4``."""
    text = format_epsilon(value) if isinstance(value, (int, float)) and value > 0 else str(value)
    return f"{algorithm}-{param.replace('_', '')}{text}"


def _sweep_lookup(exp: dict) -> dict[str, tuple[str, object]]:
    sweep = exp.get("sweep")
    if not sweep:
        return {}
    return {sweep_key(a, sweep["param"], v): (a, v) for a in exp["algorithms"] for v in sweep["values"]}


def _settings(paper: dict, experiment: dict, key: str) -> list[str]:
    """The privacy settings (file-name tokens) an algorithm is run at in an experiment."""
    from .algorithms import get_algorithm

    spec = get_algorithm(registered_name(paper, key))
    if not spec.private:
        return ["inf"]
    if not spec.depends_on_epsilon:
        return [f"T{int(t)}" for t in experiment["steps"].get(key, [])]
    return [format_epsilon(e) for e in experiment["epsilons"]]


def experiment_models(exp: dict, dataset: str) -> list[str]:
    """The models an experiment fits on a dataset (``dataset_models`` narrows ``models``)."""
    return exp.get("dataset_models", {}).get(dataset, exp["models"])


def cells(paper: dict, experiments=None) -> list[Cell]:
    out = []
    for name, exp in paper["experiments"].items():
        if experiments is not None and name not in experiments:
            continue
        keys = list(_sweep_lookup(exp)) or exp["algorithms"]
        lookup = _sweep_lookup(exp)
        for dataset in exp["datasets"]:
            for model in experiment_models(exp, dataset):
                for key in keys:
                    base = lookup[key][0] if lookup else key
                    for eps in _settings(paper, exp, base):
                        out.append(Cell(paper["paper"], name, dataset, model, key, eps))
    return out


def experiment_profile(paper: dict, experiment: str, algorithm: str) -> str:
    """Preprocessing profile of an algorithm's runs (its own, else the experiment's)."""
    return paper["algorithms"][algorithm].get("profile") or paper["experiments"][experiment]["profile"]


def uses_tuning(paper: dict, experiment: str, algorithm: str) -> bool:
    """Whether a cell's spec depends on the paper's non-private tuning run."""
    tuning = paper.get("tuning")
    if not tuning or experiment not in tuning["experiments"]:
        return False
    tuned_algorithms = set(tuning.get("l2", {}).get("algorithms", []))
    tuned_algorithms |= {block["algorithm"] for block in tuning.get("hyper", [])}
    return algorithm in tuned_algorithms


def base_key(paper: dict, cell: Cell) -> str:
    """The paper's algorithm key of a cell (a sweep key such as dp-agd-splits20 -> dp-agd)."""
    exp = paper["experiments"][cell.experiment]
    return _sweep_lookup(exp).get(cell.algorithm, (cell.algorithm, None))[0]


def cell_uses_tuning(paper: dict, cell: Cell) -> bool:
    return uses_tuning(paper, cell.experiment, base_key(paper, cell))


def cell_spec(paper: dict, cell: Cell, seed: int, tuned: dict | None = None) -> dict:
    """Everything a run_cell job needs, as plain JSON-able data."""
    exp = paper["experiments"][cell.experiment]
    key, swept = _sweep_lookup(exp).get(cell.algorithm, (cell.algorithm, None))
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
    tuning = "private"
    if uses_tuning(paper, cell.experiment, key):
        if tuned is None:
            raise ValueError(f"cell {cell.path} needs the tuning results of paper {cell.paper!r}")
        chosen = tuned[cell.dataset][cell.model]
        if key in paper["tuning"].get("l2", {}).get("algorithms", []):
            model["l2"] = chosen["l2"]
        hyper.update(chosen.get("hyper", {}).get(key, {}))
        tuning = "non-private"
    return {
        "paper": cell.paper, "experiment": cell.experiment, "dataset": cell.dataset,
        "profile": experiment_profile(paper, cell.experiment, key),
        "model": model, "algorithm": registered_name(paper, key), "cell_algorithm": cell.algorithm,
        "hyper": hyper, "sweep": sweep, "epsilon": cell.epsilon, "delta": exp["delta"],
        "protocol": copy.deepcopy(exp["protocol"]), "seed": int(seed), "tuning": tuning,
    }


def l2_token(l2: float) -> str:
    return "0" if l2 == 0 else format_epsilon(l2)


def optimum_path(spec: dict) -> str:
    """Optima are shared by every cell with the same data, splits, loss and λ."""
    return (f"results/optima/{spec['paper']}/{spec['experiment']}/{spec['dataset']}/"
            f"{spec['model']['name']}/{spec['profile']}/l2-{l2_token(spec['model'].get('l2', 0.0))}.csv")


def solves_optimum(paper: dict, model: str) -> bool:
    """Whether a cell of ``model`` is compared with the certified optima of its splits: convex
    models only, and not in papers that turn optima off (``optimum: {solve: false}``)."""
    return paper["models"][model]["loss"] != "mlp" and paper.get("optimum", {}).get("solve", True)


def optimum_spec(paper: dict, experiment: str, dataset: str, model: str, profile: str, l2: float,
                 seed: int) -> dict:
    """What fixes an optimum: data (dataset, profile), splits (protocol, seed), loss and λ, and
    (only when off: older specs stay valid) whether the unregularised optimum L* is solved."""
    spec = {"paper": paper["paper"], "experiment": experiment, "dataset": dataset, "profile": profile,
            "model": {"name": model, **copy.deepcopy(paper["models"][model]),
                      **paper["experiments"][experiment]["model_overrides"].get(model, {}), "l2": float(l2)},
            "protocol": copy.deepcopy(paper["experiments"][experiment]["protocol"]), "seed": int(seed)}
    if not paper.get("optimum", {}).get("unregularised", True):
        spec["unregularised"] = False
    return spec


def dumps(spec: dict) -> str:
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))
