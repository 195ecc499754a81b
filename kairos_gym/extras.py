"""The optional parts of kairos-gym (pip extras) and the one check that one is installed.

``pip install kairos-gym`` brings the simulator, the Gymnasium env, the baselines, the benchmark and the command
line (numpy, gymnasium, PyYAML, tqdm). What needs more is an extra:

- ``[train]``: torch, Stable-Baselines3, sb3-contrib, TensorBoard (``kairos-gym train``, ``distill``,
  ``convert``, reading a Stable-Baselines3 zip, :mod:`kairos_gym.env.sb3_vec`);
- ``[plots]``: matplotlib (``--plots``, the figures of ``demo``);
- ``[ray]``: Ray, Tune and RLlib (``--backend ray``, ``train --backend rllib``, ``train --tune``).

Shipped agents act without torch (their weights run in the engine, docs/architecture.md). A command that needs
a missing extra stops before any work with one line naming it (:class:`MissingExtraError`, printed by the
command line as ``kairos-gym CMD: error: ...``, exit status 2).
"""

from __future__ import annotations

import importlib.util

EXTRAS: dict[str, tuple[str, ...]] = {
    "train": ("torch", "stable_baselines3", "sb3_contrib", "tensorboard"),
    "plots": ("matplotlib",),
    "ray": ("ray",),
}
"""The modules each extra provides (import names)."""


class MissingExtraError(ImportError):
    """A part of kairos-gym whose extra is not installed; the message names the extra and the pip command."""

    def __init__(self, what: str, extra: str, missing: tuple[str, ...]) -> None:
        self.what, self.extra, self.missing = what, extra, missing
        super().__init__(f"{what} needs the [{extra}] extra (not installed: {', '.join(missing)}): "
                         f"pip install 'kairos-gym[{extra}]'")


def installed(module: str) -> bool:
    """``module`` (a top-level import name) can be imported: found on the path, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses it, or a half-imported module
        return False


def missing(extra: str) -> tuple[str, ...]:
    """The modules of ``extra`` (a key of :data:`EXTRAS`) that are not installed."""
    return tuple(m for m in EXTRAS[extra] if not installed(m))


def available(extra: str) -> bool:
    """Every module of ``extra`` is installed."""
    return not missing(extra)


def require(extra: str, what: str) -> None:
    """Raise :class:`MissingExtraError` when ``extra`` is not installed; ``what`` names what needs it (a command,
    a flag, a module), e.g. ``require("train", "training")``."""
    gone = missing(extra)
    if gone:
        raise MissingExtraError(what, extra, gone)
