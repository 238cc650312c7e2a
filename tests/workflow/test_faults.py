"""Faults a user meets, each tested end to end in a copy of the workflow:

* every bad configuration value fails when Snakemake builds the DAG, before any job runs, with
  one message naming the file or key, the value and what is allowed (no schema dump, no Python
  traceback);
* a run stopped by a signal midway and run again gives the outputs an uninterrupted run gives
  (every column but the timings).

A corrupted or truncated mirror file is tested in tests/datasets/test_fetch.py."""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml
from conftest import copy_workflow, snakemake_env

pytestmark = pytest.mark.slow

PAPER = {
    "paper": "demo", "title": "fault probe",
    "models": {"lr": {"loss": "logistic", "l2": 0.001}},
    "algorithms": {"nonprivate": {}, "majority": {}, "dp-sgd": {"epochs": 1, "batch_size": 256}},
    "experiments": {"demo": {"title": "probe", "datasets": ["bank-dpagd"], "models": ["lr"],
                             "algorithms": ["nonprivate", "majority", "dp-sgd"], "epsilons": [0.5, 1.0],
                             "delta": 1e-8, "protocol": {"kind": "kfold", "folds": 2, "repeats": 1, "draws": 2}}},
    "optimum": {"solve": False},
    "figures": {"demo": {"kind": "epsilon", "experiment": "demo", "model": "lr", "title": "probe"}},
}
CONFIG = {"data": {"download": "never"}, "datasets": ["bank-dpagd"], "profiles": {"default": {}}, "seed": 3,
          "papers": ["demo"], "paper_dir": "papers"}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    path = tmp_path_factory.mktemp("faults")
    copy_workflow(path)
    (path / "papers").mkdir()
    return path


def write(root, paper, config):
    (root / "papers" / "demo.yaml").write_text(yaml.safe_dump(paper))
    (root / "test.yaml").write_text(yaml.safe_dump(config))


def dry_run(root, mirror, paper=PAPER, config=CONFIG, target="demo"):
    write(root, paper, config)
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", target, "--configfile", "test.yaml"],
                         cwd=root, env=snakemake_env(mirror), capture_output=True, text=True)
    return out.returncode, out.stdout + out.stderr


def edited_paper(edit):
    paper = copy.deepcopy(PAPER)
    edit(paper)
    return paper


EXP = "experiments.demo"
PAPER_FAULTS = [
    ("unknown dataset", lambda p: p["experiments"]["demo"]["datasets"].append("mnist"),
     [f"{EXP}.datasets[1]", "'mnist' is not allowed; allowed: ['adult', 'bank'"]),
    ("unknown algorithm", lambda p: p["algorithms"].update({"dp-sdg": {}}),
     ["algorithms.dp-sdg", "unknown algorithm 'dp-sdg'; known algorithms:"]),
    ("unknown hyper-parameter", lambda p: p["algorithms"]["dp-sgd"].update(lr=0.1),
     ["algorithms.dp-sgd", "unknown hyper-parameter(s) ['lr'] for algorithm 'dp-sgd'; allowed:"]),
    ("epsilon not positive", lambda p: p["experiments"]["demo"].update(epsilons=[0.5, 0]),
     [f"{EXP}.epsilons[1]", "0", "less than or equal to the minimum of 0"]),
    ("delta out of range", lambda p: p["experiments"]["demo"].update(delta=1.5),
     [f"{EXP}.delta", "1.5", "greater than or equal to the maximum of 1"]),
    ("the same epsilon twice", lambda p: p["experiments"]["demo"].update(epsilons=[2, 2.0]),
     [f"{EXP}.epsilons", "name the same setting twice (['2'])", "count the same fits twice"]),
    ("unknown algorithm in a figure", lambda p: p["figures"]["demo"].update(algorithms=["dp-sgd", "dp-agd"]),
     ["figures.demo.algorithms", "['dp-agd'] are not run by experiment 'demo'", "available:"]),
    ("unknown experiment in a figure", lambda p: p["figures"]["demo"].update(experiment="demos"),
     ["figures.demo.experiment", "unknown experiment 'demos'; defined: ['demo']"]),
    ("a private algorithm without epsilons", lambda p: p["experiments"]["demo"].update(epsilons=[]),
     [EXP, "algorithm 'dp-sgd' is private but the experiment gives it no epsilons"]),
    ("a hyper-parameter of the wrong type", lambda p: p["algorithms"]["dp-sgd"].update(learning_rate="fast"),
     ["algorithms.dp-sgd", "hyper-parameter 'learning_rate' of algorithm 'dp-sgd' must be number; got 'fast'"]),
    ("a one-key typo", lambda p: p["experiments"]["demo"].update(epsilon=[1.0]),
     ["papers/demo.yaml", f"{EXP}: unknown key(s) ['epsilon']; allowed keys:"]),
    # values outside an algorithm's declared domains, or a target it cannot meet
    ("a negative clip", lambda p: p["algorithms"]["dp-sgd"].update(clip=-1.0),
     ["algorithms.dp-sgd", "'clip' of algorithm 'dp-sgd' must be a finite number > 0; got -1.0"]),
    ("a negative learning rate", lambda p: p["algorithms"]["dp-sgd"].update(learning_rate=-0.1),
     ["'learning_rate' of algorithm 'dp-sgd' must be a finite number > 0; got -0.1"]),
    ("zero epochs", lambda p: p["algorithms"]["dp-sgd"].update(epochs=0),
     ["'epochs' of algorithm 'dp-sgd' must be a finite number > 0; got 0"]),
    ("a batch of zero", lambda p: p["algorithms"]["dp-sgd"].update(batch_size=0),
     ["'batch_size' of algorithm 'dp-sgd' must be an integer >= 1; got 0"]),
    ("a batch larger than the training rows", lambda p: p["algorithms"]["dp-sgd"].update(batch_size=30_000),
     ["dataset 'bank-dpagd': batch_size=30000 exceeds the at most 22606 training rows"]),
    ("delta zero for Gaussian noise", lambda p: p["experiments"]["demo"].update(delta=0),
     [EXP, "algorithm 'dp-sgd' (dp-sgd) needs delta > 0", "delta=0"]),
    ("an infinite epsilon", lambda p: p["experiments"]["demo"].update(epsilons=[1.0, float("inf")]),
     [EXP, "algorithm 'dp-sgd' (dp-sgd) needs a finite epsilon", "epsilon=inf"]),
]


@pytest.mark.parametrize("name, edit, fragments", PAPER_FAULTS, ids=[f[0] for f in PAPER_FAULTS])
def test_a_bad_paper_config_fails_at_dag_time_with_one_message(root, mirror, name, edit, fragments):
    code, text = dry_run(root, mirror, paper=edited_paper(edit))
    assert code != 0, text[-2000:]
    for fragment in fragments:
        assert fragment in text, (fragment, text[-2000:])
    assert "Traceback (most recent call last)" not in text
    assert "Job stats" not in text  # nothing was planned, let alone run
    assert len(text.splitlines()) < 20  # one message, not a schema dump


@pytest.mark.parametrize("edit, fragments", [
    (lambda c: c.update(papers=["demoo"]), ["papers: ['demoo'] have no plugin", "known papers: ["]),
    (lambda c: c.update(colour="red"), ["test.yaml", "(top level): unknown key(s) ['colour']; allowed keys:"]),
    (lambda c: c["data"].update(download="sometimes"), ["data.download: 'sometimes' is not allowed"]),
])
def test_a_bad_global_config_fails_at_dag_time_with_one_message(root, mirror, edit, fragments):
    config = copy.deepcopy(CONFIG)
    edit(config)
    code, text = dry_run(root, mirror, config=config)
    assert code != 0
    for fragment in fragments:
        assert fragment in text, (fragment, text[-2000:])
    assert "Traceback (most recent call last)" not in text and len(text.splitlines()) < 20


def _dry_run_text(root, mirror, paper_text, config=CONFIG, target="demo"):
    (root / "papers" / "demo.yaml").write_text(paper_text)
    (root / "test.yaml").write_text(yaml.safe_dump(config))
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", target, "--configfile", "test.yaml"],
                         cwd=root, env=snakemake_env(mirror), capture_output=True, text=True)
    return out.returncode, out.stdout + out.stderr


def test_a_key_given_twice_is_refused_naming_it_and_both_lines(root, mirror):
    text = yaml.safe_dump(PAPER, sort_keys=False).replace("  lr:\n", "  lr:\n    l2: 0.5\n", 1)
    code, out = _dry_run_text(root, mirror, text)
    assert code != 0 and "key 'l2' appears twice in one mapping (first on line" in out, out[-2000:]
    (root / "twice.yaml").write_text("seed: 3\nseed: 4\n")
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "demo", "--configfile", "test.yaml",
                          "twice.yaml"], cwd=root, env=snakemake_env(mirror), capture_output=True, text=True)
    text = out.stdout + out.stderr
    assert out.returncode != 0 and "twice.yaml:2" in text and "key 'seed' appears twice" in text, text[-2000:]


def test_exponent_notation_is_a_number_in_a_paper_and_in_a_configfile(root, mirror):
    text = yaml.safe_dump(PAPER, sort_keys=False).replace("delta: 1.0e-08", "delta: 1e-8")
    assert "delta: 1e-8" in text
    config = yaml.safe_dump({**CONFIG, "data": {"download": "never", "timeout": 100}}).replace("timeout: 100",
                                                                                              "timeout: 1e2")
    assert "timeout: 1e2" in config
    (root / "papers" / "demo.yaml").write_text(text)
    (root / "test.yaml").write_text(config)
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "demo", "--configfile", "test.yaml"],
                         cwd=root, env=snakemake_env(mirror), capture_output=True, text=True)
    assert out.returncode == 0, (out.stdout + out.stderr)[-2000:]


def test_a_dataset_no_source_can_supply_is_refused_when_asked_for(root, mirror, tmp_path):
    """An explicit target whose data are missing fails when the DAG is built, naming the dataset
    and what was tried; the default target leaves it out with a warning instead."""
    empty = tmp_path / "mirror"
    empty.mkdir()
    write(root, PAPER, CONFIG)
    for target, fails in (("demo", True), ("resources/prepared/bank-dpagd/default.npz", True), ("all", False)):
        out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", target, "--configfile",
                              "test.yaml"], cwd=root, env=snakemake_env(empty), capture_output=True, text=True)
        text = out.stdout + out.stderr
        assert (out.returncode != 0) == fails, (target, text[-2000:])
        if fails:
            assert "needs data that no source can supply (bank-dpagd: unavailable offline: dpagd/BANK.dat not in " \
                   "the mirror and downloads are off)" in text, text[-2000:]
        else:
            assert "no data for demo/demo" in text and "the default target leaves it out" in text


def test_a_paper_the_config_leaves_out_is_named_as_such(root, mirror):
    code, text = dry_run(root, mirror, target="kang")
    assert code != 0 and "target 'kang' is a paper that config 'papers' leaves out (it has ['demo'])" in text, text


def test_a_cell_outside_the_grid_fails_at_dag_time(root, mirror):
    code, text = dry_run(root, mirror, target="results/runs/demo/demo/bank-dpagd/lr/dp-sgd/eps0.3.csv")
    assert code != 0
    assert "is not a cell of the grid" in text and "at ['0.5', '1']" in text


def _records(root):
    frames = {p.relative_to(root): pd.read_csv(p) for p in sorted((root / "results" / "runs").rglob("*.csv"))}
    return {k: v.drop(columns=["fit_seconds"]) for k, v in frames.items()}


# Imported by every Python process of the stopped run (through PYTHONPATH): the first run-job
# process goes through, every later one waits for a file that never comes, so when the first job's
# output exists the run is certainly still under way (on any machine, however loaded); SIGINT
# ends the waiting ones as it ends any job.
GATE = """
import os, time
def _gate():
    where = os.environ.get("DPERM_TEST_GATE")
    with open("/proc/self/cmdline", "rb") as f:
        if not where or b"run-job" not in f.read().split(b"\\0"):
            return
    try:
        os.mkdir(os.path.join(where, "first"))  # the first run job goes through
    except FileExistsError:
        while not os.path.exists(os.path.join(where, "stop")):
            time.sleep(0.05)
        os._exit(130)  # stopped as Ctrl-C stops a job, also one started after the signal was sent
_gate()
"""


def test_a_run_stopped_midway_and_run_again_equals_an_uninterrupted_one(tmp_path, mirror):
    """SIGINT to Snakemake while jobs run (the user's Ctrl-C); the same command again finishes
    the work and its records equal an uninterrupted run's in a second copy. The stop comes after
    one run job has finished and while the others are held (GATE): deterministic."""
    paper = edited_paper(lambda p: p["algorithms"]["dp-sgd"].update(epochs=3))
    runs = {}
    for name in ("stopped", "whole"):
        root = tmp_path / name
        root.mkdir()
        copy_workflow(root)
        (root / "papers").mkdir()
        write(root, paper, CONFIG)
        command = [sys.executable, "-m", "snakemake", "--cores", "2", "demo", "--configfile", "test.yaml"]
        env = snakemake_env(mirror)
        if name == "stopped":
            gate = tmp_path / "gate"
            gate.mkdir()
            (gate / "sitecustomize.py").write_text(GATE)
            held = {**env, "PYTHONPATH": str(gate), "DPERM_TEST_GATE": str(gate)}
            process = subprocess.Popen(command, cwd=root, env=held, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, start_new_session=True)
            deadline = time.time() + 600
            while time.time() < deadline and not list((root / "results" / "jobs").rglob("*.csv")):
                time.sleep(0.2)  # wait until the first job has finished: the run is under way
            assert list((root / "results" / "jobs").rglob("*.csv")), "no run job finished in 10 minutes"
            assert process.poll() is None, "the run finished before it could be stopped"
            # A job Snakemake starts between the signal and its handling would miss the signal and
            # wait at the gate for ever (Snakemake waits for it): the gate lets it end as stopped.
            (gate / "stop").mkdir()
            os.killpg(process.pid, signal.SIGINT)
            process.wait(timeout=120)
            assert process.returncode != 0
            assert not list((root / "results" / "runs").rglob("*.csv.tmp*"))
        done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
        runs[name] = _records(root)
    assert runs["stopped"].keys() == runs["whole"].keys() and runs["whole"]
    for cell, frame in runs["whole"].items():
        pd.testing.assert_frame_equal(runs["stopped"][cell], frame, obj=str(cell))
