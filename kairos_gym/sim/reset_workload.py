"""The simulator's Python-side set-up (:class:`kairos_gym.sim.simulator.NativeSimulator`): the checked
construction arguments and scenario-derived state (:func:`init_common`), the checked workload of a reset
(:func:`reset_workload`) and the checks and descriptions they use (seed, KV capacity, a simulator's scenario in
an error message). Written once for both engines while the Python reference engine existed (issue 11); kept
apart from the core's wrapper."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.workload import Workload, generate

MAX_KV_CAPACITY = 1 << 40
"""Largest KV capacity per decode node a caller may set (tokens)."""


def check_seed(where: str, seed: Any) -> int:
    """``seed`` as an int: a whole number >= 0 (an int or a numpy integer; not None, a bool or a float), so
    every run names its seed explicitly and reproduces."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        return int(seed)
    raise ConfigError(where, "seed", seed, "a whole number >= 0 (seeds are explicit: the same seed gives the "
                      "same workload and run)")


def check_kv_capacity(v: Any) -> int:
    """``kv_capacity`` given to the simulator: a whole number of tokens in [1, MAX_KV_CAPACITY]."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 1 <= v <= MAX_KV_CAPACITY:
        return int(v)
    raise ConfigError("Simulator", "kv_capacity", v, f"None or a whole number of tokens in [1, {MAX_KV_CAPACITY}]")


def describe_sim(sc: Any, oracle: Any) -> str:
    """``scenario 'small' (2P2D, chunk menu [128, ...], oracle False)`` for restore errors."""
    from kairos_gym.scenario import ScenarioConfig

    if not isinstance(sc, ScenarioConfig):
        return f"an unknown scenario ({type(sc).__name__})"
    cl = sc.cluster
    return (f"scenario {sc.name!r} ({cl.prefill_nodes}P{cl.decode_nodes}D, chunk menu "
            f"{list(sc.deflection.chunk_menu)}, oracle {oracle})")


def check_no_engine_choice() -> None:
    """Refuse a ``KAIROS_ENGINE`` environment variable that asks for another engine than the native one: it once
    picked the Python reference engine, which was removed (issue 11); a stale setting must not be silently
    ignored. Unset, empty or ``native`` pass."""
    value = os.environ.get("KAIROS_ENGINE", "")
    if value not in ("", "native"):
        raise ConfigError("environment variable KAIROS_ENGINE", "KAIROS_ENGINE", value,
                          "unset (the Python reference engine was removed in favour of the native core, the only "
                          "engine; the variable no longer picks one)")


def init_common(sim: Any, scenario: Any, seed: Any, oracle: Any, record_timeline: Any, kv_capacity: int | None,
                trace: Any) -> int:
    """Check the constructor arguments (and the environment: :func:`check_no_engine_choice`) and set the
    scenario-derived attributes (scenario, latency model, chunk menu, Python pricer, KV capacity in tokens per
    decode node, memory policy, transfer, hot-path constants); returns the checked seed. Bad input raises
    :class:`ConfigError` before anything is built."""
    from kairos_gym.latency.model import StepLatencyModel
    from kairos_gym.latency.pricing import ChunkPricer
    from kairos_gym.latency.transfer import TransferConfig
    from kairos_gym.scenario import load_scenario

    check_no_engine_choice()
    seed = check_seed("Simulator", seed)
    if not isinstance(oracle, bool):
        raise ConfigError("Simulator", "oracle", oracle, "True or False")
    if not isinstance(trace, bool):
        raise ConfigError("Simulator", "trace", trace, "True or False")
    sim.scenario = sc = load_scenario(scenario)
    cl = sc.cluster
    sim.model = StepLatencyModel.from_preset(cl.model, cl.gpu, cl.tp, dict(cl.calibration) or None)
    sim.menu = sc.deflection.chunk_menu
    sim.menu_desc = tuple(sorted(sim.menu, reverse=True))
    sim.pricer = ChunkPricer(sim.model, sim.menu)
    sim.kv_capacity = check_kv_capacity(kv_capacity) if kv_capacity is not None \
        else sim.model.kv_capacity_tokens(cl.kv_reserve_frac)
    sim.swap_policy = cl.memory_policy == "swap"
    sim.block = cl.kv_block_tokens
    t = sc.transfer
    sim.transfer = TransferConfig(t.bandwidth_bytes_per_s, t.setup_s, t.enabled)
    sim.oracle = oracle
    sim.record_timeline = bool(record_timeline)
    sim._fixed_workload = None
    sim._menu_set = frozenset(sim.menu)  # chunk sizes a Decision may name (LARGEST_SAFE aside)
    sim._policy_label = "policy"  # names the deciding policy in a bad-decision error (set by run())
    # scenario constants read on the hot path (the scenario is frozen)
    sim._cap = cl.decode_max_batch
    sim._p_budget = cl.prefill_token_budget
    sim._includes = cl.ttft_includes_transfer
    sim._tbt = sc.slo.tbt_s
    sim._ls_budget = sc.deflection.beta * sc.slo.tbt_s  # LargestSafe step budget (s)
    return seed


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
    check_overlong(sim, wl.source, wl.prompt_tokens, wl.output_tokens)
    return rng, fixed, wl


def check_overlong(sim: Any, source: str, prompt: np.ndarray, output: np.ndarray, first_rid: int | None = None) -> None:
    """With ``cluster.overlong: error``, raise :class:`ConfigError` naming the first request longer than the
    model's context or a decode node's KV capacity (tokens, rounded up to whole KV blocks under the swap policy).
    ``first_rid``: the arrays are one chunk of a chunked workload, starting at that request id (None: whole)."""
    sc = sim.scenario
    if sc.cluster.overlong != "error":
        return
    limit = min(sim.model.model.max_context, sim.kv_capacity)
    total = prompt.astype(np.int64) + output.astype(np.int64)
    if sim.swap_policy:
        b = sim.block
        total = -(-total // b) * b
    bad = np.flatnonzero(total > limit)
    if bad.size:
        i = int(bad[0])
        raise ConfigError(
            f"workload {source}", f"request {(first_rid or 0) + i} prompt_tokens + output_tokens",
            int(total[i]), f"<= {limit} tokens (model context / KV capacity of {sc.cluster.model}); "
            f"{bad.size} such requests{'' if first_rid is None else ' in this chunk'}: set "
            "cluster.overlong: reject to reject them at arrival",
        )


def uses_chunks(sim: Any, workload: Workload | None) -> bool:
    """Will ``sim.reset(seed, workload)`` generate its workload in chunks? Streaming metrics, no fixed workload
    (given now or at construction) and synthetic arrivals (a trace replay is bounded by its file: loaded whole)."""
    from kairos_gym.workload.arrivals import SyntheticArrival

    sc = sim.scenario
    return (sc.metrics.mode == "streaming" and workload is None and sim._fixed_workload is None
            and isinstance(sc.workload.arrival, SyntheticArrival))


def reset_stream(sim: Any, seed: int, chunk: int) -> tuple[np.random.Generator, Any,
                                                          tuple[np.ndarray, np.ndarray, np.ndarray, bool]]:
    """``(rng, stream, first chunk)`` for a chunked reset (:func:`uses_chunks`): the run's generator seeded by
    ``seed``, the :class:`~kairos_gym.workload.chunked.WorkloadStream` drawing from it (as ``generate`` would)
    and its first chunk of at most ``chunk`` requests (arrival s, prompt, output tokens, last). The checks of
    :func:`reset_workload` on that chunk (no request at all; an overlong request)."""
    from kairos_gym.workload.chunked import WorkloadStream

    rng = np.random.default_rng(seed)
    stream = WorkloadStream(sim.scenario.workload, rng, batch=chunk)
    first = stream.take(chunk)
    if not first[0].size:
        sim.scenario.workload.require_requests(0, stream.source, seed)
    check_overlong(sim, stream.source, first[1], first[2], 0)
    return rng, stream, first
