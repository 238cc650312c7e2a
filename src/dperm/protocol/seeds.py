"""Seeds: every random stream of a run is derived with ``SeedSequence`` from stable integers
(crc32 of names, never ``hash``), so a cell's records are the same whatever the job order or the
number of cores.
"""

from __future__ import annotations

import zlib

import numpy as np

from .settings import format_epsilon


def stable_int(name: str) -> int:
    """A name's crc32: stable across processes and Python versions (unlike ``hash``)."""
    return zlib.crc32(name.encode("utf-8"))


def derive_seed(root: int, *parts) -> int:
    """A 63-bit seed from the root seed and names/integers, through ``SeedSequence``."""
    entropy = [int(root)] + [stable_int(p) if isinstance(p, str) else int(p) for p in parts]
    return int(np.random.SeedSequence(entropy).generate_state(1, np.uint64)[0] >> 1)


def split_seed(spec: dict) -> int:
    """Splits depend on the dataset and experiment only: every algorithm, model and ε of an
    experiment sees the same folds (paired comparisons); an experiment with ``splits_of`` sees
    that experiment's folds."""
    return derive_seed(spec["seed"], spec["paper"], spec.get("splits_of", spec["experiment"]), spec["dataset"])


def cell_algorithm(spec: dict) -> str:
    """The cell's algorithm key (an alias such as ``dp-agd-lam0`` may ``use`` a registered one)."""
    return spec.get("cell_algorithm", spec["algorithm"])


def fit_seed(spec: dict, split) -> int:
    """The seed of a cell's fits on one split (a :class:`.splits.Split`: its fold and repeat)."""
    return derive_seed(spec["seed"], spec["paper"], spec["experiment"], spec["dataset"],
                       spec["model"]["name"], cell_algorithm(spec), format_epsilon(spec["epsilon"]),
                       split.fold, split.repeat)
