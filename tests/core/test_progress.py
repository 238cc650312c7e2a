"""Progress a person can watch: fits done of fits planned with the time left, rate-limited, and
with ``--log FILE`` only progress, warnings and errors on the terminal."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO

from dperm.progress import Progress, duration


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_progress_reports_at_most_every_interval_with_the_time_left():
    clock, lines = Clock(), []
    progress = Progress("p/e/d/m/a", total=10, every=20.0, emit=lines.append, clock=clock)
    for _ in range(4):
        clock.now += 5.0
        progress.advance()
    assert lines == ["p/e/d/m/a: 4/10 fits (40%), 20s elapsed, ~30s left"]  # 5 s per fit, 6 left
    clock.now += 5.0
    progress.advance()
    assert len(lines) == 1  # 5 s after the last line: quiet
    clock.now += 25.0
    progress.advance(5)  # the last fits: always reported, with no time left to guess
    assert lines[-1] == "p/e/d/m/a: 10/10 fits (100%), 50s elapsed"


def test_durations_read_as_a_person_would_say_them():
    assert [duration(s) for s in (0, 59.4, 75, 3599, 4000)] == ["0s", "59s", "1m15s", "59m59s", "1h06m"]


def test_with_a_log_file_only_progress_reaches_the_terminal(tmp_path, mirror):
    from dperm import grid

    paper = grid.load_paper(REPO / "config" / "papers" / "demo.yaml")
    job = next(j for j in grid.jobs(paper) if j.algorithm == "dp-sgd")
    specs = grid.job_specs(paper, job, 1)
    for spec in specs:
        spec["dataset"] = "bank-dpagd"
    (tmp_path / "spec.json").write_text(json.dumps(specs))
    env_mirror = {"DPERM_DATA_MIRROR": str(mirror)}
    raw = tmp_path / "raw" / "fetch.json"
    run = lambda *argv: subprocess.run([sys.executable, "-m", "dperm", *argv], capture_output=True, text=True,  # noqa: E731
                                       env={**__import__("os").environ, **env_mirror}, cwd=tmp_path)
    assert run("fetch", "bank-dpagd", "--out", str(raw)).returncode == 0
    assert run("prepare", "bank-dpagd", "--fetched", str(raw), "--out", str(tmp_path / "bank.npz")).returncode == 0
    out = run("--log", "logs/job.log", "run-job", "--spec", "@spec.json", "--data", "bank.npz", "--out", "r.csv")
    assert out.returncode == 0, out.stderr
    planned = sum(5 * 3 for _ in specs)  # 5 folds x 3 draws per epsilon
    last = out.stderr.strip().splitlines()[-1]
    assert f"demo/demo/bank-dpagd/lr/dp-sgd: {planned}/{planned} fits (100%), " in last and last.endswith(" elapsed")
    assert "split 1/5" not in out.stderr  # the detail is in the file only
    text = (tmp_path / "logs" / "job.log").read_text()
    assert "split 1/5" in text and f"{planned}/{planned} fits" in text and "records ->" in text
    bad = run("--log", "logs/bad.log", "run-job", "--spec", "@spec.json", "--data", "missing.npz", "--out", "r2.csv")
    assert bad.returncode == 2 and "missing.npz" in bad.stderr
    assert "missing.npz" in (tmp_path / "logs" / "bad.log").read_text()  # the error is in the log too
