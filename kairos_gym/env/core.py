"""``KairosEnv``: the Gymnasium adapter of the simulator (one ``step`` per routing decision).

Each ``step(action)`` applies the action to the pending decision, then runs the simulator to the next
decision (or to the end of the run). A decision is an arrival, or, under ``deflection.decision_points:
arrival+pull``, also a pull (a freed deflection slot; the observation's ``decision_pull`` feature tells
which). See ``docs/env.md`` for the observation
table, the action table, the rewards, the ``info`` keys and the episode and seeding semantics.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from kairos_gym.env.actions import ActionLayout, warn_masked_action
from kairos_gym.env.observation import ObservationLayout
from kairos_gym.env.render import render_ansi, render_rgb
from kairos_gym.env.reward import DEFAULT_REWARD, DEFAULT_TBT_PENALTY, REWARD_KINDS, SloTracker, step_reward
from kairos_gym.env.stepper import make_stepper
from kairos_gym.errors import ConfigError
from kairos_gym.scenario import SCENARIO_KEYS, ScenarioConfig, load_scenario
from kairos_gym.sim import Simulator
from kairos_gym.sim.hook import DecisionContext
from kairos_gym.workload import Workload, generate
from kairos_gym.workload.config import MAX_REQUESTS
from kairos_gym.workload.rules import NON_NEGATIVE, Number

WHERE = "KairosEnv"
OBS_MODES = ("flat", "dict")
ENV_KWARGS = ("scenario", "max_decisions", "reward", "tbt_penalty", "obs_mode", "oracle", "episode_window",
              "render_mode")
_OPT_POS_INT = Number(integer=True, low=1, optional=True)
_EPISODE_WINDOW = Number(integer=True, low=1, optional=True, high=MAX_REQUESTS)
_SNAPSHOT_KEYS = ("sim", "workload", "decisions", "n_invalid", "sim_seed", "slo", "np_random", "last")
_SEED_BOUND = 2**31


class KairosEnv(gym.Env):
    """Prefill deflection in a P/D cluster: at each arriving request, choose its prefill path.

    Args:
        scenario: a shipped scenario name (``configs/scenarios/<name>.yaml``), a YAML path, a dict or a
            :class:`~kairos_gym.scenario.ScenarioConfig` (default ``"bursty"``).
        max_decisions: truncate an episode after this many decisions (default None: run to the end).
        reward: ``"misses"`` (default: -1 per request at the step it is known to miss its SLOs; a whole episode
            returns n_ok - n, ordered as SLO attainment), ``"ttft"``, ``"slo"`` or ``"goodput"`` (see
            :mod:`kairos_gym.env.reward`).
        tbt_penalty: lambda of the ``ttft`` reward, per token gap above the TBT SLO (default 0.1).
        obs_mode: ``"flat"`` (a float32 Box, default) or ``"dict"`` (a Dict of per-group Boxes).
        oracle: expose the request's output length in the observation (and to the simulator's view).
        episode_window: each episode is a random window of this many consecutive requests of the
            scenario's workload (start drawn with the env's ``np_random``; arrival times shifted to 0), 1 to
            10,000,000 (``MAX_REQUESTS``) and at most the workload's size (``reset`` raises otherwise).
            Default None: the whole workload.
        render_mode: None, ``"human"`` (the ``"ansi"`` text printed to stdout at every ``reset`` and ``step``, as
            Gymnasium's text envs do; ``render()`` then returns None), ``"ansi"`` or ``"rgb_array"``.
        **overrides: scenario sections deep-merged into the scenario, e.g. ``workload={"max_requests": 200}``,
            ``slo={"tbt_s": 0.05}``, ``deflection={"chunk_menu": [256, 512]}``.

    Every bad argument raises :class:`~kairos_gym.errors.ConfigError` naming it.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["human", "ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        scenario: str | Path | Mapping[str, Any] | ScenarioConfig = "bursty",
        *,
        max_decisions: int | None = None,
        reward: str = DEFAULT_REWARD,
        tbt_penalty: float = DEFAULT_TBT_PENALTY,
        obs_mode: str = "flat",
        oracle: bool = False,
        episode_window: int | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        for key, value in overrides.items():
            if key not in SCENARIO_KEYS:
                raise ConfigError(WHERE, key, value, f"a KairosEnv argument ({', '.join(ENV_KWARGS)}) or a scenario "
                                  f"section to override ({', '.join(SCENARIO_KEYS)})")
        self.max_decisions = _OPT_POS_INT.check(WHERE, "max_decisions", max_decisions)
        if not isinstance(reward, str) or reward not in REWARD_KINDS:
            raise ConfigError(WHERE, "reward", reward, "one of " + ", ".join(REWARD_KINDS))
        self.reward_kind = reward
        # the SLO bookkeeping of slo / goodput costs a scan of in-flight requests; ttft and misses come from counters
        self._track_slo = reward not in ("ttft", "misses")
        self._misses = reward == "misses"
        self.tbt_penalty = float(NON_NEGATIVE.check(WHERE, "tbt_penalty", tbt_penalty))  # type: ignore[arg-type]
        if not isinstance(obs_mode, str) or obs_mode not in OBS_MODES:
            raise ConfigError(WHERE, "obs_mode", obs_mode, "one of " + ", ".join(OBS_MODES))
        self.obs_mode = obs_mode
        if not isinstance(oracle, bool):
            raise ConfigError(WHERE, "oracle", oracle, "true or false")
        self.oracle = oracle
        self.episode_window = _EPISODE_WINDOW.check(WHERE, "episode_window", episode_window)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(WHERE, "render_mode", render_mode, "None, " + ", ".join(self.metadata["render_modes"]))
        self.render_mode = render_mode
        sc = load_scenario(scenario)
        if overrides:
            sc = sc.with_overrides(overrides)
        if sc.metrics.mode != "exact":  # the SLO rewards read per-request records
            raise ConfigError(WHERE, "metrics.mode", sc.metrics.mode, "exact (streaming is for long Simulator runs)")
        self.scenario: ScenarioConfig = sc
        self.sim = Simulator(sc, seed=0, oracle=oracle, record_timeline=render_mode == "rgb_array")
        self.obs_layout = ObservationLayout(sc, oracle=oracle, max_context=self.sim.model.model.max_context)
        self.action_layout = ActionLayout(sc)
        self.action_space = gym.spaces.Discrete(self.action_layout.n)
        self.observation_space = (self.obs_layout.flat_space() if obs_mode == "flat" else self.obs_layout.dict_space())
        self._zero_obs = np.zeros(self.obs_layout.size, dtype=np.float32)
        self._mask = np.zeros(self.action_layout.n, dtype=np.int8)
        self._ttft_s = sc.slo.ttft_s
        self._ctx: DecisionContext | None = None
        self._decisions = 0
        self._n_invalid = 0
        self._sim_seed = 0
        self._slo = SloTracker(sc.slo.ttft_s, sc.slo.tbt_s)
        self._last: dict[str, Any] = {}
        # the env step: one native call (env/stepper.py) over the simulator's core
        self._native = make_stepper(self.sim, self.obs_layout, self.action_layout)
        self._native_obs, self._native_mask = self._native.buffers()
        self._n_actions = self.action_layout.n
        self._pull = sc.deflection.decision_points == "arrival+pull"  # info["pull"]: the step answered a pull
        self._faults = sc.faults.enabled  # info["reentry"]: the step answered a re-entry decision (a failure's victim)
        self._native_live = False  # a decision is pending
        self.warn_masked = True
        """Warn (:class:`MaskedActionWarning`, once) at the first step whose action the mask forbids; a vector env
        turns it off in its envs and warns once itself."""
        self._stale_seen = 0  # the core's n_stale_refusals at the last refused step (realistic track)

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Start an episode. ``reset(seed=s)`` regenerates the workload from ``s`` (the simulator's seed);
        without a seed the simulator seed is drawn from the env's ``np_random``."""
        if options:
            raise ConfigError(f"{WHERE}.reset", "options", options, "None or {} (no reset options)")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise ConfigError(f"{WHERE}.reset", "seed", seed, "None or a whole number >= 0")
        super().reset(seed=None if seed is None else int(seed))
        sim_seed = int(seed) if seed is not None else int(self.np_random.integers(_SEED_BOUND))
        self._sim_seed = sim_seed
        if self.episode_window is None:
            self.sim.reset(sim_seed)
        else:
            self.sim.reset(sim_seed, workload=self._window(sim_seed))
        self._ctx = self.sim.next_decision()
        if self._ctx is None:
            raise ConfigError(WHERE, "workload", self.sim.workload.source,
                              "a workload with at least one request that fits the model's context and a decode "
                              "node's KV cache")
        self._decisions = 0
        self._n_invalid = 0
        self._stale_seen = 0
        self._slo = SloTracker(self.scenario.slo.ttft_s, self.scenario.slo.tbt_s)
        self._last = {}
        self._native_live = True
        obs = self._observe_native()
        info = {"action_mask": self._mask.copy(), "sim_seed": sim_seed, "sim_time_s": self.sim.now,
                "n_requests": self.sim.n}
        if self.render_mode == "human":
            self.render()
        return obs, info

    def _end_step(self, obs: Any, reward: float, terminated: bool, truncated: bool, info: dict[str, Any], a: int,
                  valid: bool, slo: tuple[Any, Any] | None) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """The end of :meth:`step`: SLO counts, the episode summary, render state."""
        if slo is not None:
            info["slo_met"], info["slo_missed"] = slo
        if terminated or truncated:
            info["summary"] = self.summary()
        if self.render_mode is not None:
            self._last = {"action": self.action_layout.describe(a) + ("" if valid else " (invalid)"),
                          "reward": reward}
            if self.render_mode == "human":
                self.render()
        return obs, float(reward), terminated, truncated, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """One decision: one native call (env/stepper.py) does the apply, the run to the next decision, the
        observation and the mask (the encoding observation.py defines, checked against it by the tests)."""
        if not self._native_live:
            raise RuntimeError("KairosEnv.step() called with no pending decision: the episode ended (or reset() "
                               "was never called); call reset()")
        a = action if type(action) is int and 0 <= action < self._n_actions else self.action_layout.index(action)
        kind = self.sim._core.pending_kind  # 0 arrival, 1 pull, 2 re-entry (src/core/pull.hpp)
        was_pull = self._pull and kind == 1
        was_reentry = kind == 2
        valid, terminated, d_wait, d_viol, d_tok, d_fin, interval, rid, now, d_missed = self._native.step(a)
        if not valid:
            self._n_invalid += 1
            if self.warn_masked and self._was_masked():
                self.warn_masked = False
                warn_masked_action(WHERE, a, self.action_layout.describe(a))
        self._ctx = None  # built on demand by decision_context
        self._native_live = not terminated
        self._decisions += 1
        sim = self.sim
        track = self._track_slo
        if track:
            if kind == 0:  # a pulled or re-entering request is tracked since its arrival
                self._slo.add(rid)
            met, met_tokens, missed = self._slo.update(sim)
            reward = step_reward(self.reward_kind, d_wait=d_wait, d_viol=d_viol, met=met, met_tokens=met_tokens,
                                 ttft_s=self._ttft_s, tbt_penalty=self.tbt_penalty)
        elif self._misses:  # the default reward, as step_reward computes it (an int negated: never -0.0)
            reward = float(-d_missed)
        else:  # the ttft reward, as step_reward computes it
            reward = -(d_wait / self._ttft_s) - self.tbt_penalty * d_viol
        truncated = (not terminated) and self.max_decisions is not None and self._decisions >= self.max_decisions
        mask = self._mask = self._native_mask  # the live buffer: infos and action_masks() get copies
        flat = self._native_obs.copy()
        obs = flat if self.obs_mode == "flat" else self.obs_layout.to_dict(flat)
        info: dict[str, Any] = {
            "action_mask": mask.copy(),
            "invalid_action": not valid,
            "n_invalid_actions": self._n_invalid,
            "deflected": valid and a != 0,
            "rid": rid,
            "interval_s": interval,
            "ttft_area_s": d_wait,
            "tbt_violations": d_viol,
            "tokens_out": d_tok,
            "finished": d_fin,
            "sim_time_s": now,
            "decisions": self._decisions,
        }
        if self._pull:
            info["pull"] = was_pull
        if self._faults:
            info["reentry"] = was_reentry
        return self._end_step(obs, reward, terminated, truncated, info, a, valid,
                              (met, missed) if track else None)

    def _was_masked(self) -> bool:
        """The step just refused its action because the mask forbade it, not because the realistic track's stale
        view offered a deflection the node refused (the core counts those in ``n_stale_refusals``). On the exact
        track a refused action is always a masked one. Called on refused steps only (no cost otherwise)."""
        if not self.scenario.information.realistic:
            return True
        seen, self._stale_seen = self._stale_seen, int(self.sim._core.n_stale_refusals)
        return self._stale_seen == seen

    def render(self) -> str | np.ndarray | None:
        """The frame of ``render_mode``: ``"ansi"`` the text dashboard (str), ``"rgb_array"`` the timeline (uint8
        H x W x 3); ``"human"`` prints the text dashboard to stdout and returns None (``reset`` and ``step`` call
        it); None returns None."""
        if self.render_mode in ("ansi", "human"):
            text = render_ansi(self.sim, self.decision_context, decisions=self._decisions, last=self._last)
            if self.render_mode == "ansi":
                return text
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
            return None
        if self.render_mode == "rgb_array":
            return render_rgb(self.sim)
        return None

    def action_masks(self) -> np.ndarray:
        """int8 mask of the valid actions at the pending decision (for sb3-contrib's MaskablePPO).

        Through ``gym.make`` it is forwarded by :class:`~kairos_gym.env.wrapper.KairosWrapper`; under
        other wrappers call ``env.get_wrapper_attr("action_masks")()`` or ``env.unwrapped.action_masks()``.
        """
        return self._mask.copy()

    # ------------------------------------------------------------------ extras
    def summary(self) -> dict[str, Any]:
        """The simulator's summary of the run so far, without ``wall_time_s`` (so infos are reproducible).

        Before the run is done (a truncated episode) it is a partial-run summary: it adds ``n_pending`` and
        ``n_in_flight`` and takes ``slo_attainment`` over settled requests (docs/metrics.md).
        """
        s = self.sim.summary()
        s.pop("wall_time_s", None)
        return s

    @property
    def decision_context(self) -> DecisionContext | None:
        """The pending :class:`DecisionContext` (None when the episode has ended)."""
        if self._ctx is None and self._native_live:
            self._ctx = self.sim.next_decision()  # built on demand (the decision is pending)
        return self._ctx

    def __getstate__(self) -> dict[str, Any]:
        # the native stepper holds C++ buffers over the simulator's core: rebuilt after unpickling, over the
        # unpickled simulator; the context is rebuilt on demand from the simulator
        state = self.__dict__.copy()
        for k in ("_native", "_native_obs", "_native_mask"):
            state.pop(k, None)
        state["_ctx"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = {"warn_masked": True, "_stale_seen": 0, **state}  # a pickle of an env from before these fields
        self.__dict__.update(state)
        if "_native" not in state:
            self._native = make_stepper(self.sim, self.obs_layout, self.action_layout)
            self._native_obs, self._native_mask = self._native.buffers()

    def snapshot(self) -> dict[str, Any]:
        """A deep copy of the whole state (simulator and episode counters and ``np_random``)."""
        return {
            "kind": "KairosEnv.snapshot",
            "sim": self.sim.snapshot(),
            "workload": self.sim.workload,
            "decisions": self._decisions,
            "n_invalid": self._n_invalid,
            "sim_seed": self._sim_seed,
            "slo": self._slo.state(),
            "np_random": copy.deepcopy(self.np_random.bit_generator.state),
            "last": dict(self._last),
        }

    def restore(self, state: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Return to a state taken by :meth:`snapshot` (reusable); returns the observation and an info
        with the action mask, as ``reset`` does. A snapshot of an env with another scenario (cluster shape,
        chunk menu, ...) or oracle setting raises :class:`ConfigError` before anything changes."""
        if not isinstance(state, Mapping) or state.get("kind") != "KairosEnv.snapshot" or any(
                k not in state for k in _SNAPSHOT_KEYS):
            raise ConfigError(f"{WHERE}.restore", "state", type(state).__name__, "a dict from KairosEnv.snapshot()")
        try:
            self.sim.restore(state["sim"])
        except ConfigError as e:  # another scenario: the observation would not fit this env's space
            raise ConfigError(f"{WHERE}.restore", "state", e.value, e.allowed) from None
        self.sim.workload = state["workload"]
        self._decisions = state["decisions"]
        self._n_invalid = state["n_invalid"]
        self._stale_seen = int(self.sim._core.n_stale_refusals) if self.scenario.information.realistic else 0
        self._sim_seed = state["sim_seed"]
        self._slo.set_state(state["slo"])
        self.np_random.bit_generator.state = copy.deepcopy(state["np_random"])
        self._last = dict(state["last"])
        self._ctx = self.sim.next_decision()  # the pending decision (or None at the end): does not advance
        self._native_live = self._ctx is not None
        obs = self._observe(self._ctx)
        return obs, {"action_mask": self._mask.copy(), "sim_time_s": self.sim.now}

    def feature_names(self) -> tuple[str, ...]:
        """Names of the flat observation's entries, in order."""
        return self.obs_layout.names

    # ------------------------------------------------------------------ internals
    def _observe(self, ctx: DecisionContext | None) -> Any:
        self._mask = self.action_layout.mask(ctx)  # read-only and shared: infos and action_masks() get copies
        if ctx is None:
            flat = self._zero_obs.copy()
        else:
            flat = np.array(self.obs_layout.values(ctx), dtype=np.float32)  # a new array: nothing to copy
        return flat if self.obs_mode == "flat" else self.obs_layout.to_dict(flat)

    def _observe_native(self) -> Any:
        """:meth:`_observe` on the native path: the core writes the pending decision's obs and mask."""
        self._native.observe()
        self._mask = self._native_mask
        flat = self._native_obs.copy()
        return flat if self.obs_mode == "flat" else self.obs_layout.to_dict(flat)

    def _window(self, sim_seed: int) -> Workload:
        """A random window of ``episode_window`` consecutive requests of the workload of ``sim_seed``; a window
        larger than the workload raises :class:`ConfigError` naming both sizes (nothing is clipped)."""
        cfg = self.scenario.workload
        full = generate(cfg, np.random.default_rng(sim_seed))
        n = len(full)
        cfg.require_requests(n, full.source, sim_seed)
        size = self.episode_window
        assert size is not None
        if size > n:
            raise ConfigError(WHERE, "episode_window", size,
                              f"at most the workload's size: {n} requests ({full.source}, seed {sim_seed})")
        start = int(self.np_random.integers(0, n - size + 1))
        t = full.arrival_s[start:start + size]
        return Workload(t - t[0], full.prompt_tokens[start:start + size],
                        full.output_tokens[start:start + size], f"{full.source} requests[{start}:{start + size}]")
