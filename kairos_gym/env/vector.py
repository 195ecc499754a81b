"""``KairosVectorEnv``: N independent :class:`~kairos_gym.env.core.KairosEnv` as one Gymnasium ``VectorEnv``.

With the default ``misses`` reward or the ``ttft`` one and no render, one ``_core.VecStepper.step`` call
(src/core/vec_step.cpp, GIL released) steps all N envs' ``_core.EnvStepper``s; the episode counters (decisions,
invalid actions) are kept in arrays and written to an env's ``KairosEnv`` attributes only when its episode
ends (:meth:`KairosVectorEnv._step_batched`); otherwise the N envs step in a Python loop of
``KairosEnv.step``. Either way the results land in preallocated batched arrays:
observations ``[N, F]`` float32, rewards ``[N]`` float64, terminated/truncated ``[N]`` bool and the action
masks ``[N, A]`` int8.

Because every env is a plain ``KairosEnv`` stepped and reset exactly as Gymnasium's ``SyncVectorEnv`` would,
env i of a vector env matches a single env seeded alike, bit for bit (tests/core/test_vector_env.py).
:meth:`KairosVectorEnv.set_env` replaces one env by another (of another scenario with the same layout: the
batched reward uses each env's own SLO); ``kairos_gym.train.domain_vec.DomainVectorEnv`` does so at every reset.

Autoreset: Gymnasium 1.x's default NEXT_STEP mode (the step after an episode's end ignores that env's
action, resets it without a seed (the seed is drawn from its ``np_random``), and returns the reset
observation with reward 0 and both flags false), or SAME_STEP (``autoreset_mode="same_step"``: the env is
reset in the step that ends its episode; ``infos["final_obs"]`` / ``infos["final_info"]`` hold the last
observation and info, as in ``SyncVectorEnv``).

``infos`` follow Gymnasium's vector layout (kairos_gym/env/vector_infos.py): a dict of arrays with ``_key`` bool
masks, with the keys, dtypes and values ``gymnasium.vector.SyncVectorEnv`` gives over ``gym.make`` envs of the same
id and seeds (tests/env/test_env_vector_infos.py compares them side by side): every per-step key of
``KairosEnv.step``'s info (``action_mask`` ``[N, A]`` int8, ``invalid_action``, ``n_invalid_actions``,
``deflected``, ``rid``, ``interval_s``, ...), the reset keys (``sim_seed``, ``sim_time_s``, ``n_requests``) for the
envs that reset in the step, and where an episode ended ``summary`` (a dict of arrays, NEXT_STEP) or
``final_obs`` and ``final_info`` (SAME_STEP). On the batched path the per-step keys are computed from arrays and
the engine's counters, the same numbers ``KairosEnv.step`` returns. Two opt-outs, for speed: ``summaries=False``
(no ``summary``: it costs hundreds of microseconds per episode end) and ``step_infos=False`` (only
``action_mask`` and the episode-end keys: the per-step keys cost about a microsecond per env and step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from kairos_gym.env.actions import warn_masked_action
from kairos_gym.env.core import KairosEnv
from kairos_gym.env.vector_infos import add_info, masked_arrays
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
        step_infos: add the per-step keys of ``KairosEnv.step``'s info and the autoreset's reset keys (default
            True, as ``SyncVectorEnv``); False leaves only ``action_mask`` and the episode-end keys.
        max_episode_steps: must be None (``gym.make_vec`` passes it); use ``max_decisions`` to truncate.
        **env_kwargs: passed to every :class:`KairosEnv` (``obs_mode`` must stay ``"flat"``).
    """

    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, *, autoreset_mode: str | AutoresetMode = "next_step",
                 summaries: bool = True, step_infos: bool = True, max_episode_steps: int | None = None,
                 **env_kwargs: Any) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) \
                or not 1 <= num_envs <= MAX_NUM_ENVS:
            raise ConfigError(WHERE, "num_envs", num_envs, f"a whole number in [1, {MAX_NUM_ENVS}]")
        mode = autoreset_mode.value if isinstance(autoreset_mode, AutoresetMode) else autoreset_mode
        if not isinstance(mode, str) or mode not in _MODES:
            raise ConfigError(WHERE, "autoreset_mode", autoreset_mode, "next_step or same_step")
        for name, flag in (("summaries", summaries), ("step_infos", step_infos)):
            if not isinstance(flag, bool):
                raise ConfigError(WHERE, name, flag, "true or false")
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
        self._step_infos = step_infos
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, n)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, n)
        self._n_actions = first.action_layout.n
        self._row_starts = self._rows * self._n_actions  # each env's first entry in the raveled [N, A] masks
        self._every_env = np.ones(n, dtype=np.bool_)  # copied as infos["_action_mask"] (a copy: cheaper than ones)
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
        # the batched path's per-step info keys: each env's engine state at its pending decision (time in s, tokens
        # emitted, requests finished, the pending request and decision kind), read after every step and reset
        self._cores = [e.sim._core for e in self.envs]
        self._now = np.zeros(n, dtype=np.float64)
        self._tok = np.zeros(n, dtype=np.int64)
        self._fin = np.zeros(n, dtype=np.int64)
        self._rid = np.zeros(n, dtype=np.int64)
        self._kind = np.zeros(n, dtype=np.int64)
        self._pull, self._faults = first._pull, first._faults  # the info keys "pull" and "reentry"
        # the batched reward's per-env terms (set_env may give env i another scenario's SLO)
        self._reward_kind, self._max_decisions = first.reward_kind, first.max_decisions
        self._ttft_s = np.array([e._ttft_s for e in self.envs], dtype=np.float64)
        self._tbt_penalty = np.array([e.tbt_penalty for e in self.envs], dtype=np.float64)
        self._steppers = [e._native for e in self.envs]  # keeps env i's stepper alive while the VecStepper has it

    def set_env(self, i: int, env: KairosEnv) -> None:
        """Replace env ``i`` by ``env``, a :class:`KairosEnv` with a pending decision (reset, maybe stepped) that
        continues from its state: row ``i`` of the observations and masks becomes its pending decision's, its
        episode counters carry on, and the next :meth:`step` steps it with action ``i`` (on the batched path, one
        ``VecStepper.set``: nothing else is rebuilt). Its scenario may differ from the other envs' (SLOs, workload,
        load, information track: the batched reward uses each env's own SLO and ``tbt_penalty``) as long as it
        has the same observation features and action space, reward kind, ``max_decisions``, decision points and
        fault setting, and, when the vector env steps in one native call, is on that path too (``misses`` or
        ``ttft`` reward, no render). Anything else raises :class:`ConfigError` and changes nothing. Used at
        every reset of :class:`kairos_gym.train.domain_vec.DomainVectorEnv` (a new scenario per episode)."""
        where = f"{WHERE}.set_env"
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.num_envs:
            raise ConfigError(where, "i", i, f"an env index in [0, {self.num_envs})")
        i = int(i)
        if not isinstance(env, KairosEnv):
            raise ConfigError(where, "env", type(env).__name__, "a KairosEnv (the unwrapped env)")
        old = self.envs[i]
        checks = (("observation_space", env.observation_space, self.single_observation_space),
                  ("action_space", env.action_space, self.single_action_space),
                  ("feature_names", env.feature_names(), old.feature_names()),
                  ("reward", env.reward_kind, self._reward_kind), ("max_decisions", env.max_decisions,
                                                                   self._max_decisions),
                  ("obs_mode", env.obs_mode, "flat"), ("decision_points pull", env._pull, self._pull),
                  ("faults", env._faults, self._faults))
        for field, got, want in checks:
            if got != want:
                raise ConfigError(where, field, got, f"{want!r}, as the vector env's other envs")
        fast = not env._track_slo and env.render_mode is None
        if self._vs is not None and not fast:
            raise ConfigError(where, "env", "reward or render_mode off the batched path",
                              "the misses or ttft reward and no render (the vector env steps in one native call)")
        if not env._native_live:
            raise ConfigError(where, "env", "no pending decision", "a KairosEnv reset and not at its episode's end")
        if self._vs is not None:
            self._vs.set(i, env._native)  # checks the buffer sizes before anything changes
        env.warn_masked = False
        self.envs[i] = env  # in place: KairosVecEnv.envs is this list
        self._steppers[i] = env._native
        self._fast[i] = fast
        self._cores[i] = env.sim._core
        self._ttft_s[i] = env._ttft_s
        self._tbt_penalty[i] = env.tbt_penalty
        env._native.observe()  # the pending decision's row, whatever path the env took to it (a pure encoding)
        self._obs[i] = env._native_obs
        self._masks[i] = env._native_mask
        self._dec[i] = env._decisions
        self._inv[i] = env._n_invalid
        self._autoreset[i] = False  # the next step steps it (the last step's flags stay: SAME_STEP returns them)
        if self._vs is not None:
            self._read_engine(self._rows[i:i + 1])

    def _reset_env(self, i: int, seed: int | None) -> tuple[Any, dict[str, Any]]:
        """Reset env ``i`` with ``seed`` (at :meth:`reset` and every autoreset); a subclass may first give it
        another env (:meth:`set_env`)."""
        return self.envs[i].reset(seed=seed)

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
        for i, s in enumerate(seeds):
            self._obs[i], info = self._reset_env(i, s)
            self._masks[i] = info["action_mask"]
            infos = self._add_info(infos, info, i)
        self._terminated[:] = False
        self._truncated[:] = False
        self._autoreset[:] = False
        self._dec[:] = 0
        self._inv[:] = 0
        self._started = True
        if self._vs is not None:
            self._read_engine(self._rows)
        return self._obs.copy(), infos

    @property
    def step_infos(self) -> bool:
        """The per-step info keys are on (fixed when the env is built: the batched path reads the engine for them
        after every step only then)."""
        return self._step_infos

    def _autoreset_env(self, i: int) -> tuple[Any, dict[str, Any]]:
        """Reset env ``i`` at an episode's end (seed from :attr:`autoreset_seed`, else its own draw); returns the
        observation and the reset info as :attr:`step_infos` keeps it."""
        src = self.autoreset_seed
        obs, info = self._reset_env(i, None if src is None else src(i))
        self._masks[i] = info["action_mask"]
        if self._vs is not None:
            self._read_engine(self._rows[i:i + 1])
        return obs, info if self.step_infos else {"action_mask": info["action_mask"]}

    def _read_engine(self, idx: np.ndarray) -> None:
        """Read the engine state of envs ``idx`` at their pending decisions into the arrays the next batched step's
        info keys start from (the same reads ``_core.EnvStepper.step`` makes before and after a step)."""
        if len(idx) == self.num_envs:
            cores, at = self._cores, slice(None)
        else:
            cores, at = [self._cores[i] for i in idx.tolist()], idx
        self._now[at] = [c.now for c in cores]
        self._tok[at] = [c.tokens_out for c in cores]
        self._fin[at] = [c.n_finished for c in cores]
        self._rid[at] = [c.pending_rid for c in cores]
        if self._pull or self._faults:
            self._kind[at] = [c.pending_kind for c in cores]

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
        allowed = self._masks.reshape(-1).take(self._row_starts + acts)  # a flat take: half the cost of [rows, acts]
        if allowed.all():  # the common case: every action allowed
            return
        forbidden = (allowed == 0) & ~self._autoreset
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
        return self._step_envs(checked.tolist())

    def _info(self, info: dict[str, Any]) -> dict[str, Any]:
        """A step's info as :attr:`summaries` and :attr:`step_infos` keep it."""
        if not self.step_infos:
            info = {k: info[k] for k in ("action_mask", "summary") if k in info}
        elif not self.summaries:
            info.pop("summary", None)
        return info

    def _step_envs(self, acts: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """:meth:`step` as ``SyncVectorEnv`` does it: ``KairosEnv.step`` (or the NEXT_STEP reset) env by env, each
        info added to ``infos`` (the SLO rewards, a render mode)."""
        same_step = self.autoreset_mode == AutoresetMode.SAME_STEP
        infos: dict[str, Any] = {}
        obs, masks, rewards = self._obs, self._masks, self._rewards
        term, trunc, auto = self._terminated, self._truncated, self._autoreset
        for i, env in enumerate(self.envs):
            if auto[i]:  # NEXT_STEP: this step resets the env and ignores its action
                obs[i], info = self._autoreset_env(i)
                rewards[i] = 0.0
                term[i] = trunc[i] = False
            else:
                o, rewards[i], te, tr, info = env.step(acts[i])
                term[i], trunc[i] = te, tr
                masks[i] = info["action_mask"]
                info = self._info(info)
                if (te or tr) and same_step:
                    infos = self._add_info(infos, {"final_obs": o, "final_info": info}, i)
                    o, info = self._autoreset_env(i)
                obs[i] = o
            infos = self._add_info(infos, info, i)
        if not same_step:
            np.logical_or(term, trunc, out=auto)
        return obs.copy(), rewards.copy(), term.copy(), trunc.copy(), infos

    def _step_batched(self, acts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                          dict[str, Any]]:
        """:meth:`step` when every env is on the fast path: one ``_core.VecStepper.step`` call steps the envs not
        awaiting a NEXT_STEP reset; the reward is the ``misses`` or the ``ttft`` formula on arrays (the same
        IEEE operations as the single env's scalars); the info keys come from arrays and the engine's counters;
        Python updates each env's counters at its episode's end and does the resets and summaries."""
        same_step = self.autoreset_mode == AutoresetMode.SAME_STEP
        obs, masks, rewards = self._obs, self._masks, self._rewards
        term, trunc, auto = self._terminated, self._truncated, self._autoreset
        vobs, vmask, valid, vterm, d_wait, d_viol, d_missed = self._vbuf
        misses = self._reward_kind == "misses"
        ttft_s, pen = self._ttft_s, self._tbt_penalty  # each env's own SLO and penalty
        dec, inv = self._dec, self._inv
        md = self._max_decisions
        any_auto = bool(auto.any())
        if not any_auto:  # every env steps (the common case): whole-array operations, no index arrays
            stepped = self._rows
            self._vs.step(acts, self._all_active)
            if misses:  # negated as ints, then cast: +0.0 where nothing was missed, as the single env's float(-d)
                np.negative(d_missed, out=rewards, casting="unsafe")
            else:
                rewards[:] = -(d_wait / ttft_s) - pen * d_viol
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
            stepped = np.flatnonzero(active)
            self._vs.step(acts, active.view(np.uint8))
            if misses:
                rewards[stepped] = -d_missed[stepped]
            else:
                rewards[stepped] = -(d_wait[stepped] / ttft_s[stepped]) - pen[stepped] * d_viol[stepped]
            obs[stepped] = vobs[stepped]
            masks[stepped] = vmask[stepped]
            dec[stepped] += 1
            inv[stepped] += valid[stepped] == 0
            np.logical_and(vterm, active, out=term)
            if md is None:
                trunc[:] = False
            else:
                np.logical_and(~term & active, dec >= md, out=trunc)
        ended = term | trunc
        step_info = self._batched_step_info(acts, stepped, ended if same_step else None) if self.step_infos else None
        # the step keys first, then the episode ends' and resets' keys into them, as SyncVectorEnv adds them
        infos: dict[str, Any] = dict(step_info[0]) if step_info is not None else {}
        for i in (np.flatnonzero(ended).tolist() if ended.any() else ()):  # counters reach the env at its end
            env = self.envs[i]
            te = bool(term[i])
            env._decisions = int(dec[i])
            env._n_invalid = int(inv[i])
            env._ctx = None
            env._native_live = not te
            env._mask = env._native_mask
            infos = self._episode_end(env, i, infos, same_step, step_info)
            if same_step:
                dec[i] = inv[i] = 0
        for i in (np.flatnonzero(auto).tolist() if any_auto else ()):  # NEXT_STEP: reset, action ignored
            obs[i], info = self._autoreset_env(i)
            infos = self._add_info(infos, info, i)
            dec[i] = inv[i] = 0
            rewards[i] = 0.0
            term[i] = trunc[i] = False
        if not same_step:
            np.logical_or(term, trunc, out=auto)
        infos["action_mask"] = masks.copy()
        infos["_action_mask"] = self._every_env.copy()
        return obs.copy(), rewards.copy(), term.copy(), trunc.copy(), infos

    def _batched_step_info(self, acts: np.ndarray, stepped: np.ndarray, final: np.ndarray | None
                           ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The per-step info keys of ``KairosEnv.step`` for the envs ``stepped`` (indices), from the step's buffers,
        the episode counters and the engine state before and after the step (read here). Returns the keys laid
        out for ``infos`` (without the envs of ``final``, a bool mask: SAME_STEP ends, whose step info goes into
        ``final_info``) and the per-env values, for those."""
        _, _, valid, _, d_wait, d_viol, _ = self._vbuf
        now0, tok0, fin0, rid0, kind0 = self._now.copy(), self._tok.copy(), self._fin.copy(), self._rid.copy(), \
            self._kind.copy()
        self._read_engine(stepped)
        has = np.zeros(self.num_envs, dtype=np.bool_)
        has[stepped] = True
        ok = valid != 0
        values: dict[str, tuple[np.ndarray, type]] = {
            "invalid_action": (~ok, bool), "n_invalid_actions": (self._inv, int), "deflected": (ok & (acts != 0), bool),
            "rid": (rid0, int), "interval_s": (self._now - now0, float), "ttft_area_s": (d_wait, float),
            "tbt_violations": (d_viol, int), "tokens_out": (self._tok - tok0, int), "finished": (self._fin - fin0, int),
            "sim_time_s": (self._now, float), "decisions": (self._dec, int)}
        if self._pull:
            values["pull"] = (kind0 == 1, bool)
        if self._faults:
            values["reentry"] = (kind0 == 2, bool)
        keys: dict[str, Any] = {"action_mask": None}  # first, as in KairosEnv.step's info (filled at the end)
        masked_arrays(keys, values, has if final is None else has & ~final)
        del keys["action_mask"]
        return keys, values

    def _episode_end(self, env: KairosEnv, i: int, infos: dict[str, Any], same_step: bool,
                     step_info: tuple[dict[str, Any], dict[str, Any]] | None) -> dict[str, Any]:
        """Env ``i``'s episode ended in this step (batched path): under SAME_STEP its final observation and info go
        into ``infos`` and it resets now; otherwise its summary does (when summaries are on). Returns ``infos``."""
        info: dict[str, Any] = {"action_mask": self._masks[i].copy()}
        if step_info is not None:
            info.update({k: kind(v[i]) for k, (v, kind) in step_info[1].items()})
        if self.summaries:
            info["summary"] = env.summary()
        if not same_step:
            return self._add_info(infos, {"summary": info["summary"]}, i) if self.summaries else infos
        infos = self._add_info(infos, {"final_obs": self._obs[i].copy(), "final_info": info}, i)
        self._obs[i], reset_info = self._autoreset_env(i)
        return self._add_info(infos, reset_info, i)

    def _add_info(self, vector_infos: dict[str, Any], env_info: dict[str, Any], env_num: int) -> dict[str, Any]:
        """Gymnasium's ``VectorEnv._add_info`` (kairos_gym/env/vector_infos.py: the same layout, and a value of
        another type than its key's array makes it an object array instead of failing)."""
        return add_info(self.num_envs, vector_infos, env_info, env_num)

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
