"""The jobs of a Snakemake dry run, read from its printed listing (shared by the cluster scripts).

``snakemake -n -F <target>`` prints every job it would run: its rule, jobid, wildcards, input and
output files, and, with a cluster executor (``--profile profiles/slurm``), the group job each one
is submitted in ("Group job <id> (jobs in lexicogr. order):" followed by its members, indented).
Edges are rebuilt from the files: a job depends on the job that writes one of its inputs.
"""

from __future__ import annotations

import os
import subprocess
import sys

# the listing's parser and the graph live in the package (dperm estimate uses them too)
from dperm.estimate import Job, dependencies, parse  # noqa: F401 (re-exported for the cluster scripts)


def dry_run(targets: list[str], *options: str, workdir: str = ".") -> list[Job]:
    """Every job of ``targets`` (forced: as if nothing had been run), as a fresh clone would."""
    cmd = [sys.executable, "-m", "snakemake", "-n", "-F", *options, "--", *targets]
    out = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, env=os.environ.copy())
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return parse(out.stdout + out.stderr)
