"""What a dataset's registry record says: its raw files (hashes, mirror paths, URLs), its
columns and its label. The records themselves are in :mod:`.registry` (real datasets) and
:mod:`.synthetic` (seeded data named by their shape); both build these types.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RawFile:
    name: str  # upstream file name of the content (e.g. "adult.data")
    mirror_path: str  # path inside the data mirror (e.g. "adult/adult.data"); ".gz" is also accepted
    part: str  # which part of the dataset this file holds ("train", "test", "red", ...)
    rows: int | None  # data rows (header/comment lines excluded); None when unknown
    sha256: str | None  # of the decompressed content; None when no hash is published
    urls: tuple[str, ...] = ()
    git_blob: str | None = None  # git blob id, a second way to verify the content


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # "num" (min-max scaled) or "cat" (one-hot encoded)


@dataclass(frozen=True)
class Dataset:
    key: str
    title: str
    task: str  # "classification" or "regression"
    files: tuple[RawFile, ...]
    parser: str  # "adult", "csv" or "dat" (see dperm.datasets.canonical)
    columns: tuple[Column, ...]  # features, in file order, after `drop`
    target: str
    label: str  # human-readable target definition
    positive: tuple[str, ...] = ()  # raw target values that are the positive class
    negative: tuple[str, ...] = ()  # raw target values that are the negative class
    sep: str = ","
    header: bool = True
    drop: tuple[str, ...] = ()  # raw columns that are neither features nor target
    missing_marker: str | None = None  # how the raw files write a missing value
    drop_missing: bool = False  # default: drop rows with a missing value
    part_column: str | None = None  # a feature whose value is the file of origin (wine colour)
    strip_target_period: bool = False  # "<=50K." / "smurf." -> "<=50K" / "smurf"
    default_parts: tuple[str, ...] | None = None  # parts used unless a profile says otherwise
    uci_id: int | None = None
    ucimlrepo: dict | None = None  # how to read ucimlrepo's standardised frames (see ucimlrepo.py)
    notes: str = ""

    @property
    def feature_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def categorical(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.kind == "cat")

    @property
    def file_columns(self) -> tuple[str, ...]:
        """Columns a raw file holds: features (less the part column), target, dropped ones."""
        feats = tuple(n for n in self.feature_names if n != self.part_column)
        return feats + (self.target,) + self.drop

    @property
    def sources(self) -> list[str]:
        out = [f"ucimlrepo (UCI id {self.uci_id})"] if self.ucimlrepo else []
        return out + [u for f in self.files for u in f.urls]
