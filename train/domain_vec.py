"""``DomainVectorEnv``: ``kairos_train/KairosGeneral-v0`` (:class:`~kairos_gym.train.domain.DomainEnv`) as one
native vector env.

Sub-env i keeps its own domain generator, exactly as the i-th ``DomainEnv`` of a ``SyncVectorEnv`` (or of SB3's
``DummyVecEnv``) does: at every reset and autoreset it draws a task family, an SLO tier, an information track, a
load factor and a training instance (:func:`kairos_gym.train.domain.draw`, in that order), builds that episode's
:class:`~kairos_gym.env.core.KairosEnv` and swaps it in with
:meth:`KairosVectorEnv.set_env <kairos_gym.env.vector.KairosVectorEnv.set_env>` (one ``VecStepper.set``: the other
envs and the batched buffers stay). The steps then run as :class:`~kairos_gym.env.vector.KairosVectorEnv`'s: with the
``misses`` or ``ttft`` reward, one native call steps every env, each reward computed with that env's own SLO.
Every simulator of the domain shares one pricer (the suite's families share the 2P2D cluster:
:func:`kairos_gym.latency.pricing.shared_pricer`), so a new scenario per episode costs about 3 ms (docs/training.md).

Same seeds, same episodes: ``reset(seed=s)`` re-seeds generator i from ``s + i`` (a list: one seed per env) as
``DomainEnv.reset(seed=s + i)`` does, an autoreset takes generator i's next draw (or re-seeds it from
``autoreset_seed(i)``: :class:`kairos_gym.train.envs.HeldOutVecEnv`, as SB3's ``HeldOutSeeds`` wrapper over
``DomainEnv``), and observations, rewards, flags, infos (with ``info["domain"]`` at every reset) and draws equal the
Python ``DomainEnv``'s bit for bit (tests/train/test_domain_vec.py). ``gym.make_vec(DOMAIN_ENV_ID, num_envs=N,
vectorization_mode="vector_entry_point", **kwargs)`` builds one (kairos_gym/env/registration.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode
from kairos_gym.train.domain import LOAD_RANGE, WHERE, DomainSpec, Draw, check_kwargs, draw, first_env, seed_rng

from kairos_gym.env.core import KairosEnv
from kairos_gym.env.vector import KairosVectorEnv
from kairos_gym.errors import ConfigError


class DomainVectorEnv(KairosVectorEnv):
    """``num_envs`` domain-randomised KairosEnvs stepped in batch (see the module docstring).

    Args:
        num_envs: 1 to :data:`kairos_gym.env.vector.MAX_NUM_ENVS`.
        suite, families, tiers, tracks, load, largest_safe_action: the domain, as :class:`DomainEnv`'s (checked
            alike).
        autoreset_mode, summaries, step_infos, max_episode_steps: as :class:`KairosVectorEnv`'s.
        **env_kwargs: ``reward``, ``tbt_penalty``, ``max_decisions`` (every episode's KairosEnv); any other key is a
            ConfigError, as in DomainEnv.
    """

    def __init__(self, num_envs: int = 1, *, families: Any = None, tiers: Any = None, tracks: Any = None,
                 load: Any = LOAD_RANGE, largest_safe_action: Any = False, suite: Any = "v1",
                 autoreset_mode: str | AutoresetMode = "next_step", summaries: bool = True, step_infos: bool = True,
                 max_episode_steps: int | None = None, **env_kwargs: Any) -> None:
        check_kwargs({"families": families, "tiers": tiers, "tracks": tracks, "load": load,
                      "largest_safe_action": largest_safe_action, "suite": suite, **env_kwargs})
        inputs = env_kwargs.pop("inputs", "observation")
        if inputs != "observation":
            raise ConfigError(WHERE, "inputs", inputs, "observation on the native domain vector env (Kairos's "
                              "action as an input is computed in Python: vec_backend dummy or subproc)")
        spec = DomainSpec.parse(families, tiers, tracks, load, largest_safe=largest_safe_action, suite=suite)
        first = first_env(spec, env_kwargs)  # one layout for every family, or a clear refusal
        super().__init__(num_envs, autoreset_mode=autoreset_mode, summaries=summaries, step_infos=step_infos,
                         max_episode_steps=max_episode_steps, scenario=first.scenario, **env_kwargs)
        self.spec_domain = spec
        self.env_kwargs = dict(env_kwargs)
        self._rngs = [np.random.default_rng() for _ in range(self.num_envs)]
        self.draws: list[Draw | None] = [None] * self.num_envs
        """Each env's current episode draw (None before the first reset)."""

    def _reset_env(self, i: int, seed: int | None) -> tuple[Any, dict[str, Any]]:
        """``DomainEnv.reset(seed=seed)`` for env ``i``: re-seed its generator (when ``seed`` is given), draw the
        episode, build its KairosEnv, reset it with the draw's seed and swap it in."""
        if seed is not None:
            self._rngs[i] = seed_rng(seed)
        d = draw(self.spec_domain, self._rngs[i])
        env = KairosEnv(d.scenario(), **self.env_kwargs)
        obs, info = env.reset(seed=d.instance.seed)
        self.set_env(i, env)
        self.draws[i] = d
        info["domain"] = d.as_dict()
        return obs, info

    def feature_names(self) -> tuple[str, ...]:
        """Names of the flat observation's entries (every family's)."""
        return self.envs[0].feature_names()
