"""What a target will cost before it runs: its jobs, their estimated CPU time and the wall time on
N cores (``dperm estimate``), from a Snakemake dry run and the measured per-job table
``workflow/cluster.yaml``.

The dry run (``snakemake -n``, with ``-F`` for "as on a clean clone") prints every job it would
run: rule, jobid, wildcards, inputs and outputs. :func:`parse` reads that listing back into
:class:`Job` records and :func:`dependencies` rebuilds the graph from the files (a job depends on
the job that writes one of its inputs). Each job's cost is its row of ``workflow/cluster.yaml``
(estimated CPU seconds at the full protocol, measured from the project's benchmark files by
``benchmarks/slurm_resources.py``), or its kind's largest estimate for a job the table does not
list. A job of a kind sized as a whole (a preparation, a cut, a summary, a product) costs its
kind's mean measured job (``mean``), not the kind's largest (``seconds``, the bound its time
limit is asked from): 1,900 cuts of about 0.06 CPU-s each are not 1,900 seconds. Every job also
carries Snakemake's own work per job (``scheduler_seconds``: the measured run's CPU time beyond
its jobs' own, per job), spent on the job's core. :func:`list_schedule` runs the graph on N
cores, longest remaining path first, and returns the wall time with the critical path (the
longest chain of jobs: no number of cores beats it).

The cluster scripts (``benchmarks/cluster_projection.py``, ``slurm_resources.py``) use the same
parser and keys, so the local estimate and the cluster projection read one table the same way.
"""

from __future__ import annotations

import heapq
import os
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ENTRY = re.compile(r"^(\s*)(localrule|rule|checkpoint) ([\w-]+):$")
GROUP = re.compile(r"^\[.*\] Group job (\S+) \(jobs in lexicogr\. order\):$")
FIELD = re.compile(r"^\s+(input|output|jobid|wildcards|priority): (.*)$")

KINDS = ("data", "tuning", "optimum", "fit", "cut", "summary", "product", "audit")
ESTIMATED = ("tuning", "optimum", "fit", "audit")  # kinds whose jobs are sized one by one
RULE_KIND = {
    "prepare": "data",
    "tune": "tuning",
    "optimum": "optimum",
    "optimum_part": "optimum",
    "starts": "optimum",
    "run_job": "fit",
    "run_part": "fit",
    "cut_cell": "cut",
    "summarise": "summary",
    "audit_subject": "audit",
    "audit_one_run": "audit",
}
#: the wildcards that name a job in workflow/cluster.yaml, in order (common.smk's _CLUSTER_ID)
CLUSTER_ID = ("paper", "experiment", "dataset", "model", "algorithm", "part", "profile", "l2", "subject")
#: rules that cost nothing measurable (a copy from the mirror)
FREE = {"fetch_raw"}


@dataclass
class Job:
    jobid: int
    rule: str
    local: bool
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    wildcards: dict[str, str] = field(default_factory=dict)
    group: int | None = None  # the index of its group job in the listing, if it is in one
    group_id: str | None = None
    priority: float = 0.0  # Snakemake's: of the ready jobs, the highest start first (common.smk)

    @property
    def runs(self) -> bool:
        """A job with a command (a target rule, inputs only, runs nothing)."""
        return bool(self.outputs)


def _wildcards(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in re.split(r", (?=[\w]+=)", text) if "=" in part)


def parse(listing: str) -> list[Job]:
    """The jobs of a dry run's listing, each once (a dry run through a cluster profile may print
    a job in two group jobs while a checkpoint is still to run; it counts in the first)."""
    jobs, job, group_index, group_id = [], None, -1, None
    for line in listing.splitlines():
        if m := GROUP.match(line):
            group_index, group_id = group_index + 1, m.group(1)
            continue
        if m := ENTRY.match(line):
            indent, kind, rule = m.groups()
            job = Job(jobid=-1, rule=rule, local=kind == "localrule")
            if indent:
                job.group, job.group_id = group_index, group_id
            jobs.append(job)
            continue
        if job is None:
            continue
        if m := FIELD.match(line):
            name, value = m.groups()
            if name == "jobid":
                job.jobid = int(value)
            elif name == "wildcards":
                job.wildcards = _wildcards(value)
            elif name == "priority":
                job.priority = float(value)
            else:
                setattr(job, name + "s", value.split(", "))
        elif line.startswith("Job stats:") or line.startswith("Reasons:"):
            job = None
    seen, unique = set(), []
    for job in jobs:
        if job.jobid not in seen:
            seen.add(job.jobid)
            unique.append(job)
    return unique


def dependencies(jobs: list[Job]) -> dict[int, set[int]]:
    """jobid -> jobids of the jobs that write its inputs. A fit that waits for the tuning
    checkpoint has no inputs yet (``<TBD>`` until the checkpoint has run): it depends on its
    paper's tuning parts of its dataset and model (a dry run does not say which tuning profile
    it takes: every profile's part, an upper bound where a dataset is tuned on two) and on its
    dataset's preparations."""
    writer = {path: job.jobid for job in jobs for path in job.outputs}
    deps = {job.jobid: {writer[p] for p in job.inputs if p in writer} for job in jobs}
    gates = [job for job in jobs if job.rule in ("tune", "prepare")]
    for job in jobs:
        if "<TBD>" in job.inputs:
            deps[job.jobid] |= {g.jobid for g in gates
                                if all(g.wildcards.get(name, job.wildcards.get(name)) == job.wildcards.get(name)
                                       for name in ("paper", "dataset", "model"))}
    return deps


def key_of(job: Job) -> tuple[str, str] | None:
    """A job's kind and its key in workflow/cluster.yaml (None for a target or a free job)."""
    if not job.runs or job.rule in FREE:
        return None
    kind = RULE_KIND.get(job.rule, "product")
    key = "/".join(job.wildcards[n] for n in CLUSTER_ID if n in job.wildcards) if kind in ESTIMATED else ""
    return kind, key


#: the wildcards of a fit that name the optima and starts it reads (common.smk: job_inputs)
_CELL = ("paper", "experiment", "dataset", "model")


def waiting_cells(jobs: list[Job]) -> set[tuple[str, ...]]:
    """(paper, experiment, dataset, model) of every fit that waits for the tuning checkpoint
    (inputs ``<TBD>``): what it reads is decided by the tuning, so a dry run cannot list the
    optimum or θ̃ (starts) such a fit reads (e.g. Kang et al.'s MLP, whose optimum follows the
    tuned problem)."""
    return {tuple(j.wildcards[n] for n in _CELL) for j in jobs
            if "<TBD>" in j.inputs and (key_of(j) or ("",))[0] == "fit" and all(n in j.wildcards for n in _CELL)}


def hidden_jobs(jobs: list[Job], sizes: dict) -> list[Job]:
    """The optima and starts the tuning checkpoint hides from a dry run (:func:`waiting_cells`),
    as the table lists them (``seconds: optimum:`` rows of a waiting fit's paper, experiment,
    dataset and model that no listed job has). Each waits for what such a fit waits for (its
    inputs are ``<TBD>``: :func:`dependencies`), and the waiting fits of its cell wait for it.
    The listed fits gain an input here (the hidden job's output). For a start that is an upper
    bound: only the fits that start from θ̃ read it (``dperm.grid.start_file``), but a dry run
    does not say which fits those are while the checkpoint is pending."""
    listed = {key_of(j) for j in jobs if j.runs}
    waiting = waiting_cells(jobs)
    rows = sizes.get("seconds", {}).get("optimum", {})
    next_id = max((j.jobid for j in jobs), default=0) + 1
    out = []
    # the keys' forms (CLUSTER_ID's order): a start, an optimum, a part of a split optimum
    forms = {5: ("starts", ("profile",)), 6: ("optimum", ("profile", "l2")),
             7: ("optimum_part", ("part", "profile", "l2"))}
    for key in sorted(rows):
        parts = key.split("/")
        cell = tuple(parts[:4])
        if cell not in waiting or ("optimum", key) in listed or len(parts) not in forms:
            continue
        rule, names = forms[len(parts)]
        job = Job(jobid=next_id, rule=rule, local=False, inputs=["<TBD>"],
                  outputs=[f"<behind the tuning checkpoint: optimum {key}>"],
                  wildcards=dict(zip(_CELL, cell), **dict(zip(names, parts[4:]))))
        next_id += 1
        out.append(job)
        for fit in jobs:
            if "<TBD>" in fit.inputs and tuple(fit.wildcards.get(n) for n in _CELL) == cell:
                fit.inputs.append(job.outputs[0])
    return out


def job_seconds(sizes: dict, job: Job) -> tuple[float, str]:
    """(estimated CPU seconds, how it was had): ``listed`` (the table's row of this very job, or a
    kind sized as a whole), ``similar`` (a job the table does not list, e.g. after a config change:
    the median of the listed jobs of its paper and algorithm, else of its paper, of its kind) or
    ``kind`` (none of those: the kind's largest estimate, an upper bound)."""
    kk = key_of(job)
    if kk is None:
        return 0.0, "listed"
    kind, key = kk
    rows = sizes.get("seconds", {}).get(kind, {})
    row = rows.get(key)
    if row:
        return float(row[0]), "listed"
    if kind not in ESTIMATED:  # sized as a whole: the mean job (an older table: the largest)
        size = sizes["kinds"][kind]
        return float(size.get("mean", size["seconds"])), "listed"
    paper, algorithm = job.wildcards.get("paper"), job.wildcards.get("algorithm")
    for match in ((lambda k: k.startswith(f"{paper}/") and k.endswith(f"/{algorithm}")) if algorithm else None,
                  lambda k: k.startswith(f"{paper}/")):
        if match is None:
            continue
        values = sorted(float(v[0]) for k, v in rows.items() if match(k))
        if values:
            return values[len(values) // 2], "similar"
    return float(sizes["kinds"][kind]["seconds"]), "kind"


def list_schedule(jobs: list[Job], deps: dict[int, set[int]], seconds: dict[int, float],
                  cores: int) -> tuple[float, float, list[int]]:
    """(wall seconds on ``cores``, critical path seconds, its jobids): each job on one core, started
    as soon as its inputs exist and a core is free, longest remaining path first."""
    ids = [j.jobid for j in jobs]
    users: dict[int, set[int]] = {i: set() for i in ids}
    for i in ids:
        for d in deps.get(i, ()):
            users[d].add(i)
    # longest path from each job to the end (reverse topological order)
    rank, after, order = {}, {}, _topological(ids, deps, users)
    for i in reversed(order):
        after[i] = max(users[i], key=lambda u: rank[u], default=None)
        rank[i] = seconds[i] + (rank[after[i]] if after[i] is not None else 0.0)
    chain, i = [], (max(rank, key=rank.get) if rank else None)
    while i is not None:
        chain.append(i)
        i = after[i]
    waiting = {i: len(deps.get(i, ())) for i in ids}
    ready = [(-rank[i], i) for i in ids if waiting[i] == 0]
    heapq.heapify(ready)
    running: list[tuple[float, int]] = []
    clock, free = 0.0, cores
    while ready or running:
        while ready and free:
            _, i = heapq.heappop(ready)
            free -= 1
            heapq.heappush(running, (clock + seconds[i], i))
        clock, done = heapq.heappop(running)
        free += 1
        for u in users[done]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, (-rank[u], u))
    return clock, (max(rank.values()) if rank else 0.0), chain


def _topological(ids, deps, users) -> list[int]:
    indegree = {i: len(deps.get(i, ())) for i in ids}
    stack, order = [i for i in ids if indegree[i] == 0], []
    while stack:
        i = stack.pop()
        order.append(i)
        for u in users[i]:
            indegree[u] -= 1
            if indegree[u] == 0:
                stack.append(u)
    if len(order) != len(ids):
        raise ValueError("the dry run's jobs form a cycle")
    return order


def dry_run(targets: list[str], options: list[str], workdir: str = ".") -> list[Job]:
    """Every job Snakemake would run for ``targets`` (``options``: e.g. ``-F``, ``--configfile``)."""
    cmd = [sys.executable, "-m", "snakemake", "-n", "--cores", "1", *options, "--", *targets]
    out = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, env=os.environ.copy())
    if out.returncode != 0:
        tail = (out.stdout + out.stderr).strip().splitlines()[-15:]
        raise ValueError(f"the dry run failed ({' '.join(cmd[2:])}):\n" + "\n".join(tail))
    return parse(out.stdout + out.stderr)


def read_sizes(workdir: str = ".") -> tuple[dict, str]:
    """workflow/cluster.yaml and the line of its header that says what it was measured from."""
    import yaml

    path = Path(workdir) / "workflow" / "cluster.yaml"
    if not path.is_file():
        raise ValueError(f"{path}: no per-job table (run the estimate in the workflow's directory)")
    text = path.read_text(encoding="utf-8")
    # the header's comment lines as one text (benchmarks/slurm_resources.py wraps them)
    header = " ".join(line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#"))
    written = re.search(r"on (\d{4}-\d\d-\d\d) at commit (\w+)", header)
    # the commit, and what ran at another one when the table joins runs, e.g. "2613c55 (tuning: 7e05b37)"
    measured = re.search(r"jobs measured at commit (\w+(?: \([^()]*\))?)", header)
    if measured:  # the run the times come from, not the commit that wrote the table
        origin = f"measured at commit {measured.group(1)}" + (f", written on {written.group(1)}" if written else "")
    elif written:
        origin = f"measured at commit {written.group(2)} on {written.group(1)}"
    else:
        origin = "no origin recorded"
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)), origin


def estimate(targets: list[str], cores: int, options: list[str], workdir: str = ".") -> dict:
    """The cost of ``targets``: jobs per kind, CPU seconds (estimated at the full protocol), wall
    seconds on ``cores`` and the critical path."""
    if cores < 1:
        raise ValueError(f"cores must be at least 1; got {cores}")
    sizes, origin = read_sizes(workdir)
    jobs = [j for j in dry_run(targets, options, workdir) if j.runs]
    hidden = hidden_jobs(jobs, sizes)
    jobs += hidden
    deps = dependencies(jobs)
    seconds, how, kinds, cpu = {}, Counter(), Counter(), Counter()
    scheduler = float(sizes.get("scheduler_seconds", 0.0))  # Snakemake's own CPU per job
    for job in jobs:
        s, source = job_seconds(sizes, job)
        seconds[job.jobid] = s + scheduler
        how[source] += 1
        kind = (key_of(job) or ("data", ""))[0]
        kinds[kind] += 1
        cpu[kind] += s
        cpu["snakemake"] += scheduler
    wall, critical, chain = list_schedule(jobs, deps, seconds, cores)
    by_id = {j.jobid: j for j in jobs}
    return {"targets": targets, "cores": cores, "jobs": len(jobs), "kinds": dict(kinds), "cpu_by_kind": dict(cpu),
            "cpu_seconds": sum(seconds.values()), "wall_seconds": wall, "critical_seconds": critical,
            "critical_path": [_label(by_id[i]) for i in chain],
            "sources": dict(how), "hidden": len(hidden), "measured_from": origin}


def _label(job: Job) -> str:
    """A job as the critical path names it: its rule and, for a job sized one by one, its key."""
    kk = key_of(job)
    return f"{job.rule}({kk[1]})" if kk and kk[1] else job.rule


def format_estimate(result: dict) -> str:
    """The estimate as the lines ``dperm estimate`` prints."""
    from .progress import duration as _minutes

    kinds = ", ".join(f"{result['kinds'][k]} {k}" for k in KINDS if result["kinds"].get(k))
    lines = [f"{' '.join(result['targets']) or 'the default target'}: {result['jobs']} jobs to run ({kinds})"]
    if not result["jobs"]:
        lines.append("nothing to do: every output is up to date")
        return "\n".join(lines)
    heavy = sorted(((v, k) for k, v in result["cpu_by_kind"].items() if v), reverse=True)
    lines.append(f"estimated CPU time {_minutes(result['cpu_seconds'])} ("
                 + ", ".join(f"{k} {_minutes(v)}" for v, k in heavy[:4]) + ")")
    lines.append(f"estimated wall time on {result['cores']} core(s): {_minutes(result['wall_seconds'])} "
                 f"(the longest chain of jobs alone takes {_minutes(result['critical_seconds'])})")
    sources = result["sources"]
    lines.append(f"from workflow/cluster.yaml ({result['measured_from']}; CPU seconds per job at the full protocol on "
                 f"the project's 2-core machine): {sources.get('listed', 0)} of {result['jobs']} jobs have a row of "
                 "their own"
                 + (f"; {sources['similar']} (not in the table) take the median of similar jobs" if sources.get(
                     "similar") else "")
                 + (f"; {sources['kind']} take their kind's largest estimate (an upper bound)" if sources.get("kind")
                    else "")
                 + (f"; {result['hidden']} of them (optima and starts behind the tuning checkpoint, which a dry run "
                    "cannot list) come from the table's rows" if result.get("hidden") else ""))
    lines.append("a reduced config (config/quick.yaml, .test/config) runs fewer fits per job than the table's "
                 "full protocol: for it the estimate is an upper bound")
    return "\n".join(lines)
