"""minirad's import structure: no import circles, no private name imported
from another module, algorithm modules never importing the example graphs or
the case studies, and no module writing into the graph's private memo."""

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "minirad"
# the core: the graph, tracing and the algorithms; it never imports the applications
# (examples, experiments, studies, labs, the gallery) nor the pictures or the command line
CORE = ("minirad.graph", "minirad.tracing", "minirad.exact", "minirad.randomized",
        "minirad.checkpoint", "minirad.implicit")
APPLICATIONS = ("minirad.examples", "minirad.studies", "minirad.randomized.experiments",
                "minirad.exact.elimination_gaps", "minirad.gallery", "minirad.labs",
                "minirad.draw", "minirad.cli")
# applications that live beside the algorithms they apply (they draw example graphs)
APPLICATIONS_IN_CORE = ("minirad.randomized.experiments", "minirad.exact.elimination_gaps")


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("minirad",) + path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(modules: dict[str, Path]):
    """Per module: the set of minirad modules it imports, and the names it
    takes from them, as (source module, name) pairs."""
    edges, names = {m: set() for m in modules}, {m: [] for m in modules}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges[module].update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[:len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if not source.startswith("minirad"):
                    continue
                for alias in node.names:
                    if f"{source}.{alias.name}" in modules:
                        edges[module].add(f"{source}.{alias.name}")
                    elif source in modules and source != module:
                        edges[module].add(source)
                        names[module].append((source, alias.name))
    return edges, names


MODULES = _modules()
EDGES, NAMES = _imports(MODULES)


def _cycles(edges) -> list[list[str]]:
    """Every import circle found by a depth-first search (the package itself,
    whose __init__ imports everything, and __main__ are left out)."""
    found, done, stack = [], set(), []

    def visit(u):
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if v == "minirad" or v.endswith("__main__"):
                continue
            if v in stack:
                found.append(stack[stack.index(v):] + [v])
            elif v not in done:
                visit(v)
        stack.pop()
        done.add(u)

    for module in sorted(edges):
        if module != "minirad" and module not in done:
            visit(module)
    return found


def test_the_walk_sees_the_package():
    assert {"minirad.graph.lcg", "minirad.graph.labels", "minirad.exact.sweeps"} <= set(MODULES)
    assert "minirad.graph.lcg" in EDGES["minirad.exact.sweeps"]


def test_no_import_circles():
    assert _cycles(EDGES) == []


def test_the_cycle_finder_finds_a_planted_circle():
    planted = {"minirad.a": {"minirad.b"}, "minirad.b": {"minirad.c"},
               "minirad.c": {"minirad.a"}}
    assert _cycles(planted) == [["minirad.a", "minirad.b", "minirad.c", "minirad.a"]]


def test_no_private_names_across_modules():
    # a private module (minirad.exact._engines) is meant for the package's own use
    crossing = [f"{m} imports {source}.{name}" for m, pairs in NAMES.items()
                for source, name in pairs
                if name.startswith("_") and not name.startswith("__")
                and not source.rpartition(".")[2].startswith("_")]
    assert crossing == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(CORE)
                                          and m not in APPLICATIONS_IN_CORE))
def test_the_core_does_not_import_applications_or_pictures(module):
    assert not [t for t in EDGES[module] if t.startswith(APPLICATIONS)]


def test_only_the_graph_writes_its_memo():
    pattern = re.compile(r"\._memos\b")
    offenders = [f"{path}:{i}" for m, path in MODULES.items() if m != "minirad.graph.lcg"
                 for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if pattern.search(line)]
    assert offenders == []


def test_public_functions_are_functions_not_callable_modules():
    """``minirad.trace``, ``minirad.jacobian`` and ``minirad.render`` are plain
    functions; their modules live in the subpackages under other names."""
    import inspect

    import minirad

    for name in ("trace", "jacobian", "render"):
        assert inspect.isfunction(getattr(minirad, name)), name
    assert not [m for m in MODULES
                if not m.endswith("__main__") and callable(__import__(m, fromlist=["_"]))]
