# Validation, wildcard constraints and path helpers. No rules here.
import json
import os
import re
import sys
from pathlib import Path

from snakemake.utils import validate

# The workflow runs this checkout's code (src/), whatever dperm an environment may have
# installed: at parse time through sys.path, in jobs through PYTHONPATH.
SRC = str(Path(workflow.basedir, "src").resolve())
sys.path.insert(0, SRC)
os.environ.update(PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")])))

from dperm.datasets import registry
from dperm.datasets.fetch import resolve_mirror
from dperm.datasets.prepare import availability


validate(config, schema="../schemas/config.schema.yaml", set_default=True)

MIRROR = resolve_mirror(config["data"]["mirror"])
DOWNLOAD = config["data"]["download"]


def _availability(key):
    return availability(registry.get(key), f"resources/raw/{key}", MIRROR, DOWNLOAD)


AVAILABLE = {key: _availability(key) for key in registry.DATASET_KEYS}
UNAVAILABLE = {k: why for k, (ok, why) in AVAILABLE.items() if not ok}
for key in config["datasets"]:
    if key in UNAVAILABLE:
        logger.warning(f"dperm: skipping dataset {key!r} in the default target: {UNAVAILABLE[key]}")


wildcard_constraints:
    dataset="|".join(re.escape(k) for k in registry.DATASET_KEYS),
    profile="|".join(re.escape(p) for p in config["profiles"]),


def dataset_available(key):
    return AVAILABLE[key][0]


def prepared(key, profile="default"):
    return f"resources/prepared/{key}/{profile}.npz"


def profile_options(key, profile):
    """A profile's options for one dataset: its common options, then its per-dataset ones."""
    spec = dict(config["profiles"][profile])
    per_dataset = spec.pop("per_dataset", {}) or {}
    return {**spec, **per_dataset.get(key, {})}


def configured_available_datasets():
    return [k for k in config["datasets"] if dataset_available(k)]


def default_targets():
    return [prepared(k) for k in configured_available_datasets()] + [
        "results/tables/datasets.csv",
        "results/tables/datasets.md",
    ]
