"""One keyword per meaning across the public API, and one way to pass a graph.

The table of meanings below is the reference: every keyword a public function
takes (a parameter with a default, or a keyword-only one) has exactly one
entry, so a keyword cannot mean two things, and a meaning cannot have two
keywords, without this file saying so.  The public functions are those of
``docs/_ext/api_pages.py`` (``minirad.__all__`` and the modules of the
library's parts), whose table of functions and keywords ``docs/architecture.md``
holds and this file checks is up to date.
"""

import importlib
import inspect
import sys

import numpy as np
import pytest
from oracles import ROOT

import minirad
from minirad import examples, ops
from minirad.exact.compressed import CRITERIA
from minirad.exact.elimination import ON, ORDERS
from minirad.exact.jacobians import METHODS
from minirad.exact.sweeps import ENGINES
from minirad.graph.lcg import takes_graph_or_function
from minirad.implicit.ode_adjoint import STATES
from minirad.randomized.experiments import ESTIMATORS
from minirad.randomized.injection import LAWS
from minirad.tracing.codegen import MODES

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
try:
    api_pages = importlib.import_module("api_pages")
finally:
    sys.path.remove(str(ROOT / "docs" / "_ext"))

# keyword -> its one meaning in every public function
MEANINGS = {
    # choices, each with one vocabulary (VOCABULARIES below)
    "method": "the algorithm: an exact method of minirad.jacobian, or an estimator",
    "order": "the elimination order: a named order or a list of what to eliminate",
    "on": "what elimination eliminates: vertices, edges or faces",
    "law": "the random law of an injected matrix P",
    "direction": "which way a sweep, a search or a sampler runs over the edges",
    "engine": "which implementation of the same sweep runs",
    "by": "the count a comparison of costs goes by",
    "strategy": "the greedy colouring of a sparsity pattern",
    "strategies": "the seedings of a compressed sweep to price",
    "end": "which end of an edge edge elimination bypasses: front (head) or back (tail)",
    "side": "the columns or the rows of a sparsity pattern",
    "states_from": "where the continuous adjoint gets the forward states back from",
    "scheme": "the finite-difference formula",
    "partials": "the law of the random partials of a graph family",
    "mode": "which program codegen writes: the forward program, its tangent or its adjoint",
    # randomness
    "rng": "the random generator: a numpy Generator or an integer seed",
    "seeds": "the integer seeds a page offers to sample with",
    # what a call is about
    "wrt": "the inputs to differentiate by",
    "outputs": "the outputs to differentiate",
    "wanted": "the vertices whose values a lazy sweep computes",
    "vertices": "the vertices where P is injected",
    "edges": "the edges where P is injected (or whose variance is wanted)",
    "vertex": "the vertex a message names",
    "rows": "the output vertices of a Jacobian's rows",
    "columns": "the input vertices of a Jacobian's columns",
    "source": "the vertex paths start at",
    "target": "the vertex paths end at",
    "start": "the first state of a chain",
    "states": "the states of a chain, in order",
    "schedule": "the checkpointing schedule",
    "v": "a tangent: one direction per input",
    "p": "the parameters of an ODE problem",
    "P": "a sparsity pattern (Booleans, outputs by inputs)",
    "picks": "the entries an injection keeps, given instead of drawn",
    "injections": "the records of the injections a graph carries",
    "labels": "edge labels used in place of the graph's own",
    "algebra": "how labels multiply and add",
    "values": "the vertices' values",
    "ops": "the vertices' operation templates",
    "shapes": "the vertices' shapes",
    "dtypes": "the vertices' dtypes",
    "draws": "how many out-edges each vertex draws (Algorithm 1)",
    "vertex_laws": "the laws of the matrices injected at vertices",
    "edge_laws": "the laws of the random labels of edges",
    "edge_weights": "the scale of each edge's label in each sample",
    "at_vertex": "the step applied to each sample's adjoint at a vertex",
    # sizes and counts
    "k": "how many draws per vertex (Algorithm 1) or columns of P (injection)",
    "ks": "several k, one curve or menu entry each",
    "scalar_k": "k for the graph of numbers a graph of arrays scalarizes to",
    "entries": "how many entries each array vertex samples inside it",
    "n": "how many estimates (samples) to draw",
    "n_directions": "how many random directions to check",
    "n_rows": "how many independent rows to draw",
    "n_steps": "how many time steps",
    "n_grid": "how many grid points",
    "runs": "how many estimates come from single runs of sample_paths",
    "fraction": "the kept fraction of entries",
    "fractions": "several kept fractions",
    "width": "how many vertices a layer of a graph family has",
    "depths": "the depths of the graph families",
    "sizes": "the problem sizes of a figure",
    "refinements": "the factors by which the time step is refined",
    "checkpoint_every": "how many steps lie between checkpoints",
    "max_paths": "the most paths a function enumerates before it refuses",
    "max_entries": "the most entries a function holds before it refuses",
    "max_vertices": "the most vertices a function draws before it refuses",
    "max_bytes": "the most bytes a file may hold",
    "max_iter": "the most iterations of a solver",
    "max_products": "the most multiplications along paths a function makes before it refuses",
    "max_intermediates": "the most intermediates an optimal-order search takes on",
    "max_edges": "the most edges a graph may have",
    "n_graphs": "how many graphs to draw",
    "n_inputs": "how many inputs (or a range of them)",
    "n_intermediates": "how many intermediates (or a range of them)",
    "n_outputs": "how many outputs (or a range of them)",
    "cheaper": "the kind of elimination (an on=) whose optimum should be lower",
    "dearer": "the kind of elimination (an on=) whose optimum should be higher",
    "at_most": "a bound on cost: only sequences of at most this many multiplications",
    "estimate": "a lower bound on the cost still to come (A*)",
    "tol": "the tolerance of a solver",
    "h": "the finite-difference step",
    "rtol": "the relative tolerance of a comparison",
    "atol": "the absolute tolerance of a comparison",
    "T": "the final time of an ODE problem",
    "D": "the diffusion coefficient",
    "ratio": "the step ratio of the diffusion problem",
    # options of a result
    "keep_values": "whether a sweep keeps every vertex's tangents or adjoints",
    "keep_graphs": "whether elimination keeps the graph before every step",
    "in_place": "whether a reverse sweep adds into its own arrays (add!!)",
    "lazy": "whether a reverse sweep defers cotangents until they are wanted",
    "preaccumulate": "whether codegen eliminates elementwise chains before it writes",
    "covariance": "whether a variance comes as the covariance of each row",
    "per_row": "whether each row of an activation draws its own P",
    "axis": "the axis of an array vertex that P acts on",
    "batch_axis": "the axis of an array vertex along which examples lie",
    "raise_on_failure": "whether a failed check raises or returns its report",
    "progress": "a callback told how far a long computation is",
    "dtype": "the floating-point type of an array",
    "what": "the words a message or a key uses for its subject",
    # pictures
    "title": "the title of a picture or page",
    "show_ops": "whether vertices show their operations",
    "show_values": "whether vertices show their values",
    "edge_labels": "whether edges show their labels",
    "digits": "significant digits of numbers shown",
    "legend": "whether a picture has a legend",
    "levels": "the level (row) of each vertex in a picture",
    "positions": "where each vertex is drawn",
    "batch": "the batch size a picture divides memory by",
    "path_pattern": "where each picture of a series is saved",
    "path": "the file a picture is saved to",
    "dpi": "dots per inch of a saved picture",
    "colors": "the colour of each label placed in a plot",
    "fontsize": "the font size of labels, in points",
    "timeout": "the seconds graphviz may take",
    "ncols": "pictures per row",
    "exact_std": "whether a figure shows the exact standard deviation",
    "input_names": "the names of a matrix's columns",
    "output_names": "the names of a matrix's rows",
    "orders": "several elimination orders, one bar each",
    "methods": "several estimators, one curve each",
    "ax": "the matplotlib axes to draw into",
    "shell": "the IPython shell to register with",
}

# the values a choice keyword takes: a default that is a string must be one of them
VOCABULARIES = {
    "method": METHODS + ESTIMATORS,
    "order": ORDERS,
    "on": ON,
    "cheaper": ON,
    "dearer": ON,
    "law": LAWS,
    "direction": ("forward", "reverse"),
    "engine": ENGINES,
    "by": CRITERIA + ("additions",),
    "end": ("front", "back"),
    "side": ("columns", "rows"),
    "states_from": STATES,
    "mode": MODES,
}

# words that once said what a keyword of MEANINGS says; none may come back
SYNONYMS = {
    "sequence": "order", "strategy_name": "order",
    "kind": "law", "distribution": "law", "sampling": "law",
    "forward": "direction", "backward": "direction", "reverse": "direction",
    "seed": "rng", "random_state": "rng", "generator": "rng",
    "accumulate": "in_place", "inputs": "wrt", "samples": "n", "cost": "by",
    "directions": "n_directions", "limit": "max_entries or max_paths",
    "tries": "n_graphs",
}

# functions whose first parameter is a graph but which do not take a function instead:
# the label recurrences and helpers beneath the graph class (graph/labels.py,
# graph/levels.py and graph/lcg.py are what the helper itself is built on), and replay
# (with its module), whose positional arguments are a new point for a graph already traced
ON_GRAPHS_ONLY = ("minirad.graph.labels.", "minirad.graph.lcg.", "minirad.graph.levels.",
                  "minirad.replay", "minirad.tracing.replay.",
                  "minirad.tracing.pullbacks.")   # an engine of traced graphs only

FUNCTIONS = api_pages.public_functions()


def keywords_of(name):
    return api_pages.keywords(FUNCTIONS[name])


def all_keywords():
    return {(name, p.name): p for name in FUNCTIONS for p in keywords_of(name)}


def test_every_keyword_has_its_meaning_in_the_table():
    unknown = sorted({f"{word} (in {name})" for (name, word) in all_keywords()
                      if word not in MEANINGS})
    assert not unknown, ("give each new keyword its meaning in MEANINGS, or use the keyword "
                         f"that already says it: {unknown}")


def test_no_meaning_has_two_keywords():
    by_meaning = {}
    for word, meaning in MEANINGS.items():
        by_meaning.setdefault(meaning, []).append(word)
    assert all(len(words) == 1 for words in by_meaning.values())
    used = {word for (_, word) in all_keywords()}
    assert not used & set(SYNONYMS), {w: SYNONYMS[w] for w in used & set(SYNONYMS)}
    assert not set(SYNONYMS) & set(MEANINGS)


def test_a_choice_keyword_takes_one_vocabulary_everywhere():
    for (name, word), parameter in all_keywords().items():
        default = parameter.default
        if word in VOCABULARIES and isinstance(default, str):
            assert default in VOCABULARIES[word], (name, word, default)
    # a keyword that means the algorithm never defaults to a random law, and back
    assert not set(METHODS) & set(LAWS)


def test_the_meanings_test_catches_a_keyword_used_for_two_things():
    """The checks above on a planted function that uses method= for the random law."""
    def planted(g, k=1, method="rademacher", *, rng=None):
        return g

    (method,) = [p for p in api_pages.keywords(planted) if p.name == "method"]
    assert method.default not in VOCABULARIES["method"]

    def planted_synonym(g, sequence="markowitz"):
        return g

    assert {p.name for p in api_pages.keywords(planted_synonym)} & set(SYNONYMS)


def test_rng_is_keyword_only_and_last():
    for name, function in FUNCTIONS.items():
        parameters = list(inspect.signature(function).parameters.values())
        if any(p.name == "rng" for p in parameters):
            last = [p for p in parameters if p.kind is not p.VAR_KEYWORD][-1]
            assert last.name == "rng" and last.kind is last.KEYWORD_ONLY, name


def test_no_keyword_is_also_a_public_function():
    """No keyword is a function ``minirad`` exports (``accumulate`` was both)."""
    functions = {name for name in minirad.__all__
                 if inspect.isfunction(inspect.unwrap(getattr(minirad, name)))}
    assert "jacobian" in functions and not functions & {word for (_, word) in all_keywords()}


def test_no_name_is_a_function_here_and_a_module_there():
    """A module may be named after the function it defines (render.render), but a
    function's name is the name of no other module."""
    modules = {}
    for part in ("minirad", *(f"minirad.{p}" for p in api_pages.PARTS), "minirad.studies"):
        for dotted in api_pages.public_modules(importlib.import_module(part)):
            modules.setdefault(dotted.rsplit(".", 1)[1], set()).add(dotted)
    for name, function in FUNCTIONS.items():
        short = name.rsplit(".", 1)[1]
        assert modules.get(short, {function.__module__}) <= {function.__module__}, (
            name, modules.get(short))


def test_the_table_in_the_architecture_page_is_the_one_the_signatures_give():
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = page.split(api_pages.TABLE_START + "\n", 1)[1].split(api_pages.TABLE_END, 1)[0]
    assert table == api_pages.keyword_table(), ("run python docs/_ext/api_pages.py to "
                                               "rewrite the table")


# ------------------------------------------------------------ graph or function
def test_every_function_on_a_graph_also_takes_a_function_and_its_point():
    missing = []
    for name, function in FUNCTIONS.items():
        first = next(iter(inspect.signature(function).parameters), None)
        if first == "g" and not name.startswith(ON_GRAPHS_ONLY):
            if not getattr(function, "takes_graph_or_function", False):
                missing.append(name)
    assert not missing, missing


def lab(x, y):
    return x * y + ops.sin(x)


@pytest.mark.parametrize("call", [
    lambda f, *p: minirad.jacobian(f, *p, method="forward"),
    lambda f, *p: minirad.gradient(f, *p),
    lambda f, *p: minirad.jvp(f, *p, v=[1.0, 0.0]),
    lambda f, *p: minirad.eliminate(f, *p, order="reverse").jacobian,
    lambda f, *p: minirad.bauer(f, *p).jacobian,
    lambda f, *p: minirad.count_paths(f, *p),
    lambda f, *p: minirad.sampled_jacobians(f, *p, k=1, n=20, rng=3),
    lambda f, *p: minirad.path_sampling_variance(f, *p, k=1),
    lambda f, *p: minirad.retained_memory(f, *p).per_edge,
    lambda f, *p: minirad.scalarize(f, *p).n_edges,
])
def test_a_function_and_its_point_give_what_its_graph_gives(call):
    """Each call on (lab, 2.0, 3.0) equals the same call on the lab's own LCG."""
    g = examples.lab()
    by_function, by_graph = call(lab, 2.0, 3.0), call(g)
    np.testing.assert_array_equal(np.asarray(by_function), np.asarray(by_graph))


def test_one_helper_handles_the_graph_or_the_function():
    """No module but graph/lcg.py (takes_graph_or_function) decides between a graph and a
    function to trace."""
    found = []
    for path in (ROOT / "minirad").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if path.name != "lcg.py" and ("callable(g" in text or "g_or_f" in text):
            found.append(str(path.relative_to(ROOT)))
    assert not found, found
    assert takes_graph_or_function.__module__ == "minirad.graph.lcg"
