"""The workload of a simulator reset, checked: shared by both engines (``kairos_gym.sim.engine`` and
``kairos_gym.sim.native_engine``), so they draw and refuse exactly alike."""

from __future__ import annotations

from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.workload import Workload, generate


def reset_workload(sim: Any, seed: int, workload: Workload | None) -> tuple[np.random.Generator, Workload | None,
                                                                         Workload]:
    """``(rng, fixed, workload)`` for ``sim.reset(seed, workload)``: the run's generator seeded by ``seed``, the
    fixed workload in force (given here, else the one given at construction, else None) and the run's workload
    (the fixed one, else drawn from the scenario with the generator). Raises :class:`ConfigError` (leaving the
    simulator as it was) for a ``workload`` that is not a :class:`Workload`, an empty workload, or, with
    ``cluster.overlong: error``, a request longer than the model's context or a decode node's KV capacity
    (tokens, rounded up to whole KV blocks under the swap policy). ``seed`` is already checked."""
    if workload is not None and not isinstance(workload, Workload):
        raise ConfigError("Simulator.reset", "workload", workload, "None or a kairos_gym.workload.Workload")
    rng = np.random.default_rng(seed)
    fixed = workload if workload is not None else sim._fixed_workload
    wl = fixed if fixed is not None else generate(sim.scenario.workload, rng)
    n = len(wl)
    sc = sim.scenario
    if not n:
        if fixed is not None:
            raise ConfigError("Simulator", "workload", wl, "a workload with at least one request")
        sc.workload.require_requests(n, wl.source, seed)
    if sc.cluster.overlong == "error":
        limit = min(sim.model.model.max_context, sim.kv_capacity)
        total = wl.prompt_tokens.astype(np.int64) + wl.output_tokens.astype(np.int64)
        if sim.swap_policy:
            b = sim.block
            total = -(-total // b) * b
        bad = np.flatnonzero(total > limit)
        if bad.size:
            i = int(bad[0])
            raise ConfigError(
                f"workload {wl.source}", f"request {i} prompt_tokens + output_tokens",
                int(total[i]), f"<= {limit} tokens (model context / KV capacity of {sc.cluster.model}); "
                f"{bad.size} such requests: set cluster.overlong: reject to reject them at arrival",
            )
    return rng, fixed, wl
