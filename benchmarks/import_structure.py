"""The package's import structure, counted as a picture of it shows it: files, imports of the
package's own modules, arrows pointing up (an import of a module in a layer below, by
CONTRIBUTING.md's layer table) and circles. A package's submodules count as the package
(``pretrain.__main__`` is ``pretrain``, ``widgets.nsp`` is ``widgets``).

    python benchmarks/import_structure.py                 # this working tree
    python benchmarks/import_structure.py /tmp/before     # another checkout (its own layer table)

Uses the rules of ``tests/test_package.py`` (which fails on any arrow up or circle at module level).
"""
from __future__ import annotations

import importlib.util
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent


def load_rules():
    spec = importlib.util.spec_from_file_location("package_rules", HERE.parent / "tests" / "test_package.py")
    rules = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rules)
    return rules


def circles(graph: dict) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def structure(root: pathlib.Path) -> dict:
    rules = load_rules()
    rules.PACKAGE = package = root / "bertcourse"
    layers = rules.read_layers((root / "CONTRIBUTING.md").read_text(encoding="utf-8"))

    def layer(module):
        try:
            return rules.layer_of(module, layers)
        except KeyError:
            return rules.layer_of(module.split(".")[0], layers)

    files = sorted(package.rglob("*.py"))
    imports, drawn = set(), set()
    for f in files:
        source = rules.module_name(f)
        for target, _ in rules.imports_of(f):
            if target and target != source:
                imports.add((source, target))
                a, b = source.split(".")[0], target.split(".")[0]
                if a != b:
                    drawn.add((a, b))
    graph = {}
    for a, b in drawn:
        graph.setdefault(a, set()).add(b)
    return {"files": len(files), "imports": len(imports), "drawn": len(drawn),
            "up": sorted((a, b) for a, b in drawn if layer(b) > layer(a)), "circles": circles(graph)}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    root = pathlib.Path(argv[0]) if argv else HERE.parent
    sys.setrecursionlimit(10_000)
    s = structure(root.resolve())
    print(f"{root}: {s['files']} files, {s['imports']} imports of the package's own modules "
          f"({s['drawn']} arrows between packages and modules), {len(s['up'])} pointing up {s['up']}, "
          f"{len(s['circles'])} circles {s['circles']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
