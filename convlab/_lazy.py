"""A package's public names, imported on first use (PEP 562).

A package declares its public names once, each with the module it lives in, and gets its
``__getattr__`` and ``__dir__`` here::

    _EXPORTS = {"load": "convlab.loaders", "plots": "convlab.evaluation.plots"}
    __all__ = list(_EXPORTS)
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

Nothing is imported until a name is used, so importing the package is quick and pulls in no
optional dependency. A name whose module is the package's submodule of that same name stands for
the submodule; any other submodule is imported on first use as well (``convlab.evaluation``).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (being imported) for ``exports``.

    Args:
        package: the package's ``__name__``.
        exports: each public name and the module that defines it.
    """
    namespace = sys.modules[package].__dict__
    submodules = frozenset(m.name for m in pkgutil.iter_modules(namespace["__path__"]))

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module == f"{package}.{name}" or (module is None and name in submodules):
            value = importlib.import_module(f"{package}.{name}")
        elif module is not None:
            value = getattr(importlib.import_module(module), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value  # next time a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports, *submodules})

    return __getattr__, __dir__
