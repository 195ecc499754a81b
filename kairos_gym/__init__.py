"""kairos-gym: prefill deflection in disaggregated LLM serving, as a Gymnasium environment.

``import kairos_gym`` registers the Gymnasium ids, one per env (``kairos_gym/Kairos-v0`` for the bursty scenario,
``kairos_gym/KairosSmall-v0``, ``kairos_gym/Kairos-<scenario>-v0``, ``kairos_train/KairosGeneral-v0``), as
``import minigrid`` does: at once when gymnasium is already imported, else right after the process's first
``import gymnasium`` (:mod:`kairos_gym.post_import`), so a process that never touches gymnasium (``kairos-gym
--help``, the simulator alone) does not pay for importing it. Registration imports neither the simulator, the env
nor the training code: those load on the first ``gym.make``. The simulator
core (``kairos_gym.sim``, ``kairos_gym.latency``, ``kairos_gym.workload``) never imports gymnasium itself.
``kairos_gym.__version__`` is read from the installed metadata on first access.
"""

from typing import Any

from kairos_gym.post_import import when_imported


def _register_gymnasium_ids() -> None:
    from kairos_gym.env.registration import register_envs

    register_envs()


def __getattr__(name: str) -> Any:
    """``__version__``, looked up once (importlib.metadata costs ~30 ms: not paid by an import that never asks)."""
    if name != "__version__":
        raise AttributeError(f"module 'kairos_gym' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("kairos-gym")
    except PackageNotFoundError:  # running from a source tree that was never installed
        value = "0.0.0+unknown"
    globals()["__version__"] = value
    return value


when_imported("gymnasium", _register_gymnasium_ids)
