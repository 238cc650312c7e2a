"""Seeded synthetic datasets, named by their shape: ``synthetic-<family>-n<rows>-d<features>``.

They go through the same steps as the real datasets (fetch writes the generated raw array,
prepare encodes it with a profile), so an experiment can put them beside real data and sweep n
or d for rate plots. Generation is a function of the name alone:

* features x_i ~ N(0, I_d / d) (so E‖x_i‖² = 1), drawn row after row from one stream seeded by
  (family, d): the first n rows of ``-n<N>`` are the rows of every smaller n with the same d,
  and a larger n adds rows from the same population;
* a true weight vector w* = 2√d·u with u uniform on the unit sphere, seeded by (family, d), so
  ⟨w*, x⟩ ~ N(0, 4) whatever d;
* ``logistic``: y ∈ {0, 1} with P(y = 1 | x) = σ(⟨w*, x⟩) (classification);
* ``linear``: y = ⟨w*, x⟩ + N(0, 0.25) (regression).

The data carry no private information; experiments on them still run every algorithm's privacy
machinery as on real data (what is private is the row, whatever its origin).
"""

from __future__ import annotations

import io
import re
import zlib

import numpy as np

FAMILIES = ("logistic", "linear")
PATTERN = re.compile(r"^synthetic-(logistic|linear)-n([1-9][0-9]*)-d([1-9][0-9]*)$")
KEY_REGEX = "synthetic-(?:logistic|linear)-n[1-9][0-9]*-d[1-9][0-9]*"
MAX_VALUES = 50_000_000  # n·d; 400 MB of float64
BLOCK = 4096  # rows drawn per step of the stream


def parse(key: str) -> tuple[str, int, int] | None:
    """(family, n, d) of a synthetic dataset key, or None for any other key."""
    match = PATTERN.match(key)
    return (match.group(1), int(match.group(2)), int(match.group(3))) if match else None


def is_synthetic(key: str) -> bool:
    return parse(key) is not None


def _seed(family: str, d: int, what: str) -> int:
    return zlib.crc32(f"dperm-synthetic/{family}/d{d}/{what}".encode())


def generate(key: str) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of a synthetic dataset key (see the module docstring)."""
    parsed = parse(key)
    if parsed is None:
        raise ValueError(f"{key!r} is not a synthetic dataset key "
                         f"(synthetic-<{'|'.join(FAMILIES)}>-n<rows>-d<features>)")
    family, n, d = parsed
    if n * d > MAX_VALUES:
        raise ValueError(f"{key}: n·d = {n * d:,} values; at most {MAX_VALUES:,} are generated")
    u = np.random.default_rng(_seed(family, d, "w")).normal(size=d)
    w_star = 2.0 * np.sqrt(d) * u / np.linalg.norm(u)
    rows = np.random.default_rng(_seed(family, d, "rows"))
    blocks = -(-n // BLOCK)  # whole blocks of rows from one stream, then cut: nested across n
    X = np.empty((blocks * BLOCK, d))
    y = np.empty(blocks * BLOCK)
    for start in range(0, blocks * BLOCK, BLOCK):
        block = slice(start, start + BLOCK)
        X[block] = rows.normal(scale=1.0 / np.sqrt(d), size=(BLOCK, d))
        score = X[block] @ w_star
        if family == "logistic":
            y[block] = (rows.uniform(size=BLOCK) < 1.0 / (1.0 + np.exp(-score))).astype(float)
        else:
            y[block] = score + rows.normal(scale=0.5, size=BLOCK)
    X, y = X[:n].copy(), y[:n].copy()
    return X, y


def raw_bytes(key: str) -> bytes:
    """The raw file fetch stores: one .npy array, features then the target in the last column."""
    X, y = generate(key)
    buffer = io.BytesIO()
    np.save(buffer, np.column_stack([X, y]), allow_pickle=False)
    return buffer.getvalue()


def read_raw(content: bytes, columns, target: str):
    """The raw array as a frame with the registry's column names."""
    import pandas as pd

    data = np.load(io.BytesIO(content), allow_pickle=False)
    frame = pd.DataFrame(data[:, :-1], columns=list(columns))
    frame[target] = data[:, -1]
    return frame


def record(key: str):
    """The registry record of a synthetic dataset key."""
    from .records import Column, Dataset, RawFile

    family, n, d = parse(key)
    classification = family == "logistic"
    return Dataset(
        key=key, title=f"Synthetic {family} data, n = {n:,}, d = {d}",
        task="classification" if classification else "regression",
        files=(RawFile(f"{key}.npy", "", "all", n, None),), parser="synthetic",
        columns=tuple(Column(f"x{j}", "num") for j in range(d)), target="y",
        label="y = 1 (P = sigmoid(<w*, x>))" if classification else "y = <w*, x> + N(0, 0.25)",
        positive=("1",) if classification else (), negative=("0",) if classification else (),
        notes="generated from its name by dperm.datasets.synthetic (seeded; no download)")
