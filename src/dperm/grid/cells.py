"""A paper's grid as cells and jobs.

A *cell* is one (paper, experiment, dataset, model, algorithm key, privacy setting). A *job* is
the cells of one (paper, experiment, dataset, model, algorithm key) run in one process: the
target ε of a row (DP-AGD fits them together), the step counts of a path (one run, released
along the way), or a lone non-private cell. A swept experiment's algorithm keys are sweep keys
(``dp-agd-splits20``: the paper's key, the parameter and its value).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import ConfigError
from ..protocol.settings import format_epsilon
from .views import Experiment, Paper


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

    def part_path(self, part: int) -> str:
        """The records of part ``part`` (1, 2, ...) of a job split into processes (:func:`job_parts`)."""
        return f"{self.cell_dir.replace('results/runs/', 'results/parts/', 1)}/part{part}.csv"


def algorithm_spec(paper: Paper, key: str):
    """The registered algorithm (:class:`dperm.algorithms.AlgorithmSpec`) an algorithm key runs."""
    from ..algorithms import get_algorithm

    return get_algorithm(paper.registered_name(key))


def sweep_key(algorithm: str, param: str, value) -> str:
    """File-name key of one swept value: ``dp-agd`` + ``c_grad`` = 4 -> ``dp-agd-cgrad4``."""
    text = format_epsilon(value) if isinstance(value, (int, float)) and value > 0 else str(value)
    return f"{algorithm}-{param.replace('_', '')}{text}"


def sweep_lookup(exp: Experiment) -> dict[str, tuple[str, object]]:
    """Sweep key -> (the paper's algorithm key, the swept value, as the config writes it)."""
    if exp.sweep is None:
        return {}
    return {sweep_key(a, exp.sweep.param, v): (a, v) for a in exp.algorithms for v in exp.sweep.values}


def settings(paper: Paper, experiment: Experiment, key: str) -> list[str]:
    """The privacy settings (file-name tokens) an algorithm key is run at in an experiment."""
    spec = algorithm_spec(paper, key)
    if not spec.private:
        return ["inf"]
    if not spec.depends_on_epsilon:
        return [f"T{int(t)}" for t in experiment.steps.get(key, [])]
    return [format_epsilon(e) for e in experiment.epsilons_by_algorithm.get(key, experiment.epsilons)]


def jobs(paper: Paper, experiments=None) -> list[Job]:
    """Every job of the named experiments (all when None), in the config's order."""
    out = []
    for name, exp in paper.experiments.items():
        if experiments is not None and name not in experiments:
            continue
        lookup = sweep_lookup(exp)
        keys = list(lookup) or list(exp.algorithms)
        for dataset in exp.datasets:
            for model in exp.models_on(dataset):
                out += [Job(paper.key, name, dataset, model, key) for key in keys
                        if exp.runs_on(lookup.get(key, (key, None))[0], model)]
    return out


def base_key(paper: Paper, job: Job | Cell) -> str:
    """The paper's algorithm key of a job (a sweep key such as dp-agd-splits20 -> dp-agd)."""
    exp = paper.experiments[job.experiment]
    return sweep_lookup(exp).get(job.algorithm, (job.algorithm, None))[0]


def job_settings(paper: Paper, job: Job) -> list[str]:
    return settings(paper, paper.experiments[job.experiment], base_key(paper, job))


def job_parts(paper: Paper, job: Job) -> list[list[str]]:
    """The privacy settings of each process a job runs in: one list, the whole job, unless its
    experiment splits it (``parts``), then setting i of :func:`job_settings` in part i mod n, so
    that every part holds small and large ε alike (their costs differ)."""
    n = paper.experiments[job.experiment].parts.get(job.dataset, {}).get(base_key(paper, job), 1)
    every = job_settings(paper, job)
    return [every[k::n] for k in range(n)]


def cell_part(paper: Paper, cell: Cell) -> int | None:
    """The part (1, 2, ...) of its job that holds a cell, or None when the job is not split."""
    parts = job_parts(paper, cell.job)
    if len(parts) == 1:
        return None
    return next(k for k, part in enumerate(parts, 1) if cell.epsilon in part)


def cell_source(paper: Paper, cell: Cell) -> str:
    """The file a cell is cut from: its job's, or that of the part of its job that holds it."""
    part = cell_part(paper, cell)
    return cell.job.path if part is None else cell.job.part_path(part)


def cells(paper: Paper, experiments=None) -> list[Cell]:
    return [Cell(*vars(job).values(), setting) for job in jobs(paper, experiments)
            for setting in job_settings(paper, job)]


def find_job(paper: Paper, experiment: str, dataset: str, model: str, algorithm: str) -> Job:
    """The job of these names, or a :class:`ConfigError` saying which name is not in the grid."""
    exp = paper.experiments.get(experiment)
    if exp is None:
        raise ConfigError(f"paper {paper.key!r} has no experiment {experiment!r}; it has {sorted(paper.experiments)}")
    job = Job(paper.key, experiment, dataset, model, algorithm)
    if job not in jobs(paper, [experiment]):
        raise ConfigError(f"{paper.key}/{experiment} has no job for dataset {dataset!r}, model {model!r}, "
                          f"algorithm {algorithm!r} (datasets {list(exp.datasets)}, models {list(exp.models)}, "
                          f"algorithms {list(sweep_lookup(exp)) or list(exp.algorithms)})")
    return job


def experiment_profile(paper: Paper, experiment: str, algorithm: str) -> str:
    """Preprocessing profile of an algorithm's runs (its own, else the experiment's)."""
    return paper.algorithms[algorithm].get("profile") or paper.experiments[experiment].profile
