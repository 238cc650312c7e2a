"""File helpers shared by every stage: atomic writes, content hashes, gzip-aware reading.

Every output of the pipeline is written through :func:`atomic_path` so that an interrupted or
failed job never leaves a file that looks complete: data goes to a temporary file in the same
directory, is flushed to disk, and only then renamed over the target (``os.replace`` is atomic
on POSIX within one file system).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

CHUNK = 1 << 20


class DataFileError(RuntimeError):
    """A raw data file is missing, corrupt, or not shaped as its registry record says."""


class FetchError(RuntimeError):
    """No source could supply the dataset; the message says what was tried and what to do.
    (Here, not in :mod:`dperm.datasets.fetch`, so that a command can catch it without importing
    the fetch machinery and pandas.)"""


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path next to ``target``; rename it onto ``target`` only on success.

    ``suffix`` keeps an extension that writers insist on (``np.savez`` appends ``.npz``).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix + ".part", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; outputs are ordinary files
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes_atomic(target: str | os.PathLike, data: bytes) -> None:
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)


def write_text_atomic(target: str | os.PathLike, text: str) -> None:
    write_bytes_atomic(target, text.encode("utf-8"))


def write_json_atomic(target: str | os.PathLike, obj) -> None:
    write_text_atomic(target, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def git_blob_sha1(data: bytes) -> str:
    """The id git gives a file's content: sha1 of ``b"blob <size>\\0" + data``.

    Lets us verify files whose upstream sha256 is unknown but whose git blob id is recorded
    (IPUMS-US in the DP-AGD repository).
    """
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def gunzip_if_gzip(data: bytes, origin: str = "data") -> bytes:
    """``data`` decompressed if it is gzip (by its magic bytes); corrupt gzip is an error."""
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        return gzip.decompress(data)
    except (EOFError, OSError, zlib.error) as exc:
        raise DataFileError(f"corrupt or truncated gzip in {origin}: {exc}. Delete it and fetch it again.") from exc


def read_content(path: str | os.PathLike) -> bytes:
    """The file's content, decompressed if it is gzip; corrupt or truncated gzip is an error."""
    path = Path(path)
    if not path.exists():
        raise DataFileError(f"file not found: {path}")
    return gunzip_if_gzip(path.read_bytes(), str(path))


def gzip_bytes(data: bytes) -> bytes:
    """Deterministic gzip (no name, no timestamp), so equal content gives equal bytes."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=6, mtime=0, filename="") as fh:
        fh.write(data)
    return buf.getvalue()
