"""Run a function once a module has finished importing, without importing it now (a post-import hook).

``import kairos_gym`` registers the Gymnasium ids, but importing gymnasium costs ~0.15 s (numpy and its own
modules), which a command that never makes an env (``kairos-gym --help``) should not pay. So the package calls
:func:`when_imported` ("gymnasium", register): when gymnasium is already imported the registration runs at once;
otherwise it runs right after the first ``import gymnasium`` (or of any of its submodules) of the process
finishes, before that import statement returns, so ``gym.make`` always finds the ids.

How: a finder at the front of ``sys.meta_path`` answers for that one module name with the spec the other
finders give, its loader wrapped so that the callback runs after the module's code. The module keeps its own
loader (``module.__loader__``, ``module.__spec__.loader``); the finder leaves ``sys.meta_path`` when it fires.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Sequence
from types import ModuleType


class _RunAfterLoader(importlib.abc.Loader):
    """A module's own loader, then ``callback()``."""

    def __init__(self, inner: importlib.abc.Loader, callback: Callable[[], None]) -> None:
        self.inner = inner
        self.callback = callback

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self.inner  # the module sees its own loader (resources, linecache, reload)
        if module.__spec__ is not None:
            module.__spec__.loader = self.inner
        self.inner.exec_module(module)
        self.callback()


class _PostImportFinder(importlib.abc.MetaPathFinder):
    """Finds ``name`` with the other finders and wraps its loader; one shot."""

    def __init__(self, name: str, callback: Callable[[], None]) -> None:
        self.name = name
        self.callback = callback
        self._searching = False

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name or self._searching:
            return None
        self._searching = True  # the search below asks every finder, this one too
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._searching = False
        if spec is None or spec.loader is None:
            return None  # not installed: the import fails as it would have
        spec.loader = _RunAfterLoader(spec.loader, self._fire)
        return spec

    def _fire(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        self.callback()


def when_imported(name: str, callback: Callable[[], None]) -> None:
    """Call ``callback()`` now if the top-level module ``name`` is imported, else right after its first import
    in this process completes (its exceptions then propagate from that import)."""
    if name in sys.modules:
        callback()
        return
    sys.meta_path.insert(0, _PostImportFinder(name, callback))


__all__ = ["when_imported"]
