"""Canonical table -> model-ready arrays, controlled by a named preprocessing profile.

Steps, in this order (each a profile option; the defaults are ``PROFILE_DEFAULTS``):

1. ``parts``: keep the rows of some files only (``default`` = the registry's default parts).
2. ``drop_missing``: drop rows with a missing value (``default`` = the registry's choice);
   kept missing values become a category of their own, ``<col>=<missing>``.
   ``subsample: {rows: m, seed: s}`` then keeps a uniformly random m of the remaining rows
   (without replacement, chosen by ``numpy.random.default_rng(s)``, kept in file order); every
   later step (min-max bounds, categories) sees only those rows. ``null`` (the default) keeps all;
   m larger than the rows left is an error.
3. Labels: classification -> ``y01`` in {0, 1} and ``ypm`` in {-1, +1}; regression -> ``y``
   min-max scaled to [0, 1] when ``target_scale: minmax`` (docs/deviations.md#zhang-unknowns), raw
   otherwise.
4. Features, in registry column order: a numeric column is min-max scaled to [0, 1] over the kept
   rows (``scale: minmax``; a constant column becomes 0); a categorical column becomes one 0/1
   column per category, named ``<col>=<value>``, categories in sorted string order.
5. ``row_norm``: ``unit`` rescales every row to norm ``row_norm_radius``; ``clip`` rescales only
   rows longer than that; ``none`` leaves rows alone.
6. ``bias``: a value b > 0 prepends the constant column b (column 0, named ``bias``); 0 adds none.
   The bias is added after step 5, so rows then have norm at most sqrt(radius^2 + b^2).

Min-max bounds come from the data themselves (the papers' preprocessing), which is a
non-private use of the data (docs/privacy.md#data-dependent-choices); the provenance says so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .canonical import PART
from .registry import Dataset

PROFILE_DEFAULTS = {
    "parts": "default",
    "drop_missing": "default",
    "scale": "minmax",
    "row_norm": "none",
    "row_norm_radius": 1.0,
    "bias": 1.0,
    "target_scale": "minmax",
    "subsample": None,
}
PROFILE_CHOICES = {
    "scale": ("minmax", "none"),
    "row_norm": ("none", "unit", "clip"),
    "target_scale": ("minmax", "none"),
}
MISSING = "<missing>"


def resolve_profile(record: Dataset, options: dict | None) -> dict:
    """Fill defaults, resolve the ``default`` placeholders, and reject unknown or bad options."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(PROFILE_DEFAULTS))
    if unknown:
        raise ValueError(f"unknown preprocessing option(s) {unknown}; allowed: {sorted(PROFILE_DEFAULTS)}")
    prof = {**PROFILE_DEFAULTS, **options}
    for key, allowed in PROFILE_CHOICES.items():
        if prof[key] not in allowed:
            raise ValueError(f"preprocessing option {key}={prof[key]!r}; allowed: {list(allowed)}")
    all_parts = sorted({f.part for f in record.files})
    if prof["parts"] == "default":
        prof["parts"] = list(record.default_parts or all_parts)
    elif prof["parts"] == "all":
        prof["parts"] = all_parts
    bad = sorted(set(prof["parts"]) - set(all_parts))
    if bad or not prof["parts"]:
        raise ValueError(f"{record.key}: parts {bad or '[]'} unknown; this dataset has parts {all_parts}")
    if prof["drop_missing"] == "default":
        prof["drop_missing"] = record.drop_missing
    if not isinstance(prof["drop_missing"], bool):
        raise ValueError(f"drop_missing={prof['drop_missing']!r}; allowed: true, false, 'default'")
    for key in ("row_norm_radius", "bias"):
        value = prof[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
            raise ValueError(f"preprocessing option {key}={value!r}; allowed: a finite number >= 0")
    if prof["row_norm"] != "none" and prof["row_norm_radius"] <= 0:
        raise ValueError("row_norm_radius must be > 0 when row_norm is 'unit' or 'clip'")
    prof["row_norm_radius"] = float(prof["row_norm_radius"])
    prof["bias"] = float(prof["bias"])
    prof["subsample"] = _check_subsample(prof["subsample"])
    return prof


def _check_subsample(value):
    """``None`` or ``{"rows": m >= 1, "seed": s >= 0}`` (integers), else a ValueError naming it."""
    if value is None:
        return None

    def integer(x, low):
        return isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x >= low

    if not (isinstance(value, dict) and set(value) == {"rows", "seed"} and integer(value["rows"], 1)
            and integer(value["seed"], 0)):
        raise ValueError(f"preprocessing option subsample={value!r}; allowed: null or "
                         "{rows: <integer >= 1>, seed: <integer >= 0>}")
    return {"rows": int(value["rows"]), "seed": int(value["seed"])}


def _subsample(table: pd.DataFrame, subsample: dict | None, key: str) -> pd.DataFrame:
    """``subsample["rows"]`` rows of ``table`` drawn uniformly without replacement by a generator
    seeded with ``subsample["seed"]``, in their original order (the whole table when None)."""
    if subsample is None:
        return table
    m, n = subsample["rows"], len(table)
    if m > n:
        raise ValueError(f"{key}: subsample rows={m} but only {n} rows are left after parts and drop_missing")
    keep = np.sort(np.random.default_rng(subsample["seed"]).choice(n, size=m, replace=False))
    return table.iloc[keep]


def _labels(record: Dataset, target: pd.Series) -> np.ndarray:
    values = target.to_numpy(dtype=object)
    positive = np.isin(values, record.positive)
    if record.negative:
        known = positive | np.isin(values, record.negative)
        if not known.all():
            odd = sorted(set(values[~known].tolist()))[:5]
            raise ValueError(f"{record.key}: target values {odd} are neither positive {record.positive} "
                             f"nor negative {record.negative}")
    return positive.astype(np.int8)


def _minmax(block: np.ndarray) -> np.ndarray:
    """Columns mapped to [0, 1] by their own min and max; a constant column maps to 0."""
    lo, hi = block.min(axis=0), block.max(axis=0)
    span = hi - lo
    scaled = np.zeros_like(block)
    ok = span > 0
    scaled[:, ok] = (block[:, ok] - lo[ok]) / span[ok]
    return scaled


def encode(record: Dataset, table: pd.DataFrame, options: dict | None = None) -> tuple[dict, dict]:
    """Return ``(arrays, info)``: arrays for ``np.savez`` and facts for the provenance record."""
    prof = resolve_profile(record, options)
    info = {"n_raw": int(len(table))}
    table = table[table[PART].isin(prof["parts"]).to_numpy()]
    info["n_in_parts"] = int(len(table))
    missing = table[list(record.feature_names)].isna().any(axis=1).to_numpy()
    if prof["drop_missing"]:
        table = table[~missing]
    info["n_dropped_missing"] = int(missing.sum()) if prof["drop_missing"] else 0
    info["n_rows_with_missing_kept"] = 0 if prof["drop_missing"] else int(missing.sum())
    info["n_before_subsample"] = int(len(table))
    table = _subsample(table, prof["subsample"], record.key)

    blocks, names, num_cols = [], [], []
    for column in record.columns:
        values = table[column.name]
        if column.kind == "num":
            num_cols.append(len(names))
            blocks.append(values.to_numpy(dtype=np.float64)[:, None])
            names.append(column.name)
        else:
            codes, cats = pd.factorize(values.fillna(MISSING), sort=True)
            block = np.zeros((len(codes), len(cats)))
            block[np.arange(len(codes)), codes] = 1.0
            blocks.append(block)
            names.extend(f"{column.name}={c}" for c in cats)
    X = np.hstack(blocks) if blocks else np.empty((len(table), 0))
    if prof["scale"] == "minmax" and num_cols:
        X[:, num_cols] = _minmax(X[:, num_cols])

    norms = np.linalg.norm(X, axis=1)
    radius = prof["row_norm_radius"]
    if prof["row_norm"] != "none":
        factor = np.ones_like(norms)
        positive = norms > 0
        if prof["row_norm"] == "unit":
            factor[positive] = radius / norms[positive]
        else:
            long = norms > radius
            factor[long] = radius / norms[long]
        X *= factor[:, None]
    n_features = X.shape[1]
    if prof["bias"] > 0:
        X = np.hstack([np.full((X.shape[0], 1), prof["bias"]), X])
        names = ["bias"] + names

    arrays = {"X": np.ascontiguousarray(X), "columns": np.array(names), "part": table[PART].to_numpy(dtype=str)}
    target = table[record.target]
    if record.task == "classification":
        y01 = _labels(record, target)
        arrays["y01"] = y01
        arrays["ypm"] = (2 * y01 - 1).astype(np.int8)
        info["positive_rate"] = float(y01.mean()) if len(y01) else float("nan")
    else:
        y = target.to_numpy(dtype=np.float64)
        info["target_min"], info["target_max"] = float(y.min()), float(y.max())
        if prof["target_scale"] == "minmax":
            y = _minmax(y[:, None])[:, 0]
        arrays["y"] = y
    info.update(n=int(X.shape[0]), n_features=int(n_features), p=int(X.shape[1]),
                max_row_norm=float(np.linalg.norm(X, axis=1).max()) if len(X) else 0.0)
    return arrays, {"profile": prof, **info}
