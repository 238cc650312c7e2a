"""Reruns are exact: every value that fixes a job's output reruns that job (and what depends on
it), and values that only say how data are fetched rerun nothing. A real Snakemake run of a
tiny paper in a copy of the workflow, then one dry run per kind of edit."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml
from conftest import copy_workflow, snakemake_env

pytestmark = pytest.mark.slow

PAPER = {
    "paper": "demo", "title": "rerun probe",
    "models": {"lr": {"loss": "logistic", "l2": 0.001}},
    "algorithms": {"nonprivate": {}, "majority": {}, "dp-sgd": {"epochs": 1, "batch_size": 256}},
    "experiments": {"demo": {"title": "probe", "datasets": ["bank-dpagd"], "models": ["lr"],
                             "algorithms": ["nonprivate", "majority", "dp-sgd"], "epsilons": [1.0],
                             "delta": 1e-8, "protocol": {"kind": "kfold", "folds": 2, "repeats": 1, "draws": 1}}},
    "optimum": {"solve": False},
    "figures": {"demo": {"kind": "epsilon", "experiment": "demo", "model": "lr", "title": "probe"}},
}
CONFIG = {"data": {"download": "never", "timeout": 60}, "datasets": ["bank-dpagd"],
          "profiles": {"default": {}, "unit-ball": {"row_norm": "unit", "row_norm_radius": 0.7071067811865476,
                                                    "bias": 0.7071067811865476}},
          "seed": 1, "papers": ["demo"], "paper_dir": "papers"}


@pytest.fixture(scope="module")
def workflow(tmp_path_factory, mirror):
    """A copy of the workflow with the tiny paper, run once for real."""
    root = tmp_path_factory.mktemp("workflow")
    copy_workflow(root)
    (root / "papers").mkdir()
    write(root, PAPER, CONFIG)
    env = snakemake_env(mirror)
    run = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "demo", "--configfile", "test.yaml"],
                         cwd=root, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    return root, env


def write(root, paper, config):
    (root / "papers" / "demo.yaml").write_text(yaml.safe_dump(paper))
    (root / "test.yaml").write_text(yaml.safe_dump(config))


def planned(root, env) -> dict[str, int]:
    """Rule -> number of jobs a dry run of the demo target plans."""
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "2", "demo", "--configfile", "test.yaml"],
                         cwd=root, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout + out.stderr
    if "Nothing to be done" in text:
        return {}
    table = text.split("Job stats:", 1)[1].split("Reasons:", 1)[0] if "Job stats:" in text else text
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w[\w-]*)\s+(\d+)\s*$", table, re.M)
            if m.group(1) not in ("total", "job")}


def jobs_of(plan: dict) -> int:
    return plan.get("run_job", 0)


def edited(root, env, paper=None, config=None, extra_env=None):
    """The plan after an edit of the paper and/or the config (both restored afterwards)."""
    write(root, paper or PAPER, config or CONFIG)
    try:
        return planned(root, {**env, **(extra_env or {})})
    finally:
        write(root, PAPER, CONFIG)


def test_a_finished_run_plans_nothing(workflow):
    assert planned(*workflow) == {}


@pytest.mark.parametrize("edit, jobs", [
    (lambda p: p["algorithms"]["dp-sgd"].update(epochs=2), 1),  # dp-sgd's job only
    (lambda p: p["experiments"]["demo"].update(epsilons=[1.0, 2.0]), 1),
    (lambda p: p["experiments"]["demo"].update(delta=1e-6), 1),  # not NonPrivate's nor Majority's: no target
])
def test_a_grid_value_reruns_the_jobs_it_reaches(workflow, edit, jobs):
    import copy

    paper = copy.deepcopy(PAPER)
    edit(paper)
    plan = edited(*workflow, paper=paper)
    assert jobs_of(plan) == jobs, plan
    assert plan.get("summarise") == 1 and plan.get("figure") == 1


@pytest.mark.parametrize("edit, prepare", [
    (lambda c: c.update(seed=2), 0),
    (lambda c: c["profiles"]["default"].update(bias=2.0), 1),
])
def test_the_seed_and_the_profile_rerun_every_job(workflow, edit, prepare):
    import copy

    config = copy.deepcopy(CONFIG)
    edit(config)
    plan = edited(*workflow, config=config)
    assert jobs_of(plan) == 3 and plan.get("prepare", 0) == prepare, plan


def test_the_protocol_reruns_every_job(workflow):
    import copy

    paper = copy.deepcopy(PAPER)
    paper["experiments"]["demo"]["protocol"]["folds"] = 3
    assert jobs_of(edited(*workflow, paper=paper)) == 3


def test_a_title_redraws_without_rerunning_fits(workflow):
    import copy

    paper = copy.deepcopy(PAPER)
    paper["figures"]["demo"]["title"] = "another title"
    plan = edited(*workflow, paper=paper)
    assert jobs_of(plan) == 0 and plan.get("figure") == 1 and "summarise" not in plan, plan


@pytest.mark.parametrize("edit", [
    lambda c: c["data"].update(timeout=5),
    lambda c: c["data"].update(download="auto"),
])
def test_how_data_are_fetched_reruns_nothing(workflow, edit):
    import copy

    config = copy.deepcopy(CONFIG)
    edit(config)
    assert edited(*workflow, config=config) == {}


def test_another_mirror_location_reruns_nothing(workflow, tmp_path, mirror):
    elsewhere = tmp_path / "mirror-copy"
    elsewhere.symlink_to(mirror, target_is_directory=True)
    assert edited(*workflow, extra_env={"DPERM_DATA_MIRROR": str(elsewhere)}) == {}


def test_editing_an_algorithm_reruns_the_jobs_that_run_it(workflow):
    root, env = workflow
    module = root / "src" / "dperm" / "algorithms" / "dp_sgd" / "__init__.py"
    original = module.read_text()
    module.write_text(original + "\n# an edit\n")
    try:
        plan = planned(root, env)
    finally:
        module.write_text(original)
    assert jobs_of(plan) == 1, plan
