"""ucimlrepo's standardised frames -> the canonical table, and the network call itself.

``ucimlrepo.fetch_ucirepo(id=...)`` returns ``data.original`` (every column), ``data.features``,
``data.targets``, ``data.ids`` and a ``variables`` frame (name, role, type, ...). Its columns and
values differ from the original files in small ways the registry records per dataset:

* renamed columns (Bank's day of month is called ``day_of_week``; the credit data's features are
  ``X1..X23`` and its target ``Y`` -- mapped by position, using the ``role`` column);
* missing values written as NaN (Bank's ``unknown`` category; Adult's ``?``, partly);
* the file of origin folded into the rows (Adult's test rows keep the ``.`` after their label;
  Wine has a ``color`` column).

What comes back is stored as it came (``ucimlrepo-original.csv.gz`` and ``-variables.csv``) and
converted here, so that a fetched copy can be prepared again without the network.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from ..files import DataFileError, gunzip_if_gzip, gzip_bytes
from .canonical import PART, finalize
from .records import Dataset

ORIGINAL = "ucimlrepo-original.csv.gz"
VARIABLES = "ucimlrepo-variables.csv"


def _renames(record: Dataset, original: pd.DataFrame, variables: pd.DataFrame) -> dict[str, str]:
    rule = record.ucimlrepo["columns"]
    if rule != "by_position":
        return dict(rule)
    roles = variables.set_index("name")["role"]
    features = [n for n in original.columns if roles.get(n) == "Feature"]
    targets = [n for n in original.columns if roles.get(n) == "Target"]
    ids = [n for n in original.columns if roles.get(n) == "ID"]
    expected = (len(record.feature_names), 1, len(record.drop))
    if (len(features), len(targets), len(ids)) != expected:
        raise DataFileError(
            f"{record.key}: ucimlrepo returned {len(features)} features, {len(targets)} targets and "
            f"{len(ids)} ids; the registry expects {expected}"
        )
    pairs = zip(features + targets + ids, list(record.feature_names) + [record.target] + list(record.drop))
    return dict(pairs)


def canonical_from_ucimlrepo(record: Dataset, original: pd.DataFrame, variables: pd.DataFrame,
                             check_rows: bool = True) -> pd.DataFrame:
    """The canonical table from ucimlrepo's ``data.original`` and ``variables`` frames."""
    if not record.ucimlrepo:
        raise DataFileError(f"{record.key}: the registry has no ucimlrepo mapping for this dataset")
    frame = original.rename(columns=_renames(record, original, variables))
    needed = [n for n in record.file_columns if n not in record.drop] + (
        [record.part_column] if record.part_column else [])
    absent = [n for n in needed if n not in frame.columns]
    if absent:
        raise DataFileError(f"{record.key}: ucimlrepo frame lacks columns {absent}; it has {list(frame.columns)}")
    frame = frame[needed].copy()

    nan_means = record.ucimlrepo.get("nan_means")
    if nan_means is not None:
        for name in record.categorical:
            frame[name] = frame[name].astype("string").fillna(nan_means)

    if record.part_column:
        frame[PART] = frame[record.part_column].astype("string").str.strip()
    elif record.strip_target_period:
        # Adult: ucimlrepo concatenates adult.data and adult.test; test labels keep their ".".
        labels = frame[record.target].astype("string").str.strip()
        frame[PART] = np.where(labels.str.endswith(".").to_numpy(dtype=bool), "test", "train")
    else:
        frame[PART] = record.files[0].part

    table = finalize(record, frame)
    if check_rows:
        expected = {f.part: f.rows for f in record.files}
        found = table[PART].value_counts().to_dict()
        if any(found.get(part, 0) != rows for part, rows in expected.items() if rows is not None):
            raise DataFileError(f"{record.key}: ucimlrepo rows per part {found}, expected {expected}")
    return table


def download(record: Dataset) -> dict[str, bytes]:
    """Fetch through ucimlrepo (network) and serialise what it returns, as files to store."""
    from ucimlrepo import fetch_ucirepo  # imported here: only the online path needs it

    result = fetch_ucirepo(id=record.uci_id)
    return serialise(result.data.original, result.variables)


def serialise(original: pd.DataFrame, variables: pd.DataFrame) -> dict[str, bytes]:
    return {
        ORIGINAL: gzip_bytes(original.to_csv(index=False).encode("utf-8")),
        VARIABLES: variables.to_csv(index=False).encode("utf-8"),
    }


def deserialise(files: dict[str, bytes]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The (original, variables) frames back from what ``serialise`` wrote."""
    original = pd.read_csv(io.BytesIO(gunzip_if_gzip(files[ORIGINAL], ORIGINAL)), low_memory=False)
    return original, pd.read_csv(io.BytesIO(gunzip_if_gzip(files[VARIABLES], VARIABLES)))


def load_stored(record: Dataset, directory, check_rows: bool = True) -> pd.DataFrame:
    """The canonical table from a stored ucimlrepo fetch (see ``serialise``)."""
    files = {name: (directory / name).read_bytes() for name in (ORIGINAL, VARIABLES)}
    return canonical_from_ucimlrepo(record, *deserialise(files), check_rows=check_rows)
