"""Read minirad's plain-text docstrings as reStructuredText without surprises.

The docstrings write absolute values and norms as ``|x|`` and ``|g_hat - g|``,
as one does in plain text; reST would read ``|x|`` as a substitution and fail
the build.  :func:`escape_bars` escapes those bars in prose, leaving alone
inline literals, roles, doctests and literal blocks, where a backslash would
show.  :func:`skip_foreign` keeps members that minirad does not define (the
``set`` method that matplotlib writes into every Figure subclass) out of
the reference.
"""

from __future__ import annotations

import re

# ``literal`` or `interpreted text`, with an optional role before it
QUOTED = re.compile(r"(``.+?``|(?::[\w.-]+:)?`[^`]+`_{0,2})")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _escape(line: str) -> str:
    parts = QUOTED.split(line)
    # the odd-numbered parts are the quoted spans that split() kept
    return "".join(part if i % 2 else part.replace("|", "\\|") for i, part in enumerate(parts))


def escape_bars(lines: list[str]) -> list[str]:
    """Escape ``|`` in the prose lines of a docstring.

    >>> escape_bars(["costs |pred| x |succ|, see ``|x|``", "", "::", "", "    |y|"])
    ['costs \\\\|pred\\\\| x \\\\|succ\\\\|, see ``|x|``', '', '::', '', '    |y|']
    >>> escape_bars([">>> abs(-1)  # |x|", "1"])
    ['>>> abs(-1)  # |x|', '1']
    """
    out: list[str] = []
    literal_above: int | None = None  # indentation of the line that opened a literal block
    doctest = False
    for line in lines:
        stripped = line.strip()
        if literal_above is not None:
            if not stripped or _indent(line) > literal_above:
                out.append(line)
                continue
            literal_above = None
        if stripped.startswith(">>>"):
            doctest = True
        elif not stripped:
            doctest = False
        if doctest:
            out.append(line)
            continue
        out.append(_escape(line))
        if stripped.endswith("::"):
            literal_above = _indent(line)
    return out


def process_docstring(app, what, name, obj, options, lines: list[str]) -> None:
    """autodoc-process-docstring: escape in place (autodoc passes the list to change)."""
    lines[:] = escape_bars(lines)


def skip_foreign(app, what, name, obj, skip, options):
    """autodoc-skip-member: members defined outside minirad are not documented here."""
    module = getattr(obj, "__module__", None)
    if isinstance(module, str) and not module.startswith("minirad") and callable(obj):
        return True
    return None  # autodoc decides as usual
