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

from .graph import LCG
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


def cmd_demo(args) -> None:
    from . import examples

    g = examples.figure1()
    print("The RAD paper's Figure 1 program (an example by Paul D. Hovland):\n")
    print("    a = exp(x1); b = sin(x2); c = b * x2; d = a * c; return a * d\n")
    print(f"traced at (x1, x2) = (1, 2): {g!r}\n")
    print("Wengert list (one line per vertex, with its local partials):\n")
    print(g.wengert())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="minirad",
        description="Automatic differentiation as graph computation: linearized computational "
                    "graphs, exact Jacobians and randomized AD.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("demo", help="the Figure 1 program end to end (the main job)")
    p.set_defaults(run=cmd_demo)

    p = sub.add_parser("wengert", help="print the Wengert list of a saved LCG")
    p.add_argument("file", help="an LCG saved as JSON (minirad trace -o, LCG.to_json)")
    p.set_defaults(run=cmd_wengert)

    p = sub.add_parser("trace", help="trace a Python function at a point and save its LCG")
    p.add_argument("function", help="MODULE:FUNCTION or FILE.py:FUNCTION")
    p.add_argument("point", nargs="+",
                   help="one value per argument: a number, or 1,2,3 for a vector")
    p.add_argument("-o", "--output", required=True, help="where to write the LCG (JSON)")
    p.add_argument("--wengert", action="store_true", help="also print the Wengert list")
    p.set_defaults(run=cmd_trace)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.run(args)
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
