"""Paper configurations -> table cells -> fully resolved cell specifications.

A paper's grid lives in ``config/papers/<paper>.yaml`` (schema:
``workflow/schemas/paper.schema.yaml``). This module is the one place that turns it into cells
and into the JSON spec a ``run_cell`` job receives, so Snakemake and ``python -m dperm`` agree.

Hyper-parameters of a cell, later entries winning: the algorithm's signature defaults < the
paper's ``algorithms`` section < the experiment's ``hyper`` < the experiment's
``per_dataset`` < values chosen by a tuning run (marked ``tuning: non-private``).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from .protocol import format_epsilon

SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "paper.schema.yaml"


@dataclass(frozen=True)
class Cell:
    paper: str
    experiment: str
    dataset: str
    model: str
    algorithm: str
    epsilon: str  # a privacy-setting token, see dperm.protocol.format_epsilon

    @property
    def path(self) -> str:
        return (f"results/runs/{self.paper}/{self.experiment}/{self.dataset}/{self.model}/"
                f"{self.algorithm}/eps{self.epsilon}.csv")


def load_paper(path, schema=SCHEMA) -> dict:
    """Read and validate a paper config (defaults filled in)."""
    from snakemake.utils import validate

    config = yaml.safe_load(Path(path).read_text())
    validate(config, schema=str(schema), set_default=True)
    for key, hyper in config["algorithms"].items():
        check_hyper(key, hyper, where=str(path))
    for name, exp in config["experiments"].items():
        blocks = [exp["hyper"]] + [{a: h for a, h in d.items() if a != "models"}
                                   for d in exp["per_dataset"].values()]
        for block in blocks:
            for key, hyper in block.items():
                registered = config["algorithms"].get(key, {}).get("use", key)
                check_hyper(registered, hyper, where=f"{path}: experiment {name!r}")
        for key in ("models", "algorithms"):
            unknown = sorted(set(exp[key]) - set(config[key]))
            if unknown:
                raise ValueError(f"{path}: experiment {name!r} uses {key} {unknown} that the paper's "
                                 f"{key!r} section does not define; defined: {sorted(config[key])}")
    return config


RESERVED = ("use", "profile", "label")


def check_hyper(key: str, hyper: dict, where: str) -> None:
    """The algorithm exists and accepts every hyper-parameter named (error lists the allowed)."""
    import inspect

    from .algorithms import get_algorithm

    spec = get_algorithm(hyper.get("use", key))
    params = inspect.signature(spec.fit).parameters
    allowed = sorted(n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY)
    unknown = sorted(set(hyper) - set(allowed) - set(RESERVED))
    if unknown:
        raise ValueError(f"{where}: unknown hyper-parameter(s) {unknown} for algorithm {spec.name!r}; "
                         f"allowed: {allowed}")


def _settings(paper: dict, experiment: dict, algorithm: str) -> list[str]:
    """The privacy settings (file-name tokens) an algorithm is run at in an experiment."""
    from .algorithms import get_algorithm

    spec = get_algorithm(paper["algorithms"][algorithm].get("use", algorithm))
    if not spec.private:
        return ["inf"]
    if not spec.depends_on_epsilon:
        return [f"T{int(t)}" for t in experiment["steps"].get(algorithm, [])]
    return [format_epsilon(e) for e in experiment["epsilons"]]


def cells(paper: dict, experiments=None) -> list[Cell]:
    out = []
    for name, exp in paper["experiments"].items():
        if experiments is not None and name not in experiments:
            continue
        for dataset in exp["datasets"]:
            for model in exp["models"]:
                for algorithm in exp["algorithms"]:
                    for eps in _settings(paper, exp, algorithm):
                        out.append(Cell(paper["paper"], name, dataset, model, algorithm, eps))
    return out


def experiment_profile(paper: dict, experiment: str, algorithm: str) -> str:
    """Preprocessing profile of an algorithm's runs (its own, else the experiment's)."""
    return paper["algorithms"][algorithm].get("profile") or paper["experiments"][experiment]["profile"]


def cell_spec(paper: dict, cell: Cell, seed: int, tuned: dict | None = None) -> dict:
    """Everything a run_cell job needs, as plain JSON-able data."""
    exp = paper["experiments"][cell.experiment]
    algo_cfg = copy.deepcopy(paper["algorithms"][cell.algorithm])
    hyper = {k: v for k, v in algo_cfg.items() if k not in RESERVED}
    hyper.update(exp.get("hyper", {}).get(cell.algorithm, {}))
    hyper.update(exp.get("per_dataset", {}).get(cell.dataset, {}).get(cell.algorithm, {}))
    model = {"name": cell.model, **copy.deepcopy(paper["models"][cell.model])}
    model.update(exp.get("per_dataset", {}).get(cell.dataset, {}).get("models", {}).get(cell.model, {}))
    tuning = "private"
    if tuned:
        chosen = tuned.get(cell.dataset, {}).get(cell.model, {})
        if "l2" in chosen:
            model["l2"], tuning = chosen["l2"], "non-private"
        if chosen.get(cell.algorithm):
            hyper.update(chosen[cell.algorithm])
            tuning = "non-private"
    return {
        "paper": cell.paper, "experiment": cell.experiment, "dataset": cell.dataset,
        "profile": experiment_profile(paper, cell.experiment, cell.algorithm),
        "model": model, "algorithm": algo_cfg.get("use", cell.algorithm), "cell_algorithm": cell.algorithm,
        "hyper": hyper, "epsilon": cell.epsilon, "delta": exp["delta"],
        "protocol": copy.deepcopy(exp["protocol"]), "seed": int(seed), "tuning": tuning,
    }


def optimum_spec(spec: dict) -> dict:
    """The part of a cell spec that fixes the data, splits and objective (not the algorithm):
    cells that share it share one optimum file."""
    keys = ("paper", "experiment", "dataset", "profile", "model", "protocol", "seed")
    return {k: copy.deepcopy(spec[k]) for k in keys}


def optimum_path(spec: dict) -> str:
    return (f"results/optima/{spec['paper']}/{spec['experiment']}/{spec['dataset']}/"
            f"{spec['model']['name']}/{spec['profile']}.csv")


def dumps(spec: dict) -> str:
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))
