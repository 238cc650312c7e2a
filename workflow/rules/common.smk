# Validation, wildcard constraints and path helpers. No rules here, and no paper named: a paper's
# knowledge lives in its package (src/dperm/papers/<paper>/) and rule file (rules/papers/).
import json
import math
import os
import re
import sys
from pathlib import Path

# The workflow runs this checkout's code (src/), whatever dperm an environment may have
# installed: at parse time through sys.path, in jobs through PYTHONPATH.
SRC = str(Path(workflow.basedir, "src").resolve())
sys.path.insert(0, SRC)
os.environ.update(PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")])))

import yaml
from snakemake.exceptions import WorkflowError

from dperm import audit, experiments, papers
from dperm.config import ConfigError, validate as validate_config
from dperm.datasets import registry, synthetic
from dperm.datasets.fetch import MIRROR_ENV, FetchError, resolve_mirror
from dperm.datasets.prepare import availability
from dperm.fingerprint import algorithm_fingerprint, source_fingerprint
from dperm.tuning import needed_profiles, tuned_algorithms, tuning_jobs, tuning_spec


def _config_sources():
    files = [str(f) for f in getattr(workflow, "configfiles", [])] or ["config/config.yaml"]
    return f"{' + '.join(files)} (and any --config values)"


try:
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
        path = experiments.paper_path(config["paper_dir"], name)
        rules_file = Path(workflow.basedir, "workflow", "rules", "papers", f"{name}.smk")
        if not rules_file.is_file():
            raise WorkflowError(f"paper {name!r} has no rule file {rules_file}")
        try:
            paper = experiments.load_paper(path, quick=config["quick"])
            if paper["paper"] != name:
                raise ConfigError(
                    f"{path}: declares paper {paper['paper']!r}; the file must be named after it"
                )
            experiments.check_profiles(paper, config["profiles"], str(path))
        except ConfigError as err:
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
    epsilon=f"inf|T[0-9]+|{NUMERIC_EPSILON}",
    l2=f"0|{NUMERIC_EPSILON}",


# -- data ------------------------------------------------------------------------------------------


def dataset_available(key):
    return synthetic.is_synthetic(key) or AVAILABLE[key][0]


def prepared(key, profile="default"):
    return f"resources/prepared/{key}/{profile}.npz"


def profile_options(key, profile):
    """A profile's options for one dataset: its common options, then its per-dataset ones."""
    return experiments.profile_options(config["profiles"], key, profile)


def configured_available_datasets():
    return [k for k in config["datasets"] if dataset_available(k)]


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
        return experiments.find_job(
            paper_of(wildcards),
            wildcards.experiment,
            wildcards.dataset,
            wildcards.model,
            wildcards.algorithm,
        )
    except ConfigError as err:
        raise WorkflowError(str(err)) from None


def job_specs(wildcards):
    """The job's cell specs as JSON: a function of the configuration only (never of ``input``,
    which Snakemake leaves out of its rerun check), so every value that fixes a result reruns it."""
    job = job_of(wildcards)
    return experiments.dumps(experiments.job_specs(paper_of(wildcards), job, config["seed"]))


def job_code(wildcards):
    """Fingerprint of the code a job runs (its algorithm's modules and the shared core)."""
    job = job_of(wildcards)
    paper = paper_of(wildcards)
    return algorithm_fingerprint(
        experiments.registered_name(paper, experiments.base_key(paper, job))
    )


def tuning_choices(wildcards):
    """The tuning checkpoint's choices for a job's dataset (the checkpoint runs first)."""
    return checkpoints.tune.get(paper=wildcards.paper, dataset=wildcards.dataset).output.json


def job_inputs(wildcards):
    """A job's prepared data, its tuning choices (if it uses any) and, for convex models of
    papers that solve them, the optima of its splits at its (possibly tuned) λ."""
    paper, job = paper_of(wildcards), job_of(wildcards)
    spec = experiments.job_specs(paper, job, config["seed"])[0]
    inputs, tuned = {"data": prepared(spec["dataset"], spec["profile"])}, None
    if experiments.job_uses_tuning(paper, job):
        inputs["tuning"] = tuning_choices(wildcards)
        tuned = json.loads(Path(inputs["tuning"]).read_text())
    if experiments.solves_optimum(paper, wildcards.model):
        inputs["optimum"] = (
            f"{OUT}{experiments.optimum_path(experiments.apply_tuning(spec, tuned))}"
        )
    return inputs


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
    exp = paper_of(wildcards)["experiments"][wildcards.experiment]
    return exp["priority"].get(wildcards.dataset, 0)


def cell_job(wildcards):
    """The job file a cell is cut from; a privacy setting outside the grid is an error now, not
    after the job has run."""
    job = job_of(wildcards)
    settings = experiments.job_settings(paper_of(wildcards), job)
    if wildcards.epsilon not in settings:
        raise WorkflowError(
            f"{OUT}{job.cell_dir}/eps{wildcards.epsilon}.csv is not a cell of the grid: "
            f"{job.paper}/{job.experiment} runs {job.algorithm} on {job.dataset}/{job.model} at {settings} "
            f"(config/papers/{job.paper}.yaml)"
        )
    return f"{OUT}{job.path}"


def experiment_cells(paper, experiment):
    """Cell files of an experiment, for the datasets that can be had."""
    return [
        f"{OUT}{c.path}"
        for c in experiments.cells(PAPERS[paper], [experiment])
        if dataset_available(c.dataset)
    ]


# -- optima and tuning -----------------------------------------------------------------------------


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
    paper = PAPERS[wildcards.paper]
    return sorted(
        {
            prepared(dataset, profile)
            for dataset, model, experiment in tuning_jobs(paper)
            if dataset == wildcards.dataset
            for profile in needed_profiles(paper, experiment, dataset, model)
        }
    )


def tuning_spec_json(wildcards):
    return experiments.dumps(tuning_spec(PAPERS[wildcards.paper], wildcards.dataset))


def tuning_code(wildcards):
    algorithms = algorithm_fingerprint(*tuned_algorithms(PAPERS[wildcards.paper]))
    return algorithms + source_fingerprint("tuning")


# -- summaries, figures and targets ----------------------------------------------------------------


def summary(paper, experiment, ext="csv"):
    return f"{OUT}results/summaries/{paper}/{experiment}.{ext}"


def summary_spec(wildcards):
    exp = PAPERS[wildcards.paper]["experiments"][wildcards.experiment]
    return json.dumps({"title": exp.get("title", wildcards.experiment), "quick": config["quick"]})


def figure_summaries(wildcards):
    """Summaries a figure draws from: its experiment's and those it borrows curves from."""
    spec = PAPERS[wildcards.paper]["figures"][wildcards.figure]
    return [summary(wildcards.paper, e) for e in (spec["experiment"], *spec.get("borrow", {}))]


def figure_spec_json(wildcards):
    paper = PAPERS[wildcards.paper]
    spec = experiments.figure_spec(paper, wildcards.figure)
    spec["unavailable"] = unavailable_json(experiments.figure_datasets(paper, wildcards.figure))
    return experiments.dumps(spec)


def target_experiments(paper):
    return [name for name, exp in PAPERS[paper]["experiments"].items() if exp["default_target"]]


def paper_outputs(paper):
    """The generic outputs of a paper: the summary of every experiment of its target and every
    figure its config declares (a paper's rule file adds its own tables and figures)."""
    if paper not in PAPERS:
        return []
    summaries = [summary(paper, e, ext) for e in target_experiments(paper) for ext in ("csv", "md")]
    figures = [
        f"{OUT}figures/{paper}/{name}.{ext}"
        for name in PAPERS[paper]["figures"]
        for ext in ("png", "pdf")
    ]
    return summaries + figures


# -- the privacy audit ----------------------------------------------------------------------------

AUDIT_SUBJECTS = [audit.slug(s.name) for s in audit.subjects()]


def audit_code(wildcards):
    """Fingerprint of an audit subject: its algorithm's code, the audit's and the cases'."""
    names = audit.subject(wildcards.subject).algorithms
    return (algorithm_fingerprint(*names) if names else "") + source_fingerprint(
        "audit", "algorithms/audit_cases", "privacy"
    )


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
    """``<paper>/<table>`` -> path of every plugin table the scorecard reads."""
    return {
        f"{paper}/{name}": f"{OUT}results/tables/{paper}/{name}.csv"
        for paper in PAPERS
        for name in getattr(papers.plugin(paper), "SCORECARD_TABLES", ())
    }


def scorecard_summaries():
    return [summary(paper, e) for paper in PAPERS for e in target_experiments(paper)]


def scorecard_spec_json():
    """Everything the scorecard reads from the configuration: per paper its title, declared
    deviations and the registered algorithms it runs; the quick flag and the audit's scale."""
    entries = []
    for key, paper in PAPERS.items():
        algorithms = sorted({experiments.registered_name(paper, a) for a in paper["algorithms"]})
        title = getattr(papers.plugin(key), "TITLE", paper.get("title", key))
        entries.append(
            {
                "key": key,
                "title": title,
                "deviations": paper["deviations"],
                "algorithms": algorithms,
            }
        )
    return json.dumps(
        {"papers": entries, "quick": config["quick"], "audit": config["audit"]}, sort_keys=True
    )


def quick_flag():
    return "--quick" if config["quick"] else ""


def paper_caption(paper, name):
    """A report caption a paper ships in its package (src/dperm/papers/<paper>/captions/)."""
    return str(Path(SRC, "dperm", "papers", paper, "captions", f"{name}.rst"))


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
_CLUSTER_ID = ("paper", "experiment", "dataset", "model", "algorithm", "profile", "l2", "subject")


def _cluster_names(wildcards):
    return [wildcards[name] for name in _CLUSTER_ID if name in wildcards.keys()]


def cluster_key(wildcards):
    """A job's key in workflow/cluster.yaml, e.g. lee2018/fig2/adult/lr/dp-agd (a cell's is its
    job's: the epsilon is left out)."""
    return os.path.join(*_cluster_names(wildcards))


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


def cluster_group(kind, **values):
    """The group of a rule's jobs (a function of their wildcards). ``values`` fill what the rule
    has no wildcard for, e.g. cluster_group("product", paper=name) in a rule made per product."""
    policy = CLUSTER_GROUPS[kind]

    def group(wildcards):
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
        if batched == "fit" and experiments.job_uses_tuning(paper_of(wildcards), job_of(wildcards)):
            batch = None
        if batch is None:
            return "-".join([batched, *_cluster_names(wildcards)])
        return _cluster_batch(f"{batched}-batch{batch}", batched)

    return group


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
