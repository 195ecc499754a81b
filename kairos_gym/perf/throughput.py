"""``kairos-gym perf``: throughput figures measured on this machine (not asserted in tests).

- simulator: the full azure-conv and azure-code traces under no-deflect: simulated seconds per wall
  second, requests per wall second, peak resident memory;
- pricing: the cost of pricing one decision's candidates (2 decode nodes x 5 chunk sizes);
- env: decisions per second with a random masked policy (when the Gymnasium adapter is installed).
"""

from __future__ import annotations

import resource
import time
from typing import Any

from kairos_gym.sim import Decision, Simulator


class _NoDeflect:
    def decide(self, ctx: Any) -> Decision:
        return Decision.prefill_path()


def bench_simulator(scenario: str, seed: int = 0) -> dict[str, Any]:
    """Run a whole scenario under no-deflect; wall time excludes workload generation/loading."""
    sim = Simulator(scenario, seed=seed)
    t0 = time.perf_counter()
    s = sim.run(_NoDeflect())
    wall = time.perf_counter() - t0
    return {
        "scenario": scenario,
        "engine": type(sim).__name__,
        "requests": s["n_requests"],
        "sim_time_s": round(s["sim_time_s"], 3),
        "wall_time_s": round(wall, 3),
        "sim_s_per_wall_s": round(s["sim_time_s"] / wall, 1),
        "requests_per_wall_s": round(s["n_requests"] / wall, 1),
    }


def bench_whole_run(scenario: str = "azure-conv", seed: int = 0, repeats: int = 3) -> dict[str, Any]:
    """One scenario under no-deflect, ``repeats`` runs in this process, the best wall time kept (s)."""
    runs = [bench_simulator(scenario, seed) for _ in range(repeats)]
    best = min(runs, key=lambda r: r["wall_time_s"])
    return {"scenario": scenario, "engine": best["engine"], "requests": best["requests"],
            "wall_s": best["wall_time_s"], "wall_s_runs": [r["wall_time_s"] for r in runs]}


def peak_rss_mib() -> float:
    """Peak resident set size of this process (MiB, Linux ru_maxrss is in KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def run_bench(env_seconds: float = 3.0, env_repeats: int = 3) -> dict[str, Any]:
    """All figures as one dict. ``env_seconds`` (finite, in (0, MAX_BENCH_SECONDS]) and ``env_repeats``
    (1..MAX_BENCH_REPEATS, :mod:`kairos_gym.flags`) are checked before the first timing."""
    import math

    from kairos_gym.errors import ConfigError
    from kairos_gym.flags import MAX_BENCH_REPEATS, MAX_BENCH_SECONDS
    from kairos_gym.latency import StepLatencyModel
    from kairos_gym.perf.pricing_speed import bench_pricing

    if (isinstance(env_seconds, bool) or not isinstance(env_seconds, (int, float)) or not math.isfinite(env_seconds)
            or not 0 < env_seconds <= MAX_BENCH_SECONDS):
        raise ConfigError("run_bench", "env_seconds", env_seconds,
                          f"a finite number of seconds > 0 and <= {MAX_BENCH_SECONDS:g}")
    if isinstance(env_repeats, bool) or not isinstance(env_repeats, int) or not 1 <= env_repeats <= MAX_BENCH_REPEATS:
        raise ConfigError("run_bench", "env_repeats", env_repeats, f"a whole number in [1, {MAX_BENCH_REPEATS}]")

    out: dict[str, Any] = {"simulator": [bench_simulator("azure-conv"), bench_simulator("azure-code")]}
    out["pricing_us"] = bench_pricing(StepLatencyModel.from_preset(), repeats=5000)
    try:
        from kairos_gym.perf.env_throughput import bench_env
    except ImportError as e:  # the adapter is optional for the simulator figures
        out["env"] = f"unavailable: {e}"
    else:
        out["env"] = [bench_env(i, seconds=env_seconds, repeats=env_repeats)
                      for i in ("kairos_gym/Kairos-v0", "kairos_gym/KairosSmall-v0")]
    out["peak_rss_mib"] = peak_rss_mib()
    return out
