"""A short hash of dperm's own source files, used as a Snakemake ``params`` value so that a rule
reruns when the code it runs changes (Snakemake's own "code" trigger only sees ``run:`` and
``script:`` code, not a package called from ``shell:``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def source_fingerprint(*parts: str) -> str:
    """sha256 (first 16 hex digits) over the ``.py`` files of the named modules/subpackages."""
    digest = hashlib.sha256()
    for part in sorted(parts):
        path = PACKAGE / part
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]
        if not files or not all(f.is_file() for f in files):
            raise FileNotFoundError(f"no dperm source for {part!r} under {PACKAGE}")
        for f in files:
            digest.update(str(f.relative_to(PACKAGE)).encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
