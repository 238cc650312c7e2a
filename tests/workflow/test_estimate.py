"""dperm estimate: the dry run's listing read back, each job's cost from the measured table, and
the wall time of a list schedule on N cores."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO

from dperm.estimate import Job, dependencies, hidden_jobs, job_seconds, list_schedule, parse

LISTING = """\
Building DAG of jobs...
Job stats:
job          count
---------  -------
run_job          2

[Thu Nov 26 18:00:00 2026]
rule prepare:
    input: resources/raw/wine/fetch.json
    output: resources/prepared/wine/default.npz
    jobid: 3
    reason: Missing output files: resources/prepared/wine/default.npz
    wildcards: dataset=wine, profile=default
    resources: tmpdir=<TBD>

[Thu Nov 26 18:00:00 2026]
rule run_job:
    input: resources/prepared/wine/default.npz
    output: results/jobs/p/e/wine/lr/dp-sgd.csv
    jobid: 2
    wildcards: paper=p, experiment=e, dataset=wine, model=lr, algorithm=dp-sgd

[Thu Nov 26 18:00:00 2026]
localrule all:
    input: results/jobs/p/e/wine/lr/dp-sgd.csv
    jobid: 0
"""


def test_a_listing_is_read_back_with_its_wildcards_and_edges():
    jobs = parse(LISTING)
    assert [(j.rule, j.jobid) for j in jobs] == [("prepare", 3), ("run_job", 2), ("all", 0)]
    assert jobs[1].wildcards == {"paper": "p", "experiment": "e", "dataset": "wine", "model": "lr",
                                 "algorithm": "dp-sgd"}
    assert dependencies(jobs) == {3: set(), 2: {3}, 0: {2}}
    assert not jobs[2].runs and jobs[2].local


def _chain(ids, edges):
    jobs = [Job(jobid=i, rule="r", local=False, outputs=[f"o{i}"]) for i in ids]
    return jobs, {i: set(edges.get(i, ())) for i in ids}


def test_the_list_schedule_respects_dependencies_cores_and_the_longest_path_first():
    # 1 -> 3, 2 -> 3; 4 alone. Seconds: 1: 10, 2: 2, 3: 5, 4: 8
    jobs, deps = _chain([1, 2, 3, 4], {3: {1, 2}})
    seconds = {1: 10.0, 2: 2.0, 3: 5.0, 4: 8.0}
    wall1, critical, chain = list_schedule(jobs, deps, seconds, 1)
    assert wall1 == pytest.approx(25.0) and critical == pytest.approx(15.0) and chain == [1, 3]
    wall2, _, _ = list_schedule(jobs, deps, seconds, 2)
    assert wall2 == pytest.approx(15.0)  # 1 then 3 on one core; 4 then 2 on the other
    assert list_schedule(jobs, deps, seconds, 8)[0] == pytest.approx(15.0)  # never below the critical path


def test_a_job_the_table_does_not_list_takes_the_median_of_its_paper_and_algorithm():
    sizes = {"kinds": {"fit": {"seconds": 700}, "cut": {"seconds": 1}},
             "seconds": {"fit": {"p/e/adult/lr/dp-sgd": [10, None], "p/e/bank/lr/dp-sgd": [30, None],
                                 "p/e/wine/lr/dp-sgd": [20, None], "p/e/adult/lr/objpert": [500, None]}}}
    job = Job(jobid=1, rule="run_job", local=False, outputs=["x"],
              wildcards={"paper": "p", "experiment": "new", "dataset": "kdd", "model": "lr", "algorithm": "dp-sgd"})
    assert job_seconds(sizes, job) == (20.0, "similar")
    listed = Job(jobid=2, rule="run_job", local=False, outputs=["y"],
                 wildcards={"paper": "p", "experiment": "e", "dataset": "bank", "model": "lr", "algorithm": "dp-sgd"})
    assert job_seconds(sizes, listed) == (30.0, "listed")
    other = Job(jobid=3, rule="run_job", local=False, outputs=["z"],
                wildcards={"paper": "q", "experiment": "e", "dataset": "bank", "model": "lr", "algorithm": "x"})
    assert job_seconds(sizes, other) == (700.0, "kind")


def test_a_job_of_a_kind_sized_as_a_whole_costs_its_kind_s_mean_not_its_largest():
    """1,900 cuts of about 0.06 CPU-s each are not 1,900 seconds: the kind's ``seconds`` (its
    largest job, the bound a cluster time limit is asked from) is used only by a table without
    ``mean``."""
    cut = Job(jobid=1, rule="cut_cell", local=False, outputs=["results/runs/p/e/wine/lr/x/eps1.csv"],
              wildcards={"paper": "p", "experiment": "e", "dataset": "wine", "model": "lr", "algorithm": "x"})
    assert job_seconds({"kinds": {"cut": {"seconds": 1, "mean": 0.061}}}, cut) == (0.061, "listed")
    assert job_seconds({"kinds": {"cut": {"seconds": 1}}}, cut) == (1.0, "listed")


def _fit(jobid, experiment, model, waiting=True):
    return Job(jobid=jobid, rule="run_job", local=False, inputs=["<TBD>"] if waiting else ["data.npz"],
               outputs=[f"results/jobs/p/{experiment}/kdd/{model}/x{jobid}.csv"],
               wildcards={"paper": "p", "experiment": experiment, "dataset": "kdd", "model": model,
                          "algorithm": f"x{jobid}"})


def test_the_optima_behind_the_tuning_checkpoint_come_from_the_table_in_the_chain():
    """A fit that waits for the tuning checkpoint reads an optimum and a start the tuning decides:
    the dry run lists neither, so the estimate takes them from the table's rows of that fit's
    cell, after its tuning part and before it (the chain tuning -> optimum -> fit), and only
    those: not a listed optimum again, not another cell's."""
    tune = Job(jobid=1, rule="tune", local=False, outputs=["results/tuning/p/kdd/mlp/t.json"],
               wildcards={"paper": "p", "dataset": "kdd", "model": "mlp", "profile": "t"})
    listed = Job(jobid=2, rule="optimum", local=False, outputs=["results/optima/p/e/kdd/lr/t/l2-0.csv"],
                 wildcards={"paper": "p", "experiment": "e", "dataset": "kdd", "model": "lr", "profile": "t",
                            "l2": "0"})
    waiting, other_cell, lr_fit = _fit(3, "e", "mlp"), _fit(4, "f", "mlp"), _fit(5, "e", "lr", waiting=False)
    jobs = [tune, listed, waiting, other_cell, lr_fit]
    rows = {"p/e/kdd/mlp/t/0": [250.0, None], "p/e/kdd/mlp/t": [130.0, None], "p/e/kdd/lr/t/0": [3.0, 0],
            "p/g/kdd/mlp/t/0": [90.0, None]}
    hidden = hidden_jobs(jobs, {"seconds": {"optimum": rows}})
    assert sorted((j.rule, j.wildcards.get("l2")) for j in hidden) == [("optimum", "0"), ("starts", None)]
    assert {job_seconds({"seconds": {"optimum": rows}}, j) for j in hidden} == {(250.0, "listed"), (130.0, "listed")}
    deps = dependencies([*jobs, *hidden])
    assert all(deps[j.jobid] == {1} for j in hidden)  # after the tuning part of its paper, dataset, model
    assert deps[3] == {1} | {j.jobid for j in hidden}  # the fit waits for both
    assert deps[4] == {1}  # another experiment's fit: the table lists no optimum of its cell
    wall, critical, chain = list_schedule([*jobs, *hidden], deps, {1: 60.0, 2: 3.0, 3: 200.0, 4: 10.0, 5: 5.0,
                                                                    **{j.jobid: job_seconds({"seconds": {"optimum": rows}},
                                                                                            j)[0] for j in hidden}}, 64)
    assert critical == pytest.approx(60 + 250 + 200) and chain[0] == 1 and chain[-1] == 3


def test_the_estimate_of_a_target_counts_the_dry_run_s_jobs(tmp_path):
    out = subprocess.run([sys.executable, "-m", "dperm", "estimate", "demo", "--from-scratch", "--json"],
                         cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["jobs"] == sum(result["kinds"].values()) and result["kinds"]["fit"] >= 1
    assert result["critical_seconds"] <= result["wall_seconds"] <= result["cpu_seconds"] + 1e-9
    assert result["measured_from"].startswith("measured at commit")
    # Snakemake's own work, per job, from the table: in the CPU time and in the breakdown
    from dperm.estimate import read_sizes

    scheduler = read_sizes(str(REPO))[0]["scheduler_seconds"]
    assert 0 < scheduler < 1
    assert result["cpu_by_kind"]["snakemake"] == pytest.approx(scheduler * result["jobs"])
    assert result["cpu_seconds"] == pytest.approx(sum(result["cpu_by_kind"].values()))


def test_kang_s_estimate_holds_the_optima_behind_its_tuning_checkpoint():
    """Kang et al.'s MLP optima and starts follow the tuned problem: a dry run cannot list them,
    and the table has their rows (benchmarks/slurm_resources.py adds them from the measured run)."""
    out = subprocess.run([sys.executable, "-m", "dperm", "estimate", "kang", "--from-scratch", "--json"],
                         cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["hidden"] >= 6  # an optimum and a start on each of the three MLP panels
    assert result["sources"] == {"listed": result["jobs"]}
    # the longest chain goes through one: KDDCup99's MLP optimum, in parts (config/papers/kang.yaml)
    assert any(step.startswith(("optimum(kang/fig/kddcup99/mlp/", "optimum_part(kang/fig/kddcup99/mlp/"))
               for step in result["critical_path"])


def test_an_unknown_target_is_one_clear_error():
    out = subprocess.run([sys.executable, "-m", "dperm", "estimate", "no-such-target"], cwd=REPO,
                         capture_output=True, text=True)
    assert out.returncode == 2 and "the dry run failed" in out.stderr and "Traceback" not in out.stderr


def test_jobs_start_longest_chain_first():
    """Snakemake's priorities follow the estimated chains (common.smk: chain_priority): a fit's is
    its own estimate, and a preparation, tuning or optimum outranks every job that waits for it, so
    KDDCup99's preparation and tuning start before the long fits they gate."""
    from dperm.estimate import dry_run, read_sizes

    jobs = dry_run(["lee2018"], ["-F"], workdir=str(REPO))
    sizes, _ = read_sizes(str(REPO))
    by_id = {job.jobid: job for job in jobs}
    gates = {"prepare", "tune", "optimum"}
    checked = 0
    for job in jobs:
        seconds, source = job_seconds(sizes, job) if job.runs else (0, "")
        if job.rule == "run_job" and source == "listed":  # (Snakemake sizes an unlisted job as its kind's largest)
            assert abs(job.priority - seconds) < 1, job.wildcards
        for need in dependencies(jobs)[job.jobid]:
            gate = by_id[need]
            if gate.rule in gates and job.priority > 0 and source == "listed":
                assert gate.priority >= job.priority, (gate.rule, gate.wildcards, job.rule, job.wildcards)
                checked += 1
    assert checked > 10
    listed = [job for job in jobs if job.runs and job.rule != "prepare" and job_seconds(sizes, job)[1] == "listed"]
    first = max(listed, key=lambda job: job.priority)
    # a tuning part opens the longest chain: its own seconds and the longest fit of its paper on its
    # dataset and model
    assert first.rule == "tune"
    names = ("paper", "dataset", "model")
    fits = [job_seconds(sizes, j)[0] for j in listed if j.rule in ("run_job", "run_part")
            and all(j.wildcards[n] == first.wildcards[n] for n in names)]
    assert first.priority == round(job_seconds(sizes, first)[0] + max(fits))


def test_a_fit_waiting_for_the_tuning_checkpoint_depends_on_its_tuning_part():
    """Its inputs are <TBD> until the checkpoint has run; without the edge the critical path
    would leave the tuning out. It waits for its paper's parts on its dataset and model (of any
    tuning profile), not for another model's or paper's."""
    def tune(jobid, paper, model, profile):
        return Job(jobid=jobid, rule="tune", local=False,
                   outputs=[f"results/tuning/{paper}/kddcup99/{model}/{profile}.json"],
                   wildcards={"paper": paper, "dataset": "kddcup99", "model": model, "profile": profile})

    mine, public, other_model, other_paper = (tune(5, "p", "lr", "default"), tune(4, "p", "lr", "public"),
                                              tune(3, "p", "svm", "default"), tune(6, "q", "lr", "default"))
    prep = Job(jobid=7, rule="prepare", local=False, outputs=["resources/prepared/kddcup99/default.npz"],
               wildcards={"dataset": "kddcup99", "profile": "default"})
    fit = Job(jobid=8, rule="run_job", local=False, inputs=["<TBD>"], outputs=["results/jobs/p/e/kddcup99/lr/x.csv"],
              wildcards={"paper": "p", "experiment": "e", "dataset": "kddcup99", "model": "lr", "algorithm": "x"})
    assert dependencies([mine, public, other_model, other_paper, prep, fit])[8] == {5, 4, 7}


def test_the_table_s_origin_is_the_run_it_was_measured_from(tmp_path):
    from dperm.estimate import read_sizes

    (tmp_path / "workflow").mkdir()
    table = tmp_path / "workflow" / "cluster.yaml"
    # benchmarks/slurm_resources.py wraps its header: the measured commit may start a new line
    table.write_text("# Cluster sizes, written by\n#   python benchmarks/slurm_resources.py --full x\n"
                     "# on 2026-11-26 at commit 40c590d; jobs\n# measured at commit f7493d3. A note.\n"
                     "runtime_factor: 3\n")
    sizes, origin = read_sizes(str(tmp_path))
    assert sizes == {"runtime_factor": 3}
    assert origin == "measured at commit f7493d3, written on 2026-11-26"
    # a table joining runs at two commits names both
    table.write_text("# on 2026-11-27 at commit 1b2c3d4; jobs measured at commit 2613c55 (the tuning\n"
                     "# parts: 7e05b37). A note.\nruntime_factor: 3\n")
    assert read_sizes(str(tmp_path))[1] == "measured at commit 2613c55 (the tuning parts: 7e05b37), written on 2026-11-27"
    table.write_text("# on 2026-11-20 at commit 9dc9b9d. A note.\nruntime_factor: 3\n")
    assert read_sizes(str(tmp_path))[1] == "measured at commit 9dc9b9d on 2026-11-20"
    table.write_text("runtime_factor: 3\n")
    assert read_sizes(str(tmp_path))[1] == "no origin recorded"
