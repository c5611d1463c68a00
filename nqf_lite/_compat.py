"""Old import paths of version 0.2 forward to the layered package.

``import nqf_lite.claims`` still works and gives the module
:mod:`nqf_lite.book.claims` itself, with a :class:`DeprecationWarning` naming
the new path. The forwarding goes away in version 0.4.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

#: old module (under ``nqf_lite``) -> its new home
MOVED = {
    "form": "expansion.form",
    "structured": "expansion.factored",
    "architectures": "expansion.models",
    "compression": "dynamics.compression",
    "momentum": "dynamics.momentum",
    "projectors": "dynamics.projectors",
    "solvable": "dynamics.solvable",
    "scaling": "dynamics.scaling",
    "deep_general": "deep.general",
    "higher_order": "deep.higher_order",
    "forecast_corrections": "design.corrections",
    "train": "experiments.train",
    "ensemble": "experiments.ensemble",
    "claims": "book.claims",
    "seeding": "book.seeding",
    "widgets": "book.widgets",
    "plotting": "book.plotting",
    "exercises": "book.exercises",
    "about": "book.about",
}
_PREFIX = "nqf_lite."


def new_name(fullname: str) -> str | None:
    """The new dotted name of an old module path, or ``None`` if not moved."""
    if not fullname.startswith(_PREFIX):
        return None
    head, _, tail = fullname[len(_PREFIX) :].partition(".")
    if head not in MOVED:
        return None
    return _PREFIX + MOVED[head] + ("." + tail if tail else "")


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(
        self, spec: importlib.machinery.ModuleSpec
    ) -> ModuleType:
        module = importlib.import_module(self.target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._spec  # the import machinery set the alias's


class _Forwarder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        new = new_name(fullname)
        if new is None:
            return None
        warnings.warn(
            f"{fullname} moved to {new}; the old path is removed in "
            "nqf_lite 0.4",
            DeprecationWarning,
            stacklevel=3,
        )
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Put the forwarder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Forwarder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Forwarder())
