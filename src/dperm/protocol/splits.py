"""Train/test splits of one experiment and dataset (every algorithm, model and ε of an
experiment sees the same folds: comparisons are paired)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .seeds import derive_seed


@dataclass(frozen=True)
class Split:
    fold: int
    repeat: int
    train: np.ndarray
    test: np.ndarray


def make_splits(protocol: dict, n: int, seed: int) -> list[Split]:
    """Train/test splits of ``n`` rows. ``kind``: ``kfold`` (``folds`` × ``repeats``, a fresh
    permutation per repeat), ``holdout`` (``test_fraction``, ``repeats`` times), ``full`` (train
    and evaluate on every row: Lee & Kifer's Figure 1 scripts,
    docs/deviations.md#fig1-training-accuracy)."""
    kind, repeats = protocol["kind"], int(protocol.get("repeats", 1))
    if n < 2:
        raise ValueError(f"need at least 2 rows to split; got n={n}")
    out = []
    for repeat in range(repeats):
        perm = np.random.default_rng(derive_seed(seed, "split", repeat)).permutation(n)
        if kind == "kfold":
            folds = int(protocol["folds"])
            if not 2 <= folds <= n:
                raise ValueError(f"folds must be in [2, n={n}]; got folds={folds}")
            for fold, test in enumerate(np.array_split(perm, folds)):
                train = np.ones(n, dtype=bool)  # the rows not in the test fold, ascending
                train[test] = False
                out.append(Split(fold, repeat, np.flatnonzero(train), np.sort(test)))
        elif kind == "holdout":
            frac = float(protocol["test_fraction"])
            if not 0 < frac < 1:
                raise ValueError(f"test_fraction must be in (0, 1); got {frac}")
            cut = int(round(n * frac))
            out.append(Split(0, repeat, np.sort(perm[cut:]), np.sort(perm[:cut])))
        elif kind == "full":
            everything = np.arange(n)
            out.append(Split(0, repeat, everything, everything))
        else:
            raise ValueError(f"protocol kind {kind!r}; allowed: kfold, holdout, full")
    return out


def split_count(protocol: dict) -> int:
    """How many splits :func:`make_splits` makes of ``protocol`` (without the data)."""
    repeats = int(protocol.get("repeats", 1))
    return repeats * (int(protocol["folds"]) if protocol["kind"] == "kfold" else 1)
