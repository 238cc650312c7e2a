"""Typed views of a validated paper configuration: the paper, its experiments, figures, tuning
and optima, as frozen dataclasses with one field per key of the schema
(``dperm/schemas/paper.schema.yaml``; every key is documented in ``config/README.md``).

The views are built once, from a file the schema has checked and filled with its defaults
(:func:`dperm.grid.validate.load_paper`), so every field exists and has its type: code reads
``paper.experiments[name].protocol`` where it used to subscript nested dictionaries, and an
editor's "go to definition" finds what a key means. Values that are handed on unchanged (the
hyper-parameters of an algorithm, a model's loss and λ, a protocol) stay plain mappings: they
are data for a cell spec, written as JSON, not structure the code navigates.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Sweep:
    """One hyper-parameter swept over values, each value its own cell key."""

    param: str
    values: tuple


@dataclass(frozen=True)
class Experiment:
    """One experiment: a grid of datasets × models × algorithms × privacy settings run under one
    protocol. Field meanings: config/README.md, ``experiments.<name>``."""

    name: str
    datasets: tuple[str, ...]
    models: tuple[str, ...]
    algorithms: tuple[str, ...]
    protocol: dict
    title: str = ""
    epsilons: tuple[float, ...] = ()
    epsilons_by_algorithm: dict = field(default_factory=dict)
    steps: dict = field(default_factory=dict)
    delta: float = 0.0
    profile: str = "default"
    priority: dict = field(default_factory=dict)
    parts: dict = field(default_factory=dict)
    optimum_parts: dict = field(default_factory=dict)
    default_target: bool = True
    splits_of: str | None = None
    data_derived: dict = field(default_factory=dict)
    hyper: dict = field(default_factory=dict)
    per_dataset: dict = field(default_factory=dict)
    model_overrides: dict = field(default_factory=dict)
    sweep: Sweep | None = None
    dataset_models: dict = field(default_factory=dict)
    algorithm_models: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_config(cls, name: str, block: dict) -> Experiment:
        raw = copy.deepcopy(block)
        block = copy.deepcopy(block)
        sweep = block.pop("sweep", None)
        return cls(name=name, datasets=tuple(block.pop("datasets")), models=tuple(block.pop("models")),
                   algorithms=tuple(block.pop("algorithms")), epsilons=tuple(block.pop("epsilons", ())),
                   sweep=Sweep(sweep["param"], tuple(sweep["values"])) if sweep else None, raw=raw, **block)

    def models_on(self, dataset: str) -> tuple[str, ...]:
        """The models fitted on ``dataset`` (``dataset_models`` narrows ``models``)."""
        return tuple(self.dataset_models.get(dataset, self.models))

    def runs_on(self, key: str, model: str) -> bool:
        """Whether algorithm ``key`` (a paper key, not a sweep key) fits ``model``
        (``algorithm_models`` narrows an algorithm to some models)."""
        return model in self.algorithm_models.get(key, [model])

    @property
    def draws(self) -> int:
        return int(self.protocol.get("draws", 1))


@dataclass(frozen=True)
class Panel:
    dataset: str
    model: str


@dataclass(frozen=True)
class Figure:
    """A figure drawn from experiment summaries by generic code (config/README.md, ``figures``)."""

    name: str
    kind: str
    experiment: str
    model: str | None = None
    datasets: tuple[str, ...] | None = None
    panels: tuple[Panel, ...] | None = None
    algorithms: tuple[str, ...] | None = None
    borrow: dict = field(default_factory=dict)
    metrics: tuple[str, ...] | None = None
    param: str | None = None
    param_label: str | None = None
    labels: dict = field(default_factory=dict)
    pairs: dict = field(default_factory=dict)
    title: str = ""
    caption: str = ""
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_config(cls, name: str, block: dict) -> Figure:
        raw = copy.deepcopy(block)
        block = copy.deepcopy(block)
        panels = block.pop("panels", None)
        for key in ("datasets", "algorithms", "metrics"):
            if key in block:
                block[key] = tuple(block[key])
        return cls(name=name, panels=tuple(Panel(**p) for p in panels) if panels is not None else None, raw=raw,
                   **block)

    def as_config(self) -> dict:
        """The figure's own keys as the config gives them (what a drawing reads)."""
        return copy.deepcopy(self.raw)


@dataclass(frozen=True)
class HyperGrid:
    """One algorithm's tuning grid, scored by its mean validation score over ``epsilons``."""

    algorithm: str
    grid: dict
    epsilons: tuple[float, ...]
    per_epsilon: bool = False


@dataclass(frozen=True)
class Tuning:
    """Non-private hyper-parameter selection (config/README.md, ``tuning``)."""

    experiments: tuple[str, ...]
    criterion: str = "validation-loss"
    protocol: dict | None = None
    l2_grid: tuple[float, ...] = ()
    l2_algorithms: tuple[str, ...] = ()
    hyper: tuple[HyperGrid, ...] = ()
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_config(cls, block: dict) -> Tuning:
        l2 = block.get("l2") or {}
        return cls(experiments=tuple(block["experiments"]), criterion=block.get("criterion", "validation-loss"),
                   raw=copy.deepcopy(block),
                   protocol=copy.deepcopy(block.get("protocol")), l2_grid=tuple(l2.get("grid", ())),
                   l2_algorithms=tuple(l2.get("algorithms", ())),
                   hyper=tuple(HyperGrid(h["algorithm"], copy.deepcopy(h["grid"]), tuple(h["epsilons"]),
                                         bool(h.get("per_epsilon", False))) for h in block.get("hyper", ())))

    def hyper_for(self, key: str) -> HyperGrid | None:
        return next((h for h in self.hyper if h.algorithm == key), None)


@dataclass(frozen=True)
class Optimum:
    """What the certified optima of each training fold include (config/README.md, ``optimum``)."""

    solve: bool = True
    unregularised: bool = True
    multistart: int = 0
    multistart_iterations: int = 200


@dataclass(frozen=True)
class Paper:
    """A validated paper configuration (``config/papers/<paper>.yaml``, with its quick section
    and any overlay merged in)."""

    key: str
    models: dict
    algorithms: dict
    experiments: dict[str, Experiment]
    title: str = ""
    description: str = ""
    deviations: tuple[str, ...] = ()
    figures: dict[str, Figure] = field(default_factory=dict)
    optimum: Optimum = field(default_factory=Optimum)
    analyses: dict = field(default_factory=dict)
    tuning: Tuning | None = None
    quick: bool = False
    source: str = ""

    @classmethod
    def from_config(cls, config: dict, quick: bool = False, source: str = "") -> Paper:
        config = copy.deepcopy(config)
        return cls(key=config["paper"], title=config.get("title", ""), description=config.get("description", ""),
                   deviations=tuple(config.get("deviations", ())), models=config["models"],
                   algorithms=config["algorithms"],
                   experiments={n: Experiment.from_config(n, b) for n, b in config["experiments"].items()},
                   figures={n: Figure.from_config(n, b) for n, b in config.get("figures", {}).items()},
                   optimum=Optimum(**config.get("optimum", {})), analyses=config.get("analyses", {}),
                   tuning=Tuning.from_config(config["tuning"]) if config.get("tuning") else None,
                   quick=bool(quick), source=str(source))

    def registered_name(self, key: str) -> str:
        """The registered algorithm an algorithm key runs (``use:``, else the key itself)."""
        return self.algorithms[key].get("use", key)

    def label(self, key: str) -> str:
        """The name of an algorithm key in tables and legends (its config ``label``, else the key)."""
        return self.algorithms[key].get("label", key)

    def model_loss(self, model: str) -> str:
        return self.models[model]["loss"]
