"""The native simulation core, ``kairos_gym._core`` (C++17, nanobind; sources in ``src/core`` and
``src/bindings``, built by ``pip install`` through scikit-build-core).

:func:`core` returns the extension module. In a source checkout (an editable install) it also checks that the
built module matches the sources: an edited ``.cpp`` that was not rebuilt raises :class:`StaleBuildError`
telling you to run ``make core``, so no result ever comes from a binary older than its code. An installed
wheel has no sources beside it and is not checked.
"""

from __future__ import annotations

import functools
from pathlib import Path
from types import ModuleType

from kairos_gym._source_hash import source_hash

REPO_ROOT = Path(__file__).resolve().parent.parent


class StaleBuildError(ImportError):
    """The compiled core was built from other sources than the checkout's."""


def checkout_root() -> Path | None:
    """The source checkout this package runs from, or None for an installed wheel."""
    return REPO_ROOT if (REPO_ROOT / "src" / "core").is_dir() and (REPO_ROOT / "CMakeLists.txt").is_file() else None


@functools.cache
def core() -> ModuleType:
    """The extension module ``kairos_gym._core``, checked against the checkout's sources when there is one."""
    try:
        from kairos_gym import _core
    except ImportError as e:
        raise ImportError(f"the native core kairos_gym._core is not built ({e}); install the package with "
                          "`pip install .` or `pip install -e .` (needs a C++17 compiler), or run `make core` "
                          "in a checkout") from None
    root = checkout_root()
    if root is not None:
        built, current = _core.build_info()["source_hash"], source_hash(root)
        if built != current:
            raise StaleBuildError(f"kairos_gym._core was built from other sources (hash {built}) than the "
                                  f"checkout's src/ (hash {current}): run `make core` (or `pip install -e .`)")
    return _core


def build_info() -> dict[str, object]:
    """Compiler, C++ standard, floating-point flags and source hash of the built core."""
    return dict(core().build_info())
