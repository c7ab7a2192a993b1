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
from pathlib import Path
from types import ModuleType


def public_modules(package: ModuleType) -> list[str]:
    """The dotted names of a package's modules and subpackages, private ones left out."""
    return sorted(f"{package.__name__}.{info.name}"
                  for info in pkgutil.iter_modules(package.__path__)
                  if not info.name.startswith("_"))


def subpackages(package: ModuleType) -> list[str]:
    return sorted(f"{package.__name__}.{info.name}"
                  for info in pkgutil.iter_modules(package.__path__)
                  if info.ispkg and not info.name.startswith("_"))


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


def top_page(package: ModuleType) -> str:
    """The page of the package itself: its docstring, its public names and its modules."""
    name = package.__name__
    on_disk = public_modules(package)
    objects, modules, shadowing = exported(package)
    lines = [*_title(f"``{name}``"), f".. automodule:: {name}", "   :no-members:", ""]
    lines += [*_title_sub(f"The public API: ``{name}.__all__``"),
              f"Everything below is importable as ``{name}.<name>``.", ""]
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
    """The page of one subpackage: its docstring and a page per public module."""
    name = package.__name__
    lines = [*_title(f"``{name}``"), f".. automodule:: {name}", "   :no-members:", ""]
    lines += [*_title_sub("Modules"), ""]
    lines += _autosummary([_short(m) for m in public_modules(package)], "modules")
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
    folder.mkdir(parents=True, exist_ok=True)
    (folder / STAMP).write_text(print_, encoding="utf-8")
