"""Fetch a dataset's raw files: from a local mirror, or by download (ucimlrepo, then HTTPS).

Sources are tried in order and every attempt is recorded. A file is used only if its content
verifies (sha256, else git blob id, else -- when upstream publishes neither -- its row count,
marked ``unverified``). Nothing is written until every file of the dataset has verified; then
the files are written atomically and the manifest ``fetch.json`` last, so a failed or
interrupted fetch leaves nothing that looks complete.

Download policy (``data.download``): ``auto`` downloads only when no mirror is configured,
``always`` tries the mirror first and then downloads, ``never`` uses the mirror only.
The mirror is ``$DPERM_DATA_MIRROR`` if set, else the ``data.mirror`` config key.
"""

from __future__ import annotations

import io
import logging
import os
import urllib.request
import zipfile
from pathlib import Path

from .. import __version__
from ..files import (
    DataFileError,
    FetchError,
    git_blob_sha1,
    gunzip_if_gzip,
    gzip_bytes,
    sha256_bytes,
    write_bytes_atomic,
    write_json_atomic,
)
from . import ucimlrepo as uci
from .canonical import check_field_counts
from .records import Dataset, RawFile

log = logging.getLogger(__name__)

MIRROR_ENV = "DPERM_DATA_MIRROR"
DOWNLOAD_MODES = ("auto", "always", "never")
MANIFEST = "fetch.json"


def resolve_mirror(configured: str | None, given: str | None = None) -> Path | None:
    """The mirror directory in use, or None; a named directory that does not exist is an error.
    ``given`` (a command-line option) wins over ``$DPERM_DATA_MIRROR``, which wins over
    ``configured`` (the config's data.mirror); an environment value set aside is logged."""
    from_env = os.environ.get(MIRROR_ENV)
    if given:
        if from_env and from_env != given:
            log.warning("--mirror %s is used, not $%s=%s", given, MIRROR_ENV, from_env)
        value, origin = given, "--mirror"
    else:
        value, origin = (from_env, f"${MIRROR_ENV}") if from_env else (configured, "data.mirror")
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        raise FetchError(f"the data mirror {str(path)!r} (from {origin}) does not exist or is not a "
                         "directory; point it at a directory holding each raw file at its registry mirror path "
                         "(adult/adult.data, bank/bank-full.csv, ...)")
    return path.resolve()


def downloads_allowed(mode: str, mirror: Path | None) -> bool:
    if mode not in DOWNLOAD_MODES:
        raise ValueError(f"data.download={mode!r}; allowed: {list(DOWNLOAD_MODES)}")
    return mode == "always" or (mode == "auto" and mirror is None)


def mirror_file(mirror: Path, raw: RawFile) -> Path | None:
    for candidate in (mirror / raw.mirror_path, mirror / (raw.mirror_path + ".gz")):
        if candidate.is_file():
            return candidate
    return None


def verify(record: Dataset, raw: RawFile, content: bytes, origin: str) -> str:
    """Return how ``content`` was verified; raise DataFileError if it does not match."""
    if raw.sha256 is not None:
        actual = sha256_bytes(content)
        if actual != raw.sha256:
            raise DataFileError(f"checksum mismatch for {raw.name} from {origin}: expected sha256 "
                                f"{raw.sha256}, got {actual}; the file was not used")
        return "sha256"
    if raw.git_blob is not None:
        actual = git_blob_sha1(content)
        if actual != raw.git_blob:
            raise DataFileError(f"checksum mismatch for {raw.name} from {origin}: expected git blob "
                                f"{raw.git_blob}, got {actual}; the file was not used")
        return "git-blob"
    check_field_counts(content, record, raw)
    return "unverified (row and field counts only)"


def http_get(url: str, timeout: float) -> bytes:
    """GET ``url`` (``a.zip#member#member`` opens zip members); gzip bodies are decompressed."""
    base, *members = url.split("#")
    request = urllib.request.Request(base, headers={"User-Agent": f"dperm/{__version__}"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        data = response.read()
    for member in members:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            data = archive.read(member)
    return gunzip_if_gzip(data, url)


def _from_mirror(record: Dataset, mirror: Path, attempts: list[str]) -> dict | None:
    staged = {}
    for raw in record.files:
        path = mirror_file(mirror, raw)
        if path is None:
            attempts.append(f"mirror {mirror}: {raw.mirror_path} (or .gz) not found")
            return None
        data = path.read_bytes()
        try:
            content = gunzip_if_gzip(data, str(path))
            how = verify(record, raw, content, str(path))
        except DataFileError as exc:
            attempts.append(f"mirror {mirror}: {exc}")
            return None
        # a gzipped mirror file is stored as it is; a plain one is gzipped
        staged[raw.name + ".gz"] = data if content is not data else gzip_bytes(content)
        staged.setdefault("_files", []).append(
            {"name": raw.name, "stored": raw.name + ".gz", "origin": str(path), "verified": how,
             "sha256_content": sha256_bytes(content)})
    return staged


def _from_https(record: Dataset, timeout: float, attempts: list[str]) -> dict | None:
    staged = {"_files": []}
    for raw in record.files:
        for url in raw.urls:
            try:
                content = http_get(url, timeout)
                how = verify(record, raw, content, url)
            except (OSError, zipfile.BadZipFile, KeyError, DataFileError) as exc:
                attempts.append(f"download {url}: {exc}")
                continue
            staged[raw.name + ".gz"] = gzip_bytes(content)
            staged["_files"].append({"name": raw.name, "stored": raw.name + ".gz", "origin": url,
                                     "verified": how, "sha256_content": sha256_bytes(content)})
            break
        else:
            if not raw.urls:
                attempts.append(f"download: no public URL is known for {raw.name}")
            return None
    return staged


def _from_ucimlrepo(record: Dataset, attempts: list[str]) -> dict | None:
    try:
        files = uci.download(record)
        # Parse before accepting: a frame that cannot become the canonical table is useless.
        uci.canonical_from_ucimlrepo(record, *uci.deserialise(files))
    except Exception as exc:  # network, API and schema failures all mean "try the next source"
        attempts.append(f"ucimlrepo id={record.uci_id}: {type(exc).__name__}: {exc}")
        return None
    return {**files, "_files": [{"name": n, "stored": n, "origin": f"ucimlrepo id={record.uci_id}",
                                 "verified": "parsed into the canonical table",
                                 "sha256_content": sha256_bytes(gunzip_if_gzip(b, n))}
                                for n, b in files.items()]}


def _generated(record: Dataset) -> dict:
    """A synthetic dataset's raw array, generated from its name (no mirror, no network)."""
    from .synthetic import raw_bytes

    (raw,) = record.files
    content = raw_bytes(record.key)
    return {raw.name: content, "_files": [{"name": raw.name, "stored": raw.name, "origin": "generated",
                                           "verified": "generated from its name (seeded)",
                                           "sha256_content": sha256_bytes(content)}]}


def _advice(record: Dataset, mirror: Path | None, mode: str) -> str:
    where = ", ".join(f"{f.mirror_path}(.gz)" for f in record.files)
    place = f"under {mirror}" if mirror else f"in a directory (paths relative to it), and set ${MIRROR_ENV} to it"
    online = ("" if downloads_allowed(mode, mirror) or mode == "never" else
              f" Or, when online, set data.download: always to download from {', '.join(record.sources[:2])}.")
    return f"To supply it, put {where} {place}.{online}"


def fetch(record: Dataset, dest: str | os.PathLike, mirror: Path | None, mode: str = "auto",
          timeout: float = 60.0) -> dict:
    """Fetch ``record`` into directory ``dest``; return (and write, last) its manifest."""
    dest = Path(dest)
    attempts: list[str] = []
    staged, source = None, None
    if record.parser == "synthetic":
        staged, source = _generated(record), "synthetic"
    elif mirror is not None:
        staged, source = _from_mirror(record, mirror, attempts), "mirror"
    if staged is None and downloads_allowed(mode, mirror):
        if record.ucimlrepo:
            staged, source = _from_ucimlrepo(record, attempts), "ucimlrepo"
        if staged is None:
            staged, source = _from_https(record, timeout, attempts), "https"
    elif staged is None:
        why = "data.download is 'never'" if mode == "never" else "data.download is 'auto' and a mirror is configured"
        attempts.append(f"download: not tried ({why})")
    if staged is None:
        tried = "\n".join(f"  - {a}" for a in attempts)
        raise FetchError(f"dataset {record.key!r} ({record.title}) could not be fetched. Tried:\n{tried}\n"
                         + _advice(record, mirror, mode))
    files = staged.pop("_files")
    for name, data in staged.items():
        write_bytes_atomic(dest / name, data)
    manifest = {"dataset": record.key, "source": source, "files": files, "attempts_failed": attempts,
                "dperm_version": __version__}
    write_json_atomic(dest / MANIFEST, manifest)
    return manifest
