"""A short hash of dperm's own source files, used as a Snakemake ``params`` value so that a rule
reruns when the code it runs changes (Snakemake's own "code" trigger only sees ``run:`` and
``script:`` code, not a package called from ``shell:``)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


@functools.cache
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


# What every cell runs whatever its algorithm: the protocol, the objects handed to the
# algorithm (the problem, its loss, the solvers) and its draws' generators (rngs). Anything else
# an algorithm uses (a privacy mechanism, an accountant, a helper module) is found by following
# its imports.
SHARED_RUN_CODE = ("protocol", "losses", "problem", "solvers", "rngs", "algorithms/base", "algorithms/registry")


def _algorithm_modules(module_name: str) -> set[str]:
    """The dperm modules ``module_name`` uses, transitively (via its globals): helper modules,
    privacy mechanisms and accountants."""
    import importlib
    import inspect
    import sys

    importlib.import_module(module_name)
    package = __name__.rsplit(".", 1)[0]  # dperm
    seen, todo = set(), [module_name]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for value in vars(sys.modules[name]).values():
            used = value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", None)
            if isinstance(used, str) and used.startswith(package + ".") and used in sys.modules:
                todo.append(used)
    return seen


@functools.cache
def algorithm_fingerprint(*names: str) -> str:
    """Fingerprint of the code the named registered algorithms run: their modules and the dperm
    modules those import (transitively), plus the shared numerical core.
    Editing one algorithm's module then reruns only the cells that run that code."""
    import sys

    from .algorithms import get_algorithm

    modules = set().union(*(_algorithm_modules(get_algorithm(n).impl.__module__) for n in names))
    parts = [str(Path(sys.modules[m].__file__).relative_to(PACKAGE).with_suffix("")) for m in sorted(modules)]
    return source_fingerprint(*SHARED_RUN_CODE, *parts)
