"""Run records: the JSON columns of a record, and cell files cut from a job's records.

A *job* (every target ε of one experiment, dataset, model and algorithm, the step counts of a
path released along one run, or a lone non-private cell) writes one records file; each of its
cells is then the rows of one privacy setting (the ``setting`` column), copied with their text
unchanged. This module imports only the standard library, so that cutting a cell costs an
interpreter start and no more.

Two columns hold JSON objects (keys sorted): ``hyper``, every hyper-parameter of the fit with
the value it ran with (defaults and tuned values included), and ``extra``, what the algorithm
reports beyond the standard columns (its ``FitResult.extra``; per-draw values are that draw's).
"""

from __future__ import annotations

import csv
import io
import json
import math

from .files import write_text_atomic


def cut_cell(source, out, setting: str) -> int:
    """Write the records of ``source`` whose ``setting`` is ``setting`` to ``out`` (header
    first, atomically); return how many there are. Raises if there are none, naming the
    settings the file has."""
    with open(source, newline="") as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise ValueError(f"{source} is empty; expected a records file with a header") from None
        if "setting" not in header:
            raise ValueError(f"{source} has no 'setting' column; its columns are {header}")
        column = header.index("setting")
        rows, seen = [], set()
        for row in reader:
            seen.add(row[column])
            if row[column] == setting:
                rows.append(row)
    if not rows:
        raise ValueError(f"{source} has no records at setting {setting!r}; it has {sorted(seen)}")
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows([header, *rows])
    write_text_atomic(out, text.getvalue())
    return len(rows)


def _plain(value, draw: int | None, draws: int, key: str):
    """A JSON-able value: numpy scalars as Python numbers, mappings recursively, non-finite floats
    as the strings 'inf', '-inf', 'nan'. With ``draw`` set, a sequence of ``draws`` values (one
    per draw) becomes its ``draw``-th element and one of length 1 its element; other sequences
    must hold scalars. Anything else is an error naming ``key``."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # numpy arrays and scalars
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        if draw is not None and len(value) in (draws, 1):
            return _plain(value[draw if len(value) == draws else 0], draw, draws, key)
        if all(isinstance(v, (str, int, float, bool)) or v is None for v in value):
            return [_plain(v, None, draws, key) for v in value]
        raise ValueError(f"{key!r} holds a sequence of {len(value)} non-scalar values that is not one per draw "
                         f"({draws}); records hold scalars and per-draw values only")
    if isinstance(value, dict):
        return {str(k): _plain(v, draw, draws, f"{key}.{k}") for k, v in value.items()}
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    raise ValueError(f"{key!r} has a value of type {type(value).__name__}, which a record cannot hold")


def record_json(mapping: dict, draw: int | None = None, draws: int = 1) -> str:
    """``mapping`` as one JSON object (sorted keys, compact); with ``draw``, per-draw values are
    that draw's (:func:`_plain`)."""
    return json.dumps({str(k): _plain(v, draw, draws, str(k)) for k, v in mapping.items()},
                      sort_keys=True, separators=(",", ":"))
