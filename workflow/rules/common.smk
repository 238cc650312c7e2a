# Validation, wildcard constraints and path helpers. No rules here, and no paper named: a paper's
# knowledge lives in its package (src/dperm/papers/<paper>/), whose declared products
# rules/products.smk turns into rules.
import functools
import json
import math
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

# The workflow runs this checkout's code (src/), whatever dperm an environment may have
# installed: at parse time through sys.path, in jobs through PYTHONPATH.
SRC = str(Path(workflow.basedir, "src").resolve())
sys.path.insert(0, SRC)
os.environ.update(PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")])))

import yaml
from snakemake.exceptions import WorkflowError

from dperm import audit, grid, papers
from dperm.protocol import metric_hooks
from dperm.config import ConfigError, read_yaml, validate as validate_config
from dperm.datasets import registry, synthetic
from dperm.datasets.fetch import MIRROR_ENV, FetchError, resolve_mirror
from dperm.datasets.prepare import availability
from dperm.fingerprint import algorithm_fingerprint, source_fingerprint
from dperm.tuning import (
    needed_profiles,
    tuned_algorithms,
    tuning_jobs,
    tuning_parts,
    tuning_spec,
)
from dperm.report.products import Reads


def _config_sources():
    files = [str(f) for f in getattr(workflow, "configfiles", [])] or ["config/config.yaml"]
    return f"{' + '.join(files)} (and any --config values)"


try:
    for _file in getattr(
        workflow, "configfiles", []
    ):  # Snakemake's loader keeps a repeated key's last value
        read_yaml(_file)  # silently; ours refuses it, naming both lines
    validate_config(config, "config", _config_sources())
    MIRROR = resolve_mirror(config["data"]["mirror"])
except (ConfigError, FetchError) as err:
    raise WorkflowError(str(err)) from None
DOWNLOAD = config["data"]["download"]
# How data are fetched (where from, the download policy, the timeout) changes no result: the
# data commands read it from the environment, so that it is no rule parameter and changing it
# reruns nothing (the fetched files are verified against their content hashes either way).
os.environ.update(DPERM_DOWNLOAD=DOWNLOAD, DPERM_TIMEOUT=str(config["data"]["timeout"]))
if MIRROR is not None:
    os.environ.update({MIRROR_ENV: str(MIRROR)})

# A quick run writes every result, figure and log under quick/ (prepared data are shared).
OUT = "quick/" if config["quick"] else ""

# Rules rerun when the dperm code they run changes (a params value, see dperm.fingerprint).
CODE = {
    "fetch": source_fingerprint(
        "datasets/fetch", "datasets/registry", "datasets/ucimlrepo", "files"
    ),
    "prepare": source_fingerprint("datasets", "files"),
    "optimum": source_fingerprint("optimum", "protocol", "losses", "problem", "solvers"),
    "starts": source_fingerprint(
        "optimum", "protocol", "losses", "problem", "solvers", "algorithms/pidp_sgd"
    ),
    "report": source_fingerprint("report", "records"),
}


def _availability(key):
    return availability(registry.get(key), f"resources/raw/{key}", MIRROR, DOWNLOAD)


AVAILABLE = {key: _availability(key) for key in registry.DATASET_KEYS}  # synthetic ones always are
UNAVAILABLE = {k: why for k, (ok, why) in AVAILABLE.items() if not ok}
for key in config["datasets"]:
    if key in UNAVAILABLE:
        logger.warning(f"dperm: skipping dataset {key!r} in the default target: {UNAVAILABLE[key]}")


def _load_papers():
    known = papers.names()
    unknown = [name for name in config["papers"] if name not in known]
    if unknown:
        raise WorkflowError(
            f"{_config_sources()}: papers: {unknown} have no plugin (src/dperm/papers/<paper>/); "
            f"known papers: {known}"
        )
    loaded = {}
    for name in config["papers"]:
        path = grid.paper_path(config["paper_dir"], name)
        overlay = None
        if config["paper_overlays"]:
            candidate = grid.paper_path(config["paper_overlays"], name)
            overlay = candidate if candidate.is_file() else None
        try:
            paper = papers.load(name, path, quick=config["quick"], overlay=overlay)
            grid.check_profiles(paper, config["profiles"], paper.source)
            papers.products(name)
        except (ConfigError, ValueError) as err:
            raise WorkflowError(str(err)) from None
        loaded[name] = paper
    return loaded


PAPERS = _load_papers()

# A target ε (a cell file's eps<...> token; inf and T<steps> are the other privacy settings).
NUMERIC_EPSILON = "[0-9]+(\\.[0-9]+)?(e-?[0-9]+)?"


def _alternatives(values):
    return "|".join(re.escape(v) for v in values)


wildcard_constraints:
    dataset=f"{_alternatives(registry.DATASET_KEYS)}|{synthetic.KEY_REGEX}",
    profile=_alternatives(config["profiles"]),
    paper=_alternatives(PAPERS) or "(?!)",
    experiment="[a-z0-9][a-z0-9-]*",
    model="[a-z0-9][a-z0-9.-]*",
    algorithm="[a-z0-9][a-z0-9.-]*",
    part="[1-9][0-9]*",
    epsilon=f"inf|T[0-9]+|{NUMERIC_EPSILON}",
    l2=f"0|{NUMERIC_EPSILON}",


# -- data ------------------------------------------------------------------------------------------


def dataset_available(key):
    return synthetic.is_synthetic(key) or AVAILABLE[key][0]


def prepared(key, profile="default"):
    return f"resources/prepared/{key}/{profile}.npz"


def profile_options(key, profile):
    """A profile's options for one dataset: its common options, then its per-dataset ones."""
    return grid.profile_options(config["profiles"], key, profile)


def configured_available_datasets():
    return [k for k in config["datasets"] if dataset_available(k)]


def unavailable_why(datasets):
    """Why none of ``datasets`` can be had, each one's reason (None when one can)."""
    if not datasets or any(dataset_available(d) for d in datasets):
        return None
    return "; ".join(f"{d}: {AVAILABLE[d][1]}" for d in datasets)


def require_available(what, datasets):
    """Refuse, when the DAG is built, a requested output none of whose datasets can be had,
    naming them, what was tried and what would supply them (instead of a job that fails later
    with nothing to read)."""
    why = unavailable_why(datasets)
    if why:
        raise no_data(what, why)


def no_data(what, why):
    mirror = f"the mirror {MIRROR}" if MIRROR else f"a mirror (data.mirror or ${MIRROR_ENV})"
    return WorkflowError(
        f"dperm: {what} needs data that no source can supply ({why}). Put the files in {mirror} "
        f"or allow downloads (data.download: auto), or leave it out of the target."
    )


def unavailable_json(datasets):
    """Datasets that cannot be had, for a figure's 'data unavailable' panels (no mirror path or
    policy in the text: where data are looked for must not rerun a figure)."""
    return {d: "data unavailable offline" for d in datasets if d in UNAVAILABLE}


# -- jobs and cells --------------------------------------------------------------------------------


def paper_of(wildcards):
    return PAPERS[wildcards.paper]


def job_of(wildcards):
    """The job of a job file's (or a cell file's) wildcards; a name not in the grid is an error
    at DAG-build time, naming what the grid has."""
    try:
        return grid.find_job(
            paper_of(wildcards),
            wildcards.experiment,
            wildcards.dataset,
            wildcards.model,
            wildcards.algorithm,
        )
    except ConfigError as err:
        raise WorkflowError(str(err)) from None


def job_specs(wildcards):
    """The job's (or one part's) cell specs as JSON: a function of the configuration only (never
    of ``input``, which Snakemake leaves out of its rerun check), so every value that fixes a
    result reruns it. A job its experiment splits (``parts``) runs only as its parts."""
    paper, job = paper_of(wildcards), job_of(wildcards)
    parts = len(grid.job_parts(paper, job))
    part = int(wildcards.part) if "part" in wildcards.keys() else None
    if part is None and parts > 1:
        raise WorkflowError(
            f"{OUT}{job.path}: {job.paper}/{job.experiment} splits this job into {parts} parts "
            f"(parts: in config/papers/{job.paper}.yaml); ask for its cells or "
            + ", ".join(f"{OUT}{job.part_path(k)}" for k in range(1, parts + 1))
        )
    if part is not None and not 1 <= part <= parts:
        raise WorkflowError(
            f"{OUT}{job.part_path(part)}: the job has {parts} part(s) "
            f"(parts: in config/papers/{job.paper}.yaml)"
        )
    return grid.dumps(grid.job_specs(paper, job, config["seed"], part=part))


def job_code(wildcards):
    """Fingerprint of the code a job runs (its algorithm's modules and the shared core)."""
    job = job_of(wildcards)
    paper = paper_of(wildcards)
    return algorithm_fingerprint(paper.registered_name(grid.base_key(paper, job)))


def tuning_choices(wildcards, spec):
    """The choices of the tuning part a job's cells take theirs from (its dataset, model and
    tuning profile; the checkpoint runs first)."""
    return checkpoints.tune.get(
        paper=wildcards.paper,
        dataset=wildcards.dataset,
        model=wildcards.model,
        profile=spec["tuned"]["profile"],
    ).output.json


def job_inputs(wildcards):
    """A job's prepared data, its tuning choices (if it uses any) and, for convex models of
    papers that solve them, the optima of its splits at its (possibly tuned) λ."""
    paper, job = paper_of(wildcards), job_of(wildcards)
    spec = grid.job_specs(paper, job, config["seed"])[0]
    inputs, tuned = {"data": prepared(spec["dataset"], spec["profile"])}, None
    if grid.job_uses_tuning(paper, job):
        inputs["tuning"] = tuning_choices(wildcards, spec)
        tuned = json.loads(Path(inputs["tuning"]).read_text())
    if grid.solves_optimum(paper, wildcards.model):
        files = grid.optimum_files(paper, grid.apply_tuning(spec, tuned))
        inputs["optimum"] = [f"{OUT}{f}" for f in files] if len(files) > 1 else f"{OUT}{files[0]}"
    start = grid.start_file(
        paper,
        job,
        config["seed"],
        spec=spec,
        starters=lambda *cell: start_specs(paper.key, *cell),
    )
    if start is not None:
        inputs["starts"] = f"{OUT}{start}"
    for role, (dataset, profile) in metric_hooks.data_needs(spec).items():
        inputs[f"extra_{role}"] = prepared(dataset, profile)
    return inputs


@functools.cache
def start_specs(paper, experiment, dataset, model, profile):
    """The jobs of (experiment, dataset, model) on data of ``profile`` that start from theta~
    (dperm.grid.start_specs): when two or more do, rule starts solves it once per split for them."""
    return grid.start_specs(PAPERS[paper], experiment, dataset, model, profile, config["seed"])


def starts_spec(wildcards):
    specs = start_specs(
        wildcards.paper,
        wildcards.experiment,
        wildcards.dataset,
        wildcards.model,
        wildcards.profile,
    )
    if len(specs) < 2:
        raise WorkflowError(
            f"{wildcards.paper}/{wildcards.experiment} has {len(specs)} job(s) on "
            f"{wildcards.dataset}/{wildcards.model} ({wildcards.profile}) that start from theta~: "
            "no start file to share"
        )
    return grid.dumps(specs)


def extra_data(wildcards, input):
    """``--extra <role>=<file>`` for each prepared dataset the job's metric hooks read."""
    return " ".join(
        f"--extra {key.removeprefix('extra_')}={value}"
        for key, value in input.items()
        if key.startswith("extra_")
    )


def option(name):
    """``--<name> <input file>`` when the job has that input, else nothing (a param derived from
    ``input``: the file itself is what the rerun check follows)."""
    return lambda wildcards, input: (
        f"--{name} {getattr(input, name)}" if hasattr(input, name) else ""
    )


def data_param(wildcards, input):
    """A job's prepared data (read defensively: while the tune checkpoint is pending, as in dry
    runs, its inputs are only the checkpoint's output, and the command is formatted anyway)."""
    return input.data if hasattr(input, "data") else "<pending>"


def job_priority(wildcards):
    """A fit's place in the queue: the longest chain first (chain_priority), an experiment's
    configured `priority` deciding between fits of equal estimate."""
    exp = paper_of(wildcards).experiments[wildcards.experiment]
    return _FIT_CHAIN(wildcards) + exp.priority.get(wildcards.dataset, 0) / 100


def cell_job(wildcards):
    """The job file a cell is cut from; a privacy setting outside the grid is an error now, not
    after the job has run."""
    job = job_of(wildcards)
    settings = grid.job_settings(paper_of(wildcards), job)
    if wildcards.epsilon not in settings:
        raise WorkflowError(
            f"{OUT}{job.cell_dir}/eps{wildcards.epsilon}.csv is not a cell of the grid: "
            f"{job.paper}/{job.experiment} runs {job.algorithm} on {job.dataset}/{job.model} at {settings} "
            f"(config/papers/{job.paper}.yaml)"
        )
    return f"{OUT}{grid.cell_source(paper_of(wildcards), cell_of(wildcards))}"


def cell_of(wildcards):
    """The cell of a cell file's wildcards."""
    return grid.Cell(*vars(job_of(wildcards)).values(), wildcards.epsilon)


def experiment_cells(paper, experiment):
    """Cell files of an experiment, for the datasets that can be had (an experiment none of whose
    datasets can be had is refused: :func:`require_available`)."""
    exp = PAPERS[paper].experiments[experiment]
    require_available(f"experiment {paper}/{experiment}", exp.datasets)
    return [
        f"{OUT}{c.path}"
        for c in grid.cells(PAPERS[paper], [experiment])
        if dataset_available(c.dataset)
    ]


# -- optima and tuning -----------------------------------------------------------------------------


def optimum_spec_json(wildcards):
    spec = grid.optimum_spec(
        PAPERS[wildcards.paper],
        wildcards.experiment,
        wildcards.dataset,
        wildcards.model,
        wildcards.profile,
        float(wildcards.l2),
        config["seed"],
    )
    return grid.dumps(spec)


def optimum_part(wildcards):
    """``--part K/N`` for a part of an optimum its experiment splits (``optimum_parts``), nothing
    for a whole one; a part the configuration does not make is an error."""
    if "part" not in wildcards.keys():
        return ""
    n = grid.optimum_part_count(
        PAPERS[wildcards.paper], wildcards.experiment, wildcards.dataset, wildcards.model
    )
    part = int(wildcards.part)
    if not 1 <= part <= n or n == 1:
        raise WorkflowError(
            f"optimum part {part} of {wildcards.paper}/{wildcards.experiment} on {wildcards.dataset}/"
            f"{wildcards.model}: the experiment solves it in {n} part(s) (optimum_parts: in "
            f"config/papers/{wildcards.paper}.yaml)"
        )
    return f"--part {part}/{n}"


def tuning_data(wildcards):
    """Prepared files one part (model, tuning profile) of a dataset's tuning runs on."""
    spec = tuning_spec(PAPERS[wildcards.paper], wildcards.dataset)
    files = sorted(
        {
            prepared(dataset, profile)
            for dataset, model, experiment in tuning_jobs(
                spec, [wildcards.dataset], [(wildcards.model, wildcards.profile)]
            )
            for profile in needed_profiles(spec, experiment, dataset, model)
        }
    )
    if not files:
        parts = ", ".join("/".join(p) for p in tuning_parts(spec, wildcards.dataset))
        raise WorkflowError(
            f"dperm: {wildcards.paper} tunes no {wildcards.model}/{wildcards.profile} on "
            f"{wildcards.dataset} (its parts there: {parts or 'none'})"
        )
    return files


def tuning_part_files(wildcards):
    """The choices files of every part of a dataset's tuning, in dperm.tuning.tuning_parts' order
    (the order one run over the dataset makes them)."""
    spec = tuning_spec(PAPERS[wildcards.paper], wildcards.dataset)
    return [
        f"{OUT}results/tuning/{wildcards.paper}/{wildcards.dataset}/{model}/{profile}.json"
        for model, profile in tuning_parts(spec, wildcards.dataset)
    ]


def tuning_tables(paper):
    """The tuning tables of the datasets a paper's default target tunes on (every dataset of a tuned
    experiment of its target that can be had)."""
    if paper not in PAPERS or PAPERS[paper].tuning is None:
        return []
    exps = PAPERS[paper].experiments
    skip = blocked(paper)
    datasets = sorted(
        {
            d
            for name in PAPERS[paper].tuning.experiments
            if name in target_experiments(paper) and name not in skip
            for d in exps[name].datasets
            if dataset_available(d)
        }
    )
    return [f"{OUT}results/tuning/{paper}/{d}.{ext}" for d in datasets for ext in ("csv", "html")]


def tuning_spec_json(wildcards):
    return grid.dumps(tuning_spec(PAPERS[wildcards.paper], wildcards.dataset))


def tuning_code(wildcards):
    algorithms = algorithm_fingerprint(
        *tuned_algorithms(tuning_spec(PAPERS[wildcards.paper], None))
    )
    return algorithms + source_fingerprint("tuning")


# -- summaries, figures and targets ----------------------------------------------------------------


def summary(paper, experiment, ext="csv"):
    return f"{OUT}results/summaries/{paper}/{experiment}.{ext}"


def summary_spec(wildcards):
    exp = PAPERS[wildcards.paper].experiments[wildcards.experiment]
    return json.dumps({"title": exp.title or wildcards.experiment, "quick": config["quick"]})


def figure_summaries(wildcards):
    """Summaries a figure draws from: its experiment's and those it borrows curves from."""
    figure = PAPERS[wildcards.paper].figures[wildcards.figure]
    return [summary(wildcards.paper, e) for e in (figure.experiment, *figure.borrow)]


def figure_spec_json(wildcards):
    paper = PAPERS[wildcards.paper]
    spec = grid.figure_spec(paper, wildcards.figure)
    spec["unavailable"] = unavailable_json(grid.figure_datasets(paper, wildcards.figure))
    return grid.dumps(spec)


def target_experiments(paper):
    return [name for name, exp in PAPERS[paper].experiments.items() if exp.default_target]


def paper_outputs(paper, target=None, makeable=False):
    """Every output of a paper's target (``target`` None) or of one of its extra targets: the
    summary of every experiment of its target, every figure its config declares and every output
    of its products (all computed from the declarations, never restated). ``makeable``: only
    those some dataset can be had for (the default target; :func:`blocked`)."""
    if paper not in PAPERS:
        return []
    skip = blocked(paper) if makeable else {}
    out = []
    if target is None:
        out += [
            summary(paper, e, ext)
            for e in target_experiments(paper)
            if e not in skip
            for ext in ("csv", "md")
        ]
        out += [
            f"{OUT}figures/{paper}/{name}.{ext}"
            for name, figure in PAPERS[paper].figures.items()
            if figure.experiment not in skip and not set(figure.borrow) & set(skip)
            for ext in ("png", "pdf")
        ]
        out += tuning_tables(paper)
    for product in paper_products(paper):
        if product.target == target and product.name not in skip:
            out += [path for path, _ in product_files(paper, product).values()]
    return out


def requested_paper_outputs(paper, target=None):
    """A paper's target asked for by name: every output, refused when one has no data."""

    def outputs(wildcards):
        for name, why in blocked(paper).items():
            raise no_data(f"target {target or paper!r} ({paper}/{name})", why)
        return paper_outputs(paper, target)

    return outputs


def unconfigured_paper(paper):
    def refuse(wildcards):
        raise WorkflowError(
            f"dperm: target {paper!r} is a paper that config 'papers' leaves out (it has "
            f"{list(config['papers'])}); add it there, or run with --config \"papers=[{paper}]\""
        )

    return refuse


def blocked(paper):
    if paper not in _BLOCKED:
        _BLOCKED[paper] = _blocked(paper)
        for name, why in _BLOCKED[paper].items():
            logger.warning(
                f"dperm: no data for {paper}/{name} ({why}): the default target leaves it out"
            )
    return _BLOCKED[paper]


_BLOCKED = {}


def _blocked(paper):
    """Experiments and products of a paper that no dataset can be had for -> why (an experiment
    none of whose datasets can be had; a product that reads one, or a table of another blocked
    product). The default target leaves them out with a warning; asked for by name, they are
    refused (:func:`require_available`)."""
    config_ = PAPERS[paper]
    out = {}
    for name, exp in config_.experiments.items():
        why = unavailable_why(exp.datasets)
        if why:
            out[name] = why
    changed = True
    while changed:  # a product reading a blocked product's table is blocked in turn
        changed = False
        for product in paper_products(paper):
            if product.name in out:
                continue
            reads = product.reads
            named = [*_selected(reads.summaries, paper)]
            if callable(reads.cells):
                cells = reads.cells(config_)
                why = unavailable_why(sorted({c.dataset for c in cells}))
            else:
                named += list(reads.cells)
                why = None
            why = why or next((out[e] for e in named if e in out), None)
            tables = {t: p.name for p in paper_products(paper) for t in p.tables}
            why = why or next((out[tables[t]] for t in reads.tables if tables.get(t) in out), None)
            if why:
                out[product.name] = why
                changed = True
    return out


# -- products (a paper's own tables and figures, declared in its plugin) ---------------------------


def paper_products(paper):
    """The products a paper declares that its configuration asks for."""
    return [p for p in papers.products(paper) if p.when is None or p.when(PAPERS[paper])]


def extra_targets(paper):
    """Names of the extra targets a paper's products belong to (e.g. zhang2017-runtime)."""
    return sorted({p.target for p in paper_products(paper) if p.target is not None})


def product_files(paper, product):
    """output key -> (path, report caption or None): each table's csv, md and html (in the
    report: a table the report shows, not a download), each figure's png (in the report) and pdf."""
    out = {}
    for name in product.tables:
        key = name.replace("-", "_")
        out[f"{key}_csv"] = (f"{OUT}results/tables/{paper}/{name}.csv", None)
        out[f"{key}_md"] = (f"{OUT}results/tables/{paper}/{name}.md", None)
        out[f"{key}_html"] = (f"{OUT}results/tables/{paper}/{name}.html", name)
    for name in product.figures:
        key = name.replace("-", "_")
        out[f"{key}_png"] = (f"{OUT}figures/{paper}/{name}.png", name)
        out[f"{key}_pdf"] = (f"{OUT}figures/{paper}/{name}.pdf", None)
    return out


def product_outputs(paper, product):
    """A product rule's outputs, those the report shows wrapped with their caption."""
    outputs = {}
    for key, (path, caption) in product_files(paper, product).items():
        if caption is None:
            outputs[key] = path
        else:
            outputs[key] = report(
                path,
                caption=str(papers.caption(paper, product, caption)),
                category=report_category(paper),
                subcategory=product.section,
            )
    return outputs


def _selected(selector, paper):
    return list(selector(PAPERS[paper]) if callable(selector) else selector)


def product_inputs(paper, product):
    """role -> files, from the product's :class:`Reads` (datasets that cannot be had left out)."""
    reads, config_ = product.reads, PAPERS[paper]
    if callable(reads.cells):
        cells = [c for c in reads.cells(config_) if dataset_available(c.dataset)]
        cell_files = [f"{OUT}{c.path}" for c in cells]
    else:
        cell_files = [f for e in reads.cells for f in experiment_cells(paper, e)]
    pairs = lambda selector: [
        (d, p) for d, p in (selector(config_) if selector else []) if dataset_available(d)
    ]
    return {
        "cells": cell_files,
        "summaries": [summary(paper, e) for e in _selected(reads.summaries, paper)],
        "tables": [f"{OUT}results/tables/{paper}/{t}.csv" for t in reads.tables],
        "prepared": [prepared(d, p) for d, p in pairs(reads.prepared)],
        "provenance": [f"resources/prepared/{d}/{p}.json" for d, p in pairs(reads.provenance)],
        "datasets": [f"{OUT}results/tables/datasets.csv"] if reads.datasets else [],
    }


def product_spec_json(paper, product):
    """What the product reads from the configuration (a rule parameter, so it reruns exactly when
    one of these values changes)."""
    spec = product.spec(PAPERS[paper]) if product.spec else {}
    return grid.dumps(spec)


def product_rule_name(paper, product):
    return f"{paper}_{product.name}".replace("-", "_")


# -- the privacy audit ----------------------------------------------------------------------------

AUDIT_SUBJECTS = [audit.slug(s.name) for s in audit.subjects()]


def audit_code(wildcards):
    """Fingerprint of an audit subject: its algorithm's code, the audit's and the cases'."""
    names = audit.subject(wildcards.subject).algorithms
    return (algorithm_fingerprint(*names) if names else "") + source_fingerprint(
        "audit",
        "audit_controls",
        "audit_subjects",
        "algorithms/audit_cases",
        "algorithms/audit_worst_case",
        "privacy",
    )


def audit_one_run_code(wildcards):
    """Fingerprint of the one-run audits: DP-SGD's code, the runner's and the estimators'."""
    return algorithm_fingerprint("dp-sgd") + source_fingerprint("audit_one_run", "privacy")


# -- the scorecard and the report's order -------------------------------------------------------------


# Snakemake's report lists categories sorted by name: numbers keep the scorecard first, then
# each paper in config order, then the datasets and the privacy audit.
_WIDTH = len(str(len(PAPERS) + 2))


def report_category(paper):
    """A paper's report category, numbered by its place in config ``papers``."""
    return f"{list(PAPERS).index(paper) + 1:0{_WIDTH}d} · {paper}"


SCORECARD_CATEGORY = f"{0:0{_WIDTH}d} · Scorecard"
DATASETS_CATEGORY = f"{len(PAPERS) + 1:0{_WIDTH}d} · Datasets"
AUDIT_CATEGORY = f"{len(PAPERS) + 2:0{_WIDTH}d} · Privacy audit"


def scorecard_tables():
    """``<paper>/<table>`` -> path of every product table the scorecard reads."""
    made_by = lambda paper: {t: p.name for p in paper_products(paper) for t in p.tables}
    return {
        f"{paper}/{name}": f"{OUT}results/tables/{paper}/{name}.csv"
        for paper in PAPERS
        for name in getattr(papers.plugin(paper), "SCORECARD_TABLES", ())
        if made_by(paper).get(name) not in blocked(paper)
    }


def scorecard_summaries():
    return [
        summary(paper, e)
        for paper in PAPERS
        for e in target_experiments(paper)
        if e not in blocked(paper)
    ]


def scorecard_spec_json():
    """Everything the scorecard reads from the configuration: per paper its title, declared
    deviations and the registered algorithms it runs; the quick flag and the audit's scale."""
    entries = []
    for key, paper in PAPERS.items():
        algorithms = sorted({paper.registered_name(a) for a in paper.algorithms})
        title = getattr(papers.plugin(key), "TITLE", paper.title or key)
        entries.append(
            {
                "key": key,
                "title": title,
                "deviations": list(paper.deviations),
                "algorithms": algorithms,
            }
        )
    return json.dumps(
        {"papers": entries, "quick": config["quick"], "audit": config["audit"]}, sort_keys=True
    )


def quick_flag():
    return "--quick" if config["quick"] else ""


def default_targets():
    datasets = [prepared(k) for k in configured_available_datasets()]
    return datasets + [f"{OUT}results/tables/datasets.csv", f"{OUT}results/tables/datasets.md"]


# -- cluster jobs (profiles/slurm) ---------------------------------------------------------------
# Local runs ignore groups and these resources. On a cluster, a job's group decides which jobs go
# out as one cluster job (one submission, one parse of this workflow on the node: ~10-20 s of
# overhead each), and its resources what that cluster job asks for. Every rule with a command
# names its kind, in two lines:
#     group: cluster_group("<kind>")
#     resources: **cluster_resources("<kind>"),
# Sizes (memory, estimated seconds) come from workflow/cluster.yaml, written by
# benchmarks/slurm_resources.py from measured benchmark files; how many components a group spans
# is the profile's (profiles/slurm/config.yaml: group-components).
CLUSTER = yaml.safe_load(Path(workflow.basedir, "workflow", "cluster.yaml").read_text())
# kind -> group policy: a group id, formatted with the job's wildcards (one cluster job per value:
# a dataset's preparations, a paper's summaries and figures; a job without the wildcard goes to
# the id's stem); "batched" (the batch workflow/cluster.yaml gives the job, or alone: a long job,
# or one it does not list); "with-fit" (in its fit job's group).
CLUSTER_GROUPS = {
    "data": "data-{dataset}",
    "optimum": "batched",
    "fit": "batched",
    "cut": "with-fit",
    "summary": "report-{paper}",
    "product": "report-{paper}",
    "audit": "batched",
}
# The wildcards that name a job in workflow/cluster.yaml and in its group id, in this order.
_CLUSTER_ID = (
    "paper",
    "experiment",
    "dataset",
    "model",
    "algorithm",
    "part",
    "profile",
    "l2",
    "subject",
)


def _cluster_names(wildcards):
    return [wildcards[name] for name in _CLUSTER_ID if name in wildcards.keys()]


def cluster_key(wildcards):
    """A job's key in workflow/cluster.yaml, e.g. lee2018/fig2/adult/lr/dp-agd (a cell's is its
    job's: the epsilon is left out)."""
    return os.path.join("", *_cluster_names(wildcards))  # "" for a rule with no wildcards


def _cluster_row(kind, wildcards):
    """[estimated seconds, batch or None] of a job; one the table does not list (another
    configuration's) gets its kind's largest estimate and runs alone."""
    row = CLUSTER["seconds"].get(kind, {}).get(cluster_key(wildcards))
    return row or [CLUSTER["kinds"][kind]["seconds"], None]


def cluster_seconds(kind, wildcards):
    """Estimated seconds of one job at the full protocol (workflow/cluster.yaml)."""
    return _cluster_row(kind, wildcards)[0]


def _cluster_batch(group_id, stem):
    """A group id whose jobs become one cluster job although the graph does not connect them.
    Snakemake merges such parts through the profile's group-components, looked up under a
    templated group's parent id; these ids have no template, so their stem is registered as
    parent here, and the profile gives each stem 1000 (all parts of a group) rather than chunks
    of N parts: Snakemake 9.27 merges chunks into cached group objects and, each time it regroups
    (the tuning checkpoint makes it regroup), chunks grow past N (seen: 163 fits in a 40-part
    group)."""
    workflow.parent_groupids[group_id] = stem
    return group_id


class _Names(dict):
    """Wildcards built here (a dict read as Snakemake's, by key or attribute)."""

    __getattr__ = dict.__getitem__


def _fit_names(wildcards):
    """The wildcards of the fit a cell is cut from: its job's, with the part that holds the cell
    when the job is split (``parts``)."""
    names = _Names((k, v) for k, v in wildcards.items() if k != "epsilon")
    part = grid.cell_part(paper_of(wildcards), cell_of(wildcards))
    if part is not None:
        names["part"] = str(part)
    return names


def cluster_group(kind, **values):
    """The group of a rule's jobs (a function of their wildcards). ``values`` fill what the rule
    has no wildcard for, e.g. cluster_group("product", paper=name) in a rule made per product."""
    policy = CLUSTER_GROUPS[kind]

    def group(wildcards):
        if policy == "with-fit":
            wildcards = _fit_names(wildcards)
        if policy not in ("batched", "with-fit"):
            stem = policy.split("-{")[0]
            try:
                return _cluster_batch(policy.format(**{**values, **dict(wildcards.items())}), stem)
            except KeyError:
                return stem
        batched = "fit" if policy == "with-fit" else kind
        batch = _cluster_row(batched, wildcards)[1]
        # A fit that waits for the tuning checkpoint runs alone: Snakemake 9.27 replaces such a job
        # when the checkpoint has run, and a batch still holding the old one never becomes ready
        # ("BUG: Out of jobs ready to be started", seen in dry runs of the default target).
        if batched == "fit" and grid.job_uses_tuning(paper_of(wildcards), job_of(wildcards)):
            batch = None
        if batch is None:
            return "-".join([batched, *_cluster_names(wildcards)])
        return _cluster_batch(f"{batched}-batch{batch}", batched)

    return group


# -- the order jobs start in -----------------------------------------------------------------------
# Of the jobs that are ready, Snakemake starts those of highest priority first (locally and when it
# submits to a cluster). A job's priority is the estimated CPU seconds of the longest chain of work
# it opens: its own estimate (workflow/cluster.yaml) plus that of the longest job waiting for it.
# So the longest fits, and the preparation and tuning that gate them (KDDCup99's), start first,
# and no long job is left to run alone at the end of a run. The chain is read from the keys alone:
# a tuning part opens the fits of its paper on its dataset and model (of either tuning profile:
# the keys do not say which a fit takes); an optimum, the fits of its experiment, dataset and
# model; a preparation, every fit, tuning and optimum on its dataset.
def _longest_waiting():
    """(kind, key) -> estimated seconds of the longest job that waits for it."""
    after = defaultdict(float)

    def wait(kind, key, seconds):
        after[kind, key] = max(after[kind, key], seconds)

    seconds = CLUSTER["seconds"]
    for key, (fit, _) in seconds.get("fit", {}).items():
        paper, experiment, dataset, model = key.split("/")[:4]
        wait("tuning", f"{paper}/{dataset}/{model}", fit)
        wait("optimum", f"{paper}/{experiment}/{dataset}/{model}", fit)
        wait("data", dataset, fit)
    for key, (own, _) in seconds.get("tuning", {}).items():
        if key.count("/") != 3:  # not paper/dataset/model/profile: no tuning part of this workflow
            continue
        paper, dataset, model, _profile = key.split("/")
        wait("data", dataset, own + after["tuning", f"{paper}/{dataset}/{model}"])
    for key, (own, _) in seconds.get("optimum", {}).items():
        parts = key.split("/")
        wait("data", parts[2], own + after["optimum", "/".join(parts[:4])])
    return dict(after)


LONGEST_WAITING = _longest_waiting()


# the wildcards that name what a job of a kind gates in _longest_waiting (fits gate nothing)
_CHAIN_KEY = {
    "tuning": ("paper", "dataset", "model"),
    "optimum": ("paper", "experiment", "dataset", "model"),
    "data": ("dataset",),
}


def chain_priority(kind):
    """A rule's priority: estimated seconds of the longest chain of work its job opens."""
    names = _CHAIN_KEY.get(kind)

    def priority(wildcards):
        waiting = 0
        if names:
            # a key the table does not list (another configuration's) opens a chain as long as
            # the longest fit, as an unlisted fit is sized as the longest (_cluster_row)
            key = os.path.join(*(wildcards[n] for n in names))
            waiting = LONGEST_WAITING.get((kind, key), CLUSTER["kinds"]["fit"]["seconds"])
        return round(cluster_seconds(kind, wildcards) + waiting)

    return priority


_FIT_CHAIN = chain_priority("fit")


def cluster_resources(kind):
    """Memory (MB) and time limit (minutes): `runtime_factor` times the estimate, plus a minute
    for the Snakemake start-ups and the node's pace; a group asks for the sum of its jobs'. A cell
    is cut in about a second, in its fit's group and process: it adds nothing to the limit."""
    factor = CLUSTER["runtime_factor"]

    def runtime(wildcards):
        if CLUSTER_GROUPS.get(kind) == "with-fit":
            return 0
        return 1 + math.ceil(factor * cluster_seconds(kind, wildcards) / 60)

    return {"mem_mb": CLUSTER["kinds"][kind]["mem_mb"], "runtime": runtime}
