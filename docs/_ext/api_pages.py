"""Write the API reference's source pages from the package as it is on disk.

One page per part of the library: ``minirad`` itself (the names of
``minirad.__all__`` and the modules at the top level) and one per subpackage
(``minirad.graph``, ``minirad.exact``, ...), each listing its public modules.
Nothing here names a function: the lists come from ``__all__`` and from the
modules found in each package's folder, so the reference follows the code as
it is reorganised.  autosummary then writes one page per listed name or module.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import pkgutil
import re
from pathlib import Path
from types import ModuleType


def public_modules(package: ModuleType) -> list[str]:
    """The dotted names of a package's modules and subpackages, private ones left out."""
    return sorted(f"{package.__name__}.{info.name}"
                  for info in pkgutil.iter_modules(package.__path__)
                  if not info.name.startswith("_"))


def subpackages(package: ModuleType) -> list[str]:
    """Every public subpackage, at any depth (``minirad.studies`` and ``minirad.studies.nn``)."""
    found = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.ispkg and not info.name.startswith("_"):
            sub = importlib.import_module(f"{package.__name__}.{info.name}")
            found += [sub.__name__, *subpackages(sub)]
    return sorted(found)


def _title(text: str) -> list[str]:
    return [text, "=" * len(text), ""]


def _autosummary(names: list[str], folder: str) -> list[str]:
    if not names:
        return []
    return [".. autosummary::", f"   :toctree: {folder}", "", *[f"   {n}" for n in names], ""]


def exported(package: ModuleType) -> tuple[list[str], list[str], list[str]]:
    """A package's ``__all__`` split into objects (documented on pages of their own),
    modules, and objects that hide a module of the same name (the function
    ``minirad.gradcheck`` over the module ``minirad.gradcheck``), which are
    documented once, in that module's page."""
    names = list(getattr(package, "__all__", []))
    modules = [n for n in names if inspect.ismodule(getattr(package, n))]
    on_disk = public_modules(package)
    shadowing = [n for n in names if n not in modules and f"{package.__name__}.{n}" in on_disk]
    objects = [n for n in names if n not in modules and n not in shadowing]
    return objects, modules, shadowing


#: what each part of the library does: the headings the public names are grouped under,
#: in this order (a name goes under the part its object is defined in)
GROUPS = {
    "graph": "Graphs: trace, build, save and load",
    "tracing": "Graphs: trace, build, save and load",
    "examples": "Graphs: trace, build, save and load",
    "exact": "Exact methods: every way to the Jacobian",
    "implicit": "Exact methods: every way to the Jacobian",
    "gradcheck": "Checking a derivative",
    "randomized": "Randomized methods: Algorithm 1 and random matrix injection",
    "draw": "Pictures",
}


def groups(package: ModuleType) -> dict[str, list[str]]:
    """The names of a package's ``__all__``, objects and modules alike, under the heading
    of :data:`GROUPS` for the part each is defined in (the others under "More")."""
    found: dict[str, list[str]] = {heading: [] for heading in GROUPS.values()}
    for short in package.__all__:
        obj = inspect.unwrap(getattr(package, short))
        where = obj.__name__ if inspect.ismodule(obj) else obj.__module__
        part = where.split(".")[1] if where.count(".") >= 1 else where
        found.setdefault(GROUPS.get(part, "More"), []).append(short)
    return {heading: names for heading, names in found.items() if names}


def summary(obj) -> str:
    """The first sentence of an object's docstring (its first paragraph, where a sentence
    runs over lines), as autosummary shows it.

    >>> summary(summary)
    "The first sentence of an object's docstring (its first paragraph, where a sentence \
runs over lines), as autosummary shows it."
    """
    paragraph = (inspect.getdoc(obj) or "").strip().split("\n\n")[0]
    text = " ".join(line.strip() for line in paragraph.splitlines())
    for stop in re.finditer(r"\.(?=\s)", text):
        if text[:stop.start()].split()[-1] not in ABBREVIATIONS:
            return text[:stop.end()]
    return text


#: words a period follows inside a sentence ("Sec. 4", "e.g. this")
ABBREVIATIONS = ("Sec", "(Sec", "Secs", "Fig", "(Fig", "eq", "(eq", "e.g", "(e.g", "i.e",
                 "(i.e", "al", "cf", "(cf", "vs", "Ch", "(Ch")


INDEX = "index.inc"


def index_body(package: ModuleType) -> str:
    """What the API reference's index shows (``docs/api/index.md`` includes it): the public
    names grouped by what they do, each with its one-line summary, then the parts."""
    name = package.__name__
    lines = [f".. currentmodule:: {name}", ""]
    for heading, names in groups(package).items():
        # a re-exported module by its own name (relative to the package: autosummary wants
        # that), which has a page; ``~`` shows the last part of it
        shown = [f"~{getattr(package, n).__name__.removeprefix(name + '.')}"
                 if inspect.ismodule(getattr(package, n)) else n for n in names]
        lines += _title_sub(heading)
        lines += [".. autosummary::", "", *[f"   {n}" for n in shown], ""]
    lines += _title_sub("The parts of the library")
    lines += [".. list-table::", "   :widths: 30 70", ""]
    for part in subpackages(package):
        lines += [f"   * - :mod:`{part}`",
                  f"     - {summary(importlib.import_module(part))}"]
    lines.append("")
    return "\n".join(lines)


def top_page(package: ModuleType) -> str:
    """The page of the package itself: its docstring, its public names and its modules."""
    name = package.__name__
    on_disk = public_modules(package)
    objects, modules, shadowing = exported(package)
    lines = [*_title(f"``{name}``"), f".. automodule:: {name}", "   :no-members:", ""]
    lines += [*_title_sub(f"The public API: ``{name}.__all__``"),
              f"Everything below is importable as ``{name}.<name>``; the "
              f":doc:`index <../index>` groups it by what it does.", ""]
    lines += _autosummary(objects, "names")  # relative to the module automodule set
    if modules:
        lines += [*_title_sub("Modules re-exported under a short name"), ""]
        for short in modules:
            target = getattr(package, short).__name__
            lines.append(f"* ``{name}.{short}`` is :mod:`{target}`")
        lines.append("")
    for short in shadowing:
        lines += [f"``{name}.{short}`` is :func:`{name}.{short}.{short}`, which hides the "
                  f"module of the same name.", ""]
    parts = subpackages(package)
    top_modules = [m for m in on_disk if m not in parts]
    lines += [*_title_sub("Modules at the top level"), ""]
    lines += _autosummary([_short(m) for m in top_modules], "modules")
    return "\n".join(lines)


def _short(dotted: str) -> str:
    """A module's name relative to its package, as autosummary wants it after automodule."""
    return dotted.rsplit(".", 1)[1]


def _title_sub(text: str) -> list[str]:
    return [text, "-" * len(text), ""]


def part_page(package: ModuleType) -> str:
    """The page of one subpackage: its docstring, a page per public module, and links to
    the pages of its own subpackages (each a part with a page of its own)."""
    name = package.__name__
    folders = [m for m in public_modules(package) if m in subpackages(package)]
    modules = [m for m in public_modules(package) if m not in folders]
    lines = [*_title(f"``{name}``"), f".. automodule:: {name}", "   :no-members:", ""]
    if folders:
        lines += [*_title_sub("Folders"), ""]
        lines += [f"* :mod:`{folder}`" for folder in folders] + [""]
    if modules:
        lines += [*_title_sub("Modules"), ""]
        lines += _autosummary([_short(m) for m in modules], "modules")
    return "\n".join(lines)


def write_if_changed(path: Path, text: str) -> None:
    """Leave an unchanged page alone, so that Sphinx does not read it again."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def write_pages(package_name: str, folder: Path) -> list[str]:
    """Write ``<folder>/<part>.rst`` for the package and each subpackage; return the parts."""
    package = importlib.import_module(package_name)
    parts = [package_name, *subpackages(package)]
    pages = {f"{package_name}.rst": top_page(package)}
    for part in parts[1:]:
        pages[f"{part}.rst"] = part_page(importlib.import_module(part))
    # autosummary writes a page per name and per module but never removes one:
    # remove those of names and modules that are gone (a restructure moves them)
    stubs = {f"names/{package_name}.{n}.rst" for n in exported(package)[0]}
    stubs |= {f"modules/{m}.rst" for part in parts
              for m in public_modules(importlib.import_module(part))
              if m not in parts}
    for stale in folder.glob("**/*.rst") if folder.exists() else []:
        relative = stale.relative_to(folder).as_posix()
        if relative not in pages and relative not in stubs:
            stale.unlink()
    for filename, text in pages.items():
        write_if_changed(folder / filename, text)
    write_if_changed(folder / INDEX, index_body(package))
    return parts


STAMP = ".written-from"


def fingerprint(package_name: str, *more: Path) -> str:
    """A hash of the package's source files (and of ``more`` files): what the pages
    autosummary writes for the package are made from."""
    package = importlib.import_module(package_name)
    root = Path(package.__file__).parent
    digest = hashlib.sha256()
    for file in sorted(root.rglob("*.py")) + sorted(more):
        digest.update(str(file).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


def unchanged(folder: Path, print_: str) -> bool:
    """Whether ``folder``'s pages were generated from the fingerprint ``print_``."""
    stamp = folder / STAMP
    return stamp.exists() and stamp.read_text(encoding="utf-8") == print_


def record(folder: Path, print_: str) -> None:
    """Note that ``folder``'s pages are now those of the fingerprint ``print_`` (after a build
    that succeeded, so that a failed one generates them again)."""
    if unchanged(folder, print_):
        return  # left alone: a build with nothing changed writes nothing into docs/
    folder.mkdir(parents=True, exist_ok=True)
    (folder / STAMP).write_text(print_, encoding="utf-8")


# ------------------------------------------------------------- keywords
#: the parts of the library whose functions share one vocabulary of keywords
PARTS = ("graph", "tracing", "exact", "randomized", "checkpoint", "implicit", "draw")
#: modules that copy numpy's functions, keywords and all (``axis``, ``keepdims``, ...)
NUMPY_MIRRORS = ("minirad.tracing.ops", "minirad.tracing.rearrange",
                 "minirad.tracing.contractions", "minirad.tracing.linalg",
                 "minirad.tracing.reductions", "minirad.tracing.rules")
TABLE_START = "<!-- keyword table: written by python docs/_ext/api_pages.py -->"
TABLE_END = "<!-- end of keyword table -->"


def module_functions(module: ModuleType) -> list[str]:
    """A module's public functions: those of its ``__all__``, else those it
    defines whose names do not start with an underscore."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, o in vars(module).items()
                 if getattr(o, "__module__", None) == module.__name__ and not n.startswith("_")]
    return [n for n in names if inspect.isfunction(getattr(module, n, None))]


def public_functions(package_name: str = "minirad") -> dict[str, object]:
    """Every public function by the name a reader meets first: ``minirad.<name>`` for
    ``minirad.__all__``, then ``<module>.<name>`` for the modules of :data:`PARTS`
    (each function once, under the first of those names)."""
    package = importlib.import_module(package_name)
    found: dict[str, object] = {}
    seen: set[int] = set()

    def add(name, obj):
        if id(obj) not in seen:
            seen.add(id(obj))
            found[name] = obj

    for name in package.__all__:
        obj = getattr(package, name)
        if callable(obj) and not inspect.ismodule(obj):
            add(f"{package_name}.{name}", obj)
    for part in PARTS:
        for dotted in public_modules(importlib.import_module(f"{package_name}.{part}")):
            if dotted in NUMPY_MIRRORS:
                continue
            module = importlib.import_module(dotted)
            for name in module_functions(module):
                add(f"{dotted}.{name}", getattr(module, name))
    return found


def keywords(function) -> list[inspect.Parameter]:
    """The parameters of ``function`` a caller may name: every one with a default,
    and every keyword-only one (the data a function works on, ``g``, ``v``, ...,
    are positional and not counted; nor are ``*args`` and ``**options``)."""
    return [p for p in inspect.signature(function).parameters.values()
            if p.kind is p.KEYWORD_ONLY
            or (p.kind is p.POSITIONAL_OR_KEYWORD and p.default is not p.empty)]


def keyword_table(package_name: str = "minirad") -> str:
    """The Markdown table of every public function with its keywords, read from the
    signatures (``*`` marks a keyword-only one)."""
    lines = ["| function | keywords |", "|---|---|"]
    for name, function in public_functions(package_name).items():
        words = [("*" if p.kind is p.KEYWORD_ONLY else "") + p.name for p in keywords(function)]
        shown = name.removeprefix(f"{package_name}.")
        lines.append(f"| `{shown}` | {', '.join(f'`{w}`' for w in words) or '-'} |")
    return "\n".join(lines) + "\n"


def write_keyword_table(path: Path, package_name: str = "minirad") -> bool:
    """Put :func:`keyword_table` between the markers of ``path``; True if it changed."""
    text = path.read_text(encoding="utf-8")
    head, rest = text.split(TABLE_START + "\n", 1)
    _, tail = rest.split(TABLE_END, 1)
    new = head + TABLE_START + "\n" + keyword_table(package_name) + TABLE_END + tail
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":  # python docs/_ext/api_pages.py: rewrite the table
    import sys

    ROOT = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(ROOT))
    changed = write_keyword_table(ROOT / "docs" / "architecture.md")
    print("docs/architecture.md:", "keyword table rewritten" if changed else "up to date")
