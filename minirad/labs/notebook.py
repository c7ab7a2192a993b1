"""Turn a lab script into a handout or a solutions notebook, and run notebooks.

A lab is one Python file in jupytext's *percent* format: it runs as a plain
script, and jupytext (or this module) reads it as a notebook.  Cells start
at lines beginning ``# %%``; a cell whose marker line is ``# %% [markdown]``
is prose, every line of it a comment (``# text``).  A leading jupytext
header (a comment block between two ``# ---`` lines) is skipped.

Reference solutions sit inside code cells between two marker lines::

    def forward_sweep(g):
        # BEGIN SOLUTION Exercise 2.1: forward sweep
        ...
        # END SOLUTION

The *handout* replaces each such block, markers included, by
``raise NotImplementedError("Exercise 2.1: forward sweep")`` at the
indentation of the BEGIN line (so a stub inside a ``def`` keeps the def
valid); the *solutions* drop the two marker lines and keep the code.

>>> text = '''# %% [markdown]
... # # A lab
... # %%
... def double(x):
...     # BEGIN SOLUTION Exercise 0.1: double
...     return 2 * x
...     # END SOLUTION
... '''
>>> cells = parse_cells(text, "lab0.py")
>>> [cell.kind for cell in cells]
['markdown', 'code']
>>> print(cells[0].source)
# A lab
>>> print(handout_source(cells[1].source, "lab0.py", cells[1].line))
def double(x):
    raise NotImplementedError("Exercise 0.1: double")
>>> print(solution_source(cells[1].source, "lab0.py", cells[1].line))
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
    "Cell", "RunResult", "exercises", "handout_source", "parse_cells", "run_notebook",
    "solution_source", "to_notebook", "write_notebooks",
]

CELL_MARKER = re.compile(r"^# %%(?P<rest>.*)$")
MARKDOWN_TAG = re.compile(r"^\s*\[(markdown|md)\]")
BEGIN = re.compile(r"^(?P<indent>\s*)# BEGIN SOLUTION\b(?P<label>.*)$")
END = re.compile(r"^\s*# END SOLUTION\b.*$")  # a trailing note is allowed
HEADER_FENCE = "# ---"

NBFORMAT, NBFORMAT_MINOR = 4, 4
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}


@dataclass
class Cell:
    """One cell: ``kind`` is ``"code"`` or ``"markdown"``; ``line`` is the
    1-based file line of the cell's first source line (for error messages)."""

    kind: str
    source: str
    line: int


# ------------------------------------------------------------------ parsing
def _skip_header(lines: list[str]) -> int:
    """Index of the first line after a jupytext YAML header, or 0 if there is none."""
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or lines[first].rstrip() != HEADER_FENCE:
        return 0
    for i in range(first + 1, len(lines)):
        if lines[i].rstrip() == HEADER_FENCE:
            return i + 1
    return 0  # no closing fence: not a header, just a comment


def _uncomment(line: str) -> str:
    """``# text`` -> ``text``; a bare ``#`` is an empty markdown line."""
    if line.startswith("# "):
        return line[2:]
    if line.rstrip() == "#":
        return ""
    return line  # jupytext keeps such lines as they are; so do we


def _finish(kind: str, lines: list[str], start: int) -> Cell | None:
    # blank lines separate cells in the file; they are not part of the cell
    while lines and not lines[-1].strip():
        lines.pop()
    skipped = 0
    while lines and not lines[0].strip():
        lines.pop(0)
        skipped += 1
    if not lines:
        return None
    if kind == "markdown":
        lines = [_uncomment(line) for line in lines]
    return Cell(kind, "\n".join(lines), start + skipped)


def parse_cells(text: str, filename: str = "<lab>") -> list[Cell]:
    """Split percent-format text into cells.

    Text before the first ``# %%`` marker (after any jupytext header) is a
    code cell if it is not blank.  Solution markers are checked here, so a
    malformed file fails before anything is written: see :func:`handout_source`.

    >>> [c.kind for c in parse_cells("# %% [markdown]\\n# hi\\n\\n# %%\\nx = 1\\n")]
    ['markdown', 'code']
    >>> parse_cells("# %% [markdown]\\n# # BEGIN SOLUTION Exercise 1\\n", "lab9.py")
    Traceback (most recent call last):
    ...
    ValueError: lab9.py, line 2: solution markers belong in code cells, not in markdown
    """
    lines = text.splitlines()
    cells: list[Cell] = []
    kind, body, start = "code", [], _skip_header(lines) + 1
    for number, line in enumerate(lines[start - 1:], start=start):
        match = CELL_MARKER.match(line)
        if match:
            cell = _finish(kind, body, start)
            if cell:
                cells.append(cell)
            kind = "markdown" if MARKDOWN_TAG.match(match["rest"]) else "code"
            body, start = [], number + 1
        else:
            body.append(line)
    cell = _finish(kind, body, start)
    if cell:
        cells.append(cell)
    for cell in cells:
        if cell.kind == "markdown":
            for offset, line in enumerate(cell.source.splitlines()):
                # check the line as written in the file and as shown in the notebook
                if any(BEGIN.match(text) or END.match(text) for text in (line, "# " + line)):
                    raise ValueError(f"{filename}, line {cell.line + offset}: solution markers "
                                     f"belong in code cells, not in markdown")
        else:
            _blocks(cell.source, filename, cell.line)  # validate early
    return cells


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


def exercises(path) -> list[str]:
    """The exercise labels of a lab file, in order of appearance.

    >>> import pathlib, tempfile
    >>> lab = pathlib.Path(tempfile.mkdtemp()) / "lab0.py"
    >>> _ = lab.write_text("# %%\\n# BEGIN SOLUTION Exercise 0.1: x\\nx = 1\\n# END SOLUTION\\n")
    >>> exercises(lab)
    ['Exercise 0.1: x']
    """
    path = os.fspath(path)
    labels = []
    for cell in _read_cells(path):
        if cell.kind == "code":
            labels += [label for *_, label in _blocks(cell.source, path, cell.line)]
    return labels


# ----------------------------------------------------------------- notebooks
def _read_cells(path: str) -> list[Cell]:
    with open(path, encoding="utf-8") as f:
        return parse_cells(f.read(), path)


def _source_lines(text: str) -> list[str]:
    """nbformat stores a cell's source as lines that keep their newlines."""
    return text.splitlines(keepends=True)


def _nb_cell(kind: str, text: str) -> dict:
    if kind == "markdown":
        return {"cell_type": "markdown", "metadata": {}, "source": _source_lines(text)}
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": _source_lines(text)}


def to_notebook(path, solutions: bool) -> dict:
    """The notebook (an nbformat 4.4 dict) of a lab file: the handout, or with
    ``solutions=True`` the reference solutions.

    >>> import pathlib, tempfile
    >>> lab = pathlib.Path(tempfile.mkdtemp()) / "lab0.py"
    >>> _ = lab.write_text("# %% [markdown]\\n# Hi\\n# %%\\n# BEGIN SOLUTION E1\\nx = 1\\n"
    ...                    "# END SOLUTION\\n")
    >>> nb = to_notebook(lab, solutions=False)
    >>> nb["nbformat"], [c["cell_type"] for c in nb["cells"]], nb["cells"][1]["source"]
    (4, ['markdown', 'code'], ['raise NotImplementedError("E1")'])
    >>> to_notebook(lab, solutions=True)["cells"][1]["source"]
    ['x = 1']
    """
    path = os.fspath(path)
    convert = solution_source if solutions else handout_source
    cells = []
    for cell in _read_cells(path):
        text = cell.source
        if cell.kind == "code":
            text = convert(text, path, cell.line)
        cells.append(_nb_cell(cell.kind, text))
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": dict(KERNELSPEC),
            "language_info": {"name": "python"},
            "minirad": {"source": os.path.basename(path),
                        "form": "solutions" if solutions else "handout"},
        },
        "nbformat": NBFORMAT,
        "nbformat_minor": NBFORMAT_MINOR,
    }


def _lab_files(source) -> list[str]:
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


def _write_json_atomically(path: str, document: dict) -> None:
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    write_atomically(path, lambda f: f.write(text.encode("utf-8")))


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
    files = _lab_files(source)
    notebooks = [(f, to_notebook(f, solutions)) for f in files]
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for f, nb in notebooks:
        target = os.path.join(out_dir, os.path.splitext(os.path.basename(f))[0] + ".ipynb")
        _write_json_atomically(target, nb)
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

    The working directory is ``cwd``, else the notebook's folder (for a
    path), else the current one; ``MPLBACKEND`` is ``Agg`` and ``env`` adds
    further variables; all are restored afterwards.  A cell that raises is
    recorded in the result.  Any exception stops the run, except that with
    ``stop_at_not_implemented=False`` a ``NotImplementedError`` (an
    unsolved exercise of a handout) is recorded and the run goes on.

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
