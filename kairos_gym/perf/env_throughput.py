"""Throughput of the environment: decisions per second under a random masked policy, on one core.

    from kairos_gym.perf.env_throughput import bench_env
    bench_env("kairos_gym/KairosSmall-v0", seconds=5.0)

The policy picks uniformly among the valid actions (``info["action_mask"]``), so it deflects often:
this is a demanding load for the simulator (more chunk steps) compared with a no-deflect policy.
Resets (workload generation) are included in the time. The share of time spent inside the simulator
(``Simulator.apply`` + ``Simulator.next_decision``) is measured too, to separate env overhead from
simulation cost.
"""

from __future__ import annotations

import math
import time
from typing import Any

import gymnasium as gym
import numpy as np

import kairos_gym.env  # noqa: F401  (registers the ids)
from kairos_gym.errors import ConfigError
from kairos_gym.flags import MAX_BENCH_REPEATS, MAX_BENCH_SECONDS

MAX_DECISIONS = 10_000_000
"""Most decisions :func:`run_decisions` runs (about an hour of one core)."""


def _random_step(env: Any, info: dict[str, Any], u: float, seed: int, episodes: int) -> tuple[dict[str, Any], int]:
    """One decision of the benchmark's policy: uniform over the valid actions (``u``: a uniform draw in
    [0, 1), scaled to their number); at an episode's end, reset with seed ``seed + episodes``. Returns
    ``(info, episodes)``."""
    valid = info["action_mask"].nonzero()[0]
    _, _, terminated, truncated, info = env.step(int(valid[int(u * valid.size)]))
    if terminated or truncated:
        episodes += 1
        _, info = env.reset(seed=seed + episodes)
    return info, episodes


def check_bench_args(seconds: Any, repeats: Any, where: str = "bench_env") -> None:
    """``seconds`` finite in (0, MAX_BENCH_SECONDS], ``repeats`` a whole number in [1, MAX_BENCH_REPEATS]."""
    if (isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds)
            or not 0 < seconds <= MAX_BENCH_SECONDS):
        raise ConfigError(where, "seconds", seconds, f"a finite number of seconds > 0 and <= {MAX_BENCH_SECONDS:g}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_BENCH_REPEATS:
        raise ConfigError(where, "repeats", repeats, f"a whole number in [1, {MAX_BENCH_REPEATS}]")


def check_decisions(decisions: Any, where: str = "run_decisions") -> None:
    """``decisions`` a whole number in [0, MAX_DECISIONS]."""
    if isinstance(decisions, bool) or not isinstance(decisions, int) or not 0 <= decisions <= MAX_DECISIONS:
        raise ConfigError(where, "decisions", decisions, f"a whole number in [0, {MAX_DECISIONS}]")


def bench_env(env_id: str = "kairos_gym/Kairos-v0", seconds: float = 5.0, seed: int = 0, repeats: int = 1,
              **make_kwargs: Any) -> dict[str, Any]:
    """Step ``gym.make(env_id, **make_kwargs)`` with a random masked policy for about ``seconds``, ``repeats``
    times (one env, continuing episodes; the VM's speed varies by 10-20% from second to second, so the
    median of a few repeats is the figure to quote).

    Returns ``{"env_id", "decisions", "episodes", "seconds", "decisions_per_s", "decisions_per_s_runs",
    "sim_share", "outside_sim_us_per_decision"}``: ``decisions_per_s`` is the median over the repeats (all
    of them in ``decisions_per_s_runs``), ``decisions``/``episodes``/``seconds`` are totals, ``sim_share``
    is the fraction of the time spent inside the simulator's ``apply`` and ``next_decision`` (the rest: env
    code, wrappers, the policy and resets).
    """
    check_bench_args(seconds, repeats)
    env = gym.make(env_id, **make_kwargs)
    # a KairosEnv has one simulator; the domain env (kairos_train/KairosGeneral-v0) builds one per episode, so
    # its time inside the simulator is not split out (its resets, which build them, are in the figure)
    sim = getattr(env.unwrapped, "sim", None)
    pc = time.perf_counter
    in_sim = [0.0]
    apply, next_decision = (sim.apply, sim.next_decision) if sim is not None else (None, None)

    def timed_apply(decision: Any) -> bool:
        t = pc()
        try:
            return apply(decision)
        finally:
            in_sim[0] += pc() - t

    def timed_next() -> Any:
        t = pc()
        try:
            return next_decision()
        finally:
            in_sim[0] += pc() - t

    if sim is not None:
        sim.apply, sim.next_decision = timed_apply, timed_next  # instance attributes: this bench only
    rng = np.random.default_rng(seed)
    # uniform over the valid actions: a uniform draw scaled to the number of valid actions (numpy draws
    # come in blocks: a per-step Generator call would cost more than a step of the env's own Python)
    draws = rng.random(4096).tolist()
    k = 0
    rates: list[float] = []
    n = 0
    episodes = 0
    elapsed = 0.0
    try:
        _, info = env.reset(seed=seed)
        for _ in range(repeats):
            n0 = n
            start = pc()
            deadline = start + seconds
            while True:
                if k == 4096:
                    draws = rng.random(4096).tolist()
                    k = 0
                info, episodes = _random_step(env, info, draws[k], seed, episodes)
                k += 1
                n += 1
                if n % 64 == 0 and pc() >= deadline:
                    break
            run = pc() - start
            elapsed += run
            rates.append((n - n0) / run)
    finally:
        if sim is not None:
            del sim.apply, sim.next_decision
        env.close()
    native = sim is None or getattr(env.unwrapped, "_native", None) is not None
    return {
        "env_id": env_id,
        "engine": type(sim if sim is not None else env.unwrapped).__name__,
        "decisions": n,
        "episodes": episodes,
        "seconds": elapsed,
        "decisions_per_s": float(np.median(rates)),
        "decisions_per_s_runs": [round(r) for r in rates],
        # the native env step runs the simulator inside one call (env/stepper.py): no split to report
        "sim_share": None if native else in_sim[0] / elapsed,
        "outside_sim_us_per_decision": None if native else (elapsed - in_sim[0]) / n * 1e6,
    }


def _cartpole_rate(seconds: float, seed: int) -> float:
    """Steps per second of ``gym.make("CartPole-v1")`` (wrappers on) under a uniform random policy drawn the
    same way as :func:`bench_env`'s (pre-drawn uniforms), resets included."""
    env = gym.make("CartPole-v1")
    draws = np.random.default_rng(seed).random(4096).tolist()
    pc = time.perf_counter
    env.reset(seed=seed)
    n = k = 0
    start = pc()
    deadline = start + seconds
    step, reset = env.step, env.reset
    while True:
        if k == 4096:
            k = 0
        _, _, terminated, truncated, _ = step(int(draws[k] * 2))
        k += 1
        n += 1
        if terminated or truncated:
            reset()
        if n % 64 == 0 and pc() >= deadline:
            break
    rate = n / (pc() - start)
    env.close()
    return rate


def bench_vs_cartpole(env_id: str = "kairos_gym/Kairos-v0", seconds: float = 3.0, repeats: int = 3,
                      seed: int = 0) -> dict[str, Any]:
    """``env_id`` against CartPole-v1 in this process, alternating ``repeats`` timing runs of ``seconds`` each
    (medians reported): steps per second of both and their ratio (the target: ratio >= 0.5)."""
    check_bench_args(seconds, repeats, "bench_vs_cartpole")
    kairos: list[float] = []
    cart: list[float] = []
    for _ in range(repeats):
        cart.append(_cartpole_rate(seconds, seed))
        kairos.append(bench_env(env_id, seconds=seconds, seed=seed)["decisions_per_s"])
    k, c = float(np.median(kairos)), float(np.median(cart))
    return {"env_id": env_id, "engine": "native", "steps_per_s": round(k), "cartpole_steps_per_s": round(c),
            "ratio": round(k / c, 3), "steps_per_s_runs": [round(r) for r in kairos],
            "cartpole_runs": [round(r) for r in cart]}


def make_vector(env_id: str, num_envs: int, step_infos: bool) -> Any:
    """The native vector env of ``env_id`` without summaries: a
    :class:`~kairos_gym.env.vector.KairosVectorEnv`, or for ``kairos_train/KairosGeneral-v0`` its registered vector
    entry point (``DomainVectorEnv``, a new scenario per env and episode: its resets are inside the figures)."""
    from kairos_gym.env.registration import GENERAL_ENV_ID
    from kairos_gym.env.vector import make_vector_env

    if env_id == GENERAL_ENV_ID:
        return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", summaries=False,
                            step_infos=step_infos)
    return make_vector_env(env_id, num_envs, summaries=False, step_infos=step_infos)


def _vector_rate(env_id: str, num_envs: int, seconds: float, seed: int, step_infos: bool = False
                 ) -> tuple[float, int]:
    """Env-steps per second (``num_envs`` per ``step`` call, NEXT_STEP autoreset steps included) of a
    :class:`~kairos_gym.env.vector.KairosVectorEnv` of ``env_id`` under a uniform random masked policy
    (vectorized: per row, the ``floor(u * n_valid)``-th valid action), and the episodes ended. No summaries; the
    per-step info keys only with ``step_infos``."""
    vec = make_vector(env_id, num_envs, step_infos)
    rng = np.random.default_rng(seed)
    pc = time.perf_counter
    _, info = vec.reset(seed=seed)
    masks = info["action_mask"]
    n = episodes = 0
    start = pc()
    deadline = start + seconds
    while True:
        _, _, terminated, truncated, info = vec.step(_vector_pick(masks, rng, num_envs))
        masks = info["action_mask"]
        episodes += int(np.count_nonzero(terminated | truncated))
        n += num_envs
        if pc() >= deadline:
            break
    rate = n / (pc() - start)
    vec.close()
    return rate, episodes


def run_vector_steps(env_id: str = "kairos_gym/Kairos-v0", num_envs: int = 64, steps: int = 300,
                     seed: int = 0, step_infos: bool = False) -> dict[str, Any]:
    """Exactly ``steps`` steps of a :class:`~kairos_gym.env.vector.KairosVectorEnv` of ``num_envs`` envs under
    :func:`_vector_rate`'s policy (a fixed amount of work: what callgrind measures, e.g.
    ``valgrind --tool=callgrind --toggle-collect='*VecStepper::step*' kairos-gym perf-env --vector
    64
    --decisions 300``)."""
    from kairos_gym.env.vector import MAX_NUM_ENVS

    check_decisions(steps, "run_vector_steps")
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or not 1 <= num_envs <= MAX_NUM_ENVS:
        raise ConfigError("run_vector_steps", "num_envs", num_envs, f"a whole number in [1, {MAX_NUM_ENVS}]")
    vec = make_vector(env_id, num_envs, step_infos)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    _, info = vec.reset(seed=seed)
    masks = info["action_mask"]
    episodes = 0
    for _ in range(steps):
        _, _, terminated, truncated, info = vec.step(_vector_pick(masks, rng, num_envs))
        masks = info["action_mask"]
        episodes += int(np.count_nonzero(terminated | truncated))
    elapsed = time.perf_counter() - start
    vec.close()
    return {"env_id": env_id, "num_envs": num_envs, "steps": steps, "env_steps": steps * num_envs,
            "episodes": episodes, "seconds": elapsed}


def _vector_pick(masks: np.ndarray, rng: np.random.Generator, num_envs: int) -> np.ndarray:
    """Per row, the ``floor(u * n_valid)``-th valid action of ``masks`` (u uniform in [0, 1))."""
    counts = masks.sum(axis=1)
    pick = (rng.random(num_envs) * counts).astype(np.int64)
    return (masks.cumsum(axis=1) > pick[:, None]).argmax(axis=1)


def bench_vector_vs_cartpole(env_id: str = "kairos_gym/Kairos-v0", num_envs: int = 64, seconds: float = 3.0,
                             repeats: int = 3, seed: int = 0, step_infos: bool = False) -> dict[str, Any]:
    """A :class:`~kairos_gym.env.vector.KairosVectorEnv` of ``num_envs`` (1..MAX_NUM_ENVS) envs of ``env_id``
    (default engine; no summaries, the per-step info keys only with ``step_infos``) against single-env
    CartPole-v1 in this process, alternating ``repeats`` runs of ``seconds`` (medians): env-steps per second of
    both and their ratio (the target: >= 2 at N=64, without ``step_infos``)."""
    from kairos_gym.env.vector import MAX_NUM_ENVS

    check_bench_args(seconds, repeats, "bench_vector_vs_cartpole")
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or not 1 <= num_envs <= MAX_NUM_ENVS:
        raise ConfigError("bench_vector_vs_cartpole", "num_envs", num_envs, f"a whole number in [1, {MAX_NUM_ENVS}]")
    vec: list[float] = []
    cart: list[float] = []
    episodes = 0
    for _ in range(repeats):
        cart.append(_cartpole_rate(seconds, seed))
        rate, ep = _vector_rate(env_id, num_envs, seconds, seed, step_infos)
        vec.append(rate)
        episodes += ep
    v, c = float(np.median(vec)), float(np.median(cart))
    return {"env_id": env_id, "num_envs": num_envs, "step_infos": step_infos, "env_steps_per_s": round(v),
            "cartpole_steps_per_s": round(c),
            "ratio": round(v / c, 3), "env_steps_per_s_runs": [round(r) for r in vec],
            "cartpole_runs": [round(r) for r in cart], "episodes": episodes}


def run_decisions(env_id: str = "kairos_gym/Kairos-v0", decisions: int = 3000, seed: int = 0) -> dict[str, Any]:
    """Exactly ``decisions`` steps of the same random masked policy as :func:`bench_env` (a fixed amount of
    work: what ``tools/count_instructions.sh`` runs under callgrind for a machine-independent cost)."""
    check_decisions(decisions)
    env = gym.make(env_id)
    rng = np.random.default_rng(seed)
    draws = rng.random(decisions).tolist()
    start = time.perf_counter()
    _, info = env.reset(seed=seed)
    episodes = 0
    for u in draws:
        info, episodes = _random_step(env, info, u, seed, episodes)
    elapsed = time.perf_counter() - start
    env.close()
    return {"env_id": env_id, "decisions": decisions, "episodes": episodes, "seconds": elapsed}
