"""The public names document themselves as numpy's do: numpydoc's own validation
(``numpydoc.validate``) over ``minirad.__all__``, failing on a missing section, and
a Raises section wherever a function raises."""

import ast
import inspect
import textwrap

import pytest
from numpydoc.validate import validate  # in the dev extra: this file fails, never skips

import minirad

# numpydoc's checks that fail the suite: a docstring and its summary, the sections
# (Parameters, Returns, See Also, Examples) and their form
CHECKS = {
    "GL01", "GL02", "GL03", "GL06", "GL07", "GL08", "GL10",   # layout, sections known, in order
    "SS01", "SS02", "SS03", "SS06",                            # a one-line summary, a sentence
    "PR01", "PR02", "PR03", "PR04", "PR07", "PR10",            # every parameter, typed, described
    "RT01", "RT03",                                            # Returns, described
    "SA01", "SA04",                                            # See Also, each entry described
    "EX01",                                                    # Examples
}


def public_objects():
    """The callables of ``minirad.__all__`` (the modules are documented by their pages)."""
    for name in minirad.__all__:
        obj = getattr(minirad, name)
        if not inspect.ismodule(obj):
            yield name, obj


def qualified(obj) -> str:
    obj = inspect.unwrap(obj)
    return f"{obj.__module__}.{obj.__qualname__}"


@pytest.mark.parametrize("name, obj", list(public_objects()), ids=lambda x: x
                         if isinstance(x, str) else "")
def test_numpydoc_validation_passes(name, obj):
    report = validate(qualified(obj))
    errors = [f"{code}: {message}" for code, message in report["errors"]
              if code in CHECKS and not (code == "RT01" and inspect.isclass(obj))]
    assert not errors, f"minirad.{name}:\n" + "\n".join(errors)


def raised_here(function) -> set[str]:
    """The exception types a function's own body raises by name."""
    source = textwrap.dedent(inspect.getsource(inspect.unwrap(function)))
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and node.exc is not None:
            call = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(call, ast.Name):
                found.add(call.id)
    return found


@pytest.mark.parametrize("name, obj", list(public_objects()), ids=lambda x: x
                         if isinstance(x, str) else "")
def test_what_a_function_raises_is_in_its_raises_section(name, obj):
    if inspect.isclass(obj):
        return
    raised = raised_here(obj) - {"NotImplementedError"}
    documented = inspect.getdoc(obj) or ""
    section = documented.split("Raises\n------\n", 1)
    if raised:
        assert len(section) == 2, f"minirad.{name} raises {sorted(raised)}: say when, in Raises"
        text = section[1].split("\n\n\n", 1)[0]
        missing = {error for error in raised if error not in text}
        assert not missing, f"minirad.{name}: Raises leaves out {sorted(missing)}"


def test_the_check_finds_a_missing_section():
    def undocumented(g, k=1):
        """Do something."""
        return g

    undocumented.__module__ = __name__
    globals()["undocumented"] = undocumented
    codes = {code for code, _ in validate(f"{__name__}.undocumented")["errors"]}
    assert {"PR01", "RT01", "SA01", "EX01"} <= codes & CHECKS
