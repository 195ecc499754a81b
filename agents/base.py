"""The one interface every baseline policy implements.

A policy is asked once per arriving request through the simulator's policy hook
(:class:`kairos_gym.sim.hook.Policy`): ``decide(ctx: DecisionContext) -> Decision``. :class:`BasePolicy`
adds what every baseline shares:

- ``decide(ctx)`` times each decision into ``decision_times_us`` (wall clock, ``time.perf_counter_ns``: the
  figure reported as ``decision_us_p50/p99``) and ``decision_cpu_us`` (the thread's CPU time,
  ``time.thread_time_ns``: the same cost without the OS descheduling the process, which dominates the wall
  P99 on a loaded machine), and calls the subclass's ``_decide(ctx)``, where the decision rule lives;
- ``reset(seed)`` clears per-run state and re-seeds the policy's own ``numpy.random.Generator``;
- ``predict(observation, state, episode_start, deterministic, action_masks)``, shaped like
  Stable-Baselines3's ``predict`` so evaluation code can treat baselines and learned agents alike. A
  non-learned policy needs the full :class:`DecisionContext` (not a feature vector): ``predict`` accepts a
  DecisionContext and returns ``(Decision, state)``; anything else raises a TypeError that says to use
  ``decide(ctx)`` or :func:`kairos_gym.agents.runner.run_policy`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig, load_scenario
from kairos_gym.sim.hook import LARGEST_SAFE, Decision, DecisionContext, DecodeNodeView
from kairos_gym.workload.rules import Number


class BasePolicy:
    """Base of every baseline. Subclasses set ``name`` and implement ``_decide(ctx)``."""

    name: ClassVar[str] = "base"

    def __init__(self, seed: int | None = 0) -> None:
        self.seed = Number(integer=True, low=0, optional=True).check(f"policy {self.name}", "seed", seed)
        self.rng = np.random.default_rng(self.seed)
        self.record_times = True
        self.decision_times_us: list[float] = []
        self.decision_cpu_us: list[float] = []

    # ------------------------------------------------------------------ the hook
    def decide(self, ctx: DecisionContext) -> Decision:
        """The routing decision for the request of ``ctx`` (timed when ``record_times``)."""
        if not self.record_times:
            return self._decide(ctx)
        c0 = time.thread_time_ns()
        t0 = time.perf_counter_ns()
        decision = self._decide(ctx)
        t1 = time.perf_counter_ns()
        self.decision_cpu_us.append((time.thread_time_ns() - c0) / 1e3)
        self.decision_times_us.append((t1 - t0) / 1e3)
        return decision

    def _decide(self, ctx: DecisionContext) -> Decision:
        raise NotImplementedError

    def reset(self, seed: int | None = None) -> None:
        """Start a new run: clear per-run state and timings; re-seed the policy's generator with ``seed``
        (None: the seed given at construction, so repeated runs are reproducible)."""
        if seed is not None:
            self.seed = Number(integer=True, low=0).check(f"policy {self.name}", "seed", seed)
        self.rng = np.random.default_rng(self.seed)
        self.decision_times_us = []
        self.decision_cpu_us = []
        self._reset_state()

    def _reset_state(self) -> None:
        """Subclass hook: forget per-run state."""

    # ------------------------------------------------------------------ SB3-like
    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
        action_masks: Any = None,
    ) -> tuple[Any, Any]:
        """SB3-shaped entry point: ``(action, state)``; for a DecisionContext the action is a Decision, anything
        else goes to :meth:`_predict_observation`."""
        if isinstance(observation, DecisionContext):
            return self.decide(observation), state
        return self._predict_observation(observation, state, episode_start, deterministic, action_masks)

    def _predict_observation(self, observation: Any, state: Any, episode_start: Any, deterministic: bool,
                             action_masks: Any) -> tuple[Any, Any]:
        """Subclass hook: ``(action, state)`` for an environment observation; a rule-based policy has none."""
        raise TypeError(
            f"{type(self).__name__}.predict() needs a kairos_gym.sim.hook.DecisionContext, got "
            f"{type(observation).__name__}: a rule-based policy decides from the full simulator view, not an "
            "observation vector. Call policy.decide(ctx) at each decision, or run it with "
            "kairos_gym.agents.runner.run_policy(policy, scenario, seed)."
        )

    # ------------------------------------------------------------------ decision cost
    @property
    def decision_us_p50(self) -> float | None:
        """Median wall time of ``decide`` in microseconds over this run (None before any decision)."""
        return _pct(self.decision_times_us, 50)

    @property
    def decision_us_p99(self) -> float | None:
        """99th percentile of the wall time of ``decide`` in microseconds (None before any decision)."""
        return _pct(self.decision_times_us, 99)

    def decision_stats(self) -> dict[str, float | None]:
        """``decision_us_p50/p99`` (wall) and ``decision_cpu_us_p50/p99`` (thread CPU time) of this run."""
        return {"decision_us_p50": self.decision_us_p50, "decision_us_p99": self.decision_us_p99,
                "decision_cpu_us_p50": _pct(self.decision_cpu_us, 50),
                "decision_cpu_us_p99": _pct(self.decision_cpu_us, 99)}

    def describe(self) -> dict[str, Any]:
        """Name and parameters (for result tables)."""
        return {"policy": self.name, "seed": self.seed}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.describe().items() if k != "policy")
        return f"{type(self).__name__}({params})"


def _pct(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), q))


# ---------------------------------------------------------------------- helpers shared by the baselines
def scenario_or_none(scenario: Any) -> ScenarioConfig | None:
    """A ScenarioConfig from a name/dict/config, or None."""
    return None if scenario is None else load_scenario(scenario)


def check_chunk(where: str, chunk: Any, scenario: ScenarioConfig | None) -> int:
    """A fixed chunk size (tokens) from the scenario's menu, or :data:`LARGEST_SAFE` (0)."""
    menu = scenario.deflection.chunk_menu if scenario is not None else None
    allowed = "0 (LARGEST_SAFE) or a chunk size from the scenario menu" + (f" {list(menu)}" if menu else "")
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 0:
        raise ConfigError(where, "chunk", chunk, allowed)
    chunk = int(chunk)
    if chunk != LARGEST_SAFE and menu is not None and chunk not in menu:
        raise ConfigError(where, "chunk", chunk, allowed)
    return chunk


def check_chunk_in_menu(where: str, chunk: int, ctx: DecisionContext) -> None:
    """At decision time: a fixed chunk must be on the simulator's menu (else the sim would refuse it)."""
    if chunk != LARGEST_SAFE and chunk not in ctx.chunk_menu:
        raise ConfigError(where, "chunk", chunk, f"0 (LARGEST_SAFE) or one of {list(ctx.chunk_menu)}")


def deflectable(view: DecodeNodeView) -> bool:
    """A decode node that would accept a deflection now (none in flight, room in batch and memory)."""
    return view.can_deflect and not view.deflection_in_flight


def least_loaded_deflectable(ctx: DecisionContext) -> int | None:
    """Among decode nodes that can take a deflection: the smallest batch (then smallest total context,
    then lowest index). None when no node can."""
    best: tuple[int, int, int] | None = None
    for i, v in enumerate(ctx.decode):
        if deflectable(v):
            key = (v.batch_size, v.total_context, i)
            if best is None or key < best:
                best = key
    return None if best is None else best[2]

