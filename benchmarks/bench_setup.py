"""What every benchmark does before numpy loads: pin the BLAS/OpenMP threads, and find the package
(installed, or this checkout's src/ when it is not)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def prepare(threads: int) -> None:
    """Pin BLAS/OpenMP to ``threads`` (call it before numpy is imported) and make ``dperm``
    importable."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    try:
        import dperm  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(ROOT / "src"))
