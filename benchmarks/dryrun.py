"""The jobs of a Snakemake dry run, read from its printed listing (shared by the cluster scripts).

``snakemake -n -F <target>`` prints every job it would run: its rule, jobid, wildcards, input and
output files, and, with a cluster executor (``--profile profiles/slurm``), the group job each one
is submitted in ("Group job <id> (jobs in lexicogr. order):" followed by its members, indented).
Edges are rebuilt from the files: a job depends on the job that writes one of its inputs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

ENTRY = re.compile(r"^(\s*)(localrule|rule|checkpoint) ([\w-]+):$")
GROUP = re.compile(r"^\[.*\] Group job (\S+) \(jobs in lexicogr\. order\):$")
FIELD = re.compile(r"^\s+(input|output|jobid|wildcards): (.*)$")


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

    @property
    def runs(self) -> bool:
        """A job with a command (a target rule, inputs only, runs nothing)."""
        return bool(self.outputs)


def _wildcards(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in re.split(r", (?=[\w]+=)", text) if "=" in part)


def parse(listing: str) -> list[Job]:
    """The jobs of a listing, each once: with a tuning checkpoint still to run, a dry run through a
    cluster profile prints some jobs in two group jobs (the grouping is redone when the checkpoint
    has run); a job counts in the first group that lists it."""
    jobs = _entries(listing)
    seen, unique = set(), []
    for job in jobs:
        if job.jobid not in seen:
            seen.add(job.jobid)
            unique.append(job)
    return unique


def _entries(listing: str) -> list[Job]:
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
            else:
                setattr(job, name + "s", value.split(", "))
        elif line.startswith("Job stats:") or line.startswith("Reasons:"):
            job = None
    return jobs


def dry_run(targets: list[str], *options: str, workdir: str = ".") -> list[Job]:
    """Every job of ``targets`` (forced: as if nothing had been run), as a fresh clone would."""
    cmd = [sys.executable, "-m", "snakemake", "-n", "-F", *options, "--", *targets]
    out = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, env=os.environ.copy())
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return parse(out.stdout + out.stderr)


def dependencies(jobs: list[Job]) -> dict[int, set[int]]:
    """jobid -> jobids of the jobs that write its inputs."""
    writer = {path: job.jobid for job in jobs for path in job.outputs}
    return {job.jobid: {writer[p] for p in job.inputs if p in writer} for job in jobs}
