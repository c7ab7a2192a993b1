"""Turn a lab script into a handout or a solutions notebook, and run notebooks.

A lab is one Python file in jupytext's *percent* format: it runs as a plain
script, and jupytext reads it as a notebook (this module leaves the cell
format to jupytext and handles only the solution blocks).

Reference solutions sit inside code cells between two marker lines, the
convention of nbgrader and otter-grader::

    def forward_sweep(g):
        # BEGIN SOLUTION Exercise 2.1: forward sweep
        ...
        # END SOLUTION

The *handout* replaces each such block, markers included, by
``raise NotImplementedError("Exercise 2.1: forward sweep")`` at the
indentation of the BEGIN line (so a stub inside a ``def`` keeps the def
valid); the *solutions* drop the two marker lines and keep the code.
jupytext, nbformat and nbclient come with the ``labs`` extra
(``pip install "minirad[labs]"``).

>>> source = '''def double(x):
...     # BEGIN SOLUTION Exercise 0.1: double
...     return 2 * x
...     # END SOLUTION'''
>>> print(handout_source(source))
def double(x):
    raise NotImplementedError("Exercise 0.1: double")
>>> print(solution_source(source))
def double(x):
    return 2 * x
"""

from __future__ import annotations

import glob
import json
import os
import re
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..graph.files import write_atomically

__all__ = [
    "RunResult", "exercises", "handout_source", "read_lab", "read_submission", "run_notebook",
    "solution_source", "to_notebook", "write_notebooks",
]

BEGIN = re.compile(r"^(?P<indent>\s*)# BEGIN SOLUTION\b(?P<label>.*)$")
END = re.compile(r"^\s*# END SOLUTION\b.*$")  # a trailing note is allowed
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}


def _require(module: str):
    """Import one of the notebook tools of the ``labs`` extra, or say how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"the lab notebooks need {module}; install the notebook tools with "
                          f"pip install \"minirad[labs]\"") from None


# --------------------------------------------------------- solution blocks
def _blocks(source: str, filename: str, first_line: int) -> list[tuple[int, int, str, str]]:
    """``(begin, end, indent, label)`` for each solution block, as 0-based line
    indices within ``source``; malformed markers raise ``ValueError``."""
    blocks, open_at = [], None
    indent = label = ""
    for i, line in enumerate(source.splitlines()):
        where = f"{filename}, line {first_line + i}"
        begin = BEGIN.match(line)
        if begin:
            if open_at is not None:
                raise ValueError(f"{where}: BEGIN SOLUTION inside the solution block opened at "
                                 f"line {first_line + open_at}; blocks cannot be nested (add "
                                 f"the missing '# END SOLUTION')")
            label = begin["label"].strip()
            if not label:
                raise ValueError(f"{where}: BEGIN SOLUTION needs the exercise it solves, e.g. "
                                 f"'# BEGIN SOLUTION Exercise 2.1: forward sweep'")
            open_at, indent = i, begin["indent"]
        elif END.match(line):
            if open_at is None:
                raise ValueError(f"{where}: END SOLUTION without a matching BEGIN SOLUTION")
            blocks.append((open_at, i, indent, label))
            open_at = None
    if open_at is not None:
        raise ValueError(f"{filename}, line {first_line + open_at}: BEGIN SOLUTION {label!r} "
                         f"has no '# END SOLUTION' in the same cell")
    return blocks


def _stub(indent: str, label: str) -> str:
    text = label.replace("\\", "\\\\").replace('"', '\\"')
    return f'{indent}raise NotImplementedError("{text}")'


def handout_source(source: str, filename: str = "<lab>", first_line: int = 1) -> str:
    """A code cell's source with every solution block replaced by its stub.

    >>> print(handout_source("x = 1\\n# BEGIN SOLUTION Ex 1\\ny = 2\\n# END SOLUTION\\nz = 3"))
    x = 1
    raise NotImplementedError("Ex 1")
    z = 3
    """
    lines = source.splitlines()
    out, position = [], 0
    for begin, end, indent, label in _blocks(source, filename, first_line):
        out += lines[position:begin]
        out.append(_stub(indent, label))
        position = end + 1
    return "\n".join(out + lines[position:])


def solution_source(source: str, filename: str = "<lab>", first_line: int = 1) -> str:
    """A code cell's source with the solution marker lines removed.

    >>> print(solution_source("# BEGIN SOLUTION Ex 1\\ny = 2\\n# END SOLUTION"))
    y = 2
    """
    lines = source.splitlines()
    markers = set()
    for begin, end, _, _ in _blocks(source, filename, first_line):
        markers.update((begin, end))
    return "\n".join(line for i, line in enumerate(lines) if i not in markers)


# ----------------------------------------------------------------- reading
def _first_lines(cells, text: str) -> list[int]:
    """The 1-based file line where each cell's source starts (for error messages):
    jupytext keeps code lines verbatim and writes markdown lines as ``# text``."""
    lines = [line.rstrip() for line in text.splitlines()]
    found, position = [], 0
    for cell in cells:
        first = (cell.source.splitlines() or [""])[0].rstrip()
        if cell.cell_type == "markdown":
            first = ("# " + first).rstrip() if first else "#"
        at = next((i for i in range(position, len(lines)) if lines[i] == first), position)
        found.append(at + 1)
        position = at + 1
    return found


def _read_lab(path):
    """The lab's notebook and the file line where each cell starts."""
    jupytext = _require("jupytext")
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    nb = jupytext.reads(text, fmt="py:percent")
    lines = _first_lines(nb.cells, text)
    for cell, line in zip(nb.cells, lines):
        if cell.cell_type == "code":
            _blocks(cell.source, path, line)
            continue
        for offset, row in enumerate(cell.source.splitlines()):
            # the line as shown in the notebook, and as written in the file
            if any(BEGIN.match(form) or END.match(form) for form in (row, "# " + row)):
                raise ValueError(f"{path}, line {line + offset}: solution markers belong in "
                                 f"code cells, not in markdown")
    return nb, lines


def read_lab(path):
    """The lab file at ``path`` as an nbformat notebook, read by jupytext, its solution
    markers checked (a malformed block raises ``ValueError`` naming file and line).

    >>> import pathlib, tempfile
    >>> lab = pathlib.Path(tempfile.mkdtemp()) / "lab0.py"
    >>> _ = lab.write_text("# %% [markdown]\\n# # BEGIN SOLUTION Exercise 1\\n")
    >>> read_lab(lab)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: .../lab0.py, line 2: solution markers belong in code cells, not in markdown
    """
    return _read_lab(path)[0]


def read_submission(path):
    """A student's submission as an nbformat notebook: an ``.ipynb`` file, or a lab
    script (percent format, read by jupytext)."""
    path = os.fspath(path)
    if path.endswith(".ipynb"):
        nbformat = _require("nbformat")
        return nbformat.read(path, as_version=4)
    if path.endswith(".py"):
        jupytext = _require("jupytext")
        return jupytext.read(path, fmt="py:percent")
    raise ValueError(f"{path} is neither a notebook (.ipynb) nor a lab script (.py)")


def exercises(path) -> list[str]:
    """The exercise labels of a lab file, in order of appearance.

    >>> import pathlib, tempfile
    >>> lab = pathlib.Path(tempfile.mkdtemp()) / "lab0.py"
    >>> _ = lab.write_text("# %%\\n# BEGIN SOLUTION Exercise 0.1: x\\nx = 1\\n# END SOLUTION\\n")
    >>> exercises(lab)
    ['Exercise 0.1: x']
    """
    nb, lines = _read_lab(path)
    return [label for cell, line in zip(nb.cells, lines)
            if cell.cell_type == "code"
            for *_, label in _blocks(cell.source, os.fspath(path), line)]


def to_notebook(path, solutions: bool):
    """The notebook (nbformat 4) of a lab file: the handout, or with
    ``solutions=True`` the reference solutions.  Its metadata names the lab
    (``minirad.source``), which is how the grader knows a submission's lab.

    >>> import pathlib, tempfile
    >>> lab = pathlib.Path(tempfile.mkdtemp()) / "lab0.py"
    >>> _ = lab.write_text("# %% [markdown]\\n# Hi\\n\\n# %%\\n# BEGIN SOLUTION E1\\nx = 1\\n"
    ...                    "# END SOLUTION\\n")
    >>> nb = to_notebook(lab, solutions=False)
    >>> nb.nbformat, [c.cell_type for c in nb.cells], nb.cells[1].source
    (4, ['markdown', 'code'], 'raise NotImplementedError("E1")')
    >>> to_notebook(lab, solutions=True).cells[1].source
    'x = 1'
    """
    path = os.fspath(path)
    nb, lines = _read_lab(path)
    convert = solution_source if solutions else handout_source
    for cell, line in zip(nb.cells, lines):
        if cell.cell_type == "code":
            cell.source = convert(cell.source, path, line)
    nb.metadata = {
        "kernelspec": dict(KERNELSPEC),
        "language_info": {"name": "python"},
        "minirad": {"source": os.path.basename(path),
                    "form": "solutions" if solutions else "handout"},
    }
    for cell in nb.cells:
        cell.pop("id", None)
    nb.nbformat_minor = 4  # no cell ids: the file stays the same from one build to the next
    return nb


def lab_files(source) -> list[str]:
    """The lab files (``lab*.py``) of a folder, or the one file given."""
    source = os.fspath(source)
    if os.path.isdir(source):
        files = sorted(glob.glob(os.path.join(source, "lab*.py")))
        if not files:
            raise ValueError(f"{source} contains no lab files (lab*.py)")
        return files
    if os.path.isfile(source):
        if not source.endswith(".py"):
            raise ValueError(f"{source} is not a lab file; labs are percent-format .py files")
        return [source]
    raise ValueError(f"no such file or folder: {source}")


def write_notebooks(source, out_dir, solutions: bool = False) -> list[str]:
    """Write one ``.ipynb`` per lab into ``out_dir`` (created if needed).

    ``source`` is a lab file or a folder of them (``lab*.py``).  Every lab is
    converted before anything is written, so a malformed lab leaves the
    output folder untouched.  Returns the written paths.

    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "lab0_demo.py").write_text("# %%\\nx = 1\\n")
    >>> [os.path.basename(p) for p in write_notebooks(folder, folder / "out")]
    ['lab0_demo.ipynb']
    """
    nbformat = _require("nbformat")
    files = lab_files(source)
    notebooks = [(f, nbformat.writes(to_notebook(f, solutions)) + "\n") for f in files]
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for f, text in notebooks:
        target = os.path.join(out_dir, os.path.splitext(os.path.basename(f))[0] + ".ipynb")
        write_atomically(target, lambda out, text=text: out.write(text.encode("utf-8")))
        written.append(target)
    return written


# ------------------------------------------------------------------ running
@dataclass
class RunResult:
    """What :func:`run_notebook` saw.

    ``errors`` lists ``(cell_index, exception)`` pairs, cell indices counting
    every cell of the notebook (markdown included) from 0; ``executed`` is
    how many code cells ran; ``namespace`` holds the variables the cells
    defined.
    """

    errors: list = field(default_factory=list)
    executed: int = 0
    namespace: dict = field(default_factory=dict)
    tracebacks: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def error(self):
        """The first exception raised, or None."""
        return self.errors[0][1] if self.errors else None

    @property
    def cell(self):
        """Index of the cell that raised first, or None."""
        return self.errors[0][0] if self.errors else None

    def __repr__(self) -> str:
        if self.ok:
            return f"RunResult(ok, {self.executed} code cells ran)"
        cell, error = self.errors[0]
        return (f"RunResult({self.executed} code cells ran; cell {cell} raised "
                f"{type(error).__name__}: {error})")


@contextmanager
def _environment(cwd, env):
    """Run in ``cwd`` with extra environment variables, restoring both afterwards."""
    old_cwd = os.getcwd()
    saved = {key: os.environ.get(key) for key in env}
    try:
        os.environ.update({key: str(value) for key, value in env.items()})
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(old_cwd)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _load(nb_or_path):
    if isinstance(nb_or_path, dict):
        return nb_or_path, None
    path = os.fspath(nb_or_path)
    if not path.endswith(".ipynb"):
        raise ValueError(f"run_notebook takes a notebook dict or an .ipynb file, not {path!r}; "
                         f"convert a lab with to_notebook(path, solutions=...) first")
    with open(path, encoding="utf-8") as f:
        return json.load(f), os.path.dirname(os.path.abspath(path))


def _close_figures() -> None:
    """Figures left open by a run would pile up across runs in one process."""
    import sys

    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")


def run_notebook(nb_or_path, stop_at_not_implemented: bool = True, cwd=None,
                 env: dict | None = None) -> RunResult:
    """Execute a notebook's code cells in order, in this process, in one namespace.

    A quick way to run a lab without a kernel (the tests use it; the grader
    uses a real kernel).  The working directory is ``cwd``, else the
    notebook's folder (for a path), else the current one; ``MPLBACKEND`` is
    ``Agg`` and ``env`` adds further variables; all are restored afterwards.
    A cell that raises is recorded in the result.  Any exception stops the
    run, except that with ``stop_at_not_implemented=False`` a
    ``NotImplementedError`` (an unsolved exercise of a handout) is recorded
    and the run goes on.

    >>> nb = {"cells": [{"cell_type": "code", "source": ["x = 2"]},
    ...                 {"cell_type": "markdown", "source": ["text"]},
    ...                 {"cell_type": "code", "source": ["raise NotImplementedError('Ex 1')"]},
    ...                 {"cell_type": "code", "source": ["y = x + 1"]}]}
    >>> run_notebook(nb)
    RunResult(2 code cells ran; cell 2 raised NotImplementedError: Ex 1)
    >>> result = run_notebook(nb, stop_at_not_implemented=False)
    >>> result.namespace["y"], result.executed, len(result.errors)
    (3, 3, 1)
    """
    nb, folder = _load(nb_or_path)
    result = RunResult(namespace={"__name__": "__main__"})
    variables = {"MPLBACKEND": "Agg", **(env or {})}
    with _environment(cwd if cwd is not None else folder, variables):
        try:
            for index, cell in enumerate(nb.get("cells", [])):
                if cell.get("cell_type") != "code":
                    continue
                source = cell.get("source", "")
                if isinstance(source, list):
                    source = "".join(source)
                result.executed += 1
                try:
                    exec(compile(source, f"<cell {index}>", "exec"), result.namespace)
                except Exception as error:  # whatever a cell raises is the report
                    result.errors.append((index, error))
                    result.tracebacks.append(traceback.format_exc())
                    if stop_at_not_implemented or not isinstance(error, NotImplementedError):
                        break
        finally:
            _close_figures()
    return result
