"""The ``minirad`` command's entry point, kept outside the package.

Loading minirad (numpy, SciPy, networkx, matplotlib and the package itself)
takes a second or so.  A Ctrl-C in that second arrives while
``minirad/__init__.py`` runs, before :func:`minirad.cli.main` can catch it,
and would end in a ``KeyboardInterrupt`` traceback.  This module imports
nothing at first, so it can catch it: the command then exits quietly with
130, as it does when interrupted later on.
"""

import sys


def main() -> int:
    try:
        from minirad.cli import main as run
    except KeyboardInterrupt:
        return 130
    return run()


if __name__ == "__main__":
    sys.exit(main())
