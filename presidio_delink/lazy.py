"""Lazy public names: a package's ``__getattr__`` that imports a name from its home
module on first access (PEP 562), so importing the package stays light.

Imports nothing of ours, so any package of the project may use it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(
    package: str, homes: Mapping[str, str], keep: MutableMapping[str, Any] | None = None
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: each name of ``homes`` (name -> home
    module) is imported from its home on first access, and kept in ``keep`` (the
    package's ``globals()``) when given, so that later accesses are plain look-ups.

    Any other name raises :class:`AttributeError`, as a module does.
    """

    def __getattr__(name: str) -> Any:
        module = homes.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        if keep is not None:
            keep[name] = value
        return value

    return __getattr__
