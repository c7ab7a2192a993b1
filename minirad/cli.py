"""The ``minirad`` command.

Every subcommand prints one clear line and exits with status 1 on bad
input; ``--debug`` shows the full traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys

from .elimination import STRATEGIES
from .graph import LCG
from .jacobian import METHODS
from .trace import trace


class UsageError(ValueError):
    """Bad command-line input (shown as one line)."""


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
        loader_spec.loader.exec_module(module)
    else:
        sys.path.insert(0, os.getcwd())  # let `minirad trace mymodule:f` find ./mymodule.py
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise UsageError(f"cannot import module {module_name!r}: {error}") from None
    try:
        return getattr(module, function_name)
    except AttributeError:
        raise UsageError(f"module {module_name!r} has no function {function_name!r}") from None


def _parse_point(text: str):
    """``2.5`` is a scalar argument, ``1,2,3`` a 1-D vector argument."""
    try:
        if "," in text:
            return [float(x) for x in text.strip("[]").split(",") if x.strip()]
        return float(text)
    except ValueError:
        raise UsageError(f"argument {text!r} is not a number or a comma-separated list of "
                         f"numbers") from None


def _load_graph(path: str) -> LCG:
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {path}")
    return LCG.from_json(path)


# ---------------------------------------------------------------- commands
def cmd_wengert(args) -> None:
    print(_load_graph(args.file).wengert())


def cmd_trace(args) -> None:
    f = _load_function(args.function)
    g = trace(f, *[_parse_point(x) for x in args.point])
    g.to_json(args.output)
    print(f"{g!r} written to {args.output}")
    if args.wengert:
        print(g.wengert())


def _format_jacobian(g: LCG, matrix) -> str:
    """A matrix labelled by the graph's outputs (rows) and inputs (columns),
    every entry to full double precision."""
    rows, columns = [g.names[v] for v in g.outputs], [g.names[v] for v in g.inputs]
    cells = [[repr(float(x)) for x in row] for row in matrix]
    width = max([len(c) for row in cells for c in row] + [len(n) for n in columns] + [1])
    label = max([len(n) for n in rows] + [1])
    lines = [" " * label + "  " + "  ".join(n.rjust(width) for n in columns)]
    for name, row in zip(rows, cells):
        lines.append(name.ljust(label) + "  " + "  ".join(c.rjust(width) for c in row))
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


def _parse_order(text: str | None):
    if text is None or text in STRATEGIES:
        return text
    return [name.strip() for name in text.split(",") if name.strip()]


def _print_accumulation(g: LCG, result) -> None:
    print(_format_jacobian(g, result.jacobian))
    shown = f", order {' '.join(result.order)}" if result.order else ""
    print(f"{result.method}: {result.multiplications} multiplications, "
          f"{result.additions} additions{shown}")


def cmd_jacobian(args) -> None:
    from .jacobian import accumulate

    g = _load_graph(args.file)
    order = _parse_order(args.order)
    if order is not None and args.method != "eliminate":
        raise UsageError("--order applies only to --method eliminate")
    options = {"order": order} if order is not None else {}
    _print_accumulation(g, accumulate(g, method=args.method, keep_values=False, **options))


def _path_highlight(g: LCG, ends, limit: int = 10):
    from .paths import count_paths_between, paths

    source, target = ends
    count = count_paths_between(g, source, target)
    if count == 0:
        raise UsageError(f"there is no path from {source} to {target}")
    if count > limit:
        raise UsageError(f"there are {count} paths from {source} to {target}; --paths draws at "
                         f"most {limit} (pass a list of chosen paths to minirad.render instead)")
    return list(paths(g, source, target))


def cmd_render(args) -> None:
    from .render import render, save
    from .sampling import sample_paths

    _check_picture_path(args.output, (".png", ".svg", ".pdf", ".dot", ".gv"))
    g = _load_graph(args.file)
    sample = sample_paths(g, _parse_k(args.sample), rng=args.seed) if args.sample else None
    highlighted = _path_highlight(g, args.paths) if args.paths else None
    highlights = [h for h in (sample, highlighted) if h is not None]
    drawing = render(g, *highlights, show_ops=args.ops, show_values=args.values,
                     max_vertices=args.max_vertices)
    print(f"wrote {save(drawing, args.output)}")
    if sample is not None:
        print(f"the sample stores {sample.edges_stored} of {g.n_edges} edges and "
              f"{sample.vertices_stored} of {g.n_vertices} vertices")


def cmd_compare(args) -> None:
    import time

    from .experiments import compare

    _check_picture_path(args.output)
    g = _load_graph(args.file)
    k = _parse_k(args.k)
    print(f"drawing {args.samples} Algorithm 1 estimates ({_describe_k(k)}; seed {args.seed}) "
          f"...", flush=True)
    start = time.perf_counter()
    result = compare(g, k=k, n=args.samples, rng=args.seed)
    print(f"done in {time.perf_counter() - start:.2f} s\n")
    print("exact Jacobian:")
    print(_format_jacobian(g, result.exact))
    print(f"\nmean of {result.n} estimates:")
    print(_format_jacobian(g, result.mean))
    print("\nstandard error of the mean:")
    print(_format_jacobian(g, result.stderr))
    if result.exact_variance is not None:
        print("\nexact variance of one estimate (path_sampling_variance):")
        print(_format_jacobian(g, result.exact_variance))
    print(f"\nmax |z| = {float(abs(result.z).max()):.2f} (mean minus exact, in standard errors); "
          f"relative error of the mean = {result.running_error[-1]:.3g}")
    if args.output:
        from .plots import plot_comparison
        from .render import save

        figure = plot_comparison(g, result, k)
        print(f"wrote {save(figure, args.output)}")


def cmd_figures(args) -> None:
    from .gallery import build_figures

    written = build_figures(args.output, progress=lambda message: print(message, flush=True))
    print(f"{len(written)} files written to {args.output}")


# case studies (minirad/studies/), imported only when asked for: the core never needs them
STUDIES = {"nn": "minirad.studies.nn"}


def cmd_study(args) -> None:
    module = importlib.import_module(STUDIES[args.name])
    folder = args.output or f"minirad-study-{args.name}"
    try:
        result = module.run_study(folder, quick=args.quick)
    except ModuleNotFoundError as error:  # an optional extra (mlxtend) is missing
        raise UsageError(str(error)) from None
    for path in result["paths"].values():
        print(f"wrote {path}")


def cmd_lab(args) -> None:
    from .labs.notebook import write_notebooks

    if not os.path.exists(args.source):
        raise UsageError(f"no such file or folder: {args.source}")
    written = write_notebooks(args.source, args.output, solutions=args.form == "solutions")
    for path in written:
        print(f"wrote {path}")


def cmd_demo(args) -> None:
    from . import examples
    from .experiments import compare
    from .jacobian import accumulate
    from .paths import count_paths, path_product, paths
    from .render import render, save
    from .sampling import sample_paths

    folder = args.output
    os.makedirs(folder, exist_ok=True)
    g = examples.figure1()
    print("The RAD paper's Figure 1 program (an example by Paul D. Hovland):\n")
    print("    a = exp(x1); b = sin(x2); c = b * x2; d = a * c; return a * d\n")
    print(f"traced at (x1, x2) = (1, 2): {g!r}\n")
    print("1. Wengert list (one line per vertex, with its local partials):\n")
    print(g.wengert())
    print(f"\nwrote {save(render(g, show_ops=True), os.path.join(folder, 'figure1_lcg.png'))}")

    print(f"\n2. Bauer's formula: {int(count_paths(g).sum())} paths from the inputs to y\n")
    every = list(paths(g))
    for p in every:
        print(f"    {' -> '.join(g.names[v] for v in p):<24} product {path_product(g, p)!r}")
    print(f"wrote {save(render(g, every), os.path.join(folder, 'figure1_paths.png'))}")

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
    print(f"wrote {save(render(g, sample), os.path.join(folder, 'figure1_sample.png'))}")

    n = 10_000
    print(f"\n5. The mean of {n} samples against the exact Jacobian:\n", flush=True)
    result = compare(g, k=1, n=n, rng=0)
    print(_format_jacobian(g, result.mean))
    print(f"standard errors {result.stderr.ravel().round(4).tolist()}, max |z| = "
          f"{float(abs(result.z).max()):.2f}, relative error {result.running_error[-1]:.2g}")
    print("dy/dx1 is estimated without error: both of its paths carry the same product "
          "(a * a * c), so whichever one a sample keeps, the scaled product is exact.")
    print(f"\npictures are in {folder}/")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="minirad", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Automatic differentiation as graph computation: linearized computational "
                    "graphs, exact Jacobians and randomized AD.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    formatted = {"formatter_class": argparse.ArgumentDefaultsHelpFormatter}

    p = sub.add_parser("demo", **formatted,
                       help="the Figure 1 program end to end (the main job)")
    p.add_argument("-o", "--output", default="minirad-demo", help="folder for the pictures")
    p.set_defaults(run=cmd_demo)

    p = sub.add_parser("wengert", **formatted, help="print the Wengert list of a saved LCG")
    p.add_argument("file", help="an LCG saved as JSON (minirad trace -o, LCG.to_json)")
    p.set_defaults(run=cmd_wengert)

    p = sub.add_parser("trace", **formatted,
                       help="trace a Python function at a point and save its LCG")
    p.add_argument("function", help="MODULE:FUNCTION or FILE.py:FUNCTION")
    p.add_argument("point", nargs="+",
                   help="one value per argument: a number, or 1,2,3 for a vector")
    p.add_argument("-o", "--output", required=True, help="where to write the LCG (JSON)")
    p.add_argument("--wengert", action="store_true", help="also print the Wengert list")
    p.set_defaults(run=cmd_trace)

    p = sub.add_parser("jacobian", **formatted,
                       help="the exact Jacobian of a saved LCG and its cost")
    p.add_argument("file", help="an LCG saved as JSON (minirad trace -o, LCG.to_json)")
    p.add_argument("--method", default="reverse", choices=METHODS,
                   help="Bauer's path sum, a sweep, or vertex elimination")
    p.add_argument("--order", help=f"{', '.join(STRATEGIES)}, or names a,b,c "
                                   f"(with --method eliminate)")
    p.set_defaults(run=cmd_jacobian)

    p = sub.add_parser("render", **formatted,
                       help="draw a saved LCG (svg, png or pdf by extension)")
    p.add_argument("file", help="an LCG saved as JSON (minirad trace -o, LCG.to_json)")
    p.add_argument("-o", "--output", required=True, help="e.g. g.svg, g.png, g.pdf")
    p.add_argument("--sample", metavar="K", help="highlight one Algorithm 1 sample with K draws")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    p.add_argument("--paths", nargs=2, metavar=("IN", "OUT"),
                   help="highlight every path from input IN to output OUT")
    p.add_argument("--ops", action="store_true", help="show each vertex's operation")
    p.add_argument("--values", action="store_true", help="show each vertex's value")
    p.add_argument("--max-vertices", type=int, default=200,
                   help="refuse larger graphs (default 200)")
    p.set_defaults(run=cmd_render)

    p = sub.add_parser("compare", **formatted,
                       help="exact Jacobian against the mean of sampled estimates")
    p.add_argument("file", help="an LCG saved as JSON (minirad trace -o, LCG.to_json)")
    p.add_argument("--k", default="1", help="draws per visited vertex (an integer), or a "
                   "fraction of each out-degree such as 0.5 (1.0 means every out-edge)")
    p.add_argument("--samples", type=int, default=1000, help="number of estimates")
    p.add_argument("--seed", type=int, default=0, help="seed of the random draws")
    p.add_argument("-o", "--output", help="also save heatmaps of exact vs sampled (png/svg)")
    p.set_defaults(run=cmd_compare)

    p = sub.add_parser("figures", **formatted, help="regenerate every picture in figures/")
    p.add_argument("-o", "--output", default="figures", help="folder (default figures)")
    p.set_defaults(run=cmd_figures)

    p = sub.add_parser("study", **formatted,
                       help="run a case study of the RAD paper and write its figures and table")
    p.add_argument("name", choices=sorted(STUDIES),
                   help="nn: neural networks on MNIST (paper Sec. 4)")
    p.add_argument("--quick", action="store_true", help="a small run (under two minutes)")
    p.add_argument("-o", "--output", help="folder for the results (default minirad-study-NAME)")
    p.set_defaults(run=cmd_study)

    p = sub.add_parser("lab", **formatted, help="write the labs as Jupyter notebooks")
    p.add_argument("form", choices=["handout", "solutions"],
                   help="handout: exercises replaced by stubs; solutions: complete")
    p.add_argument("source", help="a lab file or a folder of them (e.g. tutorials/)")
    p.add_argument("-o", "--output", required=True, help="folder for the .ipynb files")
    p.set_defaults(run=cmd_lab)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except BrokenPipeError:  # `minirad jacobian f.json | head` closed our output early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ValueError, TypeError, OSError) as error:
        if args.debug:
            raise
        print(f"minirad {args.command}: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
