"""Raw files -> the canonical table.

The canonical table is the meeting point of the two ways a dataset can arrive (the original
files from a mirror or HTTPS, or ucimlrepo's standardised frames, see ``ucimlrepo.py``): one row
per record, the registry's feature columns in registry order (numeric columns float64,
categorical columns pandas ``string`` with ``<NA>`` for a missing value), the raw target as a
string (classification) or float64 (regression), and ``_part`` naming the file of origin.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from ..files import DataFileError
from .records import Dataset, RawFile

PART = "_part"


def _norm(name: str) -> str:
    return name.strip().strip('"').lower().replace(" ", "_")


def _data_lines(content: bytes, record: Dataset) -> list[bytes]:
    lines = content.splitlines()
    if record.header and lines:
        lines = lines[1:]
    # adult.test opens with the comment line "|1x3 Cross validator"; files end with blank lines.
    return [ln for ln in lines if ln.strip() and not ln.startswith(b"|")]


def check_field_counts(content: bytes, record: Dataset, raw: RawFile, check_rows: bool = True) -> int:
    """Every line (header included) has the registry's number of fields; returns data rows.

    Checked on the bytes, before pandas parses them, because pandas silently pads a short line
    with NaN. None of these files quotes a separator, so counting separators is exact.
    """
    expected = len(record.file_columns)
    lines = content.splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.startswith(b"|"):
            continue
        fields = len(line.split()) if record.parser == "dat" else line.count(record.sep.encode()) + 1
        if fields != expected:
            raise DataFileError(
                f"{raw.name}: line {number} has {fields} fields, expected {expected} "
                f"({', '.join(record.file_columns)}); the file is not the {record.title} file "
                "the registry describes, or it is damaged"
            )
    rows = len(_data_lines(content, record))
    if check_rows and raw.rows is not None and rows != raw.rows:
        raise DataFileError(f"{raw.name}: {rows} data rows, expected {raw.rows}")
    return rows


def read_raw_file(record: Dataset, raw: RawFile, content: bytes, check_rows: bool = True) -> pd.DataFrame:
    """Parse one raw file into a frame with the registry's column names (not yet canonical)."""
    if record.parser == "synthetic":
        from .synthetic import read_raw

        frame = read_raw(content, record.feature_names, record.target)
        frame[PART] = raw.part
        return frame
    check_field_counts(content, record, raw, check_rows)
    names = list(record.file_columns)
    if record.parser == "dat":
        frame = pd.read_csv(io.BytesIO(content), sep=r"\s+", header=None, names=names, dtype=np.float64)
    else:
        header = 0 if record.header else None
        kinds = {c.name: c.kind for c in record.columns}
        dtypes = {n: (np.float64 if kinds.get(n) == "num" else str) for n in names if n not in record.drop}
        frame = pd.read_csv(
            io.BytesIO(content), sep=record.sep, header=header, names=names if header is None else None,
            dtype=None if header == 0 else dtypes, skipinitialspace=record.parser == "adult",
            comment="|" if record.parser == "adult" else None, keep_default_na=False,
            na_values=[], quotechar='"',
        )
        if header == 0:
            frame = _rename_by_header(frame, record, raw)
    frame[PART] = raw.part
    return frame


def _rename_by_header(frame: pd.DataFrame, record: Dataset, raw: RawFile) -> pd.DataFrame:
    by_norm = {_norm(n): n for n in record.file_columns}
    found = {_norm(c) for c in frame.columns}
    missing = sorted(set(by_norm) - found)
    unexpected = sorted(found - set(by_norm))
    if missing or unexpected:
        raise DataFileError(
            f"{raw.name}: header does not match the registry: missing {missing}, unexpected {unexpected}"
        )
    return frame.rename(columns={c: by_norm[_norm(c)] for c in frame.columns})


def _category_strings(col: pd.Series) -> pd.Series:
    """Categorical values as strings; integral numbers print without a decimal point."""
    if pd.api.types.is_numeric_dtype(col):
        values = col.to_numpy(dtype=np.float64)
        if np.all(np.isnan(values) | (values == np.round(values))):
            text = [None if np.isnan(v) else str(int(v)) for v in values]
        else:
            text = [None if np.isnan(v) else repr(float(v)) for v in values]
        return pd.Series(text, index=col.index, dtype="string")
    return col.astype("string").str.strip()


def finalize(record: Dataset, frame: pd.DataFrame) -> pd.DataFrame:
    """Bring a parsed frame to the canonical dtypes, column order and missing-value marker."""
    out = {}
    for column in record.columns:
        if column.name == record.part_column:
            out[column.name] = frame[PART].astype("string")
            continue
        values = frame[column.name]
        if column.kind == "num":
            numeric = pd.to_numeric(values, errors="coerce")
            bad = numeric.isna() & values.notna()
            if bad.any():
                row = int(np.flatnonzero(bad.to_numpy())[0])
                raise DataFileError(
                    f"{record.key}: column {column.name!r} must be numeric, row {row} holds {values.iloc[row]!r}"
                )
            out[column.name] = numeric.astype(np.float64)
        else:
            text = _category_strings(values)
            if record.missing_marker is not None:
                text = text.mask(text == record.missing_marker)
            out[column.name] = text
    target = frame[record.target]
    if record.task == "regression":
        out[record.target] = pd.to_numeric(target).astype(np.float64)
    else:
        text = _category_strings(target)
        if record.strip_target_period:
            text = text.str.rstrip(".")
        out[record.target] = text
    out[PART] = frame[PART].astype("string")
    table = pd.DataFrame(out)
    table.index = pd.RangeIndex(len(table))
    return table


def canonical_from_files(record: Dataset, contents: dict[str, bytes], parts=None,
                         check_rows: bool = True) -> pd.DataFrame:
    """The canonical table from the original files' contents, keyed by ``RawFile.name``.

    ``parts`` restricts the table to some parts (files), saving the parse of unused ones;
    ``check_rows=False`` accepts files of any length (slices of the real files, in tests).
    """
    frames = []
    for raw in record.files:
        if parts is not None and raw.part not in parts:
            continue
        if raw.name not in contents:
            raise DataFileError(f"{record.key}: file {raw.name} was not fetched")
        frames.append(read_raw_file(record, raw, contents[raw.name], check_rows))
    return finalize(record, pd.concat(frames, ignore_index=True))
