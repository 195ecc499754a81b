"""The cluster simulator core (no gymnasium import).

Two engines implement :class:`Simulator`: ``"native"`` (:mod:`kairos_gym.sim.native_engine`, the C++ core
``kairos_gym._core``; the default) and ``"python"`` (:mod:`kairos_gym.sim.engine`, the differential reference
it was ported from: both reproduce the golden dataset bit for bit, and ``make test`` runs the simulator, env and
agent tests on both). ``Simulator(..., engine=...)`` picks one; without it, the ``KAIROS_ENGINE`` environment
variable does, else :data:`DEFAULT_ENGINE`.
"""

from __future__ import annotations

import os

from kairos_gym.errors import ConfigError

ENGINES = ("python", "native")
"""Names of the simulation engines (``Simulator(engine=...)``, ``KAIROS_ENGINE``)."""

DEFAULT_ENGINE = "native"


def engine_name(engine: str | None = None) -> str:
    """The engine to use: ``engine`` if given, else ``$KAIROS_ENGINE`` if set and not empty, else
    :data:`DEFAULT_ENGINE`. Anything but a name of :data:`ENGINES` raises :class:`ConfigError`."""
    if engine is None:
        env = os.environ.get("KAIROS_ENGINE", "")
        if env == "":
            return DEFAULT_ENGINE
        if env not in ENGINES:
            raise ConfigError("environment variable KAIROS_ENGINE", "KAIROS_ENGINE", env, f"one of {list(ENGINES)}")
        return env
    if type(engine) is not str or engine not in ENGINES:
        raise ConfigError("Simulator", "engine", engine, f"None or one of {list(ENGINES)}")
    return engine


from kairos_gym.sim.engine import Simulator  # noqa: E402  (engine_name first: Simulator.__new__ calls it)
from kairos_gym.sim.hook import (  # noqa: E402
    DEFLECT,
    LARGEST_SAFE,
    PREFILL,
    Decision,
    DecisionContext,
    DecodeNodeView,
    Policy,
    PrefillNodeView,
    RequestView,
)

__all__ = [
    "DEFLECT",
    "ENGINES",
    "LARGEST_SAFE",
    "PREFILL",
    "Decision",
    "DecisionContext",
    "DecodeNodeView",
    "Policy",
    "PrefillNodeView",
    "RequestView",
    "Simulator",
    "engine_name",
]
