"""The package's layers hold: every import, at module level or inside a function, goes down or
sideways, never up, and no two modules import each other (directly or round a circle).

    foundations (files, config, rngs) < core and privacy (losses, problem, solvers, privacy, datasets)
    < algorithms < protocol and grid (protocol, grid, records, optimum, tuning, audit, ...)
    < report < papers < cli

A new top-level module must be placed in a layer here before it can be imported at all.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "src" / "dperm"

LAYERS = [
    {"__init__", "files", "config", "schemas", "rngs"},
    {"losses", "problem", "solvers", "privacy", "datasets"},
    {"algorithms"},
    {"protocol", "grid", "experiments", "records", "optimum", "tuning", "audit", "audit_controls", "audit_one_run",
     "audit_subjects", "fingerprint", "progress", "estimate"},
    {"report"},
    {"papers"},
    {"cli", "__main__"},
]


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, known: dict) -> set[str]:
    """The dperm modules ``name`` imports (every import statement, wherever it stands). ``from
    . import x`` names the module ``x`` when there is one, not the package it comes from (Python
    imports a module's parent package in any case: that is no dependency of the code)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            submodules = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known]
            candidates = submodules or [target]
        elif isinstance(node, ast.Import):
            candidates = [a.name for a in node.names]
        else:
            continue
        for candidate in candidates:
            while candidate.startswith("dperm") and candidate not in known:
                candidate = candidate.rsplit(".", 1)[0]
            if candidate in known and candidate != name:
                out.add(candidate)
    return out


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imports(name, path, known) for name, path in known.items()}


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else "__init__"
    for i, layer in enumerate(LAYERS):
        if top in layer:
            return i
    raise AssertionError(f"module {module} is in no layer of tests/meta/test_layers.py: place it there")


def test_every_import_goes_down_or_sideways():
    up = sorted(f"{a} (layer {_layer(a)}) imports {b} (layer {_layer(b)})"
                for a, targets in _graph().items() for b in targets if _layer(b) > _layer(a))
    assert not up, "imports running up the layers:\n" + "\n".join(up)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_import_circle():
    cycles = _cycles(_graph())
    assert not cycles, "modules importing each other (round a circle): " + "; ".join(map(str, cycles))


def test_the_checks_can_fail():
    """The scan sees a lazy import inside a function, and the circle finder finds a circle."""
    graph = _graph()
    assert "dperm.algorithms.registry" in graph["dperm.algorithms"]  # a module-level import
    assert any(b.startswith("dperm.") for b in graph["dperm.cli"])  # cli's imports are all lazy
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _layer("dperm.report.tables") > _layer("dperm.algorithms.base")
