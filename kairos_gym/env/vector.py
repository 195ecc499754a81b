"""``KairosVectorEnv``: N independent :class:`~kairos_gym.env.core.KairosEnv` as one Gymnasium ``VectorEnv``.

With the default ``ttft`` reward and no render, one ``_core.VecStepper.step`` call
(src/core/vec_step.cpp, GIL released) steps all N envs' ``_core.EnvStepper``s; the episode counters (decisions,
invalid actions) are kept in arrays and written to an env's ``KairosEnv`` attributes only when its episode
ends (:meth:`KairosVectorEnv._step_batched`); otherwise the N envs step in a Python loop of
``KairosEnv.step``. Either way the results land in preallocated batched arrays:
observations ``[N, F]`` float32, rewards ``[N]`` float64, terminated/truncated ``[N]`` bool and the action
masks ``[N, A]`` int8.

Because every env is a plain ``KairosEnv`` stepped and reset exactly as Gymnasium's ``SyncVectorEnv`` would,
env i of a vector env matches a single env seeded alike, bit for bit (tests/core/test_vector_env.py).

Autoreset: Gymnasium 1.x's default NEXT_STEP mode (the step after an episode's end ignores that env's
action, resets it without a seed (the seed is drawn from its ``np_random``), and returns the reset
observation with reward 0 and both flags false), or SAME_STEP (``autoreset_mode="same_step"``: the env is
reset in the step that ends its episode; ``infos["final_obs"]`` / ``infos["final_info"]`` hold the last
observation and info, as in ``SyncVectorEnv``).

``infos`` is a dict of arrays with ``_key`` masks (``VectorEnv._add_info``): ``action_mask`` ``[N, A]``
always; ``summary`` (an object array of N, the env's summary dict where ``_summary`` is True, else None)
only where an episode ended (and only with ``summaries=True``, the default; it costs hundreds of
microseconds per episode end); on reset also ``sim_seed``, ``sim_time_s`` and ``n_requests``. In SAME_STEP
mode ``final_obs`` is batched like the observations and ``final_info`` is an object array of the ending
steps' info dicts (on the fast path only ``{"summary": ...}``, or ``{}`` with ``summaries=False``).
The per-step scalar info keys of a single env (``rid``, ``interval_s``, ...) are not batched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from kairos_gym.env.actions import warn_masked_action
from kairos_gym.env.core import KairosEnv
from kairos_gym.errors import ConfigError

WHERE = "KairosVectorEnv"
MAX_NUM_ENVS = 4096
"""Most envs one vector env holds (each holds a simulator and its workload)."""
_MODES = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP}


class KairosVectorEnv(VectorEnv):
    """``num_envs`` KairosEnvs built with the same keyword arguments (``scenario``, ``max_decisions``, ...).

    Args:
        num_envs: 1 to MAX_NUM_ENVS.
        autoreset_mode: ``"next_step"`` (default, Gymnasium 1.x's default) or ``"same_step"`` (or an
            ``AutoresetMode`` of those two).
        summaries: add ``infos["summary"]`` where an episode ends (default True).
        max_episode_steps: must be None (``gym.make_vec`` passes it); use ``max_decisions`` to truncate.
        **env_kwargs: passed to every :class:`KairosEnv` (``obs_mode`` must stay ``"flat"``).
    """

    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, *, autoreset_mode: str | AutoresetMode = "next_step",
                 summaries: bool = True, max_episode_steps: int | None = None, **env_kwargs: Any) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) \
                or not 1 <= num_envs <= MAX_NUM_ENVS:
            raise ConfigError(WHERE, "num_envs", num_envs, f"a whole number in [1, {MAX_NUM_ENVS}]")
        mode = autoreset_mode.value if isinstance(autoreset_mode, AutoresetMode) else autoreset_mode
        if not isinstance(mode, str) or mode not in _MODES:
            raise ConfigError(WHERE, "autoreset_mode", autoreset_mode, "next_step or same_step")
        if not isinstance(summaries, bool):
            raise ConfigError(WHERE, "summaries", summaries, "true or false")
        if max_episode_steps is not None:
            raise ConfigError(WHERE, "max_episode_steps", max_episode_steps,
                              "None (truncate episodes with max_decisions)")
        if env_kwargs.get("obs_mode", "flat") != "flat":
            raise ConfigError(WHERE, "obs_mode", env_kwargs["obs_mode"], "flat (the batched observation is [N, F])")
        n = int(num_envs)
        self.envs = [KairosEnv(**env_kwargs) for _ in range(n)]
        for e in self.envs:
            e.warn_masked = False  # the vector env warns once for all of them (step)
        self.warn_masked = True
        """Warn (:class:`~kairos_gym.env.actions.MaskedActionWarning`, once for the vector env) at the first step
        with an action the env's mask forbids."""
        self._rows = np.arange(n)
        first = self.envs[0]
        self.num_envs = n
        self.autoreset_mode = _MODES[mode]
        self.metadata = {**first.metadata, "autoreset_mode": self.autoreset_mode}  # type: ignore[misc]
        self.render_mode = None
        self.summaries = summaries
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, n)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, n)
        self._n_actions = first.action_layout.n
        self._obs = np.zeros((n, first.obs_layout.size), dtype=np.float32)
        self._masks = np.zeros((n, self._n_actions), dtype=np.int8)
        self._rewards = np.zeros(n, dtype=np.float64)
        self._terminated = np.zeros(n, dtype=np.bool_)
        self._truncated = np.zeros(n, dtype=np.bool_)
        self._autoreset = np.zeros(n, dtype=np.bool_)
        self._started = False
        # the per-env fast path (no info dict): the default ttft reward, no render
        self._fast = [not e._track_slo and e.render_mode is None for e in self.envs]
        # all envs on the fast path: one C++ call steps them all (src/core/vec_step.cpp)
        self._vs: Any = None
        if all(self._fast):
            from kairos_gym.compiled import core

            self._vs = core().VecStepper([e._native for e in self.envs])
            self._vbuf = self._vs.buffers()
            self._all_active = np.ones(n, dtype=np.uint8)
        self.autoreset_seed: Callable[[int], int] | None = None
        """Where autoresets take their seed: None (default: env i draws it from its ``np_random``, as in
        ``SyncVectorEnv``) or a callable ``i -> seed`` (kairos_gym.train.envs: held-out training seeds)."""
        self._dec = np.zeros(n, dtype=np.int64)  # decisions and invalid actions of the episodes (batched path)
        self._inv = np.zeros(n, dtype=np.int64)

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every env: ``seed`` None (each env draws its own), an int s (env i gets s + i, as in
        ``SyncVectorEnv``) or a list of N seeds (ints or None)."""
        if options:
            raise ConfigError(f"{WHERE}.reset", "options", options, "None or {} (no reset options)")
        n = self.num_envs
        if seed is None:
            seeds: list[Any] = [None] * n
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            if seed < 0:
                raise ConfigError(f"{WHERE}.reset", "seed", seed, "None, a whole number >= 0 or a list of num_envs")
            seeds = [int(seed) + i for i in range(n)]
        elif isinstance(seed, (list, tuple)) and len(seed) == n:
            seeds = list(seed)
        else:
            raise ConfigError(f"{WHERE}.reset", "seed", seed, f"None, a whole number >= 0 or a list of {n} seeds")
        infos: dict[str, Any] = {}
        for i, (env, s) in enumerate(zip(self.envs, seeds, strict=True)):
            self._obs[i], info = env.reset(seed=s)
            self._masks[i] = info.pop("action_mask")
            infos = self._add_info(infos, info, i)
        self._terminated[:] = False
        self._truncated[:] = False
        self._autoreset[:] = False
        self._dec[:] = 0
        self._inv[:] = 0
        self._started = True
        infos["action_mask"] = self._masks.copy()
        return self._obs.copy(), infos

    def _autoreset_env(self, i: int) -> tuple[Any, dict[str, Any]]:
        """Reset env ``i`` at an episode's end (seed from :attr:`autoreset_seed`, else its own draw)."""
        src = self.autoreset_seed
        return self.envs[i].reset(seed=None if src is None else src(i))

    def _check_actions(self, actions: Any) -> np.ndarray:
        """``actions`` as an int64 array of N valid action indices; anything else raises before any env moves."""
        a = np.asarray(actions)
        if a.shape != (self.num_envs,) or not np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_:
            raise ConfigError(f"{WHERE}.step", "actions", actions,
                              f"an integer array of shape ({self.num_envs},) of action indices")
        if a.size and (a.min() < 0 or a.max() >= self._n_actions):
            raise ConfigError(f"{WHERE}.step", "actions", actions, f"action indices in [0, {self._n_actions})")
        return a.astype(np.int64, copy=False)

    def _warn_if_masked(self, acts: np.ndarray) -> None:
        """Warn once if an env that steps now (not one awaiting its NEXT_STEP reset, whose action is ignored) is
        given an action its current mask forbids."""
        forbidden = self._masks[self._rows, acts] == 0
        forbidden &= ~self._autoreset
        if forbidden.any():
            i = int(np.flatnonzero(forbidden)[0])
            a = int(acts[i])
            self.warn_masked = False
            warn_masked_action(f"{WHERE} env {i}", a, self.envs[i].action_layout.describe(a))

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if not self._started:
            raise RuntimeError("KairosVectorEnv.step() called before reset()")
        checked = self._check_actions(actions)
        if self.warn_masked:
            self._warn_if_masked(checked)
        if self._vs is not None:
            return self._step_batched(np.ascontiguousarray(checked, dtype=np.int64))
        acts = checked.tolist()
        same_step = self.autoreset_mode == AutoresetMode.SAME_STEP
        summaries = self.summaries
        infos: dict[str, Any] = {}
        obs, masks, rewards = self._obs, self._masks, self._rewards
        term, trunc, auto = self._terminated, self._truncated, self._autoreset
        fast = self._fast
        for i, env in enumerate(self.envs):
            if auto[i]:  # NEXT_STEP: this step resets the env and ignores its action
                obs[i], info = self._autoreset_env(i)
                masks[i] = info["action_mask"]
                rewards[i] = 0.0
                term[i] = trunc[i] = False
                continue
            if fast[i]:
                te, tr = self._fast_step(env, acts[i], i)
                if te or tr:
                    infos = self._episode_end(env, i, infos, same_step)
                continue
            o, r, te, tr, info = env.step(acts[i])
            rewards[i] = r
            term[i], trunc[i] = te, tr
            if te or tr:
                if not summaries:
                    info.pop("summary", None)
                if same_step:
                    infos = self._add_info(infos, {"final_obs": o}, i)
                    self._add_object(infos, "final_info", info, i)
                    o, reset_info = self._autoreset_env(i)
                    masks[i] = reset_info["action_mask"]
                    obs[i] = o
                    continue
                if summaries:
                    self._add_object(infos, "summary", info["summary"], i)
            obs[i] = o
            masks[i] = info["action_mask"]
        if not same_step:
            np.logical_or(term, trunc, out=auto)
        infos["action_mask"] = masks.copy()
        return obs.copy(), rewards.copy(), term.copy(), trunc.copy(), infos

    def _step_batched(self, acts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                          dict[str, Any]]:
        """:meth:`step` when every env is on the fast path: one ``_core.VecStepper.step`` call steps the envs not
        awaiting a NEXT_STEP reset; the reward is the ``ttft`` formula on arrays (the same IEEE operations as
        the single env's scalars); Python updates each env's counters and does the resets and summaries."""
        same_step = self.autoreset_mode == AutoresetMode.SAME_STEP
        obs, masks, rewards = self._obs, self._masks, self._rewards
        term, trunc, auto = self._terminated, self._truncated, self._autoreset
        vobs, vmask, valid, vterm, d_wait, d_viol = self._vbuf
        env0 = self.envs[0]
        dec, inv = self._dec, self._inv
        md = env0.max_decisions
        any_auto = bool(auto.any())
        if not any_auto:  # every env steps (the common case): whole-array operations, no index arrays
            self._vs.step(acts, self._all_active)
            rewards[:] = -(d_wait / env0._ttft_s) - env0.tbt_penalty * d_viol
            np.copyto(obs, vobs)
            np.copyto(masks, vmask)
            dec += 1
            inv += valid == 0
            np.not_equal(vterm, 0, out=term)
            if md is None:
                trunc[:] = False
            else:
                np.logical_and(~term, dec >= md, out=trunc)
        else:
            active = np.logical_not(auto)
            idx = np.flatnonzero(active)
            self._vs.step(acts, active.view(np.uint8))
            rewards[idx] = -(d_wait[idx] / env0._ttft_s) - env0.tbt_penalty * d_viol[idx]
            obs[idx] = vobs[idx]
            masks[idx] = vmask[idx]
            dec[idx] += 1
            inv[idx] += valid[idx] == 0
            np.logical_and(vterm, active, out=term)
            if md is None:
                trunc[:] = False
            else:
                np.logical_and(~term & active, dec >= md, out=trunc)
        infos: dict[str, Any] = {}
        ended = term | trunc
        for i in (np.flatnonzero(ended).tolist() if ended.any() else ()):  # counters reach the env at its end
            env = self.envs[i]
            te = bool(term[i])
            env._decisions = int(dec[i])
            env._n_invalid = int(inv[i])
            env._ctx = None
            env._native_live = not te
            env._mask = env._native_mask
            infos = self._episode_end(env, i, infos, same_step)
            if same_step:
                dec[i] = inv[i] = 0
        for i in (np.flatnonzero(auto).tolist() if any_auto else ()):  # NEXT_STEP: reset, action ignored
            obs[i], info = self._autoreset_env(i)
            masks[i] = info["action_mask"]
            dec[i] = inv[i] = 0
            rewards[i] = 0.0
            term[i] = trunc[i] = False
        if not same_step:
            np.logical_or(term, trunc, out=auto)
        infos["action_mask"] = masks.copy()
        return obs.copy(), rewards.copy(), term.copy(), trunc.copy(), infos

    def _episode_end(self, env: KairosEnv, i: int, infos: dict[str, Any], same_step: bool) -> dict[str, Any]:
        """Env ``i``'s episode ended in this step: under SAME_STEP its final observation and info go into
        ``infos`` and it resets now; otherwise its summary does (when summaries are on). Returns ``infos``."""
        info = {"summary": env.summary()} if self.summaries else {}
        if same_step:
            infos = self._add_info(infos, {"final_obs": self._obs[i].copy()}, i)
            self._add_object(infos, "final_info", info, i)
            self._obs[i], reset_info = self._autoreset_env(i)
            self._masks[i] = reset_info["action_mask"]
        elif self.summaries:
            self._add_object(infos, "summary", info["summary"], i)
        return infos

    def _fast_step(self, env: KairosEnv, a: int, i: int) -> tuple[bool, bool]:
        """:meth:`KairosEnv.step` for the default ``ttft`` reward without render and without the info
        dict (the vector env does not batch its keys): the same C++ call, counters, reward and flags, bit
        for bit; writes obs, mask, reward and flags of row ``i``."""
        if not env._native_live:
            raise RuntimeError(f"KairosVectorEnv.step(): env {i} has no pending decision")
        valid, terminated, d_wait, d_viol, _, _, _, _, _ = env._native.step(a)
        if not valid:
            env._n_invalid += 1
        env._ctx = None
        env._native_live = not terminated
        env._decisions += 1
        self._rewards[i] = -(d_wait / env._ttft_s) - env.tbt_penalty * d_viol
        truncated = (not terminated) and env.max_decisions is not None and env._decisions >= env.max_decisions
        env._mask = env._native_mask
        self._obs[i] = env._native_obs
        self._masks[i] = env._native_mask
        self._terminated[i], self._truncated[i] = terminated, truncated
        return terminated, truncated

    def _add_object(self, infos: dict[str, Any], key: str, value: dict[str, Any], i: int) -> None:
        """``infos[key][i] = value`` in an object array of N (None elsewhere), with the ``_key`` bool mask: a
        summary holds None, lists and nested dicts, which ``_add_info`` cannot batch key by key."""
        if key not in infos:
            infos[key] = np.full(self.num_envs, None, dtype=object)
            infos["_" + key] = np.zeros(self.num_envs, dtype=np.bool_)
        infos[key][i] = value
        infos["_" + key][i] = True

    def action_masks(self) -> np.ndarray:
        """int8 masks ``[N, A]`` of the valid actions at every env's pending decision (MaskablePPO)."""
        return self._masks.copy()

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()


def make_vector_env(env_id: str, num_envs: int, **kwargs: Any) -> KairosVectorEnv:
    """A :class:`KairosVectorEnv` of a registered kairos-gym id (its spec's kwargs, then ``kwargs``); the same as
    ``gym.make_vec(env_id, num_envs, vectorization_mode="vector_entry_point", **kwargs)`` (registration.py)."""
    return KairosVectorEnv(num_envs, **{**spec_kwargs(env_id, "make_vector_env"), **kwargs})


def spec_kwargs(env_id: str, where: str) -> dict[str, Any]:
    """The KairosEnv keyword arguments of a registered kairos-gym id (ConfigError naming ``where`` for any
    other id)."""
    spec = gym.spec(env_id)
    if not isinstance(spec.entry_point, str) or not spec.entry_point.startswith("kairos_gym.env.core:"):
        raise ConfigError(where, "env_id", env_id, "a kairos-gym id (kairos_gym.env.registration)")
    return dict(spec.kwargs)
