"""Cell files cut from the files of runs that produce several cells at once.

A *row* (every target ε of one experiment, dataset, model and algorithm, run in one process) and
a *path* (every step count of a ``T<steps>`` algorithm, released along one run) each write one
records file; each of their cells is then the rows of one privacy setting (the ``setting``
column), copied with their text unchanged. This module imports only the standard library, so
that cutting a cell costs an interpreter start and no more.
"""

from __future__ import annotations

import csv
import io

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
