"""Shared test fixtures. Tests are offline: real data comes from the shared mirror
(``../shared/data`` beside the checkout, or ``$DPERM_DATA_MIRROR``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_mirror() -> Path | None:
    for candidate in (os.environ.get("DPERM_DATA_MIRROR"), REPO.parent / "shared" / "data"):
        if candidate and Path(candidate, "MANIFEST.md").is_file():
            return Path(candidate).resolve()
    return None


@pytest.fixture(scope="session")
def mirror() -> Path:
    path = shared_mirror()
    if path is None:
        pytest.skip("the shared data mirror (../shared/data) is not present")
    return path


@pytest.fixture(autouse=True)
def _no_mirror_env(monkeypatch):
    """A developer's DPERM_DATA_MIRROR must not leak into tests that decide the mirror."""
    monkeypatch.delenv("DPERM_DATA_MIRROR", raising=False)


@pytest.fixture
def no_network(monkeypatch):
    """Fail loudly if code under test opens a URL: downloads are faked at the boundary."""
    import urllib.request

    def refuse(*args, **kwargs):
        raise AssertionError(f"test tried to use the network: {args[:1]}")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


def mirrored_table(mirror: Path, key: str):
    """(registry record, canonical table) of a dataset read from the mirror's files."""
    from dperm.datasets import registry
    from dperm.datasets.canonical import canonical_from_files
    from dperm.files import read_content

    record = registry.get(key)
    contents = {}
    for raw in record.files:
        path = mirror / raw.mirror_path
        contents[raw.name] = read_content(path if path.exists() else path.with_name(path.name + ".gz"))
    return record, canonical_from_files(record, contents)


def load_config(tmp_path: Path, config: dict):
    """A paper config (a dict) written to ``tmp_path/p.yaml`` and loaded as the workflow would."""
    import yaml

    from dperm.grid import load_paper

    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(config))
    return load_paper(path)


def copy_workflow(root: Path) -> None:
    """A copy of the workflow (Snakefile, rules, profiles, configs, the package) under ``root``,
    for tests that run Snakemake without touching the checkout's results."""
    import shutil

    for part in ("Snakefile", "workflow", "profiles", "config", "docs"):
        src = REPO / part
        (shutil.copytree if src.is_dir() else shutil.copy)(src, root / part)
    shutil.copytree(REPO / "src" / "dperm", root / "src" / "dperm", ignore=shutil.ignore_patterns("__pycache__"))


def snakemake_env(mirror) -> dict:
    """The environment a workflow test runs Snakemake in: this interpreter first on PATH, the
    data mirror, no PYTHONPATH (the workflow puts its own src/ first)."""
    import sys

    env = {**os.environ, "DPERM_DATA_MIRROR": str(mirror),
           "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])}
    env.pop("PYTHONPATH", None)
    return env


class OpaqueLoss:
    """A GLM loss (the logistic by default) without ``dphi``: drives the solvers' generic
    (step-by-step, non-GLM) paths, against which their blocked GLM paths are checked."""

    def __init__(self, inner=None):
        from dperm.losses import get_loss

        self._inner = get_loss("logistic") if inner is None else inner

    def __getattr__(self, name):
        if name == "dphi":
            raise AttributeError(name)
        return getattr(self._inner, name)
