"""Write workflow/cluster.yaml, the cluster sizes of the workflow's jobs, from measured runs.

    python benchmarks/slurm_resources.py --run quick=quick/benchmarks/out --estimate-from quick \\
        --full zhang2017=<dir>/benchmarks/out --cpu 'fit:lee2018/fig[234]/*/*/dp-agd=1980' \\
        --seconds 'fit:kang/fig/kddcup99/mlp/dp-gd-filter=480' ... > workflow/cluster.yaml

Every job with a `benchmark:` directive leaves a Snakemake benchmark file (s, max_rss, cpu_time, ...)
under benchmarks/out/, and the heavy ones (fits, tunings, optima, audit subjects) their own
getrusage CPU time and peak memory beside their output (`*.usage.json`), which is read instead
where it exists (the benchmark files sample CPU time and undercount). From those of the runs given:

* per kind of job (workflow/rules/common.smk: cluster_resources), the memory to ask for: the largest
  max_rss measured (or documented, DOCUMENTED_PEAK_MB), times MEMORY_MARGIN; the threads are 1
  (the jobs pin BLAS to one thread; the largest cpu_time/s measured is printed beside it);
* per job of the target (default: the default target at the full protocol), the seconds it is
  estimated to take, which decide its time limit and its batch (BATCH_*; cluster_group). Times are CPU
  seconds (user + system): these jobs are single-threaded, so CPU time is their time on a free
  core, whatever the load of the machine that measured them. In order:
  1. `--seconds kind:key-glob=s`: a time docs/performance.md gives for that job (first match);
  2. a job measured in a `--full` run (the full protocol): its time there;
  3. otherwise from the reduced runs (`--estimate-from`, default every `--run`): the job's time
     there, or the mean of its nearest measured relatives (the same job on other datasets, the
     same algorithm in the paper, the paper), less the process start-up (the fastest fit
     measured), scaled so that the jobs matching a `--cpu pattern=s` sum to the CPU seconds
     docs/performance.md measured for them at the full protocol (the first matching pattern
     wins; a paper's unmatched jobs take the mean factor of its patterns), plus the start-up.
  Per kind, the mean measured job too (``mean``): what ``dperm estimate`` counts for each job of a
  kind sized as a whole (preparations, cuts, summaries, products), where the kind's ``seconds``
  (its largest job, rounded up to a whole second) would count a 0.06-second cut as 1 second.
  `--run-cpu label=s`: the whole run's CPU time (user + system of every process, e.g.
  `/usr/bin/time`) of a `--full` run; what it spent beyond its jobs' own, per job, is Snakemake's
  own work (``scheduler_seconds``), which the estimate adds to every job.
  `--drop label:kind:key-glob` leaves out a run's jobs whose keys match (e.g. a job since split into
  parts, which another `--full` run measured).
  `--ignore label:kind` leaves out a run's jobs of a kind that the workflow has since reshaped
  (e.g. its tunings, one job per dataset before they were split into parts measured by another run).
  The optima and starts behind the tuning checkpoint, which a dry run cannot list, take their rows
  from a `--full` run that measured them.
  Keys are those of common.smk's cluster_key (paper/experiment/dataset/model/algorithm for a fit)
  and patterns are shell globs over "kind:key".
"""

from __future__ import annotations

import argparse
import csv
import datetime
import fnmatch
import json
import math
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import dryrun  # noqa: E402

from dperm.estimate import CLUSTER_ID, ESTIMATED, KINDS, RULE_KIND, key_of, waiting_cells  # noqa: E402,F401 (one set of keys)

# Peaks docs/performance.md measured at the full protocol, above what reduced runs reach: a lee2018
# fit on KDDCup99 (3.0 GB) and preparing the nine mirrored datasets (1.6 GB).
DOCUMENTED_PEAK_MB = {"fit": 3000, "data": 1600}
MEMORY_MARGIN = 1.3
# Batches (common.smk: cluster_group): jobs of a kind estimated at BATCH_MAX seconds or less are
# packed, in the order of their keys (a paper's experiments, datasets, models together), into
# batches of at least BATCH_TARGET estimated seconds or BATCH_JOBS jobs; a longer job runs alone.
BATCH_MAX, BATCH_TARGET, BATCH_JOBS = 120, 90, 12
BATCHED = ("optimum", "fit", "audit")


def kind_and_key(path: Path) -> tuple[str, str]:
    """A benchmark file's kind and its job's key (the key is '' for kinds sized as a whole)."""
    parts = list(path.with_suffix("").parts)
    top = parts.pop(0)
    if top == "jobs":  # jobs/paper/experiment/dataset/model/algorithm
        return "fit", "/".join(parts)
    if top == "parts":  # parts/paper/experiment/dataset/model/algorithm/part<k>
        return "fit", "/".join([*parts[:-1], parts[-1].removeprefix("part")])
    if top == "optimum" and parts[-1].startswith("part"):  # optimum/p/e/d/m/profile/l2-<l2>/part<k>
        return "optimum", "/".join([*parts[:4], parts[-1].removeprefix("part"), parts[4], parts[5].removeprefix("l2-")])
    if top == "optimum":  # optimum/paper/experiment/dataset/model/profile/l2-<l2>
        return "optimum", "/".join([*parts[:-1], parts[-1].removeprefix("l2-")])
    if top == "starts":  # starts/paper/experiment/dataset/model/profile
        return "optimum", "/".join(parts)
    if top == "tune":  # tune/paper/dataset/model/profile (a part of a dataset's tuning)
        return "tuning", "/".join(parts)
    if top == "audit":  # audit/subject
        return "audit", "/".join(parts)
    return {"runs": "cut", "summaries": "summary", "prepare": "data"}.get(top, "product"), ""


# Where a benchmark file's job writes its own getrusage figures (``--usage``, dperm.cli), relative
# to the run's directory: benchmarks/out/<top>/<rest>.tsv -> <usage>/<rest>.usage.json.
USAGE_DIRS = {"jobs": "results/jobs", "parts": "results/parts", "starts": "results/starts",
              "tune": "results/tuning", "optimum": "results/optima", "audit": "results/audit/subjects"}


def usage_of(root: Path, tsv: Path) -> dict | None:
    """The job's own CPU time and peak memory (its ``*.usage.json``) for a benchmark file under
    ``root`` (a run's benchmarks/out), or None when the job wrote none (cuts, reports, older runs).
    Snakemake's benchmark files sample CPU time (every 0.5 s, then every 30 s): they undercount
    long jobs' tails and most short jobs, so the job's own figure wins where there is one."""
    rel = tsv.relative_to(root)
    top = USAGE_DIRS.get(rel.parts[0])
    if top is None:
        return None
    path = root.parent.parent / top / Path(*rel.parts[1:]).with_suffix(".usage.json")
    return json.loads(path.read_text()) if path.is_file() else None


def read_runs(specs: list[str]) -> dict[str, list[dict]]:
    """label=dir -> rows (kind, key, s, max_rss, cpu): the jobs' own getrusage figures where they
    wrote them (:func:`usage_of`), else their benchmark file's."""
    rows = defaultdict(list)
    for spec in specs:
        label, root = spec.split("=", 1)
        for tsv in sorted(Path(root).rglob("*.tsv")):
            with tsv.open() as f:
                data = list(csv.DictReader(f, delimiter="\t"))
            if not data:
                continue
            kind, key = kind_and_key(tsv.relative_to(root))
            last = data[-1]
            row = {"kind": kind, "key": key, "s": float(last["s"]),
                   "max_rss": _number(last.get("max_rss")), "cpu": _number(last.get("cpu_time"))}
            if (usage := usage_of(Path(root), tsv)) is not None:
                row.update(s=usage["wall_s"], max_rss=usage["max_rss_mb"], cpu=usage["cpu_s"])
            rows[label].append(row)
    return rows


def _number(text) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return 0.0


def work(row: dict) -> float:
    """CPU seconds of a measured job (wall seconds when its benchmark has no CPU time)."""
    return row["cpu"] if row["cpu"] > 0 else row["s"]


def mean_by_key(rows: list[dict]) -> dict[tuple[str, str], float]:
    acc = defaultdict(list)
    for r in rows:
        acc[(r["kind"], r["key"])].append(work(r))
    return {k: sum(v) / len(v) for k, v in acc.items()}


def nearest(measured: dict[tuple[str, str], float], kind: str, key: str) -> float | None:
    """The job's measured time, else the mean over its nearest measured relatives."""
    if (kind, key) in measured:
        return measured[(kind, key)]
    parts = key.split("/")
    relatives = (
        lambda k: k[:2] == parts[:2] and k[3:] == parts[3:],  # the same job on other datasets
        lambda k: k[0] == parts[0] and k[-1] == parts[-1],  # the same algorithm (or model) in the paper
        lambda k: k[0] == parts[0],  # the paper
    )
    for related in relatives:
        same = [v for (k, c), v in measured.items() if k == kind and related(c.split("/"))]
        if same:
            return sum(same) / len(same)
    return None


def paper_of(kind: str, key: str) -> str:
    return "audit" if kind == "audit" else key.split("/")[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", action="append", default=[], help="label=benchmarks/out of a reduced run")
    parser.add_argument("--estimate-from", action="append", default=[], help="labels of --run to scale")
    parser.add_argument("--full", action="append", default=[], help="label=benchmarks/out of a full-protocol run")
    parser.add_argument("--cpu", action="append", default=[], help="kind:key-glob=CPU seconds documented in total")
    parser.add_argument("--seconds", action="append", default=[], help="kind:key-glob=CPU seconds documented per job")
    parser.add_argument("--target", default="all", help="the target whose jobs are listed (default: all)")
    parser.add_argument("--runtime-factor", type=int, default=3)
    parser.add_argument("--note", default="", help="how the runs were measured (load, commit)")
    parser.add_argument("--ignore", action="append", default=[], metavar="LABEL:KIND",
                        help="leave out a run's jobs of a kind (jobs the workflow no longer has, e.g. "
                             "default:tuning when another run measured the tuning as it now is)")
    parser.add_argument("--drop", action="append", default=[], metavar="LABEL:KIND:KEY-GLOB",
                        help="leave out a run's jobs of a kind whose keys match (jobs the workflow has since "
                             "reshaped, e.g. a job now split into parts that another run measured)")
    parser.add_argument("--run-cpu", default=None, metavar="LABEL=SECONDS",
                        help="a --full run's whole CPU time (all processes): Snakemake's own work per job is "
                             "what it spent beyond its jobs' own")
    parser.add_argument("--measured-at", default=None,
                        help="the commit the --full runs ran at (the header names it; dperm estimate prints it)")
    args = parser.parse_args()

    reduced, full = read_runs(args.run), read_runs(args.full)
    # the whole run's CPU less its jobs' own (--run-cpu) counts every job it measured, dropped,
    # ignored or not
    run_rows = {label: list(rows) for label, rows in full.items()}
    for spec in args.ignore:
        label, sep, kind = spec.partition(":")
        runs = reduced if label in reduced else full
        if not sep or label not in runs or kind not in KINDS:
            sys.exit(f"--ignore {spec!r}: give LABEL:KIND, a label of --run/--full ({', '.join([*reduced, *full])}) "
                     f"and a kind ({', '.join(KINDS)})")
        runs[label] = [r for r in runs[label] if r["kind"] != kind]
    for spec in args.drop:
        label, kind, pattern = (spec.split(":", 2) + ["", ""])[:3]
        runs = reduced if label in reduced else full
        if label not in runs or kind not in KINDS or not pattern:
            sys.exit(f"--drop {spec!r}: give LABEL:KIND:KEY-GLOB, a label of --run/--full "
                     f"({', '.join([*reduced, *full])}) and a kind ({', '.join(KINDS)})")
        keep = [r for r in runs[label] if not (r["kind"] == kind and fnmatch.fnmatchcase(r["key"], pattern))]
        if len(keep) == len(runs[label]):
            sys.exit(f"--drop {spec!r}: no measured {kind} job of {label} matches {pattern!r}")
        runs[label] = keep
    everything = [r for rows in (*reduced.values(), *full.values()) for r in rows]
    scheduler = None
    if args.run_cpu is not None:
        label, sep, total = args.run_cpu.partition("=")
        try:
            total = float(total)
        except ValueError:
            total = -1.0
        if not sep or label not in run_rows or not run_rows[label] or total <= 0:
            sys.exit(f"--run-cpu {args.run_cpu!r}: give LABEL=SECONDS, a label of --full ({', '.join(full) or 'none'}) "
                     "with measured jobs and its run's CPU seconds (> 0)")
        own = sum(work(r) for r in run_rows[label])
        if own > total:
            sys.exit(f"--run-cpu {args.run_cpu!r}: the run's jobs alone took {own:.0f} CPU-s, more than {total:.0f}")
        scheduler = (total - own) / len(run_rows[label])
    measured_full = mean_by_key([r for rows in full.values() for r in rows])
    estimate_from = args.estimate_from or list(reduced)
    measured_reduced = mean_by_key([r for label in estimate_from for r in reduced[label]])
    startup = min((work(r) for r in everything if r["kind"] == "fit"), default=1.0)
    documented_job = [(spec.rsplit("=", 1)[0], float(spec.rsplit("=", 1)[1])) for spec in args.seconds]
    budgets = [(spec.rsplit("=", 1)[0], float(spec.rsplit("=", 1)[1])) for spec in args.cpu]

    listing = dryrun.dry_run([args.target], "--cores", "2")
    jobs = [j for j in listing if (k := key_of(j)) and k[1]]
    # The optima and starts behind the tuning checkpoint (dperm.estimate.waiting_cells): a dry run
    # cannot list them, a full run measured them; like the fits that wait, they run alone.
    waiting = waiting_cells(listing)
    hidden = {k for k in measured_full if k[0] == "optimum" and tuple(k[1].split("/")[:4]) in waiting}
    keys = sorted({key_of(j) for j in jobs} | hidden)
    # Fits that wait for the tuning checkpoint run alone (common.smk: cluster_group): no batch.
    tuned = {key_of(j) for j in jobs if any(p == "<TBD>" or p.startswith("results/tuning/") for p in j.inputs)} | hidden
    raw = {k: nearest(measured_reduced, *k) for k in keys}
    excess = {k: max(0.0, (raw[k] if raw[k] is not None else startup) - startup) for k in keys}

    def given(k):
        """A job's documented or full-protocol time, if it has one."""
        label = f"{k[0]}:{k[1]}"
        documented = next((v for p, v in documented_job if fnmatch.fnmatchcase(label, p)), None)
        return documented if documented is not None else measured_full.get(k)

    # The first documented budget each job matches, and its scale factor (the jobs whose time is
    # given take their share of the budget first).
    budget_of = {}
    for k in keys:
        budget_of[k] = next((p for p, _ in budgets if fnmatch.fnmatchcase(f"{k[0]}:{k[1]}", p)), None)
    factor = {}
    for pattern, total in budgets:
        matched = [k for k in keys if budget_of[k] == pattern]
        mine = [k for k in matched if given(k) is None]
        total -= sum(given(k) for k in matched if given(k) is not None)
        spare, above = total - len(mine) * startup, sum(excess[k] for k in mine)
        factor[pattern] = max(1.0, spare / above) if above else 1.0
    paper_factor = defaultdict(list)
    for pattern, _ in budgets:
        paper_factor[pattern.split(":", 1)[1].split("/")[0]].append(factor[pattern])

    # A part of a split job (config: parts) measured only as the whole job: its share of it.
    whole = {k: (k[0], k[1].rsplit("/", 1)[0]) for k in keys if k[0] == "fit" and k[1].count("/") == 5}
    shares = {k: sum(w == whole[k] for w in whole.values()) for k in whole}

    seconds, source = {}, {}
    for k in keys:
        label = f"{k[0]}:{k[1]}"
        documented = next((v for p, v in documented_job if fnmatch.fnmatchcase(label, p)), None)
        if documented is not None:
            value, how = documented, "documented per job (docs/performance.md)"
        elif k in measured_full:
            value, how = measured_full[k], "measured (full protocol)"
        elif k in whole and whole[k] in measured_full:
            value = measured_full[whole[k]] / shares[k]
            how = f"measured (full protocol) as one job, 1/{shares[k]} of it"
        elif raw[k] is not None:
            if budget_of[k]:
                f, how = factor[budget_of[k]], f"scaled x{factor[budget_of[k]]:.1f} ({budget_of[k]})"
            else:
                fs = paper_factor.get(paper_of(*k), [1.0])
                f = sum(fs) / len(fs)
                how = f"scaled x{f:.1f} (mean of {paper_of(*k)})"
            value = startup + excess[k] * f
            how = ("measured reduced, " if k in measured_reduced else "relatives reduced, ") + how
        else:
            continue
        # to a tenth of a second: whole seconds rounded up would add about half a second to each
        # of some 650 jobs, about 5 CPU-min on the default target's estimate
        seconds[k], source[k] = max(0.1, round(value, 1)), how

    print("# Cluster sizes of the workflow's jobs (profiles/slurm; local runs ignore them), written by")
    argv = sys.argv[1:]
    if "--note" in argv:  # printed below, once
        del argv[argv.index("--note"): argv.index("--note") + 2]
    for line in textwrap.wrap(" ".join(["python", f"benchmarks/{Path(__file__).name}", *map(_quote, argv)]), 96,
                              break_on_hyphens=False, subsequent_indent="    "):
        print(f"#   {line}")
    measured = f"; jobs measured at commit {args.measured_at}" if args.measured_at else ""
    for line in textwrap.wrap(f"on {datetime.date.today()} at commit {_commit()}{measured}. {args.note}", 98):
        print(f"# {line}")
    print("# Do not edit by hand: rerun the script with better runs (its docstring says how).")
    print("# Time limit asked for = runtime_factor x a job's estimated seconds + 1 minute (common.smk).")
    print(f"runtime_factor: {args.runtime_factor}")
    if scheduler is not None:
        print("# Snakemake's own CPU seconds per job: the run's whole CPU time less its jobs' own, per job")
        print(f"scheduler_seconds: {scheduler:.3f}")
    print("kinds:  # memory for every job of the kind; seconds for a job `seconds:` does not list (its largest);")
    print("        # mean: the mean measured job, what dperm estimate counts for a kind sized as a whole")
    for kind in KINDS:
        mine = [r for r in everything if r["kind"] == kind]
        rss = max((r["max_rss"] for r in mine), default=0.0)
        mem = max(500, 100 * math.ceil(max(rss, DOCUMENTED_PEAK_MB.get(kind, 0)) * MEMORY_MARGIN / 100))
        ests = [v for (k, _), v in seconds.items() if k == kind]
        # a job the table cannot list (e.g. behind the tuning checkpoint in a dry run) may be the
        # longest measured: the kind's seconds cover it
        default = math.ceil(max([*ests, *(work(r) for r in mine)] or [60.0]))
        ratio = max((r["cpu"] / r["s"] for r in mine if r["s"] > 0.5), default=0.0)
        typical = [r for rows in full.values() for r in rows if r["kind"] == kind] or mine  # the full protocol's
        mean = f", mean: {max(0.001, sum(work(r) for r in typical) / len(typical)):.3f}" if typical else ""
        print(f"  {kind}: {{mem_mb: {mem}, seconds: {default}{mean}}}"
              f"  # {len(mine)} jobs measured, max_rss {rss:.0f} MB, cpu_time/s <= {ratio:.2f}")
    print("# Each job of the target at the full protocol, by kind and key: [estimated CPU seconds, the")
    print(f"# batch it runs in (jobs of {BATCH_MAX} s or less, packed into batches of {BATCH_TARGET} s or")
    print(f"# {BATCH_JOBS} jobs; not a fit that waits for the tuning checkpoint), or null: alone].")
    print("seconds:")
    for kind in ESTIMATED:
        rows = sorted((key, v) for (k, key), v in seconds.items() if k == kind)
        if not rows:
            continue
        batch = batches([(key, v) for key, v in rows if (kind, key) not in tuned]) if kind in BATCHED else {}
        print(f"  {kind}:")
        for key, value in rows:
            print(f'    "{key}": [{value}, {batch.get(key, "null")}]  # {source[(kind, key)]}')
    print("start-up " + f"{startup:.2f} s; factors: " + ", ".join(f"{p} x{f:.1f}" for p, f in factor.items()),
          file=sys.stderr)


def batches(rows: list[tuple[str, float]]) -> dict[str, int]:
    """key -> batch number, for the jobs short enough to share a cluster job (rows sorted by key)."""
    out, number, total, size = {}, 0, 0, 0
    for key, value in rows:
        if value > BATCH_MAX:
            continue
        out[key] = number
        total, size = total + value, size + 1
        if total >= BATCH_TARGET or size >= BATCH_JOBS:
            number, total, size = number + 1, 0, 0
    return out


def _quote(arg: str) -> str:
    return f"'{arg}'" if any(c in arg for c in "*?[] ") else arg


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


if __name__ == "__main__":
    main()
