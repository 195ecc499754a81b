"""kairos-gym: prefill deflection in disaggregated LLM serving, as a Gymnasium environment.

``import kairos_gym`` registers the Gymnasium ids, one per env (``kairos_gym/Kairos-v0`` for the bursty scenario,
``kairos_gym/KairosSmall-v0``, ``kairos_gym/Kairos-<scenario>-v0``, ``kairos_train/KairosGeneral-v0``), as
``import minigrid`` does. Registration imports neither the simulator, the env nor the training code: those load
on the first ``gym.make``. The simulator core
(``kairos_gym.sim``, ``kairos_gym.latency``, ``kairos_gym.workload``) never imports gymnasium itself.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kairos-gym")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"


def _register_gymnasium_ids() -> None:
    try:
        import gymnasium  # noqa: F401
    except ImportError:  # the simulator core works without gymnasium
        return
    from kairos_gym.env.registration import register_envs

    register_envs()


_register_gymnasium_ids()
