"""Fetched raw files -> ``resources/prepared/{dataset}/{profile}.npz`` plus a provenance JSON.

The ``.npz`` holds ``X`` (float64, bias in column 0 when the profile adds one), ``columns``,
``part`` (file of origin per row), the labels: ``y01`` and ``ypm`` (int8) for classification,
``y`` (float64) for regression, and ``preprocessing`` (``data-dependent`` or ``public-bounds``,
:mod:`.encode`), which every run record on these arrays copies. The ``.json`` beside it records
where every byte came from (source file hashes), the resolved profile options, counts (with
public bounds: the declared bounds and how many values each clipped), and the dperm version.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .. import __version__
from ..files import DataFileError, atomic_path, read_content, sha256_bytes, write_json_atomic
from . import ucimlrepo as uci
from .canonical import canonical_from_files
from .encode import encode, resolve_profile
from .fetch import MANIFEST, downloads_allowed, mirror_file
from .records import Dataset


def load_canonical(record: Dataset, manifest_path: str | os.PathLike, parts=None):
    """The canonical table from a fetch manifest, re-verifying every stored file's content."""
    manifest_path = Path(manifest_path)
    manifest = json.loads(manifest_path.read_text())
    if manifest.get("dataset") != record.key:
        raise DataFileError(f"{manifest_path} is the manifest of {manifest.get('dataset')!r}, not {record.key!r}")
    directory = manifest_path.parent
    if manifest["source"] == "ucimlrepo":
        return uci.load_stored(record, directory), manifest
    contents = {}
    for entry in manifest["files"]:
        raw = next(f for f in record.files if f.name == entry["name"])
        if parts is not None and raw.part not in parts:
            continue
        content = read_content(directory / entry["stored"])
        actual = sha256_bytes(content)
        if actual != entry["sha256_content"]:
            raise DataFileError(f"{directory / entry['stored']} changed since it was fetched: expected "
                                f"sha256 {entry['sha256_content']}, got {actual}; delete {directory} and fetch again")
        contents[raw.name] = content
    return canonical_from_files(record, contents, parts=parts), manifest


def prepare(record: Dataset, manifest_path, out_npz, profile_name: str, options: dict | None) -> dict:
    """Build the arrays for one (dataset, profile) and write ``out_npz`` and its ``.json``."""
    prof = resolve_profile(record, options)
    table, manifest = load_canonical(record, manifest_path, parts=prof["parts"])
    arrays, info = encode(record, table, prof)
    provenance = {
        "dataset": record.key, "title": record.title, "task": record.task, "label": record.label,
        "profile_name": profile_name, **info,
        "columns_order": "registry column order; categorical columns one-hot as <col>=<value>, "
                         "values in sorted order; bias (if any) first",
        "caveats": caveats(record, prof, info),
        "source": {"kind": manifest["source"], "files": manifest["files"]},
        "arrays_sha256": {k: sha256_bytes(np.ascontiguousarray(v).tobytes()) for k, v in arrays.items()
                          if k not in ("columns", "preprocessing")},
        "dperm_version": __version__,
    }
    out_npz = Path(out_npz)
    with atomic_path(out_npz, suffix=".npz") as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
    write_json_atomic(provenance_path(out_npz), provenance)
    return provenance


def caveats(record: Dataset, prof: dict, info: dict) -> list[str]:
    """What a reader of the prepared data must know about its preprocessing's privacy."""
    out = []
    if "scaling_bounds" in info["read_from_data"]:
        out.append("min-max bounds are computed from the data (non-private preprocessing, "
                   "docs/privacy.md#data-dependent-choices)")
    if "target_bounds" in info["read_from_data"]:
        out.append("the regression target's min-max bounds are computed from the data (non-private "
                   "preprocessing, docs/privacy.md#data-dependent-choices)")
    if "categories" in info["read_from_data"]:
        out.append("one-hot categories are those the data hold (non-private preprocessing, "
                   "docs/privacy.md#data-dependent-choices)")
    if prof["scale"] == "public":
        clipped = sum(c["below"] + c["above"] for c in info.get("clipped", {}).values())
        out.append(f"numeric attributes scaled with the registry's public bounds, {clipped} value(s) clipped "
                   "to them (per attribute: 'clipped'); categories as documented (docs/privacy.md#public-bounds)")
    return out


def provenance_path(npz_path) -> Path:
    return Path(npz_path).with_suffix(".json")


def load_prepared(npz_path) -> tuple[dict, dict]:
    """Arrays and provenance of a prepared dataset."""
    with np.load(npz_path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    return arrays, json.loads(provenance_path(npz_path).read_text())


def availability(record: Dataset, raw_dir, mirror, mode: str) -> tuple[bool, str]:
    """Whether the workflow should plan to build ``record`` (decided at DAG time, no network).

    True when it was fetched already, when the mirror holds every file, or when downloads are
    allowed (a failed download then stops with the fetch error). False otherwise, with why.
    """
    if (Path(raw_dir) / MANIFEST).is_file():
        return True, "fetched"
    if record.parser == "synthetic":
        return True, "generated"
    if mirror is not None and all(mirror_file(mirror, f) for f in record.files):
        return True, f"in mirror {mirror}"
    if downloads_allowed(mode, mirror):
        return True, "to be downloaded"
    missing = [f.mirror_path for f in record.files if mirror is None or not mirror_file(mirror, f)]
    where = "the mirror" if mirror else "a mirror (none is configured)"
    # No mirror path or policy name in the text: it reaches the dataset table, and where the data
    # are looked for must not rerun what they are used for.
    return False, f"unavailable offline: {', '.join(missing)} not in {where} and downloads are off"
