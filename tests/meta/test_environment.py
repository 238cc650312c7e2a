"""pyproject.toml is the single source of truth for dependencies; the conda files follow it."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import yaml
from conftest import REPO

SPEC = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*?)\s*$")
NOT_PACKAGES = {"python", "pip", "-e ."}


def _parse(requirement: str) -> tuple[str, str]:
    name, spec = SPEC.match(requirement).groups()
    return name.lower().replace("_", "-"), spec.replace(" ", "")


def _pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    runtime = dict(_parse(r) for r in project["dependencies"])
    extras = project["optional-dependencies"]
    test = dict(_parse(r) for r in extras["test"])
    slurm = dict(_parse(r) for r in extras["slurm"])
    return runtime, test, slurm


def _conda(path):
    deps = yaml.safe_load(path.read_text())["dependencies"]
    out = {}
    for dep in deps:
        entries = dep["pip"] if isinstance(dep, dict) else [dep]
        for entry in entries:
            if entry.strip() in NOT_PACKAGES or entry.startswith("python="):
                continue
            name, spec = _parse(entry)
            out[name] = spec
    return out


def test_environment_yml_lists_the_same_packages_as_pyproject():
    runtime, test, slurm = _pyproject()
    assert _conda(REPO / "environment.yml") == {**runtime, **test, **slurm}


def test_rule_environment_lists_the_runtime_packages():
    runtime, _, _ = _pyproject()
    expected = {k: v for k, v in runtime.items() if k != "snakemake"}
    assert _conda(REPO / "workflow" / "envs" / "dperm.yaml") == expected


def test_snakemake_is_pinned_to_a_9x_release():
    runtime, _, _ = _pyproject()
    assert re.fullmatch(r"==9\.\d+\.\d+", runtime["snakemake"])


def test_the_slurm_extra_pins_the_executor_plugin_and_its_job_step():
    """profiles/slurm is tested against one release of each (the job step decides what srun sees)."""
    _, _, slurm = _pyproject()
    assert set(slurm) == {"snakemake-executor-plugin-slurm", "snakemake-executor-plugin-slurm-jobstep"}
    assert all(re.fullmatch(r"==\d+\.\d+\.\d+", spec) for spec in slurm.values()), slurm


def test_cli_pins_blas_threads_before_numpy_loads():
    out = subprocess.run([sys.executable, "-m", "dperm", "--threads", "3", "info"], capture_output=True,
                         text=True, check=True, env={"PYTHONPATH": str(REPO / "src"), "PATH": ""})
    assert "OPENBLAS_NUM_THREADS=3" in out.stdout and "OMP_NUM_THREADS=3" in out.stdout
    assert "numpy was imported before" not in out.stderr
