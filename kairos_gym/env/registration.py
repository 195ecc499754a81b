"""Gymnasium ids of kairos-gym, registered lazily (no scenario is loaded at registration).

One id per env: ``kairos_gym/Kairos-v0`` (scenario ``bursty``, the default), ``kairos_gym/KairosSmall-v0``
(scenario ``small``) and ``kairos_gym/Kairos-<name>-v0`` for every other shipped scenario
``configs/scenarios/<name>.yaml`` found when :func:`register_envs` runs (:func:`scenario_env_id` names them; the
streaming-metrics scenarios have none). ``kairos_train/KairosGeneral-v0`` (domain randomisation over the
benchmark's train split, :mod:`kairos_gym.train.domain`) is registered here too, by its entry-point string:
``gym.make`` imports the training package, ``import kairos_gym`` does not (neither needs torch); its vector entry
point is :class:`kairos_gym.train.domain_vec.DomainVectorEnv` (``gym.make_vec(..., vectorization_mode=
"vector_entry_point")``). It runs on
``import kairos_gym`` (right after gymnasium's import: kairos_gym/post_import.py); call it again to pick up
scenario files added later. A missing scenario file only fails ``gym.make`` of its id, with a ConfigError.
Importing this module imports no gymnasium.

Every id's spec carries :class:`~kairos_gym.env.wrapper.KairosWrapper` as an additional wrapper, so
``gym.make`` returns an env with ``action_masks()`` whose truncating steps (``max_episode_steps``) have
``info["summary"]``, and :class:`~kairos_gym.env.vector.KairosVectorEnv` as its vector entry point, so
``gym.make_vec(id, num_envs=N)`` (mode ``None`` or ``"vector_entry_point"``) returns a KairosVectorEnv of N envs
(``vectorization_mode="sync"`` / ``"async"`` still give Gymnasium's vector envs of ``gym.make`` envs).

Gymnasium 1.x refuses the vector-entry-point mode for a spec whose ``additional_wrappers`` has a length, because
its wrappers could not be applied to a vector env. KairosVectorEnv does KairosWrapper's work itself (action
masks, summaries at episode ends), so the specs hold their wrapper in a :class:`_EnvOnlyWrappers` tuple: it
slices, iterates and compares like the one-wrapper tuple ``gym.make`` applies, and its ``len()`` is 0 (the only
test ``gym.make_vec`` runs on it). ``gym.make(id)`` is unchanged (tests/env/test_env_wrapper_truncation.py,
tests/env/test_env_make_vec.py).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from kairos_gym.configs import SCENARIO_DIR

if TYPE_CHECKING:
    from gymnasium.envs.registration import WrapperSpec

NAMESPACE = "kairos_gym"
ENTRY_POINT = "kairos_gym.env.core:KairosEnv"
VECTOR_ENTRY_POINT = "kairos_gym.env.vector:KairosVectorEnv"


@functools.cache
def _wrapper_spec() -> WrapperSpec:
    from gymnasium.envs.registration import WrapperSpec

    return WrapperSpec("KairosWrapper", "kairos_gym.env.wrapper:KairosWrapper", {})


def __getattr__(name: str) -> Any:
    """``WRAPPER``, the ids' additional wrapper: built on first use, so importing this module imports no
    gymnasium (``import kairos_gym`` registers the ids right after gymnasium's import, with this module:
    kairos_gym/post_import.py)."""
    if name == "WRAPPER":
        return _wrapper_spec()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _EnvOnlyWrappers(tuple):
    """``additional_wrappers`` of a kairos-gym spec: wrappers of the single env only (see the module docstring).

    ``len()`` is 0 so that ``gym.make_vec``'s vector-entry-point mode accepts the spec; ``gym.make`` applies the
    wrappers through slicing (``additional_wrappers[n:]``), which returns a plain tuple of them."""

    def __len__(self) -> int:
        return 0


NAMED_IDS = {"bursty": f"{NAMESPACE}/Kairos-v0", "small": f"{NAMESPACE}/KairosSmall-v0"}
"""The scenarios whose id is a name of its own (the default scenario and the small one of tests and quick
training); every other shipped scenario's id is ``kairos_gym/Kairos-<name>-v0``."""
GENERAL_ENV_ID = "kairos_train/KairosGeneral-v0"
"""The id of :class:`kairos_gym.train.domain.DomainEnv` (a namespace of its own: not one of :func:`env_ids`)."""
GENERAL_ENTRY_POINT = "kairos_gym.train.domain:DomainEnv"
GENERAL_VECTOR_ENTRY_POINT = "kairos_gym.train.domain_vec:DomainVectorEnv"
"""``gym.make_vec(GENERAL_ENV_ID, num_envs=N, vectorization_mode="vector_entry_point")``: the native domain vector
env."""


def scenario_env_id(name: str) -> str:
    """The id of a shipped scenario: ``bursty`` -> ``kairos_gym/Kairos-v0``, ``small`` ->
    ``kairos_gym/KairosSmall-v0``, any other ``name`` -> ``kairos_gym/Kairos-<name>-v0`` (e.g. ``azure-code`` ->
    ``kairos_gym/Kairos-azure-code-v0``)."""
    return NAMED_IDS.get(name, f"{NAMESPACE}/Kairos-{name}-v0")


def env_compatible(name: str) -> bool:
    """A shipped scenario the env can run: not ``metrics.mode: streaming`` (``soak-24h``: a Simulator benchmark;
    the env's SLO rewards read per-request records). Only the file's ``metrics`` section is read."""
    from kairos_gym.yaml_io import load_yaml_file

    doc = load_yaml_file(SCENARIO_DIR / f"{name}.yaml")
    metrics = doc.get("metrics") if isinstance(doc, dict) else None
    return not (isinstance(metrics, dict) and metrics.get("mode", "exact") != "exact")


def register_envs() -> list[str]:
    """Register every kairos-gym id not yet registered (and :data:`GENERAL_ENV_ID`); returns the KairosEnv ids
    (:func:`env_ids`)."""
    import gymnasium as gym

    wanted = {env_id: name for name, env_id in NAMED_IDS.items()}
    for name in sorted(p.stem for p in SCENARIO_DIR.glob("*.yaml")):
        if env_compatible(name):
            wanted.setdefault(scenario_env_id(name), name)
    for env_id, scenario in wanted.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"scenario": scenario},
                         additional_wrappers=_EnvOnlyWrappers((_wrapper_spec(),)),
                         vector_entry_point=VECTOR_ENTRY_POINT)
    if GENERAL_ENV_ID not in gym.registry:
        gym.register(id=GENERAL_ENV_ID, entry_point=GENERAL_ENTRY_POINT, vector_entry_point=GENERAL_VECTOR_ENTRY_POINT)
    return env_ids()


def env_ids() -> list[str]:
    """The registered KairosEnv ids (namespace ``kairos_gym``), one per scenario, sorted."""
    import gymnasium as gym

    return sorted(k for k in gym.registry if k.startswith(NAMESPACE + "/"))
