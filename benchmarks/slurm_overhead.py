"""Where the time of a SLURM run went, per cluster job: queueing, the job's own overhead, the wait
for the next status check, against the work inside (the benchmark files of its jobs).

    snakemake --profile profiles/slurm --slurm-keep-successful-logs <target>
    python benchmarks/slurm_overhead.py [workdir]

Reads, in the run's working directory, the SLURM log of every cluster job
(.snakemake/slurm_logs/**/<slurm id>.log: its jobs and their benchmark files), the latest
Snakemake log (when Snakemake saw each job finish) and `squeue --states=all` (when SLURM queued,
started and ended each job; the CI cluster keeps finished jobs for an hour, .ci/slurm). A job
without a benchmark file counts as no work, so its time shows as overhead.
"""

from __future__ import annotations

import csv
import datetime
import re
import statistics
import subprocess
import sys
from pathlib import Path

STAMP = re.compile(r"^\s*\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]")
ENTRY = re.compile(r"^\s*(?:localrule|rule|checkpoint) ([\w-]+):$")
FINISHED = re.compile(r"^\s*Finished jobid: (\d+) \(Rule: ([\w-]+)\)")


def _time(text: str) -> float:
    return datetime.datetime.strptime(" ".join(text.split()), "%a %b %d %H:%M:%S %Y").timestamp()


def _slurm_time(text: str) -> float:
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").timestamp()


def blocks(text: str):
    """(rule, wildcards text, jobid, benchmark, timestamp) of every job entry of a Snakemake log."""
    stamp, entry = None, None
    for line in text.splitlines():
        if m := STAMP.match(line):
            stamp = _time(m.group(1))
        if m := ENTRY.match(line):
            if entry:
                yield entry
            entry = {"rule": m.group(1), "wildcards": "", "jobid": None, "benchmark": None, "time": stamp}
            continue
        if entry is None:
            continue
        field = line.strip()
        if field.startswith("wildcards: "):
            entry["wildcards"] = field[len("wildcards: "):]
        elif field.startswith("jobid: "):
            entry["jobid"] = int(field[len("jobid: "):])
        elif field.startswith("benchmark: "):
            entry["benchmark"] = field[len("benchmark: "):]
        elif not field or FINISHED.match(line) or field.startswith("Job "):
            yield entry
            entry = None
    if entry:
        yield entry


def finished_times(main_log: str) -> dict[tuple[str, str], float]:
    """(rule, wildcards) -> when the main Snakemake process saw that job finish."""
    jobs = {e["jobid"]: (e["rule"], e["wildcards"]) for e in blocks(main_log) if e["jobid"] is not None}
    seen, stamp = {}, None
    for line in main_log.splitlines():
        if m := STAMP.match(line):
            stamp = _time(m.group(1))
        if (m := FINISHED.match(line)) and int(m.group(1)) in jobs:
            seen.setdefault(jobs[int(m.group(1))], stamp)
    return seen


def squeue() -> dict[str, dict]:
    out = subprocess.run(["squeue", "--states=all", "--noheader", "-o", "%i|%V|%S|%e|%C|%T"],
                         capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        jobid, submit, start, end, cpus, state = line.split("|")
        if state == "COMPLETED":
            rows[jobid] = {"submit": _slurm_time(submit), "start": _slurm_time(start),
                           "end": _slurm_time(end), "cpus": int(cpus)}
    return rows


def measure(workdir: Path) -> list[dict]:
    main_log = max((workdir / ".snakemake" / "log").glob("*.snakemake.log"), key=lambda p: p.stat().st_mtime)
    seen = finished_times(main_log.read_text())
    slurm = squeue()
    rows = []
    for log in sorted((workdir / ".snakemake" / "slurm_logs").rglob("*.log")):
        sid = log.stem
        if sid not in slurm:
            continue
        members = {}
        for e in blocks(log.read_text()):
            members.setdefault((e["rule"], e["wildcards"]), e["benchmark"])
        work = 0.0
        for bench in members.values():
            path = workdir / bench if bench else None
            if path and path.is_file():
                with path.open() as f:
                    work += float(list(csv.DictReader(f, delimiter="\t"))[-1]["s"])
        times = [seen[k] for k in members if k in seen]
        s = slurm[sid]
        parallel = max(1, min(s["cpus"], len(members)))
        row = {"slurm_id": sid, "jobs": len(members), "cpus": s["cpus"], "work": work,
               "queue": s["start"] - s["submit"], "run": s["end"] - s["start"],
               "detect": (min(times) - s["end"]) if times else float("nan")}
        row["job_side"] = row["run"] - work / parallel
        row["latency"] = (min(times) - s["submit"]) if times else float("nan")
        row["overhead"] = row["latency"] - work / parallel
        row["name"] = log.parent.name
        rows.append(row)
    return rows


def main() -> None:
    workdir = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    rows = measure(workdir)
    if not rows:
        raise SystemExit(f"no finished cluster job found for {workdir} (kept SLURM logs and squeue)")
    print(f"{len(rows)} cluster jobs holding {sum(r['jobs'] for r in rows)} workflow jobs")
    print("seconds per cluster job     mean  median     max")
    for name in ("work", "queue", "run", "job_side", "detect", "latency", "overhead"):
        values = [r[name] for r in rows if r[name] == r[name]]
        print(f"  {name:<22} {statistics.mean(values):7.1f} {statistics.median(values):7.1f} {max(values):7.1f}")
    print("work: benchmark seconds of its jobs; run: SLURM start to end; job_side: run minus work (spread over")
    print("its cores); detect: end to Snakemake seeing it; latency: submission to seen; overhead: latency - work")


if __name__ == "__main__":
    main()
