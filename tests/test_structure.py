"""minirad's import structure: no import circles, no private name imported
from another module, algorithm modules never importing the example graphs or
the case studies, and no module writing into the graph's private memo."""

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "minirad"
ALGORITHMS = {"sweeps", "paths", "elimination", "sampling", "injection", "jacobian", "labels",
              "gradcheck", "layered", "accumulation", "graph", "trace", "ops", "_engines",
              "operators", "checkpointing", "overflow", "_callable", "_arguments",
              "sparsity", "compressed", "implicit", "ode_adjoint"}
APPLICATIONS = ("minirad.examples", "minirad.studies", "minirad.experiments", "minirad.gallery")


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
    assert {"minirad.graph", "minirad.labels", "minirad.sweeps"} <= set(MODULES)
    assert "minirad.graph" in EDGES["minirad.sweeps"]


def test_no_import_circles():
    assert _cycles(EDGES) == []


def test_the_cycle_finder_finds_a_planted_circle():
    planted = {"minirad.a": {"minirad.b"}, "minirad.b": {"minirad.c"},
               "minirad.c": {"minirad.a"}}
    assert _cycles(planted) == [["minirad.a", "minirad.b", "minirad.c", "minirad.a"]]


def test_no_private_names_across_modules():
    # a private module (minirad._engines) is meant for the package's own use
    crossing = [f"{m} imports {source}.{name}" for m, pairs in NAMES.items()
                for source, name in pairs
                if name.startswith("_") and not name.startswith("__")
                and not source.rpartition(".")[2].startswith("_")]
    assert crossing == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES
                                          if m.rpartition(".")[2] in ALGORITHMS))
def test_algorithm_modules_do_not_import_applications(module):
    assert not [t for t in EDGES[module] if t.startswith(APPLICATIONS)]


def test_only_the_graph_writes_its_memo():
    pattern = re.compile(r"\._cache\b")
    offenders = [f"{path}:{i}" for m, path in MODULES.items() if m != "minirad.graph"
                 for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if pattern.search(line)]
    assert offenders == []


def test_function_and_module_are_both_reachable():
    """Issue 10: ``minirad.render`` the function shadowed ``minirad.render`` the
    module (``minirad.render.has_dot`` failed); now each is both."""
    import inspect

    import minirad
    from minirad import examples

    g = examples.lecture()
    assert minirad.render.has_dot() in (True, False)
    assert minirad.render(g).source == minirad.render.render(g).source
    assert minirad.trace.Var is not None
    assert float(minirad.jacobian(g)[0, 0]) == float(minirad.jacobian.jacobian(g)[0, 0]) == 5.5
    assert minirad.jacobian.accumulate(g).method == "reverse"
    assert "max_vertices" in inspect.signature(minirad.render).parameters
    from minirad.render import render
    from minirad.trace import trace
    assert inspect.isfunction(render) and inspect.isfunction(trace)
