"""How long a target takes on a cluster of N cores: a list scheduler run over its job graph.

    python benchmarks/cluster_projection.py [--target all] [--cores 16 64 256] \\
        [--job-side 15] [--detect 14] [--part 6] [--ungrouped]

The graph and the cluster jobs are those of a dry run through profiles/slurm (its group jobs, its
local rules); each job's time is its estimate at the full protocol from workflow/cluster.yaml
(the lookup of `dperm estimate`). A cluster job takes the time its jobs take on its
cores (list-scheduled inside it) and `--part` seconds per part of a group job (a Snakemake start-up each),
plus the measured per-job overhead: `--job-side` seconds on the node (two Snakemake start-ups)
and `--detect` seconds until the status check sees it end, after
which the jobs that need it can be submitted. Cluster jobs are started longest-remaining-path
first whenever enough cores are free. Printed: the work, the critical path (the longest chain of
cluster jobs, overheads included: no number of cores beats it) and the projected wall time per N.
`--ungrouped` simulates the workflow as it was before groups: every job alone, on one core.
"""

from __future__ import annotations

import argparse
import heapq
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
import dryrun  # noqa: E402
from slurm_resources import key_of  # noqa: E402

from dperm.estimate import hidden_jobs, job_seconds  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _localrules() -> set[str]:
    """The rules the workflow's rule files declare local (`localrules:` blocks; a dry run without
    an executor prints them as rules): they run on the submitting host, outside the cluster."""
    names = set()
    for path in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        for block in re.findall(r"^localrules:\n((?:    \w+,\n)+)", path.read_text(), re.M):
            names |= set(re.findall(r"(\w+),", block))
    return names


LOCAL = _localrules()


def seconds(sizes: dict, job: dryrun.Job) -> float:
    """The job's estimate as `dperm estimate` makes it (:func:`dperm.estimate.job_seconds`: its row
    of workflow/cluster.yaml, else the median of similar jobs); a fetch is a data job. A makespan
    wants the likely time; common.smk's time limits take an unlisted job's kind's longest instead."""
    if key_of(job) is None:
        return float(sizes["kinds"]["data"]["seconds"]) if job.rule in LOCAL else 0.0
    return job_seconds(sizes, job)[0]


def makespan(times: list[float], cores: int) -> float:
    """Jobs of one cluster job, longest first, on its cores (their order inside barely matters)."""
    free = [0.0] * cores
    for t in sorted(times, reverse=True):
        heapq.heapreplace(free, free[0] + t)
    return max(free)


def units(jobs: list[dryrun.Job], sizes: dict, group_cores: int, ungrouped: bool, part: float):
    """Cluster jobs: (cores, seconds on them, member jobids, work); local and target jobs drop out.
    Inside a group job, each part (a job and the cells cut from it) is one more Snakemake start-up:
    the job side does not merge a group's parts again (the profile's group-components stay behind)."""
    members = defaultdict(list)
    for job in jobs:
        # before groups, cells were cut on the submitting host and raw files fetched on the cluster
        if not job.runs or (job.rule == "cut_cell" if ungrouped else job.rule in LOCAL):
            continue
        members[job.jobid if ungrouped or job.group is None else f"g{job.group}"].append(job)
    out = {}
    for uid, mine in members.items():
        times = [seconds(sizes, j) for j in mine]
        cores = 1 if ungrouped else min(group_cores, len(mine))
        extra = max(0, sum(j.rule != "cut_cell" for j in mine) - 1)  # the first part's start-up is job-side
        out[uid] = (cores, makespan(times, cores) + extra * part, [j.jobid for j in mine], sum(times), extra)
    return out


def simulate(units_: dict, deps: dict, n_cores: int, overhead: float, detect: float) -> tuple[float, float]:
    """Wall time on n_cores and the critical path: a cluster job holds its cores for its work and
    its job-side overhead; the jobs that need it can start `detect` seconds after it ends."""
    unit_of = {jid: uid for uid, (_, _, ids, *_) in units_.items() for jid in ids}
    needs = {uid: set() for uid in units_}
    for uid, (_, _, ids, *_) in units_.items():
        for jid in ids:
            needs[uid] |= {unit_of[d] for d in _cluster_deps(jid, deps, unit_of)} - {uid}
    users = defaultdict(set)
    for uid, ns in needs.items():
        for n in ns:
            users[n].add(uid)
    hold = {uid: units_[uid][1] + overhead for uid in units_}
    rank, after = {}, {}
    for uid in _topological(needs, reverse=True, users=users):
        after[uid] = max(users[uid], key=lambda u: rank[u], default=None)
        rank[uid] = hold[uid] + (detect + rank[after[uid]] if after[uid] is not None else 0.0)
    chain, uid = [], max(rank, key=rank.get)
    while uid is not None:
        chain.append(uid)
        uid = after[uid]
    simulate.critical_chain = chain
    keys = {str(uid): uid for uid in units_}
    waiting = {uid: len(ns) for uid, ns in needs.items()}
    # events: (time, order, kind, key); kind 0 = a job ends (cores free), 1 = its users may start
    events = [(0.0, 0, 1, None)]
    ready, free, clock, last, counter = [], n_cores, 0.0, 0.0, 0
    for uid, w in waiting.items():
        if w == 0:
            heapq.heappush(ready, (-rank[uid], str(uid)))
    while events:
        clock, _, kind, key = heapq.heappop(events)
        if kind == 0:
            free += min(units_[keys[key]][0], n_cores)
            last = max(last, clock)
            counter += 1
            heapq.heappush(events, (clock + detect, counter, 1, key))
        elif key is not None:
            for user in users[keys[key]]:
                waiting[user] -= 1
                if waiting[user] == 0:
                    heapq.heappush(ready, (-rank[user], str(user)))
        deferred = []
        while ready:
            item = heapq.heappop(ready)
            cores = min(units_[keys[item[1]]][0], n_cores)
            if cores <= free:
                free -= cores
                counter += 1
                heapq.heappush(events, (clock + hold[keys[item[1]]], counter, 0, item[1]))
            else:
                deferred.append(item)
        for item in deferred:
            heapq.heappush(ready, item)
    return last + detect, max(rank.values()) + detect


def _cluster_deps(jid, deps, unit_of, seen=None):
    """Dependencies of a job on cluster jobs, looking through local and target jobs."""
    for d in deps.get(jid, ()):
        if d in unit_of:
            yield d
        else:
            yield from _cluster_deps(d, deps, unit_of)


def _topological(needs, reverse, users):
    order, indegree = [], {u: len(users[u]) if reverse else len(needs[u]) for u in needs}
    stack = [u for u, d in indegree.items() if d == 0]
    while stack:
        u = stack.pop()
        order.append(u)
        for v in (needs[u] if reverse else users[u]):
            indegree[v] -= 1
            if indegree[v] == 0:
                stack.append(v)
    return order


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="all")
    parser.add_argument("--cores", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--job-side", type=float, default=15.0, help="seconds of overhead on the node per cluster job")
    parser.add_argument("--detect", type=float, default=14.0, help="seconds until a finished job is seen")
    parser.add_argument("--part", type=float, default=6.0, help="seconds of start-up per part inside a group job")
    parser.add_argument("--ungrouped", action="store_true", help="every job alone (the workflow before groups)")
    args = parser.parse_args()

    sizes = yaml.safe_load((REPO / "workflow" / "cluster.yaml").read_text())
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    jobs = dryrun.dry_run([args.target], "--profile", "profiles/slurm", workdir=str(REPO))
    jobs += hidden_jobs(jobs, sizes)  # the optima and starts behind the tuning checkpoint, from the table
    deps = dryrun.dependencies(jobs)
    cluster = units(jobs, sizes, profile["cores"], args.ungrouped, args.part)
    work = sum(u[3] for u in cluster.values())
    jobs_in = sum(len(u[2]) for u in cluster.values())
    print(f"target {args.target}: {len(cluster)} cluster jobs holding {jobs_in} jobs"
          f"{' (every job alone)' if args.ungrouped else ''}; work {work / 3600:.2f} core-hours"
          f" + {len(cluster) * args.job_side / 3600:.2f} of job-side overhead"
          f" + {sum(u[4] for u in cluster.values()) * args.part / 3600:.2f} of start-ups of groups' further parts")
    for i, n in enumerate(args.cores):
        wall, critical = simulate(cluster, deps, n, args.job_side, args.detect)
        if i == 0:
            name = {j.jobid: j.group_id or j.rule for j in jobs}
            print("  critical path: " + " -> ".join(
                f"{name[cluster[u][2][0]]} ({len(cluster[u][2])} jobs, {cluster[u][1]:.0f} s)"
                for u in simulate.critical_chain))
        bound = max(work / n, critical)
        print(f"  {n:>4} cores: {wall / 60:6.1f} min (critical path {critical / 60:.1f} min,"
              f" work / cores {work / n / 60:.1f} min, bound {math.ceil(bound / 60)} min)")


if __name__ == "__main__":
    main()
