"""A stand-in for ``ucimlrepo.fetch_ucirepo``'s return value, built from real files.

It imitates what ucimlrepo serves for each dataset (UCI's standardised CSV): the column names
UCI uses, NaN where UCI writes a missing value, the test/colour information folded into the
rows, and a ``variables`` frame with each column's role. It parses the raw bytes with plain
pandas calls of its own, not with dperm's parser, so the equivalence test is not circular.
"""

from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import pandas as pd

ADULT_NAMES = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
               "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
               "hours-per-week", "native-country", "income"]


def head_lines(content: bytes, rows: int, keep: int = 0) -> bytes:
    """The first ``keep`` lines (header/comment) and then ``rows`` data lines of a raw file."""
    lines = content.splitlines(keepends=True)
    return b"".join(lines[: keep + rows])


def _variables(roles: dict[str, str], frame: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for name in frame.columns:
        kind = "Continuous" if pd.api.types.is_float_dtype(frame[name]) else (
            "Integer" if pd.api.types.is_integer_dtype(frame[name]) else "Categorical")
        rows.append({"name": name, "role": roles.get(name, "Feature"), "type": kind,
                     "demographic": None, "description": None, "units": None,
                     "missing_values": "yes" if frame[name].isna().any() else "no"})
    return pd.DataFrame(rows)


def result(original: pd.DataFrame, roles: dict[str, str]):
    """Shape a frame like ucimlrepo's dotdict: data.{ids,features,targets,original}, variables."""
    variables = _variables(roles, original)
    pick = lambda role: (original[[n for n in original.columns if roles.get(n, "Feature") == role]]
                         if any(roles.get(n, "Feature") == role for n in original.columns) else None)
    data = SimpleNamespace(ids=pick("ID"), features=pick("Feature"), targets=pick("Target"),
                           original=original, headers=original.columns)
    return SimpleNamespace(data=data, metadata=SimpleNamespace(), variables=variables)


def adult(train: bytes, test: bytes):
    frames = []
    for content, skip in ((train, 0), (test, 1)):
        frames.append(pd.read_csv(io.BytesIO(content), header=None, names=ADULT_NAMES,
                                  skipinitialspace=True, skiprows=skip))
    frame = pd.concat(frames, ignore_index=True)
    # UCI's CSV writes most missing values as NaN but left some '?' in place: imitate both.
    for i, name in enumerate(["workclass", "occupation", "native-country"]):
        missing = frame[name] == "?"
        frame.loc[missing & (np.arange(len(frame)) % 2 == i % 2), name] = np.nan
    return result(frame, {"income": "Target"})


def bank(content: bytes):
    frame = pd.read_csv(io.BytesIO(content), sep=";")
    frame = frame.rename(columns={"day": "day_of_week"})
    for name in ["job", "education", "contact", "poutcome"]:
        frame.loc[frame[name] == "unknown", name] = np.nan
    return result(frame, {"y": "Target"})


def wine(red: bytes, white: bytes):
    frames = []
    for content, colour in ((red, "red"), (white, "white")):
        frame = pd.read_csv(io.BytesIO(content), sep=";")
        frame.columns = [c.replace(" ", "_") for c in frame.columns]
        frame["color"] = colour
        frames.append(frame)
    return result(pd.concat(frames, ignore_index=True), {"quality": "Target", "color": "Other"})


def bike(content: bytes):
    frame = pd.read_csv(io.BytesIO(content))
    return result(frame, {"instant": "ID", "casual": "Other", "registered": "Other", "cnt": "Target"})


def credit(content: bytes):
    frame = pd.read_csv(io.BytesIO(content))
    names = ["ID"] + [f"X{j}" for j in range(1, 24)] + ["Y"]
    frame.columns = names
    return result(frame, {"ID": "ID", "Y": "Target"})
