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
   rows (``scale: minmax``; a constant column becomes 0), or with its declared public bound,
   values outside it clipped and counted (``scale: public``, :mod:`.bounds`), or left raw
   (``scale: none``); a categorical column becomes one 0/1 column per category, named
   ``<col>=<value>``, categories in sorted string order: those the data hold, or with ``scale:
   public`` those the documentation lists (plus ``<missing>`` when the files mark missing values
   and rows with one are kept).
5. ``row_norm``: ``unit`` rescales every row to norm ``row_norm_radius``; ``clip`` rescales only
   rows longer than that; ``none`` leaves rows alone.
6. ``bias``: a value b > 0 prepends the constant column b (column 0, named ``bias``); 0 adds none.
   The bias is added after step 5, so rows then have norm at most sqrt(radius^2 + b^2).

Min-max bounds and category lists taken from the data themselves (the papers' preprocessing) are
a non-private use of the data (docs/privacy.md#data-dependent-choices). Every prepared array set
says which it was, in its ``preprocessing`` entry: ``data-dependent`` when any scaling bound or
category list was read from the data, ``public-bounds`` when none was (every bound and category
list declared, docs/privacy.md#public-bounds). Run records copy it from there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .bounds import public_schema, scale_public
from .canonical import PART
from .records import Dataset

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
    "scale": ("minmax", "public", "none"),
    "row_norm": ("none", "unit", "clip"),
    "target_scale": ("minmax", "public", "none"),
}
MISSING = "<missing>"
# The ``preprocessing`` label of prepared arrays and run records.
DATA_DEPENDENT, PUBLIC_BOUNDS = "data-dependent", "public-bounds"
PREPROCESSING = (DATA_DEPENDENT, PUBLIC_BOUNDS)


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
    if prof["scale"] == "public" or prof["target_scale"] == "public":
        public_schema(record, target=record.task == "regression" and prof["target_scale"] == "public",
                      numeric=prof["scale"] == "public")
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


def _one_hot(record: Dataset, name: str, values: pd.Series, listed) -> tuple[np.ndarray, list]:
    """A categorical column as 0/1 columns, categories in sorted order: those in ``values``, or
    the declared ones ``listed`` (a value outside them is an error naming it)."""
    values = values.fillna(MISSING)
    if listed is None:
        codes, cats = pd.factorize(values, sort=True)
    else:
        cats = sorted(listed)
        codes = pd.Index(cats).get_indexer(values.to_numpy(dtype=object))
        if (codes < 0).any():
            odd = sorted(set(values[codes < 0].tolist()))[:5]
            raise ValueError(f"{record.key}: column {name!r} holds {odd}, which its documented categories "
                             f"{cats} do not list (docs/privacy.md#public-bounds)")
    block = np.zeros((len(codes), len(cats)))
    block[np.arange(len(codes)), codes] = 1.0
    return block, list(cats)


def encode(record: Dataset, table: pd.DataFrame, options: dict | None = None) -> tuple[dict, dict]:
    """Return ``(arrays, info)``: arrays for ``np.savez`` and facts for the provenance record."""
    prof = resolve_profile(record, options)
    public = prof["scale"] == "public"
    target_public = record.task == "regression" and prof["target_scale"] == "public"
    bounds, listed, target_bound = (public_schema(record, target=target_public, numeric=public)
                                    if public or target_public else ([], {}, None))
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

    blocks, names, num_cols, num_names = [], [], [], []
    for column in record.columns:
        values = table[column.name]
        if column.kind == "num":
            num_cols.append(len(names))
            num_names.append(column.name)
            blocks.append(values.to_numpy(dtype=np.float64)[:, None])
            names.append(column.name)
        else:
            declared = None
            if public:
                # <missing> where the registry says the files mark missing values and rows with
                # them are kept: a public fact, whatever rows hold one.
                kept = record.missing_marker is not None and not prof["drop_missing"]
                declared = list(listed[column.name]) + ([MISSING] if kept else [])
            block, cats = _one_hot(record, column.name, values, declared)
            blocks.append(block)
            names.extend(f"{column.name}={c}" for c in cats)
    X = np.hstack(blocks) if blocks else np.empty((len(table), 0))
    if prof["scale"] == "minmax" and num_cols:
        X[:, num_cols] = _minmax(X[:, num_cols])
    elif public and num_cols:
        X[:, num_cols], below, above = scale_public(X[:, num_cols], bounds)
        info["clipped"] = {name: {"below": int(b), "above": int(a)}
                           for name, b, a in zip(num_names, below, above)}
        info["bounds"] = {name: bound.as_dict() for name, bound in zip(num_names, bounds)}
    from_data = {
        "scaling_bounds": bool(num_cols) and prof["scale"] == "minmax",
        "target_bounds": record.task == "regression" and prof["target_scale"] == "minmax",
        "categories": not public and bool(record.categorical),
    }

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
        elif target_public:
            scaled, below, above = scale_public(y[:, None], [target_bound])
            y = scaled[:, 0]
            info["target_clipped"] = {"below": int(below[0]), "above": int(above[0])}
            info["target_bound"] = target_bound.as_dict()
        arrays["y"] = y
    label = DATA_DEPENDENT if any(from_data.values()) else PUBLIC_BOUNDS
    arrays["preprocessing"] = np.array(label)
    info.update(n=int(X.shape[0]), n_features=int(n_features), p=int(X.shape[1]),
                max_row_norm=float(np.linalg.norm(X, axis=1).max()) if len(X) else 0.0,
                preprocessing=label, read_from_data=[k for k, v in from_data.items() if v])
    return arrays, {"profile": prof, **info}
