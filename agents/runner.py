"""Run a policy on a scenario through the simulator's policy hook and return the run's summary."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from kairos_gym.agents.base import BasePolicy
from kairos_gym.agents.registry import make_policy

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import load_scenario
from kairos_gym.sim import Simulator
from kairos_gym.sim.hook import Decision, DecisionContext, Policy


class _Timed:
    """Times any hook-only policy (one without ``decision_times_us``)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.name = getattr(policy, "name", type(policy).__name__)  # names the policy in bad-decision errors
        self.decision_times_us: list[float] = []

    def decide(self, ctx: DecisionContext) -> Decision:
        t0 = time.perf_counter_ns()
        d = self.policy.decide(ctx)
        self.decision_times_us.append((time.perf_counter_ns() - t0) / 1e3)
        return d


def run_policy(policy: BasePolicy | Policy | str, scenario: Any = "bursty", seed: int = 0, *, oracle: bool = False,
               **policy_kwargs: Any) -> dict[str, Any]:
    """The summary of :func:`simulate` (see there)."""
    return simulate(policy, scenario, seed, oracle=oracle, **policy_kwargs)[0]


def simulate(policy: BasePolicy | Policy | str, scenario: Any = "bursty", seed: int = 0, *, oracle: bool = False,
             record_timeline: bool = False, progress: Callable[[], Any] | None = None,
             setup: Callable[[Simulator], Any] | None = None,
             **policy_kwargs: Any) -> tuple[dict[str, Any], Simulator]:
    """Simulate ``scenario`` (workload seed ``seed``) with ``policy`` deciding every request.

    ``seed`` is a whole number >= 0 (None is refused: seeds are explicit, for reproducibility). A ``decide``
    that returns anything but a valid :class:`~kairos_gym.sim.hook.Decision` raises
    :class:`~kairos_gym.errors.ConfigError` naming the return value (see :meth:`Simulator.apply`).
    ``policy`` is a policy object (anything with ``decide(ctx)``) or a registry name (then built with
    ``make_policy(name, scenario, seed, **policy_kwargs)``). A BasePolicy is ``reset()`` first (its own
    seed: reproducible), and attached to the simulator when it has ``attach`` (the Oracle).
    ``oracle=True`` lets policies see output lengths in the context. Returns the simulator's summary
    plus ``policy`` (name), ``policy_params``, ``decision_us_p50`` and ``decision_us_p99`` (wall time of
    each decision in microseconds, ``time.perf_counter_ns``) and ``decision_cpu_us_p50/p99`` (the deciding
    thread's CPU time, free of OS descheduling; None for a hook-only policy object), and the simulator
    (for per-request records and plots: ``record_timeline`` keeps the node timeline). ``progress()`` is
    called after every decision; ``setup(sim)`` once the simulator is built, before the run (e.g. to stream
    its per-request rows to a file: ``Simulator.stream_requests_csv``).
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError("run_policy", "seed", seed, "a whole number >= 0 (seeds are explicit, so a run "
                          "reproduces: the same seed gives the same workload and the same policy randomness)")
    sc = load_scenario(scenario)
    if isinstance(policy, str):
        policy = make_policy(policy, sc, seed, **policy_kwargs)
    elif policy_kwargs:
        raise TypeError("run_policy: policy parameters are only accepted with a policy name")
    sim = Simulator(sc, seed=seed, oracle=oracle, record_timeline=record_timeline)
    if setup is not None:
        setup(sim)
    if isinstance(policy, BasePolicy):
        policy.reset()
    attach = getattr(policy, "attach", None)
    if callable(attach):
        attach(sim)
    name = getattr(policy, "name", type(policy).__name__)
    sim.policy_name = name  # type: ignore[attr-defined]
    if isinstance(policy, BasePolicy):
        policy.record_times = True
        summary = sim.run(policy, progress)
        stats = policy.decision_stats()
    else:
        timed = _Timed(policy)
        summary = sim.run(timed, progress)
        times = np.asarray(timed.decision_times_us, dtype=float)
        p50, p99 = (float(np.percentile(times, 50)), float(np.percentile(times, 99))) if times.size else (None, None)
        stats = {"decision_us_p50": p50, "decision_us_p99": p99, "decision_cpu_us_p50": None,
                 "decision_cpu_us_p99": None}
    summary["policy"] = name
    summary["policy_params"] = policy.describe() if isinstance(policy, BasePolicy) else {}
    summary.update(stats)
    return summary, sim
