"""The architecture checks that import-linter's contracts do not make (``make lint`` runs this after them).

1. No import cycle between top-level packages, whether or not the layers contract names them: a package
   that imports another (directly, any of its modules, test modules included) is never imported back.
2. One name per thing: a module path that two top-level packages both have (``gather.py`` in
   ``connectors`` and in ``diagnoses``) must be a role that every app may have (``views``, ``urls``, ...).

Exits 1 and names each problem, or prints what it checked and exits 0.
"""

from __future__ import annotations

import sys
import tomllib
from collections import defaultdict
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
# Module names that are a role, the same in every package that has one (Django's and HackSoft's layout).
ROLES = {
    "__init__", "admin", "apps", "conftest", "filters", "forms", "models", "permissions", "selectors", "services",
    "tasks", "urls", "views",
}  # fmt: skip


def top_level_packages() -> list[str]:
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return settings["tool"]["importlinter"]["root_packages"]


def package_imports(packages: list[str]) -> dict[str, dict[str, tuple[str, str]]]:
    """``{importer: {imported: (one importing module, the module it imports)}}`` between top-level packages."""
    graph = grimp.build_graph(*packages)
    edges: dict[str, dict[str, tuple[str, str]]] = defaultdict(dict)
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            source, target = module.split(".")[0], imported.split(".")[0]
            if source != target and target in packages:
                edges[source].setdefault(target, (module, imported))
    return edges


def cycles(edges: dict[str, dict[str, tuple[str, str]]]) -> list[list[str]]:
    """Every cycle of the package graph, each once (starting at its smallest package)."""
    found = []

    def walk(path: list[str]) -> None:
        for nxt in sorted(edges.get(path[-1], ())):
            if nxt == path[0]:
                found.append(path)
            elif nxt not in path and nxt > path[0]:
                walk([*path, nxt])

    for start in sorted(edges):
        walk([start])
    return found


def shared_module_paths(packages: list[str]) -> dict[str, list[str]]:
    """Module paths (inside their package, without ``.py``) that more than one package has, roles aside."""
    owners: dict[str, list[str]] = defaultdict(list)
    for package in packages:
        for file in sorted((ROOT / package).rglob("*.py")):
            relative = file.relative_to(ROOT / package).with_suffix("")
            if "migrations" in relative.parts or "tests" in relative.parts or relative.name in ROLES:
                continue
            owners[relative.as_posix()].append(package)
    return {path: owners for path, owners in sorted(owners.items()) if len(owners) > 1}


def main() -> int:
    packages = top_level_packages()
    sys.path.insert(0, str(ROOT))
    problems = []
    edges = package_imports(packages)
    for cycle in cycles(edges):
        pairs = zip(cycle, [*cycle[1:], cycle[0]], strict=True)
        steps = [f"{a} -> {b} ({' imports '.join(edges[a][b])})" for a, b in pairs]
        problems.append("import cycle between top-level packages: " + "; ".join(steps))
    for path, owners in shared_module_paths(packages).items():
        problems.append(f"{path}.py is a module of {', '.join(owners)}: name each for what it holds")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    print(f"architecture: {len(packages)} top-level packages, no import cycle, no module name shared by two of them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
