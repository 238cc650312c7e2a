# Validation, wildcard constraints and path helpers. No rules here.
import json
import os
import re
import sys
from pathlib import Path
from types import SimpleNamespace

from snakemake.utils import validate

# The workflow runs this checkout's code (src/), whatever dperm an environment may have
# installed: at parse time through sys.path, in jobs through PYTHONPATH.
SRC = str(Path(workflow.basedir, "src").resolve())
sys.path.insert(0, SRC)
os.environ.update(PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")])))

from dperm import experiments
from dperm.fingerprint import algorithm_fingerprint, source_fingerprint
from dperm.datasets import registry
from dperm.datasets.fetch import resolve_mirror
from dperm.datasets.prepare import availability


validate(config, schema="../schemas/config.schema.yaml", set_default=True)

# Rules rerun when the dperm code they run changes (a params value, see dperm.fingerprint).
CODE = {
    "data": source_fingerprint("datasets", "files"),
    "optimum": source_fingerprint("optimum", "protocol", "losses", "problem", "solvers"),
    "tables": source_fingerprint("tables"),
    "figures": source_fingerprint("figures", "experiments"),
    "papers": source_fingerprint("papers", "losses"),
}

MIRROR = resolve_mirror(config["data"]["mirror"])
DOWNLOAD = config["data"]["download"]


def _availability(key):
    return availability(registry.get(key), f"resources/raw/{key}", MIRROR, DOWNLOAD)


AVAILABLE = {key: _availability(key) for key in registry.DATASET_KEYS}
UNAVAILABLE = {k: why for k, (ok, why) in AVAILABLE.items() if not ok}
for key in config["datasets"]:
    if key in UNAVAILABLE:
        logger.warning(f"dperm: skipping dataset {key!r} in the default target: {UNAVAILABLE[key]}")


PAPERS = {
    name: experiments.load_paper(Path(config["paper_dir"], f"{name}.yaml"))
    for name in config["papers"]
}
for _name, _paper in PAPERS.items():
    if _paper["paper"] != _name:
        raise ValueError(f"{config['paper_dir']}/{_name}.yaml declares paper {_paper['paper']!r}")
    for _exp_name, _exp in _paper["experiments"].items():
        for _alg in _exp["algorithms"]:
            _prof = experiments.experiment_profile(_paper, _exp_name, _alg)
            if _prof not in config["profiles"]:
                raise ValueError(f"paper {_name!r}: profile {_prof!r} is not in config 'profiles' "
                                 f"(defined: {sorted(config['profiles'])})")


# A target ε (a cell file's eps<...> token; inf and T<steps> are the other privacy settings).
NUMERIC_EPSILON = "[0-9]+(\\.[0-9]+)?(e-?[0-9]+)?"


def _alternatives(values):
    return "|".join(re.escape(v) for v in values)


wildcard_constraints:
    dataset=_alternatives(registry.DATASET_KEYS),
    profile=_alternatives(config["profiles"]),
    paper=_alternatives(PAPERS) or "(?!)",
    experiment="[a-z0-9][a-z0-9-]*",
    model="[a-z0-9][a-z0-9.-]*",
    algorithm="[a-z0-9][a-z0-9.-]*",
    epsilon=f"inf|T[0-9]+|{NUMERIC_EPSILON}",
    l2="0|[0-9]+(\\.[0-9]+)?(e-?[0-9]+)?",


def dataset_available(key):
    return AVAILABLE[key][0]


def prepared(key, profile="default"):
    return f"resources/prepared/{key}/{profile}.npz"


def profile_options(key, profile):
    """A profile's options for one dataset: its common options, then its per-dataset ones."""
    spec = dict(config["profiles"][profile])
    per_dataset = spec.pop("per_dataset", {}) or {}
    return {**spec, **per_dataset.get(key, {})}


def configured_available_datasets():
    return [k for k in config["datasets"] if dataset_available(k)]


def cell_of(wildcards):
    return experiments.Cell(
        wildcards.paper,
        wildcards.experiment,
        wildcards.dataset,
        wildcards.model,
        wildcards.algorithm,
        wildcards.epsilon,
    )


def paper_file(paper):
    return str(Path(config["paper_dir"], f"{paper}.yaml"))


def tuned_values(input):
    """Tuning choices from a job's ``tuning`` input (None for cells that use none)."""
    return json.loads(Path(input.tuning).read_text()) if hasattr(input, "tuning") else None


def cell_spec(wildcards, tuned=None):
    return experiments.cell_spec(PAPERS[wildcards.paper], cell_of(wildcards), config["seed"], tuned)


def cell_code(wildcards):
    """Fingerprint of the code a cell runs (its algorithm's module and the shared core)."""
    paper, cell = PAPERS[wildcards.paper], cell_of(wildcards)
    return algorithm_fingerprint(experiments.registered_name(paper, experiments.base_key(paper, cell)))


def tuning_code(wildcards):
    from dperm.tuning import tuned_algorithms

    algorithms = algorithm_fingerprint(*tuned_algorithms(PAPERS[wildcards.paper]))
    return algorithms + source_fingerprint("tuning")


def cell_spec_param(wildcards, input):
    """The cell spec as JSON; a placeholder while the tune checkpoint has not run yet (Snakemake
    re-evaluates the job, and this param, once the checkpoint's output exists)."""
    tuned = tuned_values(input)
    if tuned is None and experiments.cell_uses_tuning(PAPERS[wildcards.paper], cell_of(wildcards)):
        return "pending: waits for the tune checkpoint"
    return experiments.dumps(cell_spec(wildcards, tuned))


def cell_inputs(wildcards):
    """A cell's prepared data, its tuning choices (if it uses any; the tune checkpoint must run
    first) and, for convex models of papers that solve them, the optima of its splits at its λ."""
    paper, cell = PAPERS[wildcards.paper], cell_of(wildcards)
    inputs, tuned = {}, None
    if experiments.cell_uses_tuning(paper, cell):
        inputs["tuning"] = checkpoints.tune.get(
            paper=wildcards.paper, dataset=wildcards.dataset
        ).output.json
        tuned = json.loads(Path(inputs["tuning"]).read_text())
    spec = experiments.cell_spec(paper, cell, config["seed"], tuned)
    inputs["data"] = prepared(spec["dataset"], spec["profile"])
    if experiments.solves_optimum(paper, wildcards.model):
        inputs["optimum"] = experiments.optimum_path(spec)
    return inputs


# Algorithms whose privacy setting is a step count (T<steps>, e.g. SGD-MA): every step count of
# an experiment comes from one run (snapshots along the path of the longest; dperm.protocol).
PATH_ALGORITHMS = sorted(
    {key for paper in PAPERS.values() for exp in paper["experiments"].values() for key in exp["steps"]}
)


def path_grid(wildcards):
    """A path's step counts, ascending (the experiment's ``steps`` for its algorithm)."""
    steps = PAPERS[wildcards.paper]["experiments"][wildcards.experiment]["steps"][wildcards.algorithm]
    return sorted({int(t) for t in steps})


def path_cell_wildcards(wildcards):
    """The wildcards of a path's longest cell (its spec, inputs and seed are that cell's)."""
    return SimpleNamespace(
        paper=wildcards.paper,
        experiment=wildcards.experiment,
        dataset=wildcards.dataset,
        model=wildcards.model,
        algorithm=wildcards.algorithm,
        epsilon=f"T{path_grid(wildcards)[-1]}",
    )


def path_inputs(wildcards):
    return cell_inputs(path_cell_wildcards(wildcards))


def path_spec_param(wildcards, input):
    """The longest cell's spec plus the shorter step counts to release along its run."""
    longest = path_cell_wildcards(wildcards)
    text = cell_spec_param(longest, input)
    if text.startswith("pending"):
        return text
    return experiments.dumps({**json.loads(text), "path": path_grid(wildcards)[:-1]})


def path_code(wildcards):
    return cell_code(path_cell_wildcards(wildcards))


def row_cells(wildcards):
    """The numeric-ε cells of a row (one experiment, dataset, model and algorithm), as wildcards,
    in the experiment's ε order."""
    paper = PAPERS[wildcards.paper]
    if wildcards.experiment not in paper["experiments"]:
        raise ValueError(f"paper {wildcards.paper!r} has no experiment {wildcards.experiment!r}; "
                         f"it has {sorted(paper['experiments'])}")
    row = (wildcards.dataset, wildcards.model, wildcards.algorithm)
    found = [
        SimpleNamespace(**vars(c))
        for c in experiments.cells(paper, [wildcards.experiment])
        if (c.dataset, c.model, c.algorithm) == row and re.fullmatch(NUMERIC_EPSILON, c.epsilon)
    ]
    if not found:
        raise ValueError(f"{wildcards.paper}/{wildcards.experiment} has no numeric-epsilon cells for "
                         f"dataset {row[0]!r}, model {row[1]!r}, algorithm {row[2]!r}")
    return found


def row_inputs(wildcards):
    """The inputs of a row's cells, which are one set (same data, tuning and optima)."""
    first, *rest = (cell_inputs(c) for c in row_cells(wildcards))
    for other in rest:
        if other != first:
            raise ValueError(f"the cells of row {wildcards} need different inputs: {first} vs {other}")
    return first


def row_spec_param(wildcards, input):
    """The row's cell specs as one JSON list (a placeholder while the tune checkpoint is pending)."""
    texts = [cell_spec_param(c, input) for c in row_cells(wildcards)]
    if any(t.startswith("pending") for t in texts):
        return "pending: waits for the tune checkpoint"
    return experiments.dumps([json.loads(t) for t in texts])


def row_code(wildcards):
    return cell_code(row_cells(wildcards)[0])


def data_param(wildcards, input):
    """A job's prepared data (read defensively: while the tune checkpoint is pending, as in dry
    runs, its inputs are only the checkpoint's output, and the command is formatted anyway)."""
    return input.data if hasattr(input, "data") else "<pending>"


def optimum_option(wildcards, input):
    return f"--optimum {input.optimum}" if hasattr(input, "optimum") else ""


def optimum_spec_json(wildcards):
    spec = experiments.optimum_spec(
        PAPERS[wildcards.paper],
        wildcards.experiment,
        wildcards.dataset,
        wildcards.model,
        wildcards.profile,
        float(wildcards.l2),
        config["seed"],
    )
    return experiments.dumps(spec)


def tuning_data(wildcards):
    """Prepared files the tuning grid of one dataset of a paper runs on."""
    from dperm.tuning import needed_profiles, tuning_jobs

    paper = PAPERS[wildcards.paper]
    return sorted(
        {
            prepared(dataset, profile)
            for dataset, model, experiment in tuning_jobs(paper)
            if dataset == wildcards.dataset
            for profile in needed_profiles(paper, experiment, dataset, model)
        }
    )


def experiment_cells(paper, experiment):
    """Run files of an experiment, for the datasets that can be had."""
    return [
        c.path
        for c in experiments.cells(PAPERS[paper], [experiment])
        if dataset_available(c.dataset)
    ]


def paper_tables(paper):
    return [
        f"results/tables/{paper}/{name}.{ext}"
        for name in PAPERS[paper]["experiments"]
        for ext in ("csv", "md")
    ]


def paper_figures(paper):
    return [
        f"figures/{paper}/{name}.{ext}"
        for name in PAPERS[paper]["figures"]
        for ext in ("png", "pdf")
    ]


def paper_outputs(paper):
    return paper_tables(paper) + paper_figures(paper)


def figure_tables(paper, figure):
    """Summary tables a figure draws from: its experiment's and those it borrows curves from."""
    spec = PAPERS[paper]["figures"][figure]
    return [f"results/tables/{paper}/{e}.csv" for e in (spec["experiment"], *spec.get("borrow", {}))]


def figure_datasets(paper, figure):
    spec = PAPERS[paper]["figures"][figure]
    if "panels" in spec:
        return [p["dataset"] for p in spec["panels"]]
    return spec.get("datasets", PAPERS[paper]["experiments"][spec["experiment"]]["datasets"])


def unavailable_json(datasets):
    return json.dumps({d: UNAVAILABLE[d] for d in datasets if d in UNAVAILABLE}, sort_keys=True)


def default_targets():
    datasets = [prepared(k) for k in configured_available_datasets()] + [
        "results/tables/datasets.csv",
        "results/tables/datasets.md",
    ]
    return datasets + [t for paper in PAPERS for t in paper_outputs(paper)]
