"""The ``minirad`` command.

Every subcommand prints one clear line and exits with status 1 on bad
input; an exception raised by the user's own code prints one line and the
user's frame (file and line) instead of minirad's traceback.  ``--debug``
shows the full traceback instead.  Warnings are one line each.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import os
import re
import sys
import sysconfig
import time
import traceback
import warnings

import numpy as np

from . import __version__
from .exact.elimination import ON, ORDERS
from .exact.jacobians import METHODS
from .exact.result import format_count
from .graph.files import MAX_BYTES, load_graph, save_graph
from .graph.labels import FLOATS
from .graph.lcg import LCG, plural
from .tracing import trace


class UsageError(ValueError):
    """Bad command-line input (shown as one line)."""


class UserCodeError(Exception):
    """An exception raised in the user's own code: shown as one line and the
    user's frame; ``original`` is the exception itself (re-raised by --debug)."""

    def __init__(self, what: str, original: BaseException, frame):
        self.original = original
        where = ""
        if frame is not None:
            filename, lineno, name, line = frame
            where = f"\n  at {_shown_path(filename)}:{lineno} in {name}" + (
                f": {line.strip()}" if line else "")
        message = _message(original)
        super().__init__(f"error in {what}: {type(original).__name__}"
                         f"{': ' + message if message else ''}{where}")


def _message(error: BaseException) -> str:
    """``str(error)``, or a note saying why not: a user's exception class may
    raise from its own ``__str__``."""
    try:
        return str(error)
    except Exception as failure:
        return f"(its message cannot be shown: its __str__ raised {type(failure).__name__})"


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_LIBRARY_DIRS = tuple(sorted({os.path.abspath(sysconfig.get_paths()[key]) for key in
                              ("stdlib", "platstdlib", "purelib", "platlib")}))


def _shown_path(filename: str) -> str:
    path = os.path.abspath(filename)
    relative = os.path.relpath(path)
    return relative if not relative.startswith("..") else path


def _is_user_file(filename: str) -> bool:
    """A file of the user's, not minirad's, Python's or an installed package's."""
    if not filename or filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    return not any(path == d or path.startswith(d + os.sep)
                   for d in (_PACKAGE_DIR, *_LIBRARY_DIRS))


def _user_frame(error: BaseException):
    """(file, line, function, source) of the innermost frame in the user's code."""
    if isinstance(error, SyntaxError) and error.filename and _is_user_file(error.filename):
        return error.filename, error.lineno, "<module>", error.text or ""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if _is_user_file(f.filename)]
    if not frames:
        return None
    last = frames[-1]
    return last.filename, last.lineno, last.name, last.line


def _run_user_code(what: str, call, *args):
    """``call(*args)``; an exception raised from the user's code becomes a
    :class:`UserCodeError`.  minirad's own refusals (no user frame below the
    failing line) go through as they are."""
    try:
        return call(*args)
    except UsageError:
        raise
    except Exception as error:
        frame = _user_frame(error)
        if frame is None:
            raise
        raise UserCodeError(what, error, frame) from error


def _load_function(spec: str):
    """``module:function`` or ``path/to/file.py:function``."""
    module_name, sep, function_name = spec.rpartition(":")
    if not sep or not module_name or not function_name:
        raise UsageError(f"{spec!r} is not MODULE:FUNCTION (e.g. mymodule:f or lab.py:f)")
    if module_name.endswith(".py"):
        if not os.path.isfile(module_name):
            raise UsageError(f"no such file: {module_name}")
        loader_spec = importlib.util.spec_from_file_location("_minirad_user_module", module_name)
        module = importlib.util.module_from_spec(loader_spec)
        try:
            _run_user_code(f"importing {module_name}", loader_spec.loader.exec_module, module)
        except SyntaxError as error:  # with no line to show (null bytes, a bad encoding)
            raise UsageError(f"cannot read {module_name} as Python source: {error.msg}") from None
    else:
        sys.path.insert(0, os.getcwd())  # let `minirad trace mymodule:f` find ./mymodule.py
        try:
            module = _run_user_code(f"importing {module_name}", importlib.import_module,
                                    module_name)
        except ImportError as error:
            raise UsageError(f"cannot import module {module_name!r}: {_message(error)}") from None
    try:
        return getattr(module, function_name)
    except AttributeError:
        raise UsageError(f"module {module_name!r} has no function {function_name!r}") from None


def _parse_point(text: str):
    """``2.5`` is a scalar argument, ``1,2,3`` a 1-D vector argument (an
    ``np.ndarray``, so ``x.shape`` and ``len(x)`` work as in numpy code)."""
    try:
        if "," in text:
            return np.array([float(x) for x in text.strip("[]").split(",") if x.strip()])
        return float(text)
    except ValueError:
        raise UsageError(f"argument {text!r} is not a number or a comma-separated list of "
                         f"numbers") from None


def _load_graph(path: str, max_bytes: int) -> LCG:
    if not os.path.exists(path):
        raise UsageError(f"no such file: {path}")
    if not os.path.isfile(path):
        raise UsageError(f"{path} is not a file (a folder or a device); give a saved LCG")
    if max_bytes < 1:
        raise UsageError(f"--max-bytes must be a positive number of bytes, not {max_bytes}")
    return load_graph(path, max_bytes=max_bytes)


def _as_flags(message: str, flags: set[str]) -> str:
    """A library's advice "pass max_paths=N" as the command's own "pass --max-paths N",
    for the keywords the command has a flag for.

    >>> _as_flags("more than max_bytes=10; pass max_bytes=99 to read it", {"--max-bytes"})
    'more than max_bytes=10; pass --max-bytes 99 to read it'
    """
    def flag(match):
        name = "--" + match.group(1).replace("_", "-")
        return f"pass {name} {match.group(2)}" if name in flags else match.group(0)
    return re.sub(r"pass (max_\w+)=(\d+)", flag, message)


# ---------------------------------------------------------------- commands
def cmd_wengert(args) -> None:
    print(_load_graph(args.file, args.max_bytes).wengert())


def cmd_trace(args) -> None:
    f = _load_function(args.function)
    point = [_parse_point(x) for x in args.point]
    g = _run_user_code(f"{args.function}", trace, f, *point)
    save_graph(g, args.output)
    print(f"{g!r} written to {args.output}")
    if args.wengert:
        print(g.wengert())


def _number_text(x, digits: int | None) -> str:
    return repr(float(x)) if digits is None else f"{float(x):.{digits}g}"


def _format_jacobian(g: LCG, matrix, digits: int | None = None) -> str:
    """A matrix labelled by the graph's outputs (rows) and inputs (columns),
    every entry to full double precision or to ``digits`` significant digits;
    on a graph with arrays, one block per output and input."""
    if g.algebra is not FLOATS:
        return _format_blocks(g, np.asarray(matrix), digits)
    rows, columns = [g.names[v] for v in g.outputs], [g.names[v] for v in g.inputs]
    cells = [[_number_text(x, digits) for x in row] for row in matrix]
    width = max([len(c) for row in cells for c in row] + [len(n) for n in columns] + [1])
    label = max([len(n) for n in rows] + [1])
    lines = [" " * label + "  " + "  ".join(n.rjust(width) for n in columns)]
    for name, row in zip(rows, cells):
        lines.append(name.ljust(label) + "  " + "  ".join(c.rjust(width) for c in row))
    return "\n".join(lines)


def _format_blocks(g: LCG, matrix: np.ndarray, digits: int | None) -> str:
    """The Jacobian of a graph with arrays (rows the outputs' entries, columns the
    inputs', in C order) block by block: the block of a number output is shown in
    its input's shape (a gradient), any other as (output entries, input entries)."""
    rows = np.cumsum([0] + [g.size(y) for y in g.outputs])
    columns = np.cumsum([0] + [g.size(x) for x in g.inputs])
    lines = []
    for i, y in enumerate(g.outputs):
        for j, x in enumerate(g.inputs):
            block = matrix[rows[i]:rows[i + 1], columns[j]:columns[j + 1]]
            shape = g.shape(x) if g.shape(y) == () else block.shape
            size = " × ".join(map(str, shape)) or "a number"
            lines.append(f"d{g.names[y]}/d{g.names[x]} ({size}):")
            text = np.array2string(block.reshape(shape), max_line_width=100, threshold=10**6,
                                   formatter={"float_kind": lambda v: _number_text(v, digits)})
            lines += ["  " + line for line in text.splitlines()]
    return "\n".join(lines)


def _parse_k(text: str):
    """``2`` draws two successors per vertex; ``0.5`` draws half of each out-degree."""
    try:
        return float(text) if any(c in text for c in ".eE") else int(text)
    except ValueError:
        raise UsageError(f"--k {text!r} is not a whole number of draws (e.g. 2) or a "
                         f"fraction of each out-degree in (0, 1] (e.g. 0.5)") from None


def _describe_k(k) -> str:
    if isinstance(k, float):
        return (f"k={k}: a fraction, each vertex draws ceil({k} x its out-degree) successors")
    return f"k={k}: each visited vertex draws {k} successor{'s' if k != 1 else ''}"


def _check_picture_path(path: str | None, extensions=(".png", ".svg", ".pdf")) -> None:
    """Refuse a bad output name before a long computation, not after it."""
    if path is None:
        return
    if os.path.splitext(path)[1].lower() not in extensions:
        raise UsageError(f"cannot write a picture to {path!r}: use a name ending in "
                         f"{', '.join(extensions)}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write {path}: the folder {folder} does not exist")


def _parse_order(text: str | None, on: str | None = None):
    if text is None or text in ORDERS:
        return text
    if on not in (None, "vertices"):
        raise UsageError(f"--on {on} takes a named --order ({', '.join(ORDERS)}); a list of "
                         f"names is a vertex order")
    return [name.strip() for name in text.split(",") if name.strip()]


def _step_text(step) -> str:
    """One step of an elimination order: a vertex, an edge ``i->j(front)``, or a face
    ``x-a=>a-y`` (its two dual vertices by their paths)."""
    if isinstance(step, str):
        return step
    if len(step) == 3 and all(isinstance(part, str) for part in step):
        return f"{step[0]}->{step[1]}({step[2]})"
    return "=>".join("+".join("-".join(path) for path in side) for side in step)


def _shown_order(order, limit: int = 12) -> str:
    """An elimination order, the middle left out when it is long."""
    order = [_step_text(step) for step in order]
    if len(order) <= limit:
        return " ".join(order)
    return (f"{' '.join(order[:8])} ... {' '.join(order[-3:])} "
            f"({len(order) - 11} more not shown; {len(order)} steps in all)")


def _print_accumulation(g: LCG, result) -> None:
    print(_format_jacobian(g, result.jacobian))
    shown = f", order {_shown_order(result.order)}" if result.order else ""
    print(f"{result.method}: {format_count(result.multiplications)} multiplications, "
          f"{format_count(result.additions)} additions{shown}")


def cmd_jacobian(args) -> None:
    from .exact.jacobians import accumulate

    g = _load_graph(args.file, args.max_bytes)
    order = _parse_order(args.order, args.on)
    if (order is not None or args.on is not None) and args.method != "eliminate":
        raise UsageError("--order and --on apply only to --method eliminate")
    options = {name: value for name, value in (
        ("order", order), ("on", args.on), ("max_paths", args.max_paths),
        ("max_products", args.max_products), ("max_intermediates", args.max_intermediates))
        if value is not None}
    _print_accumulation(g, accumulate(g, method=args.method, keep_values=False, **options))


def _path_highlight(g: LCG, ends, limit: int = 10):
    from .exact.paths import count_paths_between, paths

    source, target = ends
    count = count_paths_between(g, source, target)
    if count == 0:
        raise UsageError(f"there is no path from {source} to {target}")
    if count > limit:
        raise UsageError(f"there are {format_count(count)} paths from {source} to {target}; "
                         f"--paths draws at "
                         f"most {limit} (pass a list of chosen paths to minirad.render instead)")
    return list(paths(g, source, target))


def cmd_render(args) -> None:
    from .draw.render import render, sample_title, save_drawing
    from .randomized.sampling import sample_paths

    _check_picture_path(args.output, (".png", ".svg", ".pdf", ".dot", ".gv"))
    g = _load_graph(args.file, args.max_bytes)
    if g.n_vertices > args.max_vertices:
        raise UsageError(f"the graph has {g.n_vertices} vertices, more than --max-vertices "
                         f"{args.max_vertices} that can be read in one picture; pass "
                         f"--max-vertices {g.n_vertices} to draw it anyway")
    if not 0 < args.timeout < math.inf:  # also refuses nan
        raise UsageError(f"--timeout must be a positive number of seconds, not {args.timeout}")
    title = None
    if args.sample:
        k = _parse_k(args.sample)
        sample = sample_paths(g, k, rng=args.seed)
        title = sample_title(g, sample, f"One Algorithm 1 sample, k={k}, seed {args.seed}")
    else:
        sample = None
    highlighted = _path_highlight(g, args.paths) if args.paths else None
    highlights = [h for h in (sample, highlighted) if h is not None]
    drawing = render(g, *highlights, show_ops=args.ops, show_values=args.values,
                     max_vertices=args.max_vertices, title=title)
    if g.n_vertices > 300 and not args.output.lower().endswith((".dot", ".gv")):
        print(f"minirad render: drawing {g.n_vertices} vertices; the graphviz 'dot' layout "
              f"may take a while (stopped after --timeout {args.timeout:g} s)",
              file=sys.stderr, flush=True)
    print(f"wrote {save_drawing(drawing, args.output, timeout=args.timeout)}")
    if sample is not None:
        print(f"the sample stores {sample.edges_stored} of {g.n_edges} edges and "
              f"{sample.vertices_stored} of {g.n_vertices} vertices")


#: seconds a run takes before its progress line appears
PROGRESS_AFTER = 1.5


class _Progress:
    """A progress line on stderr, shown only once a run has taken a while."""

    def __init__(self, what: str, after: float = 1.5, every: float = 2.0):
        self.what, self.after, self.every = what, after, every
        self.start = time.perf_counter()
        self.shown = None  # when the line was last written
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        elapsed = now - self.start
        if elapsed < self.after or (self.shown is not None and now - self.shown < self.every
                                    and done < total):
            return
        self.shown = now
        line = f"  {self.what}: {done} of {total} ({elapsed:.0f} s)"
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n",
              file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.shown is not None and self.tty:
            print(file=sys.stderr, flush=True)


def _entry_names(g: LCG) -> list[list[str]]:
    """``dy/dx`` for every Jacobian entry; an array vertex by its entries (``W[2,0]``)."""
    from .graph.scalarize import entry_names

    def entries(vertices):
        return [name for v in vertices for name in entry_names(g.names[v], g.shape(v))]
    return [[f"d{y}/d{x}" for x in entries(g.inputs)] for y in entries(g.outputs)]


def _worst_entry(g: LCG, result, digits: int) -> str:
    """The entry whose mean is relatively furthest from the exact value."""
    exact, mean = result.exact, result.mean
    names = _entry_names(g)
    nonzero = exact != 0
    if nonzero.any():
        relative = np.where(nonzero, np.abs(mean - exact) / np.where(nonzero, np.abs(exact), 1),
                            -1.0)
        r, c = np.unravel_index(int(np.argmax(relative)), exact.shape)
        off = relative[r, c]
        off = f"{100 * off:.{min(digits, 3)}g}%" if off < 10 else f"{off:.3g} times its size"
        return (f"worst entry {names[r][c]}: mean {mean[r, c]:.{digits}g} against exact "
                f"{exact[r, c]:.{digits}g}, off by {off}")
    r, c = np.unravel_index(int(np.argmax(np.abs(mean - exact))), exact.shape)
    return (f"every exact entry is 0; worst entry {names[r][c]}: mean "
            f"{mean[r, c]:.{digits}g}")


def _z_line(result) -> str:
    """The largest |z| over the entries the estimator can change (elsewhere the standard
    error is 0 and a z-score would be rounding divided by rounding)."""
    z = np.abs(result.z)[result.varies]
    fixed = int((~result.varies).sum())
    if not np.isfinite(z).any():
        return (f"no z-score: no entry's estimate can vary (the exact variance is 0 for all "
                f"{fixed}), so the estimates differ from the exact Jacobian by rounding only")
    line = f"max |z| = {float(np.nanmax(z)):.2f} (mean minus exact, in standard errors"
    if fixed:
        varying = "entry that varies" if z.size == 1 else "entries that vary"
        line += f"; over the {z.size} {varying}, not the {fixed} of exact variance 0"
    return line + ")"


def _noise_warning(g: LCG, result) -> str | None:
    """A warning when one estimate's standard deviation dwarfs the Jacobian."""
    variance = result.exact_variance if result.exact_variance is not None else result.variance
    if variance is None or not np.isfinite(variance).all():
        return None
    std, exact = np.sqrt(variance), np.abs(result.exact)
    scale = max(float(exact.max()), 0.0)
    ratio = np.where(exact > 0, std / np.where(exact > 0, exact, 1), 0.0)
    worst = float(ratio.max()) if ratio.size else 0.0
    if worst < NOISE_RATIO or scale == 0:
        return None
    r, c = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    name = _entry_names(g)[r][c]
    samples_needed = int(np.ceil((worst / 0.1) ** 2))  # standard error 10% of the entry
    return (f"the estimator's standard deviation is {worst:.3g} times |{name}| (one estimate "
            f"is mostly noise); the mean's standard error shrinks as 1/sqrt(samples), so "
            f"about {samples_needed} samples bring it to 10% of that entry, or raise --k")


#: ``compare`` warns when one estimate's standard deviation exceeds this multiple of an entry
NOISE_RATIO = 10.0


def cmd_compare(args) -> None:
    from .randomized.experiments import check_compare, compare
    from .rng import as_generator

    _check_picture_path(args.output)
    if not 1 <= args.precision <= 17:
        raise UsageError(f"--precision is a number of significant digits from 1 to 17, not "
                         f"{args.precision}")
    g = _load_graph(args.file, args.max_bytes)
    k = _parse_k(args.k)
    check_compare(g, k, args.samples)  # a bad or too large --k or --samples: before any work
    as_generator(args.seed)
    digits = args.precision
    print(f"drawing {plural(args.samples, 'Algorithm 1 estimate')} ({_describe_k(k)}; seed "
          f"{args.seed}) ...", flush=True)
    progress = _Progress("estimates drawn", after=PROGRESS_AFTER)
    try:
        result = compare(g, k=k, n=args.samples, rng=args.seed, progress=progress)
    finally:
        progress.close()
    print(f"done in {time.perf_counter() - progress.start:.2f} s\n")
    print("exact Jacobian:")
    print(_format_jacobian(g, result.exact, digits))
    print(f"\nmean of {result.n} estimate{'s' if result.n != 1 else ''}:")
    print(_format_jacobian(g, result.mean, digits))
    if result.n > 1:
        print("\nstandard error of the mean:")
        # where no estimate can vary, only rounding did
        print(_format_jacobian(g, np.where(result.varies, result.stderr, 0.0), digits))
    else:
        print("\nstandard error of the mean: undefined with one estimate (the spread of the "
              "estimates needs at least two to measure); use --samples 2 or more")
    if result.exact_variance is not None:
        print("\nexact variance of one estimate (path_sampling_variance):")
        print(_format_jacobian(g, result.exact_variance, digits))
    print()
    if result.n > 1:
        print(_z_line(result))
    print(f"relative error of the mean = {result.running_error[-1]:.{digits}g} "
          f"(||mean - exact|| / ||exact||)")
    print(_worst_entry(g, result, digits))
    warning = _noise_warning(g, result)
    if warning:
        print(f"minirad compare: warning: {warning}", file=sys.stderr)
    if args.output:
        from .draw.plots import plot_comparison
        from .draw.render import save_drawing

        figure = plot_comparison(g, result, k)
        print(f"wrote {save_drawing(figure, args.output)}")


def cmd_figures(args) -> None:
    from .gallery import build_figures

    written = build_figures(args.output, progress=lambda message: print(message, flush=True))
    print(f"{len(written)} files written to {args.output}")


def _graph_to_explore(args):
    """The graph named by ``minirad explore``'s first argument (and point)."""
    target = args.graph
    if target.lower().endswith((".json", ".npz")) and not args.point:
        return _load_graph(target, args.max_bytes)
    f = _load_function(target)
    if not args.point:  # a function that builds a graph, such as minirad.examples:figure1
        g = _run_user_code(target, f)
        if not isinstance(g, LCG):
            raise UsageError(f"{target}() returned {type(g).__name__}, not a graph; give the "
                             f"point to trace it at (minirad explore {target} 2.0 5.0 -o ...)")
        return g
    point = [_parse_point(x) for x in args.point]  # a vector is an array: a graph of arrays
    return _run_user_code(target, trace, f, *point)


def _title_of(target: str) -> str:
    """The name a page is titled by: the function's (``mymodule:f`` -> ``f``), or the
    saved graph's file name."""
    if target.lower().endswith((".json", ".npz")):
        return os.path.basename(target)
    return target.rpartition(":")[2]


def cmd_explore(args) -> None:
    from .draw.explore import explore

    if not args.output.lower().endswith((".html", ".htm")):
        raise UsageError(f"cannot write the page to {args.output!r}: use a name ending in .html")
    folder = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write {args.output}: the folder {folder} does not exist")
    g = _graph_to_explore(args)
    page = explore(g, title=args.title or _title_of(args.graph), n=args.samples,
                   max_vertices=args.max_vertices)
    page.save(args.output)
    print(f"wrote {args.output} ({len(page.html.encode('utf-8')) / 1000:,.0f} kB, {g!r}); "
          f"open it in a browser, no server needed")


#: the longest time limit a grader's flag takes (a day): beyond it no grading finishes
MAX_SECONDS = 86400.0


# case studies (minirad/studies/), imported only when asked for: the core never needs them
def cmd_lab(args) -> None:
    if args.form == "grade":
        from .labs.grading import grade, summary

        output = args.output or "minirad-grades"
        only = [n.strip() for n in args.only.split(",")] if args.only else None
        reports = grade(args.paths, output, notebook_seconds=args.notebook_seconds,
                        cell_seconds=args.cell_seconds, exercise_seconds=args.exercise_seconds,
                        memory_mb=args.memory, jobs=args.jobs,
                        secret_file=args.secret_file, roster=args.roster,
                        deadline=args.deadline, late_penalty=args.late_penalty, only=only,
                        isolation=args.isolation,
                        progress=lambda report: print(summary(report), flush=True))
        print(f"{len(reports)} submission(s) graded; scores.csv, canvas.csv, one .json and one "
              f".results.json (Gradescope) each in {output}")
        return
    from .labs.notebook import write_notebooks

    if len(args.paths) != 1 or not args.output:
        raise UsageError(f"lab {args.form} takes one lab file or folder and -o FOLDER")
    if not os.path.exists(args.paths[0]):
        raise UsageError(f"no such file or folder: {args.paths[0]}")
    written = write_notebooks(args.paths[0], args.output, solutions=args.form == "solutions")
    for path in written:
        print(f"wrote {path}")


def cmd_demo(args) -> None:
    from . import examples
    from .draw.render import render, save_drawing
    from .exact.jacobians import accumulate
    from .exact.paths import count_paths, path_product, paths
    from .randomized.experiments import compare
    from .randomized.sampling import sample_paths

    folder = args.output
    os.makedirs(folder, exist_ok=True)
    g = examples.figure1()
    print("The RAD paper's Figure 1 program (an example by Paul D. Hovland):\n")
    print("    a = exp(x1); b = sin(x2); c = b * x2; d = a * c; return a * d\n")
    print(f"traced at (x1, x2) = (1, 2): {g!r}\n")
    print("1. Wengert list (one line per vertex, with its local partials):\n")
    print(g.wengert())
    drawing = render(g, show_ops=True)
    print(f"\nwrote {save_drawing(drawing, os.path.join(folder, 'figure1_lcg.png'))}")

    total = format_count(int(count_paths(g).sum()))
    print(f"\n2. Bauer's formula: {total} paths from the inputs to y\n")
    every = list(paths(g))
    for p in every:
        print(f"    {' -> '.join(g.names[v] for v in p):<24} product {path_product(g, p)!r}")
    print(f"wrote {save_drawing(render(g, every), os.path.join(folder, 'figure1_paths.png'))}")

    print("\n3. The exact Jacobian, every way, with its cost:\n")
    # every method; vertex elimination in its dynamic and its optimal order
    runs = [(m, {}) for m in METHODS if m != "eliminate"]
    runs += [("eliminate", {"order": "markowitz"}), ("eliminate", {"order": "optimal"})]
    for method, options in runs:
        _print_accumulation(g, accumulate(g, method=method, keep_values=False, **options))
        print()

    print("4. Randomized AD: one Algorithm 1 sample (k = 1, seed 0):\n")
    sample = sample_paths(g, 1, rng=0)
    print(_format_jacobian(g, sample.jacobian))
    print(f"it keeps {sample.edges_stored} of {g.n_edges} edges and {sample.vertices_stored} of "
          f"{g.n_vertices} vertices")
    print(f"wrote {save_drawing(render(g, sample), os.path.join(folder, 'figure1_sample.png'))}")

    n = 10_000
    print(f"\n5. The mean of {n} samples against the exact Jacobian:\n", flush=True)
    result = compare(g, k=1, n=n, rng=0)
    print(_format_jacobian(g, result.mean))
    stderr = np.where(result.varies, result.stderr, 0.0)  # elsewhere rounding only
    print(f"standard errors {stderr.ravel().round(4).tolist()}, relative error of the whole "
          f"matrix {result.running_error[-1]:.2g}")
    print(_z_line(result))
    # the norm hides a small entry's error behind the large one: name the worst entry
    z = float(np.nanmax(np.abs(result.z)[result.varies], initial=0.0))
    print(_worst_entry(g, result, 4) + ("; within noise (|z| < 3)" if z < 3 else
                                        "; more than 3 standard errors off"))
    print("dy/dx1 is estimated without error: both of its paths carry the same product "
          "(a * a * c), so whichever one a sample keeps, the scaled product is exact.")
    print(f"\npictures are in {folder}/")


#: the case studies `minirad study NAME` runs (each a folder of minirad.studies)
STUDIES = {"nn": "neural networks on MNIST with randomized backward passes (paper Sec. 4)",
           "pde": "reaction-diffusion control with eq. 8 and checkpointing (paper Sec. 5)"}


def cmd_study(args) -> None:
    folder = args.output or f"minirad-study-{args.name}"
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UsageError(f"cannot write the study into {folder}: it is a file")
    if args.name == "nn":
        if args.steps is not None or args.iterations is not None or args.resume:
            raise UsageError("--steps, --iterations and --resume apply to the pde study "
                             "only")
        from .studies.nn import figures as nn_figures
        from .studies.nn import study as nn

        try:
            if args.paper_figures:
                result = nn_figures.run_figures(folder, nn_figures.FiguresConfig.quick()
                                                if args.quick else None)
            else:
                result = nn.run_study(folder, quick=args.quick)
        except ModuleNotFoundError as error:  # an optional extra (mlxtend) is missing
            raise UsageError(str(error)) from None
        for path in result["paths"].values():
            print(f"wrote {path}")
        return
    from .studies.pde.study import SECONDS_PER_STEP, StudyConfig, estimated_seconds, run_study

    if not 0 < args.max_days < math.inf:  # also refuses nan
        raise UsageError(f"--max-days must be a positive number of days, not {args.max_days}")
    if args.paper_figures:
        if args.iterations is not None or args.resume:
            raise UsageError("--iterations and --resume do not apply to --paper-figures")
        from .studies.pde.sampling import run_figure

        steps = args.steps if args.steps is not None else (
            StudyConfig.quick() if args.quick else StudyConfig()).n_steps
        if steps < 1:
            raise UsageError(f"--steps must be a positive integer, not {steps}")
        _check_days(SECONDS_PER_STEP * steps, f"--steps {steps}", args.max_days)
        print(run_figure(folder, steps))
        return
    if args.quick and (args.steps is not None or args.iterations is not None):
        raise UsageError("--quick sets its own --steps and --iterations; give one or "
                         "the other")
    cfg = StudyConfig.quick() if args.quick else StudyConfig()
    overrides = {key: value for key, value in (("n_steps", args.steps),
                                               ("iterations", args.iterations))
                 if value is not None}
    for key, value in overrides.items():
        if value < 1:
            raise UsageError(f"--{'steps' if key == 'n_steps' else key} must be a "
                             f"positive integer, not {value}")
    if overrides:
        from dataclasses import replace

        cfg = replace(cfg, **overrides)
    from ._arguments import check_memory
    from .studies.pde import Reactor, exact_retained_bytes

    # the exact gradient (reverse mode) keeps the state of every step
    check_memory(exact_retained_bytes(Reactor(n_steps=cfg.n_steps)),
                 f"--steps {cfg.n_steps} (the exact gradient stores the state of every step)")
    _check_days(estimated_seconds(cfg), f"{cfg.iterations} iterations of {cfg.n_steps} steps",
                args.max_days, " (the state is saved after every iteration: --resume goes on "
                               "after an interruption)")
    command = "minirad " + " ".join(sys.argv[1:]) if sys.argv[1:] else "minirad study pde"
    try:
        written = run_study(folder, cfg, command=command, resume=args.resume)
    except ValueError as error:    # an unfinished or mismatched saved run
        raise UsageError(str(error)) from None
    for path in written:
        print(path)


def _check_days(seconds: float, what: str, max_days: float, note: str = "") -> None:
    """Refuse, before it starts, a run estimated to take more than ``max_days``."""
    days = seconds / 86400
    if days > max_days:
        raise UsageError(f"{what} would take about {days:,.3g} days, more than --max-days "
                         f"{max_days:g}; ask for fewer, or pass --max-days {math.ceil(days)} "
                         f"to run it anyway{note}")


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose refusals are one line (``minirad compare: error:
    ...``) and exit status 1, as every other refusal of the command, instead of
    the usage text and status 2."""

    def error(self, message):
        raise UsageError(f"{self.prog}: error: {message} (see {self.prog} --help)")


class _HelpFormatter(argparse.HelpFormatter):
    """Shows each default once, and only when there is one: a required option
    or a flag has none to show."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "(default" in text or action.required or action.default is None or \
                action.default is False or action.default == argparse.SUPPRESS or \
                not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


#: (name, one-line help, description shown by ``minirad NAME --help``)
_COMMANDS = {
    "demo": ("the Figure 1 program end to end (the main job)",
             "Trace the RAD paper's Figure 1 program, print its Wengert list, its paths, its "
             "Jacobian by every exact method with the cost of each, one Algorithm 1 sample and "
             "the mean of many, and save the pictures."),
    "wengert": ("print the Wengert list of a saved LCG",
                "Print a saved LCG as a Wengert list: one line per vertex, with its operation "
                "and the local partials on its incoming edges."),
    "trace": ("trace a Python function at a point and save its LCG",
              "Run a Python function at the given point with minirad's tracer and save the "
              "linearized computational graph (minirad.save_graph). Each argument is a "
              "number, or 1,2,3 for a vector (passed to the function as a numpy array)."),
    "jacobian": ("the exact Jacobian of a saved LCG and its cost",
                 "Accumulate the Jacobian of a saved LCG by Bauer's path sum, a forward or "
                 "reverse sweep, or vertex elimination, and print it with the number of "
                 "multiplications and additions the method used."),
    "render": ("draw a saved LCG (svg, png, pdf or dot by extension)",
               "Draw a saved LCG bottom-up (inputs at the bottom), each edge labelled with its "
               "partial (an array edge: its Jacobian block's kind and retained bytes), "
               "optionally with one Algorithm 1 sample or the paths between two vertices "
               "highlighted."),
    "compare": ("exact Jacobian against the mean of sampled estimates",
                "Draw many Algorithm 1 (path sampling) estimates of the Jacobian of a saved "
                "LCG and set their mean against the exact Jacobian: standard errors, z-scores, "
                "the relative error and the worst entry."),
    "figures": ("regenerate every picture in figures/",
                "Regenerate the gallery of pictures (figures/): the Figure 1 graph, its paths, "
                "a sample, its elimination, and the randomized-AD plots."),
    "study": ("run a case study of the RAD paper and write its figures and tables",
              "Run a case study of the RAD paper at laptop scale and write its pictures and a "
              "markdown table of its numbers. nn: neural networks trained on real MNIST with "
              "randomized backward passes (Sec. 4). pde: reaction-diffusion control (Sec. 5) "
              "with the exact gradient, the eq. 8 estimator at several fractions, the authors' "
              "released sampler and gradient checkpointing."),
    "explore": ("write one self-contained web page to explore a graph",
                "Write one HTML file (no server, no network) in which a student steps through "
                "a sweep, eliminates vertices, lists Bauer's paths, draws Algorithm 1 samples "
                "and, for a graph of arrays, trades memory for variance. GRAPH is a saved LCG "
                "(.json, or .npz for a graph of arrays), or MODULE:FUNCTION with a point to "
                "trace the function at, or without one a function returning a graph (e.g. "
                "minirad.examples:figure1)."),
    "lab": ("write the labs as notebooks, or grade submissions",
            "Write the lab scripts as Jupyter notebooks, either as handouts (exercises "
            "replaced by stubs) or with the solutions; or grade submitted notebooks, each in "
            "a fresh kernel, every exercise checked by the grader under its time limit, into "
            "scores.csv, a JSON report per submission and Gradescope's results.json. The exit "
            "status is 0 whatever the students scored."),
}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="minirad", formatter_class=_HelpFormatter,
        description="Automatic differentiation as graph computation: linearized computational "
                    "graphs, exact Jacobians and randomized AD.")
    parser.add_argument("--version", action="version", version=f"minirad {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, run):
        text, description = _COMMANDS[name]
        p = sub.add_parser(name, help=text, description=description,
                           formatter_class=_HelpFormatter)
        p.set_defaults(run=run, flags=p._option_string_actions.keys())
        return p

    graph_file = "a saved LCG (minirad trace -o, minirad.save_graph): .json or .npz"

    def max_bytes_option(p):
        p.add_argument("--max-bytes", type=int, default=MAX_BYTES, metavar="BYTES",
                       help="refuse a saved graph whose reading takes more (minirad.load_graph)")
    p = command("demo", cmd_demo)
    p.add_argument("-o", "--output", default="minirad-demo", help="folder for the pictures")

    p = command("wengert", cmd_wengert)
    p.add_argument("file", help=graph_file)
    max_bytes_option(p)

    p = command("trace", cmd_trace)
    p.add_argument("function", help="MODULE:FUNCTION or FILE.py:FUNCTION")
    p.add_argument("point", nargs="+",
                   help="one value per argument: a number, or 1,2,3 for a vector")
    p.add_argument("-o", "--output", required=True,
                   help="where to write the LCG: g.json, or g.npz for a graph of arrays")
    p.add_argument("--wengert", action="store_true", help="also print the Wengert list")

    p = command("jacobian", cmd_jacobian)
    p.add_argument("file", help=graph_file)
    max_bytes_option(p)
    p.add_argument("--method", default="reverse", choices=METHODS,
                   help="Bauer's path sum, a sweep, or vertex elimination")
    p.add_argument("--order", help=f"{', '.join(ORDERS)}, or names a,b,c "
                                   f"(with --method eliminate; default markowitz)")
    p.add_argument("--on", choices=ON,
                   help="what elimination eliminates (with --method eliminate; default vertices)")
    p.add_argument("--max-paths", type=int, metavar="N",
                   help="with --method bauer: refuse more paths (default: 1000000)")
    p.add_argument("--max-products", type=int, metavar="N",
                   help="with --method bauer: refuse more multiplications along them "
                        "(default: 10000000)")
    p.add_argument("--max-intermediates", type=int, metavar="N",
                   help="with --order optimal: search orders of more intermediates")

    p = command("render", cmd_render)
    p.add_argument("file", help=graph_file)
    max_bytes_option(p)
    p.add_argument("-o", "--output", required=True, help="e.g. g.svg, g.png, g.pdf, g.dot")
    p.add_argument("--sample", metavar="K", help="highlight one Algorithm 1 sample with K draws")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample")
    p.add_argument("--paths", nargs=2, metavar=("IN", "OUT"),
                   help="highlight every path from input IN to output OUT")
    p.add_argument("--ops", action="store_true", help="show each vertex's operation")
    p.add_argument("--values", action="store_true", help="show each vertex's value")
    p.add_argument("--max-vertices", type=int, default=200, help="refuse larger graphs")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds the graphviz layout may take before it is stopped")

    p = command("compare", cmd_compare)
    p.add_argument("file", help=graph_file)
    max_bytes_option(p)
    p.add_argument("--k", default="1", help="draws per visited vertex (an integer), or a "
                   "fraction of each out-degree such as 0.5 (1.0 means every out-edge)")
    p.add_argument("--samples", type=int, default=1000, help="number of estimates")
    p.add_argument("--seed", type=int, default=0, help="seed of the random draws")
    p.add_argument("--precision", type=int, default=4,
                   help="significant digits of the printed numbers")
    p.add_argument("-o", "--output", help="also save heatmaps of exact vs sampled (png/svg)")

    p = command("figures", cmd_figures)
    p.add_argument("-o", "--output", default="figures", help="folder for the pictures")

    p = command("study", cmd_study)
    p.add_argument("name", choices=sorted(STUDIES),
                   help="; ".join(f"{name}: {what}" for name, what in sorted(STUDIES.items())))
    p.add_argument("--quick", action="store_true", help="a small run (about two minutes)")
    p.add_argument("-o", "--output", help="folder for the results (default minirad-study-NAME)")
    p.add_argument("--steps", type=int, help="pde: time steps; the paper's 40961 if not given")
    p.add_argument("--iterations", type=int,
                   help="pde: Adam iterations; the paper's 800 if not given")
    p.add_argument("--resume", action="store_true",
                   help="pde: go on with an interrupted run saved in the output folder")
    p.add_argument("--max-days", type=float, default=30.0, metavar="DAYS",
                   help="pde: refuse a run estimated to take longer")
    p.add_argument("--paper-figures", action="store_true",
                   help="only the paper's remaining figures: 4, 8, 9 and 10 (nn, 5 to 15 "
                        "minutes) or 7a (pde, seconds)")

    p = command("explore", cmd_explore)
    p.add_argument("graph", metavar="GRAPH_OR_MODULE:FUNCTION",
                   help="g.json, g.npz, MODULE:FUNCTION or FILE.py:FUNCTION")
    p.add_argument("point", nargs="*",
                   help="the point to trace the function at: a number, or 1,2,3 for a vector "
                        "(an array: the page of a graph of arrays, with a Memory panel)")
    p.add_argument("-o", "--output", required=True, help="the page to write (page.html)")
    p.add_argument("--title", help="the page's title (default: the function's name, or the "
                                   "saved graph's file name)")
    p.add_argument("--samples", type=int, default=100,
                   help="Algorithm 1 estimates stored per k and seed")
    p.add_argument("--max-vertices", type=int, default=200, help="refuse larger graphs")
    max_bytes_option(p)

    p = command("lab", cmd_lab)
    p.add_argument("form", choices=["handout", "solutions", "grade"],
                   help="handout: exercises replaced by stubs; solutions: complete; grade: "
                        "grade submitted notebooks (or lab scripts), each in a fresh kernel")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="handout, solutions: a lab file or a folder of them (e.g. tutorials/); "
                        "grade: the submissions")
    p.add_argument("-o", "--output",
                   help="handout, solutions: folder for the .ipynb files; grade: folder for "
                        "the scores (default: minirad-grades)")
    p.add_argument("--jobs", type=_whole_number, metavar="N",
                   help="grade: submissions graded at once, each in a sandbox of its own "
                        "(default: one per core)")
    p.add_argument("--notebook-seconds", type=_seconds, default=1200.0, metavar="SECONDS",
                   help="grade: the time a submission may take, cells and exercises "
                        "together")
    p.add_argument("--cell-seconds", type=_seconds, default=180.0, metavar="SECONDS",
                   help="grade: stop any one cell of a submission after this long")
    p.add_argument("--exercise-seconds", type=_seconds, metavar="SECONDS",
                   help="grade: allow every exercise this long instead of the limit declared "
                        "with it (e.g. on a slow machine)")
    p.add_argument("--memory", type=_whole_number, default=4096, metavar="MB",
                   help="grade: the memory a kernel may map, in MB")
    p.add_argument("--secret-file", metavar="FILE",
                   help="grade: the instructor's secret the hidden cases are drawn from "
                        "(default: OUTPUT/grader-secret, made on the first run)")
    p.add_argument("--roster", metavar="CSV",
                   help="grade: a CSV with the columns student and file (and optionally "
                        "name, canvas_id, sis_id, login, section, submitted, deadline)")
    p.add_argument("--deadline", metavar="WHEN",
                   help="grade: the deadline, e.g. 2026-12-01T23:59; later work loses "
                        "--late-penalty percent per day started")
    p.add_argument("--late-penalty", type=_percent, default=0.0, metavar="PERCENT",
                   help="grade: percent of the points lost per day late")
    p.add_argument("--only", metavar="N.K[,N.K...]",
                   help="grade: regrade these exercises only; the others keep their scores "
                        "from the reports already in OUTPUT")
    p.add_argument("--isolation", choices=["auto", "user", "process"], default="auto",
                   help="grade: user: each kernel runs as a user of its own (needs root); "
                        "process: as the grader's user, in a session of its own; auto: user "
                        "when it can")
    return parser


def _seconds(text: str) -> float:
    """A time limit: a positive number of seconds, at most :data:`MAX_SECONDS` (a day)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= MAX_SECONDS:  # also refuses nan
        raise argparse.ArgumentTypeError(f"a time limit must be a positive, finite number of "
                                         f"seconds, at most {MAX_SECONDS:g} (a day; no "
                                         f"grading needs more), not {text}")
    return value


def _whole_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, not {text}")
    return value


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage") from None
    if not math.isfinite(value) or not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"a percentage lies between 0 and 100, not {text}")
    return value


def _one_line_warnings(command: str):
    """Warnings as one clean line each (the default also prints a line of source)."""
    def show(message, category, filename, lineno, file=None, line=None):
        print(f"minirad {command}: warning: {message}", file=sys.stderr if file is None else file)
    return show


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except UsageError as error:  # one line, as every other refusal (see _Parser)
        print(error, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warnings(args.command)
            args.run(args)
    except UserCodeError as error:
        if args.debug:
            raise error.original from None  # its own traceback, from the user's code down
        print(f"minirad {args.command}: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `minirad jacobian f.json | head` closed our output early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ValueError, TypeError, OSError) as error:
        if args.debug:
            raise
        print(f"minirad {args.command}: error: {_as_flags(_message(error), args.flags)}",
              file=sys.stderr)
        return 1
    except MemoryError:  # a size no check foresaw: one line, not a traceback
        if args.debug:
            raise
        print(f"minirad {args.command}: error: ran out of memory; try a smaller graph or "
              f"smaller counts", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
