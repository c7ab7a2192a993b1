"""Modules that can be called like the function they are named after.

``minirad.render``, ``minirad.trace`` and ``minirad.jacobian`` are each a
module *and* the module's main function: ``minirad.render(g)`` draws and
``minirad.render.has_dot()`` reaches the rest of the module.  A package
attribute can hold only one object, so the module is made callable: calling
it calls the function.  Every import keeps working
(``from minirad.render import render`` is still the plain function).

>>> import minirad
>>> minirad.render.has_dot() in (True, False), callable(minirad.render)
(True, True)
>>> minirad.jacobian(lambda x: 3 * x, 2.0)
array([[3.]])
>>> import inspect
>>> str(inspect.signature(minirad.trace))
"(f, *args) -> 'LCG'"
"""

from __future__ import annotations

import sys
import types


class CallableModule(types.ModuleType):
    """A module that forwards calls to its main function (``__wrapped__``,
    which also gives ``inspect.signature`` and ``help`` the function's)."""

    def __call__(self, *args, **kwargs):
        return self.__wrapped__(*args, **kwargs)


def make_callable(module_name: str, function) -> None:
    """Make the module ``module_name`` callable as ``function``."""
    module = sys.modules[module_name]
    module.__class__ = CallableModule
    module.__wrapped__ = function
